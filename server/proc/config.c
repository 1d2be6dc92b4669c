/*
 * Command-line parsing (see config.h). Every option is one row of the
 * options table below: its name, the kind of value it takes, the mp_config
 * field the value goes to, its default, its bounds and its help. The
 * defaults are applied by parsing each row's default text as if it had
 * been given, and --help prints that same text, so the defaults, their
 * checks and the help cannot drift apart. The manual page, moonport(1), is
 * printed from the same rows (the hidden --help-man, which the build runs
 * to make it), each option's text made by the one function --help uses, so
 * the page and --help cannot disagree either. The parser only dispatches on the
 * kind of value; no option is named in the code, so no option can set
 * another's field.
 */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "cidr.h"
#include "http1.h"
#include "log.h"
#include "http1_out.h"

#ifndef MP_VERSION
#define MP_VERSION "0.0.0"
#endif

typedef enum {
  OPT_SET,     /* a flag: sets its bool field */
  OPT_CLEAR,   /* a flag: clears its bool field, which is set by default */
  OPT_HELP,    /* prints the help, exits 0 */
  OPT_VERSION, /* prints the version, exits 0 */
  OPT_MAN,     /* prints the manual page (roff), exits 0; not listed */
  OPT_SECONDS, /* a positive number of seconds, kept in ms (uint64_t) */
  OPT_BYTES,   /* a size with an optional k or m suffix (size_t) */
  OPT_COUNT,   /* a whole number from min to max (unsigned) */
  OPT_TEXT,    /* a non-empty string, kept as given (const char *) */
  OPT_FILE,    /* a path that is not empty nor "-" (const char *) */
  OPT_LISTEN,  /* HOST:PORT into host and port (no field of its own) */
  OPT_WORKERS, /* "auto" or a count (unsigned), and workers_auto */
  OPT_SERVER,  /* "off" (NULL) or a field value (const char *) */
  OPT_CIDRS    /* an address range, added to a list (mp_cidr_list) each
                  time the option is given */
} opt_kind;

typedef struct option {
  const char *name;
  opt_kind kind;
  const char *arg;   /* the value's name in --help; NULL for a flag */
  size_t field;      /* offsetof(mp_config, ...) where the value goes */
  const char *def;   /* the default, parsed at start and shown by --help */
  uint64_t min, max; /* counts: the range; sizes: the least (0: 1 byte) */
  const char *what;  /* sizes with a least: what it limits; texts: what a
                        value must be */
  const char *help;
} option;

/* The offset of mp_config's field f, which must have type T: a row that
 * points a flag at a count, or a count at a string, does not compile.
 * (size_t and uint64_t are one type on LP64; spec/c/test_config.c checks
 * that each option lands in its own field.) */
#define FIELD(f, T)                                                      \
  (offsetof(mp_config, f) +                                             \
   0 * sizeof(char[__builtin_types_compatible_p(                         \
                       __typeof__(((mp_config *)0)->f), T) ? 1 : -1]))
#define FLAG(f) FIELD(f, bool)
#define MS(f) FIELD(f, uint64_t)
#define SIZE(f) FIELD(f, size_t)
#define COUNT(f) FIELD(f, unsigned)
#define TEXT(f) FIELD(f, const char *)
#define CIDRS(f) FIELD(f, mp_cidr_list)

#define KIB 1024u
#define MIB (1024u * 1024u)
/* Sizes go up to 2 GiB; seconds up to a year. */
#define BYTES_MAX (1ull << 31)
#define SECONDS_MAX (86400.0 * 365)

static const option options[] = {
    {"--workers", OPT_WORKERS, "N|auto", COUNT(workers), "1", 1,
     MP_MAX_WORKERS, NULL,
     "worker processes, each with its own listener, loop and Lua state; "
     "auto: one per usable CPU"},
    {"--listen", OPT_LISTEN, "HOST:PORT", 0, "127.0.0.1:8080", 0, 0, NULL,
     "address to listen on, an IP address or a name resolved at startup; "
     "port 0 picks a free one"},
    {"--idle-timeout", OPT_SECONDS, "SECONDS", MS(idle_timeout_ms), "60", 0,
     0, NULL, "close a keep-alive connection idle this long"},
    {"--header-timeout", OPT_SECONDS, "SECONDS", MS(header_timeout_ms), "10",
     0, 0, NULL,
     "a request head not complete this long after its first byte gets 408"},
    {"--body-timeout", OPT_SECONDS, "SECONDS", MS(body_timeout_ms), "60", 0,
     0, NULL, "a request body that stalls this long between bytes gets 408"},
    {"--write-timeout", OPT_SECONDS, "SECONDS", MS(write_timeout_ms), "60",
     0, 0, NULL,
     "close a connection whose client takes no response bytes for this "
     "long"},
    {"--shutdown-timeout", OPT_SECONDS, "SECONDS", MS(shutdown_timeout_ms),
     "10", 0, 0, NULL,
     "on SIGTERM or SIGINT, wait this long for requests in flight"},
    {"--handler-timeout", OPT_SECONDS, "SECONDS", MS(handler_timeout_ms),
     "30", 0, 0, NULL,
     "a worker that stays in one handler this long without yielding is "
     "killed and replaced"},
    {"--max-body-size", OPT_BYTES, "BYTES", SIZE(max_body_size), "1m", 0, 0,
     NULL, "largest request body; larger gets 413"},
    {"--max-header-size", OPT_BYTES, "BYTES", SIZE(max_header_size), "16k",
     256, 0, "the head limit",
     "largest request head; larger gets 431, or 414 for the request line"},
    {"--max-headers", OPT_COUNT, "N", COUNT(max_headers), "100", 1, 10000,
     NULL, "most header fields in a request; more gets 431"},
    {"--max-connections", OPT_COUNT, "N", COUNT(max_connections), "10000", 1,
     1000000, NULL,
     "connections served at once; more are accepted and closed at once"},
    {"--write-high-water", OPT_BYTES, "BYTES", SIZE(write_high_water),
     "256k", 0, 0, NULL,
     "a handler streaming with res:write waits while more than this is "
     "unsent"},
    {"--request-memory-limit", OPT_BYTES, "BYTES",
     SIZE(request_memory_limit), "8m", 0, 0, NULL,
     "how far one request may grow the Lua heap; past it the request gets "
     "500"},
    {"--load-timeout", OPT_SECONDS, "SECONDS", MS(load_timeout_ms), "10", 0,
     0, NULL,
     "loading the app (at startup and on reload) may take this long; past "
     "it the load fails"},
    {"--load-memory-limit", OPT_BYTES, "BYTES", SIZE(load_memory_limit),
     "512m", 0, 0, NULL,
     "how far loading the app may grow the Lua heap; past it the load "
     "fails"},
    {"--resolver-cache", OPT_SECONDS, "SECONDS", MS(resolver_cache_ms), "30",
     0, 0, NULL,
     "keep a host name an outbound socket resolved this long (per worker)"},
    {"--tls-ca", OPT_FILE, "FILE", TEXT(tls_ca), NULL, 0, 0, NULL,
     "PEM file of CA certificates outbound TLS verifies against, instead "
     "of the system store"},
    {"--pg", OPT_TEXT, "CONNINFO", TEXT(pg), NULL, 0, 0, "a connection string",
     "the PostgreSQL server pg.default() connects to (libpq's conninfo or "
     "URI); else DATABASE_URL, else libpq's PG* environment"},
    {"--pg-timeout", OPT_SECONDS, "SECONDS", MS(pg_timeout_ms), "30", 0, 0,
     NULL, "a PostgreSQL query not answered this long fails with a timeout"},
    {"--mock", OPT_TEXT, "DIR", TEXT(mock_dir), NULL, 0, 0, "a directory",
     "serve a WireMock directory (DIR/mappings, DIR/__files, DIR/*.lua) "
     "instead of an APP"},
    /* No journal at all is a choice: its least is 0. */
    {"--journal-size", OPT_COUNT, "N", COUNT(journal_size), "1000", 0,
     1000000, NULL,
     "requests the mock journal keeps, across workers; 0 for none"},
    {"--journal-memory", OPT_BYTES, "BYTES", SIZE(journal_memory), "32m",
     64 * KIB, 0, "the store",
     "memory the mock journal's entries may take, across workers; past it "
     "the oldest are dropped"},
    {"--mock-state-size", OPT_BYTES, "BYTES", SIZE(mock_state_size), "16m",
     64 * KIB, 0, "the store",
     "memory for the mock's admin-added mappings, scenario states and "
     "counters, never evicted; a change past it gets 507"},
    {"--no-cors", OPT_CLEAR, NULL, FLAG(cors), NULL, 0, 0, NULL,
     "mock apps do not answer CORS preflights or add "
     "Access-Control-Allow-Origin"},
    {"--admin-cors", OPT_SET, NULL, FLAG(admin_cors), NULL, 0, 0, NULL,
     "let web pages of other origins call the mock's /__admin API (CORS "
     "there too)"},
    {"--admin-host", OPT_TEXT, "NAME[,NAME...]", TEXT(admin_hosts), NULL, 0,
     0, "a host name",
     "the mock's /__admin API also answers requests whose Host is NAME "
     "(besides loopback addresses, localhost and the --listen address)"},
    {"--proxy-all", OPT_TEXT, "URL", TEXT(proxy_all), NULL, 0, 0, "a URL",
     "the mock forwards every request no stub matches to URL (an http or "
     "https base) and answers with what it answers"},
    {"--json-db", OPT_TEXT, "FILE", TEXT(json_db), NULL, 0, 0, "a file",
     "serve FILE as json-server 0.17 does (a REST API over its arrays and "
     "objects, written back on every change); with --mock, next to its "
     "stubs; instead of an APP"},
    {"--mock-store", OPT_TEXT, "URL", TEXT(mock_store), NULL, 0, 0,
     "a redis:// or unix: URL",
     "keep the mock's admin-added mappings, scenario states, journal and "
     "--json-db data in Redis (redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] "
     "or unix:/PATH, and ?db=N&password=P&prefix=P&timeout=MS), so that "
     "instances "
     "sharing it act as one mock"},
    /* json-server 0.17's options, under its names. */
    {"--routes", OPT_FILE, "FILE", TEXT(json_routes), NULL, 0, 0, NULL,
     "with --json-db: rewrite request URLs by the rules of FILE "
     "(json-server's routes.json: {\"/api/*\": \"/$1\"}) before the "
     "database sees them"},
    {"--static", OPT_FILE, "DIR", TEXT(json_static), NULL, 0, 0, NULL,
     "with --json-db: serve the files of DIR first; without it, those of "
     "./public when it exists"},
    {"--id", OPT_TEXT, "NAME", TEXT(json_id), NULL, 0, 0, "a field name",
     "with --json-db: the id field of items, id unless given"},
    {"--foreign-key-suffix", OPT_TEXT, "SUFFIX", TEXT(json_fks), NULL, 0, 0,
     "a suffix",
     "with --json-db: what ends the fields that name a parent item, Id "
     "(as in postId) unless given"},
    {"--read-only", OPT_SET, NULL, FLAG(json_read_only), NULL, 0, 0, NULL,
     "with --json-db: answer 403 to every method but GET"},
    {"--delay", OPT_COUNT, "MS", COUNT(json_delay_ms), "0", 0, 3600000,
     NULL, "with --json-db: wait MS milliseconds before each answer of the "
     "database"},
    /* OpenAPI (lua/moonport/openapi/). */
    {"--openapi", OPT_FILE, "FILE", TEXT(openapi), NULL, 0, 0, "a file",
     "mock the OpenAPI 3.0 or 3.1 document FILE (YAML or JSON) as Prism "
     "does: routes, examples, request validation; with --mock, below its "
     "stubs; instead of an APP (with an APP and --check: compare them)"},
    {"--dynamic", OPT_SET, NULL, FLAG(openapi_dynamic), NULL, 0, 0, NULL,
     "with --openapi: answer with random data valid against the schemas "
     "instead of the examples"},
    {"--seed", OPT_TEXT, "N", TEXT(openapi_seed), NULL, 0, 0, "a number",
     "with --openapi: seed the random data of --dynamic and of Prefer: "
     "dynamic=true (a whole number), so that a run answers the same "
     "requests alike"},
    {"--wiremock-404", OPT_SET, NULL, FLAG(wiremock_404), NULL, 0, 0, NULL,
     "the mock answers a request no stub matched with WireMock's 404 page "
     "(its diff of the closest stub) instead of moonport's report"},
    {"--record-mappings", OPT_SET, NULL, FLAG(record_mappings), NULL, 0, 0,
     NULL,
     "with --proxy-all: write what the API answers to DIR/mappings and "
     "DIR/__files as stubs, one per distinct request"},
    {"--no-watch", OPT_CLEAR, NULL, FLAG(watch), NULL, 0, 0, NULL,
     "do not reload when the app's files change (SIGHUP still reloads)"},
    {"--watch-delay", OPT_SECONDS, "SECONDS", MS(watch_delay_ms), "0.05", 0,
     0, NULL, "reload this long after the last change to the app's files"},
    {"--shared-size", OPT_BYTES, "BYTES", SIZE(shared_size), "16m", 64 * KIB,
     0, "the store",
     "size of the moonport.shared store, shared by all workers"},
    {"--error-log", OPT_FILE, "PATH", TEXT(error_log), NULL, 0, 0,
     "a path",
     "write the error log to PATH instead of stderr (SIGUSR1 reopens it)"},
    {"--access-log", OPT_TEXT, "PATH|-", TEXT(access_log), NULL, 0, 0,
     "a path or -",
     "log every request to PATH (- for stdout): Common Log Format, then "
     "seconds, Lua bytes and C bytes"},
    {"--access-log-format", OPT_TEXT, "moonport|common|combined|json",
     TEXT(access_log_format), "moonport", 0, 0, "a format",
     "the access log's lines: moonport (Common Log Format, then seconds, "
     "Lua and C bytes, the worker and the request id), common, combined "
     "(with referer and user agent) or json (an object per line)"},
    {"--gzip", OPT_SET, NULL, FLAG(gzip), NULL, 0, 0, NULL,
     "gzip response bodies of text types (text/*, JSON, JavaScript, XML, "
     "SVG) from 1 KiB up for clients that accept it"},
    {"--request-id", OPT_SET, NULL, FLAG(request_id), NULL, 0, 0, NULL,
     "give every request an id (the client's X-Request-Id when it is a "
     "short token, else one made here): req.id, the X-Request-Id response "
     "field, the access log and the request's error log lines"},
    {"--server-header", OPT_SERVER, "off|NAME", TEXT(server_header),
     "moonport", 0, MP_H1_SERVER_MAX, NULL,
     "the Server field of every response: NAME, or none with off"},
    /* Deployment. */
    {"--user", OPT_TEXT, "USER[:GROUP]", TEXT(user), NULL, 0, 0,
     "a user name",
     "started as root: bind the port, open the logs and the pid file, then "
     "run the master and workers as USER (and GROUP, else USER's group)"},
    {"--pid-file", OPT_FILE, "PATH", TEXT(pid_file), NULL, 0, 0, "a path",
     "write the master's pid to PATH once it serves, remove it at exit; "
     "refuse to start while a running moonport holds it"},
    {"--trusted-proxy", OPT_CIDRS, "CIDR", CIDRS(trusted_proxies), NULL, 0,
     MP_CIDR_MAX, NULL,
     "a peer in this range (a proxy) has req.remote_addr taken from "
     "X-Forwarded-For (the rightmost address not trusted); repeatable"},
    {"--stats", OPT_SET, NULL, FLAG(stats), NULL, 0, 0, NULL,
     "serve GET /__moonport/stats (JSON) to loopback clients"},
    {"--metrics", OPT_SET, NULL, FLAG(metrics), NULL, 0, 0, NULL,
     "serve GET /__moonport/metrics (Prometheus text format) to loopback "
     "clients and those --metrics-allow names"},
    {"--metrics-allow", OPT_CIDRS, "CIDR", CIDRS(metrics_allow),
     NULL, 0, MP_CIDR_MAX, NULL,
     "with --metrics: clients in CIDR (10.0.0.0/8, 2001:db8::/32, or one "
     "address) may scrape too; repeatable"},
    {"--check", OPT_SET, NULL, FLAG(check), NULL, 0, 0, NULL,
     "load the app, print its routes and exit"},
    {"--debug", OPT_SET, NULL, FLAG(debug), NULL, 0, 0, NULL,
     "put handler errors in 500 responses and X-Moonport-Alloc on every "
     "response"},
    {"--version", OPT_VERSION, NULL, 0, NULL, 0, 0, NULL,
     "print the version and exit"},
    {"--help", OPT_HELP, NULL, 0, NULL, 0, 0, NULL,
     "print this help and exit"},
    {"--help-man", OPT_MAN, NULL, 0, NULL, 0, 0, NULL,
     "print the manual page moonport(1) in roff and exit"},
};

#define NOPTIONS (sizeof options / sizeof options[0])

void mp_config_source(const mp_config *cfg, const char **what,
                      const char **name) {
  if (cfg->mock_dir != NULL) {
    *what = "--mock ";
    *name = cfg->mock_dir;
  } else if (cfg->json_db != NULL) {
    *what = "--json-db ";
    *name = cfg->json_db;
  } else if (cfg->openapi_mock) {
    *what = "--openapi ";
    *name = cfg->openapi;
  } else {
    *what = "";
    *name = cfg->app;
  }
}

/* A size as --help and the messages write it: 64k, 16m, 256 bytes. */
static void format_size(char *out, size_t cap, uint64_t n) {
  if (n % MIB == 0)
    snprintf(out, cap, "%" PRIu64 "m", n / MIB);
  else if (n % KIB == 0)
    snprintf(out, cap, "%" PRIu64 "k", n / KIB);
  else
    snprintf(out, cap, "%" PRIu64 " bytes", n);
}

/* An option as --help and the manual page show it: its name and value
 * (left) and its help with its default and least (text). */
static void describe(const option *o, char *left, size_t leftcap, char *text,
                     size_t textcap) {
  char least[48] = "";
  snprintf(left, leftcap, "%s%s%s", o->name, o->arg ? " " : "",
           o->arg ? o->arg : "");
  if (o->kind == OPT_BYTES && o->min > 1) {
    char size[32];
    format_size(size, sizeof size, o->min);
    snprintf(least, sizeof least, ", at least %s", size);
  }
  if (o->def != NULL)
    snprintf(text, textcap, "%s (default %s%s)", o->help, o->def, least);
  else
    snprintf(text, textcap, "%s", o->help);
}

static const char usage_lines[] =
    "usage: moonport [options] APP.lua\n"
    "       moonport [options] --mock DIR\n"
    "       moonport [options] --json-db FILE\n"
    "       moonport [options] --openapi FILE\n";
static const char units_line[] =
    "BYTES takes a k or m suffix (KiB, MiB). SECONDS may have a fraction.";

static void usage(FILE *out) {
  fprintf(out, "%s\noptions:\n", usage_lines);
  for (size_t i = 0; i < NOPTIONS; i++) {
    if (options[i].kind == OPT_MAN) continue;
    char left[64], text[640];
    describe(&options[i], left, sizeof left, text, sizeof text);
    fprintf(out, "  %-30s %s\n", left, text);
  }
  fprintf(out, "\n%s\n", units_line);
}

/* Writes s as roff text: backslashes escaped, hyphens as \- (so that
 * options can be searched for and copied), a leading dot or quote made
 * plain. */
static void roff(FILE *out, const char *s) {
  if (*s == '.' || *s == '\'') fputs("\\&", out);
  for (; *s; s++) {
    if (*s == '\\') fputs("\\e", out);
    else if (*s == '-') fputs("\\-", out);
    else fputc(*s, out);
  }
}

/* The manual page's prose before the options and after them, in roff:
 * each entry a request line or a paragraph. */
static const char *const man_before[] = {
    ".SH DESCRIPTION",
    "moonport is an HTTP/1.1 application server whose route handlers are "
    "Lua scripts, run by LuaJIT in a libuv event loop.",
    ".PP",
    "It loads \\fIAPP.lua\\fR (with \\fB\\-\\-mock\\fR, its mock "
    "server over a WireMock directory; with \\fB\\-\\-json\\-db\\fR, "
    "json\\-server's routes over a JSON file; with "
    "\\fB\\-\\-openapi\\fR, a mock of an OpenAPI document), prints one line once every "
    "worker listens, and serves until SIGTERM or SIGINT. A master process "
    "checks the app, starts the workers, replaces a worker that dies and "
    "reloads the app when its files change.",
    ".PP",
    "The Lua library is found relative to the executable: "
    "\\fIPREFIX\\fR/share/lua/5.1/moonport/ when it is "
    "\\fIPREFIX\\fR/bin/moonport.",
};
static const char *const man_after[] = {
    ".SH SIGNALS",
    "Signals go to the master process.",
    ".TP",
    ".BR SIGTERM \", \" SIGINT",
    "Stop gracefully: stop accepting, let requests in flight finish (up to "
    "\\fB\\-\\-shutdown\\-timeout\\fR), then exit 0. A second signal "
    "closes everything at once.",
    ".TP",
    ".B SIGHUP",
    "Reload the app.",
    ".TP",
    ".B SIGUSR1",
    "Reopen \\fB\\-\\-error\\-log\\fR and \\fB\\-\\-access\\-log\\fR "
    "(after logrotate moved them).",
    ".SH EXIT STATUS",
    "0 after serving or a successful \\fB\\-\\-check\\fR; 1 when the "
    "app is missing or broken, the address cannot be used or the Lua "
    "library is missing; 2 for an unknown option or a bad value; 3 when "
    "\\fB\\-\\-check \\-\\-openapi\\fR found operations the app "
    "does not route or routes the document does not describe.",
    ".SH FILES",
    ".TP",
    ".I PREFIX/share/lua/5.1/moonport/",
    "The Lua library (\\fBrequire(\\(dqmoonport\\(dq)\\fR).",
    ".TP",
    ".I PREFIX/share/doc/moonport/examples/",
    "Example apps.",
    ".TP",
    ".I /etc/moonport/app.lua",
    "The app the Debian package's moonport.service runs, with the options "
    "of \\fBMOONPORT_OPTS\\fR in \\fI/etc/default/moonport\\fR; logs in "
    "\\fI/var/log/moonport/\\fR.",
    ".SH SEE ALSO",
    ".BR systemctl (1),",
    ".BR logrotate (8)",
};

static void man_lines(FILE *out, const char *const *lines, size_t n) {
  for (size_t i = 0; i < n; i++) fprintf(out, "%s\n", lines[i]);
}

/* moonport(1) in roff: the usage lines, the prose above, every option
 * --help lists with the same text, then the rest of the prose. */
static void man_page(FILE *out) {
  fprintf(out, ".TH MOONPORT 1 \"\" \"moonport %s\" \"User Commands\"\n",
          MP_VERSION);
  fputs(".nh\n.SH NAME\nmoonport \\- a Lua\\-scriptable HTTP/1.1 server\n"
        ".SH SYNOPSIS\n.nf\n", out);
  const char *line = usage_lines + strlen("usage: ");
  while (*line) {
    const char *end = strchr(line, '\n');
    char one[128];
    snprintf(one, sizeof one, "%.*s", (int)(end - line), line);
    fputs("\\fB", out);
    roff(out, one + strspn(one, " "));
    fputs("\\fR\n", out);
    line = end + 1;
    line += strspn(line, " ");
  }
  fputs(".fi\n", out);
  man_lines(out, man_before, sizeof man_before / sizeof man_before[0]);
  fputs(".SH OPTIONS\n", out);
  for (size_t i = 0; i < NOPTIONS; i++) {
    const option *o = &options[i];
    if (o->kind == OPT_MAN) continue;
    char left[64], text[640];
    describe(o, left, sizeof left, text, sizeof text);
    fputs(".TP\n\\fB", out);
    roff(out, o->name);
    fputs("\\fR", out);
    if (o->arg != NULL) {
      fputs(" \\fI", out);
      roff(out, o->arg);
      fputs("\\fR", out);
    }
    fputc('\n', out);
    roff(out, text);
    fputc('\n', out);
  }
  fputs(".PP\n", out);
  roff(out, units_line);
  fputc('\n', out);
  man_lines(out, man_after, sizeof man_after / sizeof man_after[0]);
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

/* A whole number from o->min to o->max, or -1 after the message. */
static long long parse_count(const option *o, const char *v,
                             const char *expect) {
  char *end;
  errno = 0;
  long long n = strtoll(v, &end, 10);
  if (errno || end == v || *end != '\0' || n < (long long)o->min ||
      n > (long long)o->max) {
    char why[96];
    snprintf(why, sizeof why, "%s from %" PRIu64 " to %" PRIu64, expect,
             o->min, o->max);
    bad_value(o->name, v, why);
    return -1;
  }
  return n;
}

/* Parses v as o's value into cfg. Returns MP_CONFIG_RUN or, after printing
 * the problem, MP_CONFIG_USAGE. */
static int parse_value(mp_config *cfg, const option *o, const char *v) {
  char *at = (char *)cfg + o->field;
  char *end;
  errno = 0;
  switch (o->kind) {
    case OPT_SECONDS: {
      double s = strtod(v, &end);
      if (errno || end == v || *end != '\0' || !isfinite(s) || s <= 0 ||
          s > SECONDS_MAX)
        return bad_value(o->name, v, "expected a positive number of seconds");
      uint64_t ms = (uint64_t)(s * 1000.0 + 0.5);
      memcpy(at, &ms, sizeof ms);
      return MP_CONFIG_RUN;
    }
    case OPT_BYTES: {
      if (v[0] == '-' || v[0] == '\0')
        return bad_value(o->name, v, "expected a size in bytes");
      unsigned long long n = strtoull(v, &end, 10);
      unsigned long long unit = 1;
      if (*end == 'k' || *end == 'K') unit = KIB, end++;
      else if (*end == 'm' || *end == 'M') unit = MIB, end++;
      if (errno || end == v || *end != '\0' || n == 0 || n > BYTES_MAX / unit)
        return bad_value(o->name, v, "expected a size from 1 byte to 2g");
      n *= unit;
      if (n < o->min) {
        char least[32], why[96];
        format_size(least, sizeof least, o->min);
        snprintf(why, sizeof why, "%s is at least %s", o->what, least);
        return bad_value(o->name, v, why);
      }
      size_t size = (size_t)n;
      memcpy(at, &size, sizeof size);
      return MP_CONFIG_RUN;
    }
    case OPT_COUNT: {
      long long n = parse_count(o, v, "expected a count");
      if (n < 0) return MP_CONFIG_USAGE;
      unsigned count = (unsigned)n;
      memcpy(at, &count, sizeof count);
      return MP_CONFIG_RUN;
    }
    case OPT_FILE:
    case OPT_TEXT: {
      if (v[0] == '\0' || (o->kind == OPT_FILE && strcmp(v, "-") == 0)) {
        char why[64];
        snprintf(why, sizeof why, "expected %s", o->what);
        return bad_value(o->name, v, why);
      }
      memcpy(at, &v, sizeof v);
      return MP_CONFIG_RUN;
    }
    case OPT_LISTEN:
      return parse_listen(cfg, o->name, v);
    case OPT_WORKERS: {
      if (strcmp(v, "auto") == 0) {
        unsigned unresolved = 0; /* mp_config_parse resolves it */
        memcpy(at, &unresolved, sizeof unresolved);
        cfg->workers_auto = true;
        return MP_CONFIG_RUN;
      }
      long long n = parse_count(o, v, "expected auto or a count");
      if (n < 0) return MP_CONFIG_USAGE;
      unsigned count = (unsigned)n;
      memcpy(at, &count, sizeof count);
      cfg->workers_auto = false;
      return MP_CONFIG_RUN;
    }
    case OPT_SERVER: {
      const char *value = v;
      if (strcmp(v, "off") == 0) {
        value = NULL;
      } else if (v[0] == '\0' || strlen(v) > o->max ||
                 !mp_http1_valid_value(v, strlen(v))) {
        char why[96];
        snprintf(why, sizeof why,
                 "expected off or a field value of 1 to %" PRIu64
                 " bytes, no control bytes", o->max);
        return bad_value(o->name, v, why);
      }
      memcpy(at, &value, sizeof value);
      return MP_CONFIG_RUN;
    }
    case OPT_CIDRS: {
      mp_cidr_list *list = (mp_cidr_list *)(void *)at;
      mp_cidr net;
      if (mp_cidr_parse(v, &net) != 0)
        return bad_value(o->name, v,
                         "expected an IPv4 or IPv6 address, with /BITS or not");
      if (list->n >= o->max) {
        char why[64];
        snprintf(why, sizeof why, "at most %" PRIu64 " ranges", o->max);
        return bad_value(o->name, v, why);
      }
      list->v[list->n++] = net;
      return MP_CONFIG_RUN;
    }
    case OPT_SET:
    case OPT_CLEAR:
    case OPT_HELP:
    case OPT_VERSION:
    case OPT_MAN:
      break;
  }
  return MP_CONFIG_USAGE;
}

/* Every field at its default: the defaults are parsed like given values. */
static void set_defaults(mp_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  for (size_t i = 0; i < NOPTIONS; i++) {
    const option *o = &options[i];
    if (o->kind == OPT_CLEAR) *((bool *)((char *)cfg + o->field)) = true;
    if (o->def == NULL) continue;
    int rc = parse_value(cfg, o, o->def);
    (void)rc;
    assert(rc == MP_CONFIG_RUN && "an option's default must parse");
  }
}

static const option *find_option(const char *arg, size_t nlen) {
  for (size_t k = 0; k < NOPTIONS; k++)
    if (strlen(options[k].name) == nlen &&
        strncmp(options[k].name, arg, nlen) == 0)
      return &options[k];
  return NULL;
}

int mp_config_parse(mp_config *cfg, int argc, char **argv) {
  set_defaults(cfg);
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
    const option *o = find_option(arg, nlen);
    if (o == NULL) {
      fprintf(stderr, "moonport: unknown option '%.*s' (see --help)\n",
              (int)nlen, arg);
      return MP_CONFIG_USAGE;
    }
    if (o->arg == NULL) { /* a flag */
      if (eq != NULL) {
        fprintf(stderr, "moonport: %s takes no value\n", o->name);
        return MP_CONFIG_USAGE;
      }
      if (o->kind == OPT_HELP) {
        usage(stdout);
        return MP_CONFIG_EXIT;
      }
      if (o->kind == OPT_VERSION) {
        printf("moonport %s\n", MP_VERSION);
        return MP_CONFIG_EXIT;
      }
      if (o->kind == OPT_MAN) {
        man_page(stdout);
        return MP_CONFIG_EXIT;
      }
      *((bool *)((char *)cfg + o->field)) = o->kind == OPT_SET;
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
  if (cfg->app != NULL && cfg->json_db != NULL) {
    fprintf(stderr, "moonport: --json-db serves a file; give it or an "
            "APP, not both (an APP calls mock.json_db instead)\n");
    return MP_CONFIG_USAGE;
  }
  if (cfg->app != NULL && cfg->openapi != NULL && !cfg->check) {
    fprintf(stderr, "moonport: --openapi mocks a document; give it or an "
            "APP, not both (an APP calls openapi.mock or openapi.validate "
            "instead; with --check, the two are compared)\n");
    return MP_CONFIG_USAGE;
  }
  if (cfg->app == NULL && cfg->mock_dir == NULL && cfg->json_db == NULL &&
      cfg->openapi == NULL) {
    fprintf(stderr, "moonport: no APP.lua given (see --help)\n");
    return MP_CONFIG_USAGE;
  }
  if (cfg->metrics_allow.n > 0 && !cfg->metrics) {
    fprintf(stderr, "moonport: --metrics-allow goes with --metrics\n");
    return MP_CONFIG_USAGE;
  }
  if (cfg->json_db == NULL &&
      (cfg->json_routes != NULL || cfg->json_static != NULL ||
       cfg->json_id != NULL || cfg->json_fks != NULL ||
       cfg->json_read_only || cfg->json_delay_ms != 0)) {
    fprintf(stderr, "moonport: --routes, --static, --id, "
            "--foreign-key-suffix, --read-only and --delay are json-server's "
            "options: give them with --json-db (an APP passes them to "
            "mock.json_db)\n");
    return MP_CONFIG_USAGE;
  }
  cfg->openapi_mock = cfg->openapi != NULL && cfg->app == NULL;
  if (cfg->openapi == NULL && (cfg->openapi_dynamic || cfg->openapi_seed)) {
    fprintf(stderr, "moonport: --dynamic and --seed go with --openapi\n");
    return MP_CONFIG_USAGE;
  }
  if (cfg->openapi_seed != NULL) {
    size_t n = strspn(cfg->openapi_seed, "0123456789");
    if (cfg->openapi_seed[n] != '\0' || n > 15)
      return bad_value("--seed", cfg->openapi_seed,
                       "expected a whole number of at most 15 digits");
  }
  if (mp_access_format_named(cfg->access_log_format) < 0) {
    fprintf(stderr, "moonport: --access-log-format %s: not moonport, common, "
            "combined or json\n", cfg->access_log_format);
    return MP_CONFIG_USAGE;
  }
  if (cfg->record_mappings && (cfg->mock_dir == NULL || cfg->proxy_all == NULL)) {
    fprintf(stderr, "moonport: --record-mappings records what --proxy-all "
            "answers into the --mock directory; give all three\n");
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
