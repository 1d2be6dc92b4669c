/*
 * Command-line parsing (see config.h). Every option is listed once in the
 * options table below, which also produces --help, so the two cannot drift.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "http1.h"
#include "http1_out.h"

#ifndef MP_VERSION
#define MP_VERSION "0.0.0"
#endif

typedef enum {
  OPT_FLAG,
  OPT_LISTEN,
  OPT_SECONDS,
  OPT_BYTES,
  OPT_COUNT,
  OPT_PATH,
  OPT_WORKERS,
  OPT_SERVER
} opt_kind;

typedef struct option {
  const char *name;
  opt_kind kind;
  const char *arg;
  const char *help;
} option;

static const option options[] = {
    {"--workers", OPT_WORKERS, "N|auto",
     "worker processes, each with its own listener, loop and Lua state "
     "(default 1; auto: one per usable CPU)"},
    {"--listen", OPT_LISTEN, "HOST:PORT",
     "address to listen on, an IP address or a name resolved at startup "
     "(default 127.0.0.1:8080; port 0 picks a free one)"},
    {"--idle-timeout", OPT_SECONDS, "SECONDS",
     "close a keep-alive connection idle this long (default 60)"},
    {"--header-timeout", OPT_SECONDS, "SECONDS",
     "a request head not complete this long after its first byte gets 408 "
     "(default 10)"},
    {"--body-timeout", OPT_SECONDS, "SECONDS",
     "a request body that stalls this long between bytes gets 408 "
     "(default 60)"},
    {"--write-timeout", OPT_SECONDS, "SECONDS",
     "close a connection whose client takes no response bytes for this long "
     "(default 60)"},
    {"--shutdown-timeout", OPT_SECONDS, "SECONDS",
     "on SIGTERM or SIGINT, wait this long for requests in flight "
     "(default 10)"},
    {"--handler-timeout", OPT_SECONDS, "SECONDS",
     "a worker that stays in one handler this long without yielding is "
     "killed and replaced (default 30)"},
    {"--max-body-size", OPT_BYTES, "BYTES",
     "largest request body; larger gets 413 (default 1m)"},
    {"--max-header-size", OPT_BYTES, "BYTES",
     "largest request head; larger gets 431, or 414 for the request line "
     "(default 16k)"},
    {"--max-headers", OPT_COUNT, "N",
     "most header fields in a request; more gets 431 (default 100)"},
    {"--max-connections", OPT_COUNT, "N",
     "connections served at once; more are accepted and closed at once "
     "(default 10000)"},
    {"--write-high-water", OPT_BYTES, "BYTES",
     "a handler streaming with res:write waits while more than this is "
     "unsent (default 256k)"},
    {"--request-memory-limit", OPT_BYTES, "BYTES",
     "how far one request may grow the Lua heap; past it the request gets "
     "500 (default 8m)"},
    {"--load-timeout", OPT_SECONDS, "SECONDS",
     "loading the app (at startup and on reload) may take this long; past "
     "it the load fails (default 10)"},
    {"--load-memory-limit", OPT_BYTES, "BYTES",
     "how far loading the app may grow the Lua heap; past it the load "
     "fails (default 512m)"},
    {"--mock", OPT_PATH, "DIR",
     "serve a WireMock directory (DIR/mappings, DIR/__files, DIR/*.lua) "
     "instead of an APP"},
    {"--journal-size", OPT_COUNT, "N",
     "requests the mock journal keeps, across workers; 0 for none "
     "(default 1000)"},
    {"--journal-memory", OPT_BYTES, "BYTES",
     "memory the mock journal's entries may take, across workers; past it "
     "the oldest are dropped (default 32m, at least 64k)"},
    {"--mock-state-size", OPT_BYTES, "BYTES",
     "memory for the mock's admin-added mappings, scenario states and "
     "counters, never evicted; a change past it gets 507 (default 16m, at "
     "least 64k)"},
    {"--no-cors", OPT_FLAG, NULL,
     "mock apps do not answer CORS preflights or add "
     "Access-Control-Allow-Origin"},
    {"--admin-cors", OPT_FLAG, NULL,
     "let web pages of other origins call the mock's /__admin API (CORS "
     "there too)"},
    {"--admin-host", OPT_PATH, "NAME[,NAME...]",
     "the mock's /__admin API also answers requests whose Host is NAME "
     "(besides loopback addresses, localhost and the --listen address)"},
    {"--no-watch", OPT_FLAG, NULL,
     "do not reload when the app's files change (SIGHUP still reloads)"},
    {"--watch-delay", OPT_SECONDS, "SECONDS",
     "reload this long after the last change to the app's files "
     "(default 0.05)"},
    {"--shared-size", OPT_BYTES, "BYTES",
     "size of the moonport.shared store, shared by all workers "
     "(default 16m, at least 64k)"},
    {"--error-log", OPT_PATH, "PATH",
     "write the error log to PATH instead of stderr (SIGUSR1 reopens it)"},
    {"--access-log", OPT_PATH, "PATH|-",
     "log every request to PATH (- for stdout): Common Log Format, then "
     "seconds, Lua bytes and C bytes"},
    {"--server-header", OPT_SERVER, "off|NAME",
     "the Server field of every response: NAME, or none with off "
     "(default moonport)"},
    {"--stats", OPT_FLAG, NULL,
     "serve GET /__moonport/stats (JSON) to loopback clients"},
    {"--check", OPT_FLAG, NULL, "load the app, print its routes and exit"},
    {"--debug", OPT_FLAG, NULL,
     "put handler errors in 500 responses and X-Moonport-Alloc on every "
     "response"},
    {"--version", OPT_FLAG, NULL, "print the version and exit"},
    {"--help", OPT_FLAG, NULL, "print this help and exit"},
};

static void usage(FILE *out) {
  fprintf(out, "usage: moonport [options] APP.lua\n"
               "       moonport [options] --mock DIR\n\noptions:\n");
  for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) {
    char left[64];
    snprintf(left, sizeof left, "%s%s%s", options[i].name,
             options[i].arg ? " " : "", options[i].arg ? options[i].arg : "");
    fprintf(out, "  %-30s %s\n", left, options[i].help);
  }
  fprintf(out,
          "\nBYTES takes a k or m suffix (KiB, MiB). SECONDS may have a "
          "fraction.\n");
}

static int bad_value(const char *opt, const char *value, const char *why) {
  fprintf(stderr, "moonport: %s: invalid value '%s': %s\n", opt, value, why);
  return MP_CONFIG_USAGE;
}

static int parse_listen(mp_config *cfg, const char *opt, const char *v) {
  const char *colon = strrchr(v, ':');
  if (colon == NULL) return bad_value(opt, v, "expected HOST:PORT");
  const char *host = v;
  size_t hlen = (size_t)(colon - v);
  if (hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']') {
    host++;
    hlen -= 2;
  }
  if (hlen == 0 || hlen >= sizeof cfg->host)
    return bad_value(opt, v, "expected HOST:PORT");
  char *end;
  errno = 0;
  long port = strtol(colon + 1, &end, 10);
  if (errno || end == colon + 1 || *end != '\0' || port < 0 || port > 65535)
    return bad_value(opt, v, "port must be 0..65535");
  memcpy(cfg->host, host, hlen);
  cfg->host[hlen] = '\0';
  cfg->port = (int)port;
  return MP_CONFIG_RUN;
}

/* The size a store option sets, or NULL when name is not one. */
static size_t *store_size(mp_config *cfg, const char *name) {
  if (strcmp(name, "--shared-size") == 0) return &cfg->shared_size;
  if (strcmp(name, "--mock-state-size") == 0) return &cfg->mock_state_size;
  if (strcmp(name, "--journal-memory") == 0) return &cfg->journal_memory;
  return NULL;
}

static int parse_value(mp_config *cfg, const option *o, const char *v) {
  char *end;
  errno = 0;
  switch (o->kind) {
    case OPT_LISTEN:
      return parse_listen(cfg, o->name, v);
    case OPT_SECONDS: {
      double s = strtod(v, &end);
      if (errno || end == v || *end != '\0' || !isfinite(s) || s <= 0 ||
          s > 86400.0 * 365)
        return bad_value(o->name, v, "expected a positive number of seconds");
      uint64_t ms = (uint64_t)(s * 1000.0 + 0.5);
      if (strcmp(o->name, "--idle-timeout") == 0)
        cfg->idle_timeout_ms = ms;
      else if (strcmp(o->name, "--header-timeout") == 0)
        cfg->header_timeout_ms = ms;
      else if (strcmp(o->name, "--body-timeout") == 0)
        cfg->body_timeout_ms = ms;
      else if (strcmp(o->name, "--write-timeout") == 0)
        cfg->write_timeout_ms = ms;
      else if (strcmp(o->name, "--handler-timeout") == 0)
        cfg->handler_timeout_ms = ms;
      else if (strcmp(o->name, "--watch-delay") == 0)
        cfg->watch_delay_ms = ms;
      else if (strcmp(o->name, "--load-timeout") == 0)
        cfg->load_timeout_ms = ms;
      else
        cfg->shutdown_timeout_ms = ms;
      return MP_CONFIG_RUN;
    }
    case OPT_BYTES: {
      if (v[0] == '-' || v[0] == '\0')
        return bad_value(o->name, v, "expected a size in bytes");
      unsigned long long n = strtoull(v, &end, 10);
      unsigned long long unit = 1;
      if (*end == 'k' || *end == 'K') unit = 1024, end++;
      else if (*end == 'm' || *end == 'M') unit = 1024 * 1024, end++;
      if (errno || end == v || *end != '\0' || n == 0 || n > (1ull << 31) / unit)
        return bad_value(o->name, v, "expected a size from 1 byte to 2g");
      n *= unit;
      if (strcmp(o->name, "--max-body-size") == 0)
        cfg->max_body_size = (size_t)n;
      else if (strcmp(o->name, "--request-memory-limit") == 0)
        cfg->request_memory_limit = (size_t)n;
      else if (strcmp(o->name, "--load-memory-limit") == 0)
        cfg->load_memory_limit = (size_t)n;
      else if (strcmp(o->name, "--write-high-water") == 0)
        cfg->write_high_water = (size_t)n;
      else if (store_size(cfg, o->name) != NULL) {
        if (n < 64 * 1024)
          return bad_value(o->name, v, "the store is at least 64k");
        *store_size(cfg, o->name) = (size_t)n;
      }
      else if (n < 256)
        return bad_value(o->name, v, "the head limit is at least 256 bytes");
      else
        cfg->max_header_size = (size_t)n;
      return MP_CONFIG_RUN;
    }
    case OPT_COUNT: {
      bool conns = strcmp(o->name, "--max-connections") == 0;
      bool journal = strcmp(o->name, "--journal-size") == 0;
      long top = conns || journal ? 1000000 : 10000;
      long bottom = journal ? 0 : 1; /* no journal at all is a choice */
      long n = strtol(v, &end, 10);
      if (errno || end == v || *end != '\0' || n < bottom || n > top) {
        char why[64];
        snprintf(why, sizeof why, "expected a count from %ld to %ld", bottom,
                 top);
        return bad_value(o->name, v, why);
      }
      if (conns)
        cfg->max_connections = (unsigned)n;
      else if (journal)
        cfg->journal_size = (unsigned)n;
      else
        cfg->max_headers = (unsigned)n;
      return MP_CONFIG_RUN;
    }
    case OPT_PATH:
      if (strcmp(o->name, "--mock") == 0) {
        if (v[0] == '\0') return bad_value(o->name, v, "expected a directory");
        cfg->mock_dir = v;
      } else if (strcmp(o->name, "--admin-host") == 0) {
        if (v[0] == '\0') return bad_value(o->name, v, "expected a host name");
        cfg->admin_hosts = v;
      } else if (strcmp(o->name, "--error-log") == 0) {
        if (v[0] == '\0' || strcmp(v, "-") == 0)
          return bad_value(o->name, v, "expected a path");
        cfg->error_log = v;
      } else {
        if (v[0] == '\0') return bad_value(o->name, v, "expected a path or -");
        cfg->access_log = v;
      }
      return MP_CONFIG_RUN;
    case OPT_WORKERS: {
      if (strcmp(v, "auto") == 0) {
        cfg->workers_auto = true;
        cfg->workers = 0;
        return MP_CONFIG_RUN;
      }
      long n = strtol(v, &end, 10);
      if (errno || end == v || *end != '\0' || n < 1 || n > MP_MAX_WORKERS) {
        char why[64];
        snprintf(why, sizeof why, "expected auto or a count from 1 to %d",
                 MP_MAX_WORKERS);
        return bad_value(o->name, v, why);
      }
      cfg->workers_auto = false;
      cfg->workers = (unsigned)n;
      return MP_CONFIG_RUN;
    }
    case OPT_SERVER:
      if (strcmp(v, "off") == 0) {
        cfg->server_header = NULL;
        return MP_CONFIG_RUN;
      }
      if (v[0] == '\0' || strlen(v) > MP_H1_SERVER_MAX ||
          !mp_http1_valid_value(v, strlen(v))) {
        char why[96];
        snprintf(why, sizeof why,
                 "expected off or a field value of 1 to %d bytes, no "
                 "control bytes", MP_H1_SERVER_MAX);
        return bad_value(o->name, v, why);
      }
      cfg->server_header = v;
      return MP_CONFIG_RUN;
    case OPT_FLAG:
      break;
  }
  return MP_CONFIG_USAGE;
}

int mp_config_parse(mp_config *cfg, int argc, char **argv) {
  memset(cfg, 0, sizeof *cfg);
  strcpy(cfg->host, "127.0.0.1");
  cfg->port = 8080;
  cfg->idle_timeout_ms = 60 * 1000;
  cfg->shutdown_timeout_ms = 10 * 1000;
  cfg->header_timeout_ms = 10 * 1000;
  cfg->body_timeout_ms = 60 * 1000;
  cfg->write_timeout_ms = 60 * 1000;
  cfg->max_body_size = 1024 * 1024;
  cfg->max_header_size = 16 * 1024;
  cfg->max_headers = 100;
  cfg->max_connections = 10000;
  cfg->request_memory_limit = 8 * 1024 * 1024;
  cfg->load_timeout_ms = 10 * 1000;
  cfg->load_memory_limit = 512 * 1024 * 1024;
  cfg->write_high_water = 256 * 1024;
  cfg->workers = 1;
  cfg->handler_timeout_ms = 30 * 1000;
  cfg->shared_size = 16 * 1024 * 1024;
  cfg->mock_state_size = 16 * 1024 * 1024;
  cfg->journal_memory = 32 * 1024 * 1024;
  cfg->watch = true;
  cfg->cors = true;
  cfg->journal_size = 1000;
  cfg->watch_delay_ms = 50;
  cfg->server_header = "moonport";

  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (arg[0] != '-' || strcmp(arg, "-") == 0) {
      if (cfg->app != NULL) {
        fprintf(stderr, "moonport: unexpected argument '%s' (one APP only)\n",
                arg);
        return MP_CONFIG_USAGE;
      }
      cfg->app = arg;
      continue;
    }
    /* Accept both "--name value" and "--name=value". */
    const char *eq = strchr(arg, '=');
    size_t nlen = eq ? (size_t)(eq - arg) : strlen(arg);
    const option *o = NULL;
    for (size_t k = 0; k < sizeof options / sizeof options[0]; k++)
      if (strlen(options[k].name) == nlen &&
          strncmp(options[k].name, arg, nlen) == 0)
        o = &options[k];
    if (o == NULL) {
      fprintf(stderr, "moonport: unknown option '%.*s' (see --help)\n",
              (int)nlen, arg);
      return MP_CONFIG_USAGE;
    }
    if (o->kind == OPT_FLAG) {
      if (eq != NULL) {
        fprintf(stderr, "moonport: %s takes no value\n", o->name);
        return MP_CONFIG_USAGE;
      }
      if (strcmp(o->name, "--help") == 0) {
        usage(stdout);
        return MP_CONFIG_EXIT;
      }
      if (strcmp(o->name, "--version") == 0) {
        printf("moonport %s\n", MP_VERSION);
        return MP_CONFIG_EXIT;
      }
      if (strcmp(o->name, "--check") == 0) cfg->check = true;
      if (strcmp(o->name, "--debug") == 0) cfg->debug = true;
      if (strcmp(o->name, "--stats") == 0) cfg->stats = true;
      if (strcmp(o->name, "--no-watch") == 0) cfg->watch = false;
      if (strcmp(o->name, "--no-cors") == 0) cfg->cors = false;
      if (strcmp(o->name, "--admin-cors") == 0) cfg->admin_cors = true;
      continue;
    }
    const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
    if (value == NULL) {
      fprintf(stderr, "moonport: %s needs a value (%s)\n", o->name, o->arg);
      return MP_CONFIG_USAGE;
    }
    int rc = parse_value(cfg, o, value);
    if (rc != MP_CONFIG_RUN) return rc;
  }
  if (cfg->app != NULL && cfg->mock_dir != NULL) {
    fprintf(stderr, "moonport: --mock serves a directory; give it or an "
            "APP, not both\n");
    return MP_CONFIG_USAGE;
  }
  if (cfg->app == NULL && cfg->mock_dir == NULL) {
    fprintf(stderr, "moonport: no APP.lua given (see --help)\n");
    return MP_CONFIG_USAGE;
  }
  if (cfg->workers_auto) {
    /* The CPUs this process may run on (its affinity), not all there are:
     * under taskset or a container's cpuset, more workers would only
     * take turns. */
    unsigned n = uv_available_parallelism();
    cfg->workers = n < 1 ? 1 : n > MP_MAX_WORKERS ? MP_MAX_WORKERS : n;
  }
  return MP_CONFIG_RUN;
}
