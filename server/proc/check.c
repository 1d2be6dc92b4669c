/*
 * Checking the app in a process of its own (see check.h).
 *
 * The master's side owns three handles per check: the child process, the
 * read end of its report pipe and a timer. The check is over when the
 * child has exited and its report has reached end of file (the child sets
 * close-on-exec on its end at once, so nothing it starts can hold the pipe
 * open), or when the timer has killed it; the callback then runs once, and
 * the memory goes when the last handle has closed.
 *
 * The report is a few lines, each a letter and text: "F<path>" for every
 * file the load read, "R<method> <pattern>" for every route, then "K" when
 * the app loaded or "E<message>" when it did not. It is read whole (at
 * most REPORT_MAX bytes) before it is looked at.
 *
 * The child dies with the master (PR_SET_PDEATHSIG), as workers do, so
 * that a check spinning in a script never outlives it.
 *
 * The child's side loads the app exactly as a worker does (mp_vm_open,
 * with --load-memory-limit on the Lua heap), with a shared store of its
 * own, so that what a script does to moonport.shared while loading leaves
 * the real store alone. A limit on the process's data segment backs the
 * heap limit up against memory a script takes outside the Lua heap.
 */
#include "check.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "errors.h"
#include "vm.h"
#include "router.h"
#include "shared.h"
#include "worker.h"

#define REPORT_MAX (4 * 1024 * 1024)

struct mp_check {
  const mp_config *cfg;
  mp_check_cb cb;
  void *ud;
  uv_process_t proc;
  uv_pipe_t report;
  uv_timer_t timer;
  int open_handles;
  bool exited;
  bool eof;
  bool timed_out;
  bool cancelled;
  bool done; /* the callback has run */
  int64_t status;
  int term_signal;
  char *buf; /* the report so far */
  size_t len;
  size_t cap;
  bool overflow;
};

static void free_check(uv_handle_t *h) {
  mp_check *c = h->data;
  if (--c->open_handles > 0) return;
  free(c->buf);
  free(c);
}

static void close_check(mp_check *c) {
  uv_close((uv_handle_t *)&c->proc, free_check);
  uv_close((uv_handle_t *)&c->report, free_check);
  uv_close((uv_handle_t *)&c->timer, free_check);
}

/* The name errors are reported under: the app, or the mock directory. */
static const char *app_name(const mp_config *cfg) {
  return cfg->mock_dir ? cfg->mock_dir : cfg->app;
}

/* Splits the report into result; lines are cut in place. */
static void parse_report(mp_check *c, mp_check_result *res) {
  bool loaded = false;
  char *p = c->buf, *end = c->buf + c->len;
  while (p < end) {
    char *nl = memchr(p, '\n', (size_t)(end - p));
    if (nl == NULL) break; /* a line cut short: the child died writing it */
    *nl = '\0';
    char kind = *p++;
    if (kind == 'F') {
      res->files[res->nfiles++] = p;
    } else if (kind == 'R') {
      res->routes[res->nroutes++] = p;
    } else if (kind == 'E') {
      res->error = p;
    } else if (kind == 'K') {
      loaded = true;
    }
    p = nl + 1;
  }
  res->ok = loaded && res->error == NULL;
}

/* Both ends are in: tell the master what the check found. */
static void finish(mp_check *c) {
  if (c->done || !c->exited || !c->eof) return;
  c->done = true;
  uv_timer_stop(&c->timer);
  /* Lines are at least two bytes: a bound for both arrays. */
  size_t most = c->len / 2 + 1;
  char **routes = calloc(most, sizeof *routes);
  char **files = calloc(most, sizeof *files);
  char error[1024];
  mp_check_result res = {.routes = routes, .files = files};
  if (c->cancelled) {
    res.cancelled = true;
  } else if (routes == NULL || files == NULL) {
    snprintf(error, sizeof error, "%s: out of memory reading the check of "
             "the app", app_name(c->cfg));
    res.error = error;
  } else if (c->timed_out) {
    parse_report(c, &res);
    snprintf(error, sizeof error, "%s: loading took longer than "
             "--load-timeout (%.3g s); stopped it", app_name(c->cfg),
             (double)c->cfg->load_timeout_ms / 1000.0);
    res.ok = false;
    res.error = error;
    res.nroutes = 0;
  } else if (c->overflow) {
    snprintf(error, sizeof error, "%s: the check of the app reported more "
             "than %d bytes", app_name(c->cfg), REPORT_MAX);
    res.error = error;
  } else {
    parse_report(c, &res);
    if (!res.ok && res.error == NULL) {
      if (c->term_signal != 0)
        snprintf(error, sizeof error, "%s: the process checking the app was "
                 "killed by signal %d (%s)", app_name(c->cfg), c->term_signal,
                 strsignal(c->term_signal));
      else
        snprintf(error, sizeof error, "%s: the process checking the app "
                 "exited with status %lld", app_name(c->cfg),
                 (long long)c->status);
      res.error = error;
    }
  }
  c->cb(c->ud, &res);
  free(routes);
  free(files);
  close_check(c);
}

static void on_child_exit(uv_process_t *proc, int64_t status, int term_signal) {
  mp_check *c = proc->data;
  c->exited = true;
  c->status = status;
  c->term_signal = term_signal;
  finish(c);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  mp_check *c = h->data;
  (void)hint;
  if (c->cap - c->len < 4096 && c->cap < REPORT_MAX) {
    size_t cap = c->cap ? c->cap * 2 : 16384;
    char *p = realloc(c->buf, cap);
    if (p != NULL) {
      c->buf = p;
      c->cap = cap;
    }
  }
  if (c->cap == c->len) {
    /* Full: read into a scrap block so end of file still arrives. */
    static char scrap[4096];
    c->overflow = true;
    *buf = uv_buf_init(scrap, sizeof scrap);
    return;
  }
  *buf = uv_buf_init(c->buf + c->len, (unsigned)(c->cap - c->len));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  mp_check *c = s->data;
  if (n > 0) {
    if (buf->base == c->buf + c->len) c->len += (size_t)n;
    return;
  }
  if (n == 0) return;
  uv_read_stop(s);
  c->eof = true;
  finish(c);
}

static void on_timeout(uv_timer_t *t) {
  mp_check *c = t->data;
  if (c->exited) return;
  c->timed_out = true;
  uv_process_kill(&c->proc, SIGKILL);
}

mp_check *mp_check_start(uv_loop_t *loop, const mp_config *cfg,
                         const char *exe, char **argv, mp_check_cb cb,
                         void *ud) {
  mp_check *c = calloc(1, sizeof *c);
  if (c == NULL) return NULL;
  c->cfg = cfg;
  c->cb = cb;
  c->ud = ud;
  c->proc.data = c->report.data = c->timer.data = c;
  uv_pipe_init(loop, &c->report, 0);
  uv_timer_init(loop, &c->timer);

  uv_stdio_container_t stdio[MP_CHECK_REPORT_FD + 1];
  for (int fd = 0; fd < MP_CHECK_REPORT_FD; fd++) {
    stdio[fd].flags = UV_INHERIT_FD;
    stdio[fd].data.fd = fd;
  }
  stdio[MP_CHECK_REPORT_FD].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
  stdio[MP_CHECK_REPORT_FD].data.stream = (uv_stream_t *)&c->report;
  uv_process_options_t opt;
  memset(&opt, 0, sizeof opt);
  opt.file = exe;
  opt.args = argv;
  opt.exit_cb = on_child_exit;
  opt.stdio = stdio;
  opt.stdio_count = MP_CHECK_REPORT_FD + 1;
  char master[32];
  snprintf(master, sizeof master, "%d", (int)getpid());
  setenv(MP_CHECK_ENV, master, 1);
  int rc = uv_spawn(loop, &c->proc, &opt);
  unsetenv(MP_CHECK_ENV);
  if (rc != 0) {
    /* Only the pipe and the timer were ever open. */
    c->open_handles = 2;
    uv_close((uv_handle_t *)&c->report, free_check);
    uv_close((uv_handle_t *)&c->timer, free_check);
    return NULL;
  }
  c->open_handles = 3;
  uv_read_start((uv_stream_t *)&c->report, on_alloc, on_read);
  uv_timer_start(&c->timer, on_timeout, cfg->load_timeout_ms, 0);
  return c;
}

void mp_check_cancel(mp_check *c) {
  if (c->done) return;
  c->cancelled = true;
  if (!c->exited) uv_process_kill(&c->proc, SIGKILL);
}

/* ---- The child ---- */

/* Writes the whole of text to the report. */
static void report(const char *kind, const char *text, size_t len) {
  char line[4200];
  if (len > sizeof line - 2) len = sizeof line - 2;
  line[0] = kind[0];
  memcpy(line + 1, text, len);
  line[len + 1] = '\n';
  const char *p = line;
  size_t n = len + 2;
  while (n > 0) {
    ssize_t w = write(MP_CHECK_REPORT_FD, p, n);
    if (w <= 0) return;
    p += w;
    n -= (size_t)w;
  }
}

static void report_file(void *ud, const char *path) {
  (void)ud;
  if (strchr(path, '\n') == NULL) report("F", path, strlen(path));
}

int mp_check_child_main(const mp_config *cfg, int master) {
  /* A check must not outlive the master that waits for it: one spinning
   * in a script that loops would spin on with nobody to kill it. */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != master) return 1;
  /* Nothing the app starts may hold the report open. */
  fcntl(MP_CHECK_REPORT_FD, F_SETFD, FD_CLOEXEC);
  /* The Lua heap has its limit; this one stops memory taken around it
   * (C allocations through the FFI), with room for the process itself.
   * Not under AddressSanitizer, whose shadow memory is mapped data. */
#ifndef MP_SANITIZE
  struct rlimit rl;
  if (getrlimit(RLIMIT_DATA, &rl) == 0) {
    rlim_t want = (rlim_t)cfg->load_memory_limit + ((rlim_t)512 << 20);
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || want < rl.rlim_max
                      ? want
                      : rl.rlim_max;
    setrlimit(RLIMIT_DATA, &rl);
  }
#endif

  mp_shared *shared = NULL;
  int rc = mp_worker_shared_create(cfg, 1, &shared);
  if (rc != 0) {
    char msg[256];
    int n = snprintf(msg, sizeof msg, "moonport: cannot create a shared "
                     "store to check the app in: %s", mp_strerror(rc));
    report("E", msg, (size_t)n);
    return 1;
  }
  mp_vm_host host = {.cfg = cfg, .shared = shared, .on_load_file = report_file};
  char err[1024];
  int status = 1;
  mp_vm *vm = mp_vm_open(&host, cfg->app, err, sizeof err);
  if (vm == NULL) {
    report("E", err, strlen(err));
  } else {
    const mp_router *router = mp_vm_router(vm);
    for (unsigned i = 0; i < mp_router_count(router); i++) {
      const mp_route *r = mp_router_route(router, i);
      char line[4096];
      int n = snprintf(line, sizeof line, "%s %s",
                       llhttp_method_name((llhttp_method_t)r->method),
                       r->pattern);
      report("R", line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    }
    report("K", "", 0);
    mp_vm_close(vm);
    status = 0;
  }
  mp_shared_close(shared);
  return status;
}
