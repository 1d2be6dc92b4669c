/*
 * moonport's entry point: parse the command line, then become what this
 * process is: the master (the command as typed), a worker (exec'd by the
 * master with MP_WORKER_ENV set), the master's check of the app (exec'd
 * with MP_CHECK_ENV set), or a one-off check of the app (--check).
 * The exit status: 0 served or checked, 1 a broken app, an unusable
 * address or a missing Lua library, 2 a usage error, 3 a --check
 * --openapi that found the document and the app disagree.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "vm.h"
#include "errors.h"
#include "log.h"
#include "master.h"
#include "router.h"
#include "shared.h"
#include "worker.h"

static void print_routes(const mp_router *r) {
  unsigned n = mp_router_count(r);
  for (unsigned i = 0; i < n; i++) {
    const mp_route *route = mp_router_route(r, i);
    printf("%s %s\n", llhttp_method_name((llhttp_method_t)route->method),
           route->pattern);
  }
}

/* --check --openapi FILE APP: the document's operations against the
 * app's routes (lua/moonport/openapi/check.lua prints the differences).
 * Returns the exit status: 0 when they agree, 3 when they differ, 1
 * when the document does not load. */
static int compare_openapi(const mp_config *cfg, mp_vm *vm) {
  const mp_router *r = mp_vm_router(vm);
  unsigned n = mp_router_count(r);
  const char **args = calloc(n + 2, sizeof *args);
  char **names = calloc(n + 1, sizeof *names);
  int status = 1;
  if (args == NULL || names == NULL) goto out;
  args[0] = cfg->openapi;
  args[1] = cfg->app;
  for (unsigned i = 0; i < n; i++) {
    const mp_route *route = mp_router_route(r, i);
    const char *method = llhttp_method_name((llhttp_method_t)route->method);
    size_t len = strlen(method) + strlen(route->pattern) + 2;
    if ((names[i] = malloc(len)) == NULL) goto out;
    snprintf(names[i], len, "%s %s", method, route->pattern);
    args[i + 2] = names[i];
  }
  char err[1024];
  int rc = mp_vm_call(vm, "moonport.openapi.check", "compare", args, n + 2,
                      err, sizeof err);
  fflush(stdout);
  if (rc < 0) fprintf(stderr, "%s\n", err);
  else status = rc == 0 ? 0 : 3;
out:
  if (args == NULL || names == NULL) fprintf(stderr, "moonport: out of memory\n");
  for (unsigned i = 0; names != NULL && i < n; i++) free(names[i]);
  free(names);
  free(args);
  return status;
}

static char timeout_msg[512];

/* --load-timeout passed during --check: nothing to clean up, so say so
 * and leave (write and _exit are safe in a signal handler). */
static void on_alarm(int sig) {
  (void)sig;
  ssize_t n = write(STDERR_FILENO, timeout_msg, strlen(timeout_msg));
  (void)n;
  _exit(1);
}

/* Loads the app in a state of its own (with a store of its own, in case
 * the script uses moonport.shared while loading) and lists its routes. */
static int check(const mp_config *cfg) {
  const char *what, *name;
  mp_config_source(cfg, &what, &name);
  snprintf(timeout_msg, sizeof timeout_msg,
           "%s: loading took longer than --load-timeout (%.3g s)\n", name,
           (double)cfg->load_timeout_ms / 1000.0);
  signal(SIGALRM, on_alarm);
  struct itimerval it = {.it_value = {
                             .tv_sec = (time_t)(cfg->load_timeout_ms / 1000),
                             .tv_usec = (suseconds_t)(cfg->load_timeout_ms % 1000) * 1000}};
  setitimer(ITIMER_REAL, &it, NULL);
  mp_shared *shared = NULL;
  int rc = mp_worker_shared_create(cfg, 1, &shared);
  if (rc != 0) {
    fprintf(stderr, "moonport: cannot create the shared store: %s\n",
            mp_strerror(rc));
    return 1;
  }
  mp_vm_host host = {.cfg = cfg, .shared = shared};
  char err[1024];
  mp_vm *vm = mp_vm_open(&host, cfg->app, err, sizeof err);
  setitimer(ITIMER_REAL, &(struct itimerval){0}, NULL);
  int status = 1;
  if (vm != NULL) {
    const mp_router *router = mp_vm_router(vm);
    printf("%s%s: ok, %u route%s\n", what, name, mp_router_count(router),
           mp_router_count(router) == 1 ? "" : "s");
    print_routes(router);
    status = cfg->openapi != NULL && !cfg->openapi_mock
                 ? compare_openapi(cfg, vm)
                 : 0;
    mp_vm_close(vm);
  } else {
    fprintf(stderr, "%s\n", err);
  }
  mp_shared_close(shared);
  return status;
}

int main(int argc, char **argv) {
  mp_config cfg;
  int rc = mp_config_parse(&cfg, argc, argv);
  if (rc == MP_CONFIG_EXIT) return 0;
  if (rc == MP_CONFIG_USAGE) return 2;
  const char *why = NULL;
  const char *library = mp_vm_library_dir(&why);
  if (library == NULL) {
    fprintf(stderr, "moonport: cannot find its Lua library: %s\n", why);
    return 1;
  }
  /* --mock DIR, --json-db FILE and --openapi FILE (without an APP) run
   * the library's own app, which serves them. */
  static char mock_app[4096];
  if (cfg.mock_dir != NULL || cfg.json_db != NULL || cfg.openapi_mock) {
    snprintf(mock_app, sizeof mock_app, "%s/moonport/mock/server.lua",
             library);
    cfg.app = mock_app;
  }
  if (cfg.check) return check(&cfg);
  const char *checking = getenv(MP_CHECK_ENV);
  if (checking != NULL) {
    int master = atoi(checking);
    unsetenv(MP_CHECK_ENV);
    return mp_check_child_main(&cfg, master);
  }

  const char *worker = getenv(MP_WORKER_ENV);
  if (worker != NULL) {
    char *end;
    unsigned id = (unsigned)strtoul(worker, &end, 10);
    int master = *end == ':' ? (int)strtol(end + 1, NULL, 10) : 0;
    unsetenv(MP_WORKER_ENV);
    return mp_worker_main(&cfg, id, master);
  }
  if (cfg.error_log != NULL) {
    rc = mp_error_log_open(cfg.error_log);
    if (rc != 0) {
      fprintf(stderr, "moonport: --error-log: cannot open '%s': %s\n",
              cfg.error_log, strerror(-rc));
      return 1;
    }
  }
  return mp_master_run(&cfg, argc, argv);
}
