/*
 * The settings: what the command line sets, read by every layer. The
 * parser that fills them lives above all the layers that read them
 * (server/proc/config.c); only the process code calls it. Parsing has no
 * side effects beyond filling mp_config and printing to stdout/stderr.
 */
#ifndef MP_CONFIG_H
#define MP_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cidr.h"

/* The most worker processes --workers accepts. */
#define MP_MAX_WORKERS 512

typedef struct mp_config {
  char host[256];
  int port;
  const char *app; /* the app script's path, as given */
  bool check;      /* load, print routes, exit */
  bool debug;      /* error details in 500 responses, X-Moonport-Alloc */
  bool stats;      /* serve GET /__moonport/stats to loopback clients */
  bool metrics;    /* serve GET /__moonport/metrics (Prometheus) */
  mp_cidr_list metrics_allow; /* --metrics-allow: who else may scrape */
  const char *access_log; /* path, "-" for stdout, NULL for none */
  const char *server_header; /* the Server field's value, NULL for none */
  const char *error_log;  /* path, NULL for stderr */
  unsigned workers;       /* worker processes; 0 until "auto" is resolved */
  bool workers_auto;      /* --workers auto: one per usable CPU */
  uint64_t handler_timeout_ms; /* a worker in one handler this long is replaced */
  size_t shared_size;     /* bytes of the moonport.shared store */
  size_t mock_state_size; /* bytes of the mock's state store */
  size_t journal_memory;  /* bytes of the mock journal's store */
  const char *mock_dir;   /* --mock DIR: serve a WireMock directory */
  bool cors;              /* mock apps answer CORS (not --no-cors) */
  bool admin_cors;        /* /__admin answers other origins (--admin-cors) */
  const char *admin_hosts; /* --admin-host: more Host names for /__admin */
  const char *proxy_all;  /* --proxy-all URL: unmatched mock requests go there */
  const char *json_db;    /* --json-db FILE: serve it as json-server does */
  const char *mock_store; /* --mock-store URL: the mock's state in Redis */
  /* json-server's options, for --json-db: */
  const char *json_routes; /* --routes FILE: URL rewriting rules */
  const char *json_static; /* --static DIR: files served first */
  const char *json_id;     /* --id NAME: the id field, NULL for "id" */
  const char *json_fks;    /* --foreign-key-suffix: NULL for "Id" */
  bool json_read_only;     /* --read-only: only GET is answered */
  unsigned json_delay_ms;  /* --delay MS: before each database answer */
  bool wiremock_404;      /* --wiremock-404: WireMock's page for unmatched requests */
  /* OpenAPI: */
  const char *openapi;    /* --openapi FILE: mock the document (with an APP
                             only for --check: compare the two) */
  bool openapi_dynamic;   /* --dynamic: random answers from the schemas */
  const char *openapi_seed; /* --seed N: digits, or NULL */
  bool openapi_mock;      /* --openapi without an APP: the library's mock
                             app serves the document (set by the parser) */
  const char *access_log_format; /* --access-log-format: its name */
  bool request_id;        /* --request-id: every request gets an id */
  bool gzip;              /* --gzip: compress what clients accept */
  bool record_mappings;   /* --record-mappings: what --proxy-all answers is recorded */
  unsigned journal_size;  /* requests the mock journal keeps */
  bool watch;             /* reload when the app's files change */
  uint64_t watch_delay_ms; /* after the last change of a burst */
  size_t request_memory_limit; /* Lua bytes one request may allocate */
  uint64_t load_timeout_ms;    /* longest an app may take to load */
  size_t load_memory_limit;    /* how far loading may grow the Lua heap */
  size_t write_high_water; /* unsent bytes past which res:write waits */
  uint64_t idle_timeout_ms;
  uint64_t shutdown_timeout_ms;
  uint64_t header_timeout_ms; /* a request head must be complete within */
  uint64_t body_timeout_ms;   /* longest wait between body bytes */
  uint64_t write_timeout_ms;  /* longest wait for a reader to take bytes */
  size_t max_body_size;
  size_t max_header_size;
  unsigned max_headers;
  unsigned max_connections;
  uint64_t resolver_cache_ms; /* how long a resolved host name is kept */
  const char *tls_ca;          /* CA certificates for outbound TLS, or NULL
                                  for the system store */
  const char *pg;              /* --pg CONNINFO: moonport.pg's default */
  uint64_t pg_timeout_ms;      /* a query's default timeout */
  /* Deployment: */
  const char *user;     /* --user USER[:GROUP]: who the server runs as, or NULL */
  const char *pid_file; /* --pid-file PATH: the master's pid, or NULL */
  mp_cidr_list trusted_proxies; /* --trusted-proxy CIDR, each one given */
} mp_config;

enum {
  MP_CONFIG_RUN = 0,  /* serve (or check) */
  MP_CONFIG_EXIT = 1, /* --help or --version was printed: exit 0 */
  MP_CONFIG_USAGE = 2 /* a usage error was printed: exit 2 */
};

/* Fills cfg from argv. Returns MP_CONFIG_RUN, MP_CONFIG_EXIT or
 * MP_CONFIG_USAGE (after printing one line naming the problem). */
int mp_config_parse(mp_config *cfg, int argc, char **argv);

/* What the server serves, as its messages name it: *what is "--mock ",
 * "--json-db ", "--openapi " or "" and *name the directory, the file or
 * the APP. */
void mp_config_source(const mp_config *cfg, const char **what,
                      const char **name);

#endif
