/*
 * moonport's entry point: parse the command line, start the worker, and
 * turn the outcome into the exit status (0 served or checked, 1 a broken app
 * or unusable address, 2 a usage error).
 */
#include <stdio.h>

#include "config.h"
#include "router.h"
#include "worker.h"

static void print_routes(const mp_router *r) {
  unsigned n = mp_router_count(r);
  for (unsigned i = 0; i < n; i++) {
    const mp_route *route = mp_router_route(r, i);
    printf("%s %s\n", llhttp_method_name((llhttp_method_t)route->method),
           route->pattern);
  }
}

int main(int argc, char **argv) {
  mp_config cfg;
  int rc = mp_config_parse(&cfg, argc, argv);
  if (rc == MP_CONFIG_EXIT) return 0;
  if (rc == MP_CONFIG_USAGE) return 2;

  static mp_worker w;
  rc = mp_worker_init(&w, &cfg);
  if (rc == 0) {
    if (cfg.check) {
      printf("%s: ok, %u route%s\n", cfg.app, mp_router_count(w.router),
             mp_router_count(w.router) == 1 ? "" : "s");
      print_routes(w.router);
    } else {
      rc = mp_worker_run(&w);
    }
  }
  mp_worker_destroy(&w);
  return rc;
}
