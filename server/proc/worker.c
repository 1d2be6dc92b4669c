/*
 * A worker (see worker.h). It owns the loop and, through it, the listener,
 * the signal handles, the control socket to the master, and the server
 * (req/server.h) that holds the connections and the requests. Shutdown closes the listener and every connection, then
 * runs the loop until every handle's close callback has run, so that
 * nothing is freed while libuv holds it.
 *
 * The listening socket is the master's (MP_WORKER_LISTEN_FD): closing it
 * here when draining stops this worker accepting, while the socket lives
 * on in the master and in whoever else holds it (a worker started in this
 * one's place, or the workers of a new binary after an upgrade).
 *
 * Signals: SIGTERM drains (the master sends it on TERM or INT), SIGUSR1
 * reopens the logs. SIGINT, SIGHUP and SIGUSR2 are ignored: a terminal or
 * a service manager may send them to the whole process group, and the
 * master decides what they mean.
 */
#include "worker.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "conn.h"
#include "control.h"
#include "errors.h"
#include "http1_out.h"
#include "log.h"
#include "master.h"
#include "metrics.h"
#include "metrics_endpoint.h"
#include "request.h"
#include "pg.h"
#include "publish.h"
#include "socket.h"
#include "static.h"
#include "stats_endpoint.h"
#include "timer.h"

/* The worker's outbound figures, and the gauges that take a walk over
 * the connections, into its block of the shared segment (publish.h): once
 * a second is fresh enough for gauges. */
static void publish_figures(mp_server *srv) {
  mp_worker_metrics *m = srv->metrics;
  if (m == NULL || !(srv->cfg->stats || srv->cfg->metrics)) return;
  unsigned in_use, idle, pg_ready;
  uint64_t pg_failures;
  mp_upstream_counts(&in_use, &idle);
  mp_pg_counts(&pg_ready, &pg_failures);
  mp_metrics_set(&m->w.upstream_in_use, in_use);
  mp_metrics_set(&m->w.upstream_idle, idle);
  mp_metrics_set(&m->w.upstream_errors, mp_upstream_connect_errors());
  mp_metrics_set(&m->w.pg_connections, pg_ready);
  mp_metrics_set(&m->w.pg_errors, pg_failures);
  mp_publish_all(srv);
}

static void on_sweep(uv_timer_t *t) {
  mp_worker *w = t->data;
  mp_conn_sweep(&w->srv);
  mp_request_sweep(&w->srv);
  publish_figures(&w->srv);
}

/* The core's own endpoints, before routing: GET /__moonport/stats and
 * /__moonport/metrics, each when its option is on. */
static bool core_endpoints(mp_server *s, mp_request *r) {
  if (s->cfg->stats && mp_stats_endpoint(s, r)) return true;
  return s->cfg->metrics && mp_metrics_endpoint(s, r);
}

static void on_log_flush(uv_check_t *h) {
  (void)h;
  mp_access_log_flush();
}

static void on_connection(uv_stream_t *server, int status) {
  mp_worker *w = server->data;
  if (status < 0) {
    mp_log(MP_LOG_ERROR, "accept: %s", uv_strerror(status));
    return;
  }
  mp_conn_accept(&w->srv, server);
}

/* Closes what is left; the loop ends once the close callbacks have run. A
 * signal arriving after this would find the default action back in place,
 * which kills: the process is on its way out, so ignore it instead. */
static void stop_now(mp_worker *w) {
  if (w->stopped) return;
  w->stopped = true;
  w->srv.stopping = true;
  if (!uv_is_closing((uv_handle_t *)&w->listener))
    uv_close((uv_handle_t *)&w->listener, NULL);
  uv_close((uv_handle_t *)&w->sigterm, NULL);
  uv_close((uv_handle_t *)&w->sigusr1, NULL);
  uv_close((uv_handle_t *)&w->drain_timer, NULL);
  uv_close((uv_handle_t *)&w->sweep_timer, NULL);
  if (w->control.loop != NULL && !uv_is_closing((uv_handle_t *)&w->control))
    uv_close((uv_handle_t *)&w->control, NULL);
  signal(SIGTERM, SIG_IGN);
  signal(SIGUSR1, SIG_IGN);
  if (uv_is_active((uv_handle_t *)&w->log_flush))
    uv_close((uv_handle_t *)&w->log_flush, NULL);
  mp_server_close(&w->srv);
  mp_conn_close_all(&w->srv);
  mp_request_close_all(&w->srv);
  mp_pg_close();
  mp_upstream_close();
}

static void on_drain_timeout(uv_timer_t *t) {
  mp_worker *w = t->data;
  unsigned timers = mp_timer_total(&w->srv);
  char also[64] = "";
  if (timers > 0)
    snprintf(also, sizeof also, " and %u timer%s", timers,
             timers == 1 ? "" : "s");
  mp_log(MP_LOG_WARN, "shutdown: %u connection%s%s still busy after %.1f s, "
         "closing them", w->srv.nconns, w->srv.nconns == 1 ? "" : "s", also,
         (double)w->cfg->shutdown_timeout_ms / 1000.0);
  stop_now(w);
}

/* The server has nothing left to serve while stopping. */
static void on_drained(mp_server *s) { stop_now((mp_worker *)s); }

/* The first SIGTERM (or the master going away) drains: no new
 * connections, idle ones close, busy ones close after the response in
 * flight, pending timers fire at once (premature) and run to their end. A
 * second one, or the shutdown timeout, closes everything at once. */
static void drain(mp_worker *w) {
  if (w->srv.stopping) {
    stop_now(w);
    return;
  }
  w->srv.stopping = true;
  uv_close((uv_handle_t *)&w->listener, NULL);
  mp_conn_drain_all(&w->srv);
  mp_timer_stopping(&w->srv);
  if (!mp_server_busy(&w->srv)) {
    stop_now(w);
    return;
  }
  uv_timer_start(&w->drain_timer, on_drain_timeout, w->cfg->shutdown_timeout_ms,
                 0);
}

/* Loads the app into a new VM with the heartbeat saying so: the master
 * kills a worker whose load takes longer than --load-timeout. */
static mp_vm *load(mp_worker *w, char *err, size_t errlen) {
  mp_worker_slot *slot = w->srv.slot;
  if (slot != NULL) {
    slot->route = MP_SLOT_LOADING;
    slot->busy_since_ms = mp_shared_now_ms();
  }
  mp_vm *vm = mp_vm_open(&w->host, w->cfg->app, err, errlen);
  if (slot != NULL) {
    slot->busy_since_ms = 0;
    slot->route = -1;
  }
  return vm;
}

int mp_worker_reload(mp_worker *w) {
  char err[1024];
  mp_vm *vm = load(w, err, sizeof err);
  if (vm == NULL) {
    mp_log(MP_LOG_ERROR, "reload failed: %s; still serving the code it had",
           err);
    return -1;
  }
  if (mp_server_set_code(&w->srv, &mp_vm_code_ops, vm, mp_vm_router(vm)) != 0) {
    mp_log(MP_LOG_ERROR, "reload failed: out of memory; still serving the "
           "code it had");
    mp_vm_close(vm);
    return -1;
  }
  w->srv.files = mp_vm_static(vm); /* the mounts go with their code */
  return 0;
}

/* The app loaded a file while serving (a require inside a handler): the
 * master watches it too. Files loaded before the control socket is open
 * are the master's check's to report. */
static void on_load_file(void *ud, const char *path) {
  mp_worker *w = ud;
  char msg[MP_CONTROL_MAX];
  size_t len = mp_control_file(msg, path);
  if (len == 0) return;
  if (w->control.loop == NULL) {
    /* The first load, before the loop reads the socket: the master
     * watches what the app reads from its first answer on. */
    ssize_t n;
    do n = write(MP_WORKER_CONTROL_FD, msg, len);
    while (n < 0 && errno == EINTR);
    return;
  }
  uv_buf_t buf = uv_buf_init(msg, (unsigned)len);
  /* Best effort: a full socket only means this file is not watched. */
  uv_try_write((uv_stream_t *)&w->control, &buf, 1);
}

static void on_signal(uv_signal_t *h, int signum) {
  if (signum == SIGUSR1)
    mp_log_reopen();
  else
    drain(h->data);
}

static void on_control_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  static char byte[16];
  (void)h;
  (void)hint;
  *buf = uv_buf_init(byte, sizeof byte);
}

/* The master asks for a reload here (control.h) when the app has changed
 * and loaded cleanly in its own check. End of file means it has exited: the kernel kills the
 * worker then (PR_SET_PDEATHSIG); should that ever not happen, the worker
 * drains and exits rather than serve on unsupervised. */
static void on_control(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  mp_worker *w = s->data;
  if (n > 0) {
    /* Several changes queued while this worker was busy need one load. */
    if (mp_control_wants_reload(buf->base, (size_t)n) && !w->srv.stopping)
      mp_worker_reload(w);
    return;
  }
  if (n == 0) return;
  uv_read_stop(s);
  if (!w->srv.stopping) {
    mp_log(MP_LOG_WARN, "the master has exited; stopping");
    drain(w);
  }
}

/* Accepts on the socket the master holds for this worker's id. */
static int listen_on(mp_worker *w) {
  uv_tcp_init(w->srv.loop, &w->listener);
  w->listener.data = w;
  int rc = uv_tcp_open(&w->listener, MP_WORKER_LISTEN_FD);
  if (rc == 0) rc = uv_listen((uv_stream_t *)&w->listener, 511, on_connection);
  if (rc != 0) {
    fprintf(stderr, "moonport: cannot listen on %s:%d (descriptor %d): %s\n",
            w->cfg->host, w->cfg->port, MP_WORKER_LISTEN_FD, uv_strerror(rc));
    return rc;
  }
  return 0;
}

int mp_worker_shared_create(const mp_config *cfg, unsigned nslots,
                            mp_shared **out) {
  mp_store_spec stores[MP_NSTORES] = {
      [MP_STORE_SHARED] = {cfg->shared_size, MP_EVICT_LRU},
      [MP_STORE_MOCK] = {cfg->mock_state_size, MP_EVICT_NEVER},
      [MP_STORE_JOURNAL] = {cfg->journal_memory, MP_EVICT_FIFO},
  };
  return mp_shared_create(stores, MP_NSTORES, nslots, out);
}

int mp_worker_init(mp_worker *w, const mp_config *cfg, mp_shared *shared,
                   unsigned id) {
  memset(w, 0, sizeof *w);
  w->cfg = cfg;
  w->id = id;
  mp_server *srv = &w->srv;
  mp_server_init(srv, uv_default_loop(), cfg, id, shared);
  srv->on_drained = on_drained;
  if (mp_upstream_init(srv) != 0 || mp_pg_init(srv) != 0) return MP_NOMEM;
  if (cfg->stats || cfg->metrics) srv->intercept = core_endpoints;
  srv->serve_file = mp_static_serve;
  mp_http1_set_server(cfg->server_header); /* checked by mp_config_parse */
  signal(SIGPIPE, SIG_IGN);

  if (srv->slot != NULL) {
    srv->slot->busy_since_ms = 0;
    srv->slot->route = -1;
    srv->slot->conns = 0;
    srv->slot->pid = (int32_t)getpid();
  }
  w->host = (mp_vm_host){.cfg = cfg, .shared = shared, .slot = srv->slot,
                         .on_load_file = on_load_file, .ud = w};
  char err[1024];
  mp_vm *vm = load(w, err, sizeof err);
  if (vm == NULL) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  if (mp_server_set_code(srv, &mp_vm_code_ops, vm, mp_vm_router(vm)) != 0) {
    fprintf(stderr, "moonport: out of memory\n");
    mp_vm_close(vm);
    return 1;
  }
  srv->files = mp_vm_static(vm);
  if (cfg->access_log != NULL) {
    int rc = mp_access_log_open(
        cfg->access_log,
        (mp_access_format)mp_access_format_named(cfg->access_log_format));
    if (rc != 0) {
      fprintf(stderr, "moonport: --access-log: cannot open '%s': %s\n",
              cfg->access_log, strerror(-rc));
      return 1;
    }
    uv_check_init(srv->loop, &w->log_flush);
    uv_check_start(&w->log_flush, on_log_flush);
    uv_unref((uv_handle_t *)&w->log_flush);
  }
  mp_raise_fd_limit(cfg->max_connections);
  if (listen_on(w) != 0) return 1;

  uv_timer_init(srv->loop, &w->drain_timer);
  w->drain_timer.data = w;
  /* The sweep needs no finer grain: timeouts are whole seconds or more. */
  uv_timer_init(srv->loop, &w->sweep_timer);
  w->sweep_timer.data = w;
  uv_timer_start(&w->sweep_timer, on_sweep, 1000, 1000);
  uv_unref((uv_handle_t *)&w->sweep_timer);
  /* The master's signals, which reach workers too when sent to the whole
   * process group or service (SIGUSR2 would kill). */
  signal(SIGINT, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGUSR2, SIG_IGN);
  uv_signal_init(srv->loop, &w->sigterm);
  uv_signal_init(srv->loop, &w->sigusr1);
  w->sigterm.data = w->sigusr1.data = w;
  uv_signal_start(&w->sigterm, on_signal, SIGTERM);
  uv_signal_start(&w->sigusr1, on_signal, SIGUSR1);
  return 0;
}

/* Startup touched code and symbol tables all over the shared libraries
 * (the dynamic linker reads the latter once), and the kernel maps 64 KiB
 * around every page touched. Unmap those pages from every read-only file
 * mapping that holds no private copy of a page (Anonymous: 0 in smaps: the
 * RELRO part of a library was written while relocating, so it does and is
 * kept), and ask for no read-ahead. Nothing is lost: the pages stay in the
 * page cache and come back on first use. */
void mp_release_startup_pages(void) {
  FILE *smaps = fopen("/proc/self/smaps", "r");
  if (smaps == NULL) return;
  char line[512];
  unsigned long start = 0, end = 0;
  bool candidate = false;
  while (fgets(line, sizeof line, smaps) != NULL) {
    unsigned long a, b;
    char perms[5];
    if (sscanf(line, "%lx-%lx %4s", &a, &b, perms) == 3) {
      start = a;
      end = b;
      candidate = perms[1] == '-' && perms[3] == 'p' && strchr(line, '/') != NULL;
      continue;
    }
    unsigned long anon;
    if (candidate && sscanf(line, "Anonymous: %lu kB", &anon) == 1) {
      if (anon == 0) {
        madvise((void *)start, end - start, MADV_RANDOM);
        madvise((void *)start, end - start, MADV_DONTNEED);
      }
      candidate = false;
    }
  }
  fclose(smaps);
}

int mp_worker_main(const mp_config *cfg, unsigned id, int master) {
  char name[32];
  snprintf(name, sizeof name, "worker %u", id);
  mp_log_set_process(name, id);
  /* A worker must not outlive its master: nothing would supervise it, and
   * one stuck in a handler would spin forever. The kernel kills it when
   * the master dies; a master already gone before this line leaves the
   * worker with another parent, so it stops at once. */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (master != 0 && getppid() != master) {
    fprintf(stderr, "moonport: worker %u: its master (pid %d) is gone\n", id,
            master);
    return 1;
  }
  if (cfg->error_log != NULL) {
    int rc = mp_error_log_open(cfg->error_log);
    if (rc != 0) {
      fprintf(stderr, "moonport: --error-log: cannot open '%s': %s\n",
              cfg->error_log, strerror(-rc));
      return 1;
    }
  }
  mp_shared *shared = NULL;
  int rc = mp_shared_attach(MP_WORKER_SHARED_FD, &shared);
  if (rc == 0 && mp_shared_nstores(shared) != MP_NSTORES) {
    mp_shared_close(shared);
    rc = MP_INVALID;
  }
  if (rc != 0) {
    fprintf(stderr, "moonport: worker %u: no shared segment on descriptor "
            "%d: %s\n", id, MP_WORKER_SHARED_FD, mp_strerror(rc));
    return 1;
  }
  /* Neither inherited descriptor should reach a process a handler starts. */
  fcntl(MP_WORKER_SHARED_FD, F_SETFD, FD_CLOEXEC);
  fcntl(MP_WORKER_CONTROL_FD, F_SETFD, FD_CLOEXEC);
  fcntl(MP_WORKER_LISTEN_FD, F_SETFD, FD_CLOEXEC);
  static mp_worker w;
  int status = mp_worker_init(&w, cfg, shared, id);
  if (status == 0) {
    /* One byte says "listening"; then the socket only carries the end of
     * file that says the master is gone. */
    uv_pipe_init(w.srv.loop, &w.control, 0);
    w.control.data = &w;
    char ready = MP_CONTROL_READY;
    if (write(MP_WORKER_CONTROL_FD, &ready, 1) != 1 ||
        uv_pipe_open(&w.control, MP_WORKER_CONTROL_FD) != 0) {
      fprintf(stderr, "moonport: worker %u: no master on descriptor %d\n",
              id, MP_WORKER_CONTROL_FD);
      status = 1;
    } else {
      uv_read_start((uv_stream_t *)&w.control, on_control_alloc, on_control);
      mp_release_startup_pages();
      uv_run(w.srv.loop, UV_RUN_DEFAULT);
    }
  }
  mp_worker_destroy(&w);
  mp_shared_close(shared);
  return status;
}

void mp_worker_destroy(mp_worker *w) {
  uv_loop_t *loop = w->srv.loop;
  if (!w->stopped && uv_is_active((uv_handle_t *)&w->sigterm)) stop_now(w);
  mp_server_close(&w->srv);
  /* Let every close callback run before the memory goes. */
  uv_run(loop, UV_RUN_DEFAULT);
  mp_server_destroy(&w->srv);
  uv_run(loop, UV_RUN_DEFAULT);
  uv_loop_close(loop);
  mp_access_log_close();
}
