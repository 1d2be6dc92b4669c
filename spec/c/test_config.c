/*
 * The command line on strings: every default, every option setting its own
 * field and no other, the bounds and their messages, and --help showing
 * each default. Compiled with server/proc/config.c; mp_config_parse does
 * no I/O beyond printing its help and its complaints, which the test reads
 * back from a scratch file.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "check.h"
#include "cidr.h"
#include "config.h"

/* Every field of mp_config, to name the ones a parse changed. */
#define F(f) {#f, offsetof(mp_config, f), sizeof(((mp_config *)0)->f)}
static const struct field {
  const char *name;
  size_t off, size;
} fields[] = {
    F(host), F(port), F(app), F(check), F(debug), F(stats), F(access_log),
    F(server_header), F(error_log), F(workers), F(workers_auto),
    F(handler_timeout_ms), F(shared_size), F(mock_state_size),
    F(journal_memory), F(mock_dir), F(cors), F(admin_cors), F(admin_hosts), F(proxy_all), F(json_db), F(json_routes), F(json_static), F(json_id), F(json_fks),
    F(json_read_only), F(json_delay_ms), F(mock_store), F(record_mappings),
    F(wiremock_404), F(openapi), F(openapi_dynamic), F(openapi_seed),
    F(openapi_mock), F(access_log_format), F(request_id), F(gzip),
    F(journal_size), F(watch), F(watch_delay_ms), F(request_memory_limit),
    F(load_timeout_ms), F(load_memory_limit), F(write_high_water),
    F(idle_timeout_ms), F(shutdown_timeout_ms), F(header_timeout_ms),
    F(body_timeout_ms), F(write_timeout_ms), F(max_body_size),
    F(max_header_size), F(max_headers), F(max_connections),
    F(resolver_cache_ms), F(tls_ca), F(pg), F(pg_timeout_ms), F(metrics),
    F(metrics_allow), F(user), F(pid_file), F(trusted_proxies),
};
#define NFIELDS (sizeof fields / sizeof fields[0])

static char out_path[] = "/tmp/moonport-test-config-XXXXXX";
static char output[16384]; /* what the last parse printed */

/* Runs mp_config_parse on "moonport" and the NULL-terminated args, with
 * stdout and stderr going to a scratch file that is then read into
 * `output`. Returns the parse's result. */
static int parse_argv(mp_config *cfg, const char *const *args) {
  char *argv[32];
  int argc = 0;
  argv[argc++] = "moonport";
  while (*args != NULL && argc < 31) argv[argc++] = (char *)*args++;
  argv[argc] = NULL;
  fflush(stdout);
  fflush(stderr);
  int saved_out = dup(1), saved_err = dup(2);
  FILE *f = fopen(out_path, "w+");
  if (f == NULL || saved_out < 0 || saved_err < 0) {
    fprintf(stderr, "cannot redirect output\n");
    exit(2);
  }
  dup2(fileno(f), 1);
  dup2(fileno(f), 2);
  int rc = mp_config_parse(cfg, argc, argv);
  fflush(stdout);
  fflush(stderr);
  dup2(saved_out, 1);
  dup2(saved_err, 2);
  close(saved_out);
  close(saved_err);
  rewind(f);
  size_t n = fread(output, 1, sizeof output - 1, f);
  output[n] = '\0';
  fclose(f);
  return rc;
}

#define PARSE(cfg, ...) parse_argv((cfg), (const char *const[]){__VA_ARGS__, NULL})

static mp_config defaults;

static void test_defaults(void) {
  CHECK_EQ_INT(PARSE(&defaults, "app.lua"), MP_CONFIG_RUN);
  mp_config *d = &defaults;
  CHECK(strcmp(d->host, "127.0.0.1") == 0);
  CHECK_EQ_INT(d->port, 8080);
  CHECK(d->app != NULL && strcmp(d->app, "app.lua") == 0);
  CHECK(!d->check && !d->debug && !d->stats && !d->admin_cors);
  CHECK(!d->metrics && d->metrics_allow.n == 0);
  CHECK(d->cors && d->watch);
  CHECK(d->access_log == NULL && d->error_log == NULL);
  CHECK(strcmp(d->access_log_format, "moonport") == 0 && !d->request_id);
  CHECK(d->mock_dir == NULL && d->admin_hosts == NULL);
  CHECK(d->server_header != NULL && strcmp(d->server_header, "moonport") == 0);
  CHECK_EQ_INT(d->workers, 1);
  CHECK(!d->workers_auto);
  CHECK_EQ_INT(d->handler_timeout_ms, 30000);
  CHECK_EQ_INT(d->idle_timeout_ms, 60000);
  CHECK_EQ_INT(d->shutdown_timeout_ms, 10000);
  CHECK_EQ_INT(d->header_timeout_ms, 10000);
  CHECK_EQ_INT(d->body_timeout_ms, 60000);
  CHECK_EQ_INT(d->write_timeout_ms, 60000);
  CHECK_EQ_INT(d->load_timeout_ms, 10000);
  CHECK_EQ_INT(d->watch_delay_ms, 50);
  CHECK_EQ_INT(d->shared_size, 16 << 20);
  CHECK_EQ_INT(d->mock_state_size, 16 << 20);
  CHECK_EQ_INT(d->journal_memory, 32 << 20);
  CHECK_EQ_INT(d->journal_size, 1000);
  CHECK_EQ_INT(d->request_memory_limit, 8 << 20);
  CHECK_EQ_INT(d->load_memory_limit, 512 << 20);
  CHECK_EQ_INT(d->write_high_water, 256 << 10);
  CHECK_EQ_INT(d->max_body_size, 1 << 20);
  CHECK_EQ_INT(d->max_header_size, 16 << 10);
  CHECK_EQ_INT(d->max_headers, 100);
  CHECK_EQ_INT(d->max_connections, 10000);
  CHECK_EQ_INT(d->resolver_cache_ms, 30000);
  CHECK(d->tls_ca == NULL);
  CHECK(d->pg == NULL);
  CHECK_EQ_INT(d->pg_timeout_ms, 30000);
}

/* One option given one value: what it must change. */
typedef struct setting {
  const char *option, *value;
  const char *field; /* the field it sets ("" for none: --listen's two) */
  uint64_t want;     /* numbers and flags: the field's new value */
  const char *text;  /* strings: the new value */
} setting;

/* Each value differs from the default and from every other option's. */
static const setting settings[] = {
    {"--workers", "7", "workers", 7, NULL},
    {"--idle-timeout", "1.001", "idle_timeout_ms", 1001, NULL},
    {"--header-timeout", "1.002", "header_timeout_ms", 1002, NULL},
    {"--body-timeout", "1.003", "body_timeout_ms", 1003, NULL},
    {"--write-timeout", "1.004", "write_timeout_ms", 1004, NULL},
    {"--shutdown-timeout", "1.005", "shutdown_timeout_ms", 1005, NULL},
    {"--handler-timeout", "1.006", "handler_timeout_ms", 1006, NULL},
    {"--load-timeout", "1.007", "load_timeout_ms", 1007, NULL},
    {"--watch-delay", "1.008", "watch_delay_ms", 1008, NULL},
    {"--resolver-cache", "1.009", "resolver_cache_ms", 1009, NULL},
    {"--pg-timeout", "1.011", "pg_timeout_ms", 1011, NULL},
    {"--max-body-size", "70001", "max_body_size", 70001, NULL},
    {"--max-header-size", "70002", "max_header_size", 70002, NULL},
    {"--write-high-water", "70003", "write_high_water", 70003, NULL},
    {"--request-memory-limit", "70004", "request_memory_limit", 70004, NULL},
    {"--load-memory-limit", "70005", "load_memory_limit", 70005, NULL},
    {"--journal-memory", "70006", "journal_memory", 70006, NULL},
    {"--mock-state-size", "70007", "mock_state_size", 70007, NULL},
    {"--shared-size", "70008", "shared_size", 70008, NULL},
    {"--max-headers", "901", "max_headers", 901, NULL},
    {"--max-connections", "902", "max_connections", 902, NULL},
    {"--journal-size", "903", "journal_size", 903, NULL},
    {"--mock", "mockdir", "mock_dir", 0, "mockdir"},
    {"--admin-host", "a.test", "admin_hosts", 0, "a.test"},
    {"--proxy-all", "http://api.test", "proxy_all", 0, "http://api.test"},
    {"--json-db", "db.json", "json_db", 0, "db.json"},
    {"--openapi", "api.yaml", "openapi", 0, "api.yaml"},
    {"--dynamic", NULL, "openapi_dynamic", 1, NULL},
    {"--seed", "42", "openapi_seed", 0, "42"},
    {"--mock-store", "redis://r:6379", "mock_store", 0, "redis://r:6379"},
    {"--routes", "routes.json", "json_routes", 0, "routes.json"},
    {"--static", "pub", "json_static", 0, "pub"},
    {"--id", "_id", "json_id", 0, "_id"},
    {"--foreign-key-suffix", "_id", "json_fks", 0, "_id"},
    {"--read-only", NULL, "json_read_only", 1, NULL},
    {"--delay", "904", "json_delay_ms", 904, NULL},
    {"--error-log", "err.log", "error_log", 0, "err.log"},
    {"--tls-ca", "ca.pem", "tls_ca", 0, "ca.pem"},
    {"--pg", "dbname=x", "pg", 0, "dbname=x"},
    {"--access-log", "access.log", "access_log", 0, "access.log"},
    {"--access-log-format", "json", "access_log_format", 0, "json"},
    {"--server-header", "edge/1", "server_header", 0, "edge/1"},
    {"--no-cors", NULL, "cors", 0, NULL},
    {"--admin-cors", NULL, "admin_cors", 1, NULL},
    {"--no-watch", NULL, "watch", 0, NULL},
    {"--stats", NULL, "stats", 1, NULL},
    {"--metrics", NULL, "metrics", 1, NULL},
    {"--metrics-allow", "10.1.0.0/16", "metrics_allow", 0, NULL},
    {"--check", NULL, "check", 1, NULL},
    {"--debug", NULL, "debug", 1, NULL},
    {"--record-mappings", NULL, "record_mappings", 1, NULL},
    {"--wiremock-404", NULL, "wiremock_404", 1, NULL},
    {"--request-id", NULL, "request_id", 1, NULL},
    {"--gzip", NULL, "gzip", 1, NULL},
    {"--user", "www-data:adm", "user", 0, "www-data:adm"},
    {"--pid-file", "/run/mp.pid", "pid_file", 0, "/run/mp.pid"},
    {"--trusted-proxy", "10.0.0.0/8", "trusted_proxies", 0, NULL},
    {"--listen", "10.1.2.3:4567", "", 0, NULL},
};
#define NSETTINGS (sizeof settings / sizeof settings[0])

static const struct field *field_named(const char *name) {
  for (size_t i = 0; i < NFIELDS; i++)
    if (strcmp(fields[i].name, name) == 0) return &fields[i];
  return NULL;
}

/* Stores s->want or s->text into the field of `cfg` that s names. */
static void apply(mp_config *cfg, const setting *s, const struct field *f) {
  char *at = (char *)cfg + f->off;
  if (f->size == sizeof(mp_cidr_list)) {
    mp_cidr_list *l = (mp_cidr_list *)(void *)at;
    CHECK_EQ_INT(mp_cidr_parse(s->value, &l->v[l->n]), 0);
    l->n++;
  } else if (s->text != NULL) {
    CHECK(f->size == sizeof(const char *));
    const char *p = s->value;
    memcpy(at, &p, sizeof p);
  } else if (f->size == sizeof(bool)) {
    bool b = s->want != 0;
    memcpy(at, &b, sizeof b);
  } else if (f->size == sizeof(unsigned)) {
    unsigned u = (unsigned)s->want;
    memcpy(at, &u, sizeof u);
  } else {
    uint64_t v = s->want;
    memcpy(at, &v, f->size);
  }
}

/* Fails, naming each field of `got` that differs from `want`. */
static void same_fields(const char *option, const mp_config *got,
                        const mp_config *want) {
  for (size_t i = 0; i < NFIELDS; i++) {
    const struct field *f = &fields[i];
    check_count++;
    if (memcmp((const char *)got + f->off, (const char *)want + f->off,
               f->size) != 0) {
      check_failures++;
      fprintf(stderr, "%s: field %s is not what it should be\n", option,
              f->name);
    }
  }
}

static void test_each_option_sets_its_field_only(void) {
  for (size_t i = 0; i < NSETTINGS; i++) {
    const setting *s = &settings[i];
    mp_config got, want = defaults;
    int rc;
    if (strcmp(s->option, "--mock") == 0 || strcmp(s->option, "--json-db") == 0) {
      /* --mock and --json-db take the place of APP. */
      rc = PARSE(&got, s->option, s->value);
      want.app = NULL;
    } else if (strcmp(s->option, "--openapi") == 0) {
      /* --openapi takes the place of APP: the mock app serves it. */
      rc = PARSE(&got, s->option, s->value);
      want.app = NULL;
      want.openapi_mock = true;
    } else if (strncmp(s->field, "openapi_", 8) == 0) {
      /* --dynamic and --seed go with --openapi. */
      rc = s->value ? PARSE(&got, "--openapi", "d.yaml", s->option, s->value)
                    : PARSE(&got, "--openapi", "d.yaml", s->option);
      want.app = NULL;
      want.openapi = got.openapi;
      want.openapi_mock = true;
    } else if (strncmp(s->field, "json_", 5) == 0 && strcmp(s->field, "json_db") != 0) {
      /* json-server's options go with --json-db. */
      rc = s->value ? PARSE(&got, "--json-db", "d.json", s->option, s->value)
                    : PARSE(&got, "--json-db", "d.json", s->option);
      want.app = NULL;
      want.json_db = got.json_db;
    } else if (strcmp(s->option, "--metrics-allow") == 0) {
      /* It goes with --metrics; the range it adds is checked in
       * test_metrics_allow. */
      rc = PARSE(&got, "--metrics", s->option, s->value, "app.lua");
      want.app = got.app;
      want.metrics = true;
      want.metrics_allow = got.metrics_allow;
      CHECK_EQ_INT(got.metrics_allow.n, 1);
    } else if (strcmp(s->option, "--record-mappings") == 0) {
      /* It records what --proxy-all answers into the --mock directory. */
      rc = PARSE(&got, "--mock", "d", "--proxy-all", "http://r.test", s->option);
      want.app = NULL;
      want.mock_dir = got.mock_dir;
      want.proxy_all = got.proxy_all;
    } else {
      rc = s->value ? PARSE(&got, s->option, s->value, "app.lua")
                    : PARSE(&got, s->option, "app.lua");
      CHECK(got.app != NULL && strcmp(got.app, "app.lua") == 0);
      want.app = got.app;
    }
    CHECK_EQ_INT(rc, MP_CONFIG_RUN);
    if (strcmp(s->field, "metrics_allow") == 0) {
      same_fields(s->option, &got, &want);
      continue;
    }
    if (s->field[0] != '\0') {
      const struct field *f = field_named(s->field);
      CHECK(f != NULL);
      if (f == NULL) continue;
      apply(&want, s, f);
    } else {
      strcpy(want.host, "10.1.2.3");
      want.port = 4567;
    }
    same_fields(s->option, &got, &want);
  }
  /* The same through "--name=value". */
  mp_config got, want = defaults;
  CHECK_EQ_INT(PARSE(&got, "--idle-timeout=2.5", "app.lua"), MP_CONFIG_RUN);
  want.app = got.app;
  want.idle_timeout_ms = 2500;
  same_fields("--idle-timeout=2.5", &got, &want);
}

/* Every option --help lists has a row in `settings` (or prints and exits),
 * so an option added to the table is an option this test checks. */
static void test_help_lists_what_is_tested(void) {
  mp_config cfg;
  CHECK_EQ_INT(PARSE(&cfg, "--help"), MP_CONFIG_EXIT);
  unsigned listed = 0;
  for (const char *p = strstr(output, "\n  --"); p != NULL;
       p = strstr(p + 1, "\n  --")) {
    char name[64];
    if (sscanf(p + 3, "%63[a-z0-9-]", name) != 1) continue;
    listed++;
    bool tested = strcmp(name, "--help") == 0 || strcmp(name, "--version") == 0;
    for (size_t i = 0; i < NSETTINGS && !tested; i++)
      tested = strcmp(settings[i].option, name) == 0;
    check_count++;
    if (!tested) {
      check_failures++;
      fprintf(stderr, "%s is in --help but not in this test\n", name);
    }
  }
  CHECK_EQ_INT(listed, NSETTINGS + 2);
}

/* --help shows each default, the least a store takes, and nothing for
 * options without one. */
static void test_help_shows_defaults(void) {
  static const char *const lines[][2] = {
      {"--workers N|auto", "(default 1)"},
      {"--listen HOST:PORT", "(default 127.0.0.1:8080)"},
      {"--idle-timeout SECONDS", "(default 60)"},
      {"--header-timeout SECONDS", "(default 10)"},
      {"--body-timeout SECONDS", "(default 60)"},
      {"--write-timeout SECONDS", "(default 60)"},
      {"--shutdown-timeout SECONDS", "(default 10)"},
      {"--handler-timeout SECONDS", "(default 30)"},
      {"--load-timeout SECONDS", "(default 10)"},
      {"--watch-delay SECONDS", "(default 0.05)"},
      {"--max-body-size BYTES", "(default 1m)"},
      {"--max-header-size BYTES", "(default 16k, at least 256 bytes)"},
      {"--max-headers N", "(default 100)"},
      {"--max-connections N", "(default 10000)"},
      {"--write-high-water BYTES", "(default 256k)"},
      {"--request-memory-limit BYTES", "(default 8m)"},
      {"--load-memory-limit BYTES", "(default 512m)"},
      {"--journal-size N", "(default 1000)"},
      {"--journal-memory BYTES", "(default 32m, at least 64k)"},
      {"--mock-state-size BYTES", "(default 16m, at least 64k)"},
      {"--shared-size BYTES", "(default 16m, at least 64k)"},
      {"--server-header off|NAME", "(default moonport)"},
      {"--mock DIR", NULL},
      {"--error-log PATH", NULL},
      {"--stats", NULL},
  };
  mp_config cfg;
  CHECK_EQ_INT(PARSE(&cfg, "--help"), MP_CONFIG_EXIT);
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
    char start[80];
    snprintf(start, sizeof start, "\n  %s ", lines[i][0]);
    const char *line = strstr(output, start);
    CHECK(line != NULL);
    if (line == NULL) continue;
    const char *end = strchr(line + 1, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    const char *def = strstr(line, "(default ");
    check_count++;
    bool ok = lines[i][1] == NULL
                  ? def == NULL || def > line + len
                  : def != NULL && def < line + len &&
                        strncmp(def, lines[i][1], strlen(lines[i][1])) == 0 &&
                        def + strlen(lines[i][1]) == line + len;
    if (!ok) {
      check_failures++;
      fprintf(stderr, "--help line for %s: %.*s\n", lines[i][0], (int)len,
              line + 1);
    }
  }
}

/* A value the parser must refuse, and the message it must print. */
static void refused(const char *option, const char *value, const char *msg) {
  mp_config cfg;
  int rc = value ? PARSE(&cfg, option, value, "app.lua")
                 : PARSE(&cfg, option, "app.lua");
  CHECK_EQ_INT(rc, MP_CONFIG_USAGE);
  check_count++;
  if (strcmp(output, msg) != 0) {
    check_failures++;
    fprintf(stderr, "%s %s printed '%s', expected '%s'\n", option,
            value ? value : "", output, msg);
  }
}

static void accepted(const char *option, const char *value) {
  mp_config cfg;
  CHECK_EQ_INT(PARSE(&cfg, option, value, "app.lua"), MP_CONFIG_RUN);
}

static void test_bounds(void) {
  refused("--max-header-size", "255",
          "moonport: --max-header-size: invalid value '255': the head limit "
          "is at least 256 bytes\n");
  accepted("--max-header-size", "256");
  for (size_t i = 0; i < 3; i++) {
    const char *store[] = {"--shared-size", "--mock-state-size",
                           "--journal-memory"};
    char msg[128];
    snprintf(msg, sizeof msg,
             "moonport: %s: invalid value '65535': the store is at least "
             "64k\n", store[i]);
    refused(store[i], "65535", msg);
    accepted(store[i], "64k");
  }
  refused("--max-body-size", "2049m",
          "moonport: --max-body-size: invalid value '2049m': expected a size "
          "from 1 byte to 2g\n");
  accepted("--max-body-size", "2048m");
  refused("--max-body-size", "-5",
          "moonport: --max-body-size: invalid value '-5': expected a size in "
          "bytes\n");
  refused("--max-body-size", "0",
          "moonport: --max-body-size: invalid value '0': expected a size "
          "from 1 byte to 2g\n");
  refused("--max-headers", "0",
          "moonport: --max-headers: invalid value '0': expected a count from "
          "1 to 10000\n");
  accepted("--max-headers", "10000");
  refused("--max-headers", "10001",
          "moonport: --max-headers: invalid value '10001': expected a count "
          "from 1 to 10000\n");
  refused("--max-connections", "1000001",
          "moonport: --max-connections: invalid value '1000001': expected a "
          "count from 1 to 1000000\n");
  accepted("--journal-size", "0");
  refused("--journal-size", "-1",
          "moonport: --journal-size: invalid value '-1': expected a count "
          "from 0 to 1000000\n");
  refused("--workers", "513",
          "moonport: --workers: invalid value '513': expected auto or a "
          "count from 1 to 512\n");
  refused("--workers", "0",
          "moonport: --workers: invalid value '0': expected auto or a count "
          "from 1 to 512\n");
  refused("--idle-timeout", "0",
          "moonport: --idle-timeout: invalid value '0': expected a positive "
          "number of seconds\n");
  refused("--watch-delay", "soon",
          "moonport: --watch-delay: invalid value 'soon': expected a "
          "positive number of seconds\n");
  refused("--load-timeout", "31536001",
          "moonport: --load-timeout: invalid value '31536001': expected a "
          "positive number of seconds\n");
  refused("--error-log", "-",
          "moonport: --error-log: invalid value '-': expected a path\n");
  refused("--error-log", "",
          "moonport: --error-log: invalid value '': expected a path\n");
  refused("--access-log", "",
          "moonport: --access-log: invalid value '': expected a path or -\n");
  accepted("--access-log", "-");
  refused("--mock", "",
          "moonport: --mock: invalid value '': expected a directory\n");
  refused("--admin-host", "",
          "moonport: --admin-host: invalid value '': expected a host name\n");
  refused("--server-header", "a\x01",
          "moonport: --server-header: invalid value 'a\x01': expected off or "
          "a field value of 1 to 128 bytes, no control bytes\n");
  refused("--listen", "127.0.0.1:65536",
          "moonport: --listen: invalid value '127.0.0.1:65536': port must be "
          "0..65535\n");
  refused("--stats=1", NULL, "moonport: --stats takes no value\n");
  refused("--no-such-option", NULL,
          "moonport: unknown option '--no-such-option' (see --help)\n");
  mp_config cfg;
  CHECK_EQ_INT(PARSE(&cfg, "app.lua", "--max-body-size"), MP_CONFIG_USAGE);
  CHECK(strcmp(output, "moonport: --max-body-size needs a value (BYTES)\n") == 0);
}

static void test_special_values(void) {
  mp_config cfg;
  CHECK_EQ_INT(PARSE(&cfg, "--server-header", "off", "app.lua"), MP_CONFIG_RUN);
  CHECK(cfg.server_header == NULL);
  CHECK_EQ_INT(PARSE(&cfg, "--workers", "auto", "app.lua"), MP_CONFIG_RUN);
  CHECK(cfg.workers_auto && cfg.workers >= 1 && cfg.workers <= MP_MAX_WORKERS);
  /* A later count overrides auto. */
  CHECK_EQ_INT(PARSE(&cfg, "--workers", "auto", "--workers", "3", "app.lua"),
               MP_CONFIG_RUN);
  CHECK(!cfg.workers_auto && cfg.workers == 3);
  CHECK_EQ_INT(PARSE(&cfg, "--listen", "[::1]:0", "app.lua"), MP_CONFIG_RUN);
  CHECK(strcmp(cfg.host, "::1") == 0 && cfg.port == 0);
  CHECK_EQ_INT(PARSE(&cfg, "--max-body-size", "3k", "--max-header-size", "2M",
                     "app.lua"),
               MP_CONFIG_RUN);
  CHECK_EQ_INT(cfg.max_body_size, 3 * 1024);
  CHECK_EQ_INT(cfg.max_header_size, 2 * 1024 * 1024);
  CHECK_EQ_INT(PARSE(&cfg, "--version"), MP_CONFIG_EXIT);
  CHECK(strncmp(output, "moonport ", 9) == 0);
  CHECK_EQ_INT(PARSE(&cfg, "--mock", "d", "app.lua"), MP_CONFIG_USAGE);
  CHECK_EQ_INT(PARSE(&cfg, "--stats"), MP_CONFIG_USAGE);
  CHECK(strcmp(output, "moonport: no APP.lua given (see --help)\n") == 0);
  CHECK_EQ_INT(PARSE(&cfg, "--access-log-format", "apache", "app.lua"), MP_CONFIG_USAGE);
  CHECK(strstr(output, "--access-log-format apache") != NULL);
  /* --record-mappings records what --proxy-all answers into --mock DIR. */
  CHECK_EQ_INT(PARSE(&cfg, "--mock", "d", "--record-mappings"), MP_CONFIG_USAGE);
  CHECK(strstr(output, "--record-mappings") != NULL);
  /* json-server's options need --json-db. */
  CHECK_EQ_INT(PARSE(&cfg, "--read-only", "app.lua"), MP_CONFIG_USAGE);
  CHECK(strstr(output, "--json-db") != NULL);
  CHECK_EQ_INT(PARSE(&cfg, "--mock", "d", "--routes", "r.json"), MP_CONFIG_USAGE);
  CHECK_EQ_INT(PARSE(&cfg, "--mock", "d", "--json-db", "db.json", "--routes", "r.json"),
               MP_CONFIG_RUN);
  /* --openapi: instead of an APP, but beside one for --check. */
  CHECK_EQ_INT(PARSE(&cfg, "--openapi", "a.yaml", "app.lua"), MP_CONFIG_USAGE);
  CHECK(strstr(output, "openapi.mock") != NULL);
  CHECK_EQ_INT(PARSE(&cfg, "--check", "--openapi", "a.yaml", "app.lua"), MP_CONFIG_RUN);
  CHECK(!cfg.openapi_mock && strcmp(cfg.app, "app.lua") == 0);
  CHECK_EQ_INT(PARSE(&cfg, "--mock", "d", "--openapi", "a.yaml"), MP_CONFIG_RUN);
  CHECK(cfg.openapi_mock);
  /* --dynamic and --seed need --openapi; a seed is a whole number. */
  CHECK_EQ_INT(PARSE(&cfg, "--dynamic", "app.lua"), MP_CONFIG_USAGE);
  CHECK(strcmp(output, "moonport: --dynamic and --seed go with --openapi\n") == 0);
  CHECK_EQ_INT(PARSE(&cfg, "--mock", "d", "--seed", "1"), MP_CONFIG_USAGE);
  CHECK_EQ_INT(PARSE(&cfg, "--openapi", "a.yaml", "--seed", "x1"), MP_CONFIG_USAGE);
  CHECK(strcmp(output, "moonport: --seed: invalid value 'x1': expected a whole "
               "number of at most 15 digits\n") == 0);
  CHECK_EQ_INT(PARSE(&cfg, "--openapi", "a.yaml", "--seed", "1234567890123456"),
               MP_CONFIG_USAGE);
  CHECK_EQ_INT(PARSE(&cfg, "--openapi", "a.yaml", "--seed", "0"), MP_CONFIG_RUN);
}

/* --metrics-allow: repeatable ranges, IPv4 and IPv6, matched against
 * addresses as the endpoint does; only with --metrics. */
static void test_metrics_allow(void) {
  mp_config cfg;
  CHECK_EQ_INT(PARSE(&cfg, "--metrics", "--metrics-allow", "10.1.0.0/16",
                     "--metrics-allow", "2001:db8::/32", "--metrics-allow",
                     "192.0.2.7", "app.lua"),
               MP_CONFIG_RUN);
  CHECK_EQ_INT(cfg.metrics_allow.n, 3);
  struct sockaddr_in in4 = {.sin_family = AF_INET};
  struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};
  const struct {
    const char *addr;
    bool in;
  } cases[] = {
      {"10.1.200.3", true},     {"10.2.0.1", false},  {"192.0.2.7", true},
      {"192.0.2.8", false},     {"2001:db8:5::1", true},
      {"2001:db9::1", false},   {"::ffff:10.1.0.9", true},
      {"::ffff:10.3.0.9", false}, {"127.0.0.1", false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const struct sockaddr *sa;
    if (inet_pton(AF_INET, cases[i].addr, &in4.sin_addr) == 1) {
      sa = (const struct sockaddr *)&in4;
    } else {
      CHECK(inet_pton(AF_INET6, cases[i].addr, &in6.sin6_addr) == 1);
      sa = (const struct sockaddr *)&in6;
    }
    check_count++;
    if (mp_cidr_list_contains(&cfg.metrics_allow, sa) != cases[i].in) {
      check_failures++;
      fprintf(stderr, "--metrics-allow: %s should%s match\n", cases[i].addr,
              cases[i].in ? "" : " not");
    }
  }
  refused("--metrics-allow", "10.0.0.0/33",
          "moonport: --metrics-allow: invalid value '10.0.0.0/33': expected "
          "an IPv4 or IPv6 address, with /BITS or not\n");
  refused("--metrics-allow", "example.com",
          "moonport: --metrics-allow: invalid value 'example.com': expected "
          "an IPv4 or IPv6 address, with /BITS or not\n");
  CHECK_EQ_INT(PARSE(&cfg, "--metrics-allow", "10.0.0.0/8", "app.lua"),
               MP_CONFIG_USAGE);
  CHECK(strcmp(output, "moonport: --metrics-allow goes with --metrics\n") ==
        0);
}

/* --trusted-proxy: repeatable, IPv4 and IPv6, host bits cleared, and
 * what is not a range refused. */
static void test_trusted_proxy(void) {
  mp_config cfg;
  CHECK_EQ_INT(PARSE(&cfg, "--trusted-proxy", "10.1.2.3/8", "--trusted-proxy",
                     "::1", "--trusted-proxy=2001:db8::/32", "app.lua"),
               MP_CONFIG_RUN);
  CHECK_EQ_INT(cfg.trusted_proxies.n, 3);
  const mp_cidr *a = &cfg.trusted_proxies.v[0];
  CHECK_EQ_INT(a->family, 4);
  CHECK_EQ_INT(a->bits, 8);
  CHECK(a->addr[0] == 10 && a->addr[1] == 0 && a->addr[3] == 0);
  CHECK_EQ_INT(cfg.trusted_proxies.v[1].family, 6);
  CHECK_EQ_INT(cfg.trusted_proxies.v[1].bits, 128);
  CHECK_EQ_INT(cfg.trusted_proxies.v[2].bits, 32);
  uint8_t fam, addr[16];
  CHECK(mp_cidr_addr("10.200.0.1", 10, &fam, addr));
  CHECK(mp_cidr_list_has(&cfg.trusted_proxies, fam, addr));
  CHECK(mp_cidr_addr("::ffff:10.9.9.9", 15, &fam, addr));
  CHECK(fam == 4 && mp_cidr_list_has(&cfg.trusted_proxies, fam, addr));
  CHECK(mp_cidr_addr("11.0.0.1", 8, &fam, addr));
  CHECK(!mp_cidr_list_has(&cfg.trusted_proxies, fam, addr));
  CHECK(mp_cidr_addr("2001:db8:ffff::1", 16, &fam, addr));
  CHECK(mp_cidr_list_has(&cfg.trusted_proxies, fam, addr));
  CHECK(mp_cidr_addr("2001:db9::1", 11, &fam, addr));
  CHECK(!mp_cidr_list_has(&cfg.trusted_proxies, fam, addr));
  CHECK(!mp_cidr_addr("10.0.0", 6, &fam, addr));
  static const char *const bad[] = {"10.0.0.0/33", "::/129", "10.0.0.0/",
                                    "10.0.0.0/-1", "host.test", "10.0.0.0/8x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK_EQ_INT(PARSE(&cfg, "--trusted-proxy", bad[i], "app.lua"),
                 MP_CONFIG_USAGE);
    CHECK(strstr(output, "--trusted-proxy: invalid value") != NULL);
  }
}

int main(void) {
  int fd = mkstemp(out_path);
  if (fd < 0) return 2;
  close(fd);
  test_defaults();
  test_each_option_sets_its_field_only();
  test_trusted_proxy();
  test_help_lists_what_is_tested();
  test_help_shows_defaults();
  test_bounds();
  test_special_values();
  test_metrics_allow();
  unlink(out_path);
  return check_report("test_config");
}
