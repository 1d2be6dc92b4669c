/*
 * The master (see master.h).
 *
 * Workers are this same executable, exec'd with MP_WORKER_ENV set: a fresh
 * process image has no loop, signal state or Lua state inherited from the
 * master, which forking a process that runs a libuv loop would have. The
 * master holds the listening sockets (listeners.c: one per worker, with
 * SO_REUSEPORT) and each worker inherits its own as MP_WORKER_LISTEN_FD,
 * the one a worker of that id had before it: the socket never closes while
 * a worker is replaced, and connections queued in it wait for the new one.
 *
 * Privileges (--user): the master binds the sockets, locks the pid file
 * and creates the log files while it is root, then becomes the user before
 * anything loads the app; its workers and checks are the user's from
 * their start.
 *
 * Upgrades (SIGUSR2, upgrade.c): the master starts its binary again with
 * the sockets; once the new master serves, this one stops as on SIGTERM
 * (its workers drain) without touching the pid file, which is the new
 * one's.
 *
 * A worker incarnation (process handle plus control socket) is freed when
 * both handles have closed; the worker's place (its id) then gets a new
 * incarnation. The master reads each worker's heartbeat slot in the shared
 * segment to find one stuck in a handler, and kills it: LuaJIT cannot
 * interrupt compiled code from inside, so only another process can.
 *
 * Until every first worker has said it listens, a worker that exits is a
 * startup failure: the master stops the others and exits 1. After that, a
 * worker that exits is logged and replaced at once, or after a second if it
 * died before listening (so a worker that cannot start does not spin).
 *
 * Loads: the master runs none of the app's code. At startup the first
 * workers load the app themselves (the first answer comes after one load,
 * not two): one that fails says why and exits before it listens, which
 * stops the server; one past --load-timeout is killed by the patrol. Once
 * they listen, and on every reload, the app is checked in a child process
 * (check.c), with --load-timeout and --load-memory-limit, so a script
 * that loops or allocates without end while it loads costs a child,
 * never the master's loop; the startup check gives the route names and
 * the banner. One check runs at a time: reload requests that arrive
 * meanwhile (saves, SIGHUPs) collapse into one more check after it, and
 * a stop cancels the check in flight. Workers report the files their
 * first load reads before they listen, so they are watched from the
 * first answer.
 *
 * Reloads: the master watches the files the app loads (watch.c; workers
 * report files loaded late over their control socket), has changed code
 * checked, and only when that succeeds writes 'L' to every worker, which
 * loads the code again itself and swaps between requests. The outcome goes
 * to the log and, through the shared segment, to every worker's stats
 * endpoint.
 */
#include "master.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "check.h"
#include "control.h"
#include "errors.h"
#include "identity.h"
#include "listeners.h"
#include "log.h"
#include "metrics.h"
#include "pidfile.h"
#include "shared.h"
#include "upgrade.h"
#include "watch.h"
#include "worker.h"

typedef struct master master;

/* One process started for a worker id. */
typedef struct incarnation {
  master *m;
  unsigned id;
  uv_process_t proc;
  uv_pipe_t control;
  int open_handles; /* freed when both handles have closed */
  bool exited;
  bool ready;
  bool killed_stuck;
  uint64_t started_ms;
  mp_control_reader reader; /* what the worker says */
} incarnation;

typedef struct place {
  incarnation *current; /* NULL while waiting to be started again */
  uint64_t restart_at_ms; /* when current is NULL: 0 (now) or later */
} place;

struct master {
  uv_loop_t loop;
  const mp_config *cfg;
  int argc;
  char **argv;
  char exe[4096];
  mp_listeners listeners;
  int pid_fd;       /* --pid-file's, or -1 */
  bool pid_passed;  /* by an upgrading master: its pid stays until ours is in */
  bool pid_written;
  mp_upgrade *upgrade; /* the new master starting on SIGUSR2, or NULL */
  bool upgraded;       /* a new master took over: this one drains and exits */
  mp_shared *shared;
  char **route_names; /* "GET /users/:id", by route index */
  unsigned nroutes;
  mp_check *check;         /* the check of the app in flight, or NULL */
  const char *check_why;   /* what it is for: "startup", "SIGHUP", ... */
  const char *again_why;   /* a reload asked for while it ran, or NULL */
  char app_path[PATH_MAX]; /* the app script, absolute */
  char root[PATH_MAX];     /* its directory: files loaded from below it are watched */
  mp_watch *watch;         /* NULL with --no-watch */
  char **watched;          /* the files watched now */
  unsigned nwatched;
  char **pending;          /* the files the load in progress has read */
  unsigned npending;
  place *places;
  unsigned nready;
  unsigned nrunning;
  bool started;  /* every first worker said it listens */
  bool startup_check_due; /* the check in flight is the startup one */
  bool stopping; /* a signal asked to stop */
  int stop_signal; /* the signal that did */
  bool failed;   /* startup failed: exit 1 */
  uv_signal_t signals[5];
  uv_timer_t patrol; /* stuck workers and delayed restarts */
  uv_timer_t deadline; /* shutdown: kill what is still running */
};

static void start_worker(master *m, unsigned id);
static void reload(master *m, const char *why);

static void free_incarnation(uv_handle_t *h) {
  incarnation *in = h->data;
  if (--in->open_handles == 0) free(in);
}

/* "exited with status 1" or "killed by signal 9 (Killed)". */
static void describe_exit(char *out, size_t cap, int64_t status, int sig) {
  if (sig != 0)
    snprintf(out, cap, "killed by signal %d (%s)", sig, strsignal(sig));
  else
    snprintf(out, cap, "exited with status %lld", (long long)status);
}

static void close_master_handles(master *m) {
  if (m->watch != NULL) {
    mp_watch_close(m->watch);
    m->watch = NULL;
  }
  for (size_t i = 0; i < sizeof m->signals / sizeof m->signals[0]; i++)
    uv_close((uv_handle_t *)&m->signals[i], NULL);
  uv_close((uv_handle_t *)&m->patrol, NULL);
  uv_close((uv_handle_t *)&m->deadline, NULL);
}

static void kill_all(master *m, int sig) {
  if (m->places == NULL) return; /* no worker started yet */
  for (unsigned i = 0; i < m->cfg->workers; i++) {
    incarnation *in = m->places[i].current;
    if (in != NULL && !in->exited) uv_process_kill(&in->proc, sig);
  }
}

static void on_worker_exit(uv_process_t *proc, int64_t status, int sig) {
  incarnation *in = proc->data;
  master *m = in->m;
  place *p = &m->places[in->id - 1];
  char how[96];
  describe_exit(how, sizeof how, status, sig);
  in->exited = true;
  m->nrunning--;
  if (in->ready) m->nready--;
  p->current = NULL;
  mp_worker_slot *slot = mp_shared_slot(m->shared, in->id);
  slot->busy_since_ms = 0;
  slot->route = -1;
  uv_close((uv_handle_t *)&in->proc, free_incarnation);
  uv_close((uv_handle_t *)&in->control, free_incarnation);

  if (m->stopping) {
    if (status != 0 || sig != 0)
      mp_log(MP_LOG_WARN, "worker %u (pid %d) %s while stopping", in->id,
             proc->pid, how);
    if (m->nrunning == 0) close_master_handles(m);
    return;
  }
  if (!m->started) {
    /* A load that failed was said by the worker (the error, as --check
     * gives it) or by the patrol (past --load-timeout). */
    if (!(sig == 0 && status == 1) && !in->killed_stuck)
      mp_log(MP_LOG_ERROR, "worker %u (pid %d) %s before it was listening",
             in->id, proc->pid, how);
    m->failed = true;
    m->stopping = true;
    kill_all(m, SIGTERM);
    if (m->nrunning == 0) close_master_handles(m);
    return;
  }
  uint64_t now = uv_now(&m->loop);
  /* The master is the one writer of this figure in the worker's block. */
  mp_metrics_add(&mp_shared_metrics(m->shared, in->id)->w.restarts, 1);
  if (in->ready) {
    mp_log(MP_LOG_ERROR, "worker %u (pid %d) %s; starting a new one",
           in->id, proc->pid, how);
    start_worker(m, in->id);
  } else {
    mp_log(MP_LOG_ERROR,
           "worker %u (pid %d) %s before it was listening; starting a new "
           "one in 1 s", in->id, proc->pid, how);
    p->restart_at_ms = now + 1000;
  }
}

static void on_control_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  static char bytes[4096];
  (void)h;
  (void)hint;
  *buf = uv_buf_init(bytes, sizeof bytes);
}

static void on_load_file(void *ud, const char *path);
static void update_watch(master *m, bool loaded);

/* Says the server is up: the banner, with the routes the startup check
 * found. */
static void announce(master *m) {
  unsigned r = m->nroutes, w = m->cfg->workers;
  const char *what, *name;
  mp_config_source(m->cfg, &what, &name);
  printf("moonport %s listening on http://%s (%u route%s from %s%s, %u "
         "worker%s)\n",
         MP_VERSION, m->listeners.addr, r, r == 1 ? "" : "s", what, name, w,
         w == 1 ? "" : "s");
  fflush(stdout);
}

static void start_check(master *m, const char *why);

/* The worker listens: the first byte it sends. Once all of the first
 * workers do, the server serves: the pid file is written, and the app the
 * workers loaded is checked once more in a child, for its route names
 * and the files to watch; the banner follows (startup_checked). */
static void worker_ready(master *m, incarnation *in) {
  in->ready = true;
  m->nready++;
  if (!m->started && m->nready == m->cfg->workers) {
    m->started = true;
    /* The pid file first, so that whoever reads the line finds it. */
    if (m->pid_fd >= 0) {
      int rc = mp_pidfile_write(m->pid_fd);
      if (rc != 0)
        mp_log(MP_LOG_ERROR, "--pid-file: cannot write %s: %s",
               m->cfg->pid_file, mp_strerror(rc));
      m->pid_written = rc == 0;
    }
    if (mp_upgrade_child_ready())
      mp_log(MP_LOG_INFO, "upgrade: serving; the old master (pid %d) drains",
             (int)getppid());
    mp_release_startup_pages();
    m->startup_check_due = true;
    start_check(m, "startup");
  }
}

/* What a worker says (control.h): that it listens, then the files its
 * app loads while serving (a require inside a handler), which join the
 * files watched. End of file: it is exiting, which on_worker_exit
 * reports. */
static void on_message(void *ud, int kind, const char *path) {
  incarnation *in = ud;
  if (kind == MP_CONTROL_GOT_READY)
    worker_ready(in->m, in);
  else
    on_load_file(in->m, path);
}

static void on_control(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  incarnation *in = s->data;
  master *m = in->m;
  if (n < 0) {
    uv_read_stop(s);
    return;
  }
  unsigned before = m->npending;
  mp_control_read(&in->reader, buf->base, (size_t)n, on_message, in);
  if (m->npending > before) update_watch(m, false);
}

static void start_worker(master *m, unsigned id) {
  place *p = &m->places[id - 1];
  incarnation *in = calloc(1, sizeof *in);
  if (in == NULL) {
    mp_log(MP_LOG_ERROR, "worker %u: out of memory; trying again in 1 s", id);
    p->restart_at_ms = uv_now(&m->loop) + 1000;
    return;
  }
  in->m = m;
  in->id = id;
  in->started_ms = uv_now(&m->loop);
  uv_pipe_init(&m->loop, &in->control, 0);
  in->control.data = in;
  in->proc.data = in;

  /* The worker's command line is the master's, with the port resolved; a
   * later --listen overrides the first. */
  char *args[m->argc + 3];
  args[0] = m->argv[0];
  for (int i = 1; i < m->argc; i++) args[i] = m->argv[i];
  args[m->argc] = "--listen";
  args[m->argc + 1] = m->listeners.addr;
  args[m->argc + 2] = NULL;

  uv_stdio_container_t stdio[6];
  for (int fd = 0; fd < 3; fd++) {
    stdio[fd].flags = UV_INHERIT_FD;
    stdio[fd].data.fd = fd;
  }
  stdio[MP_WORKER_SHARED_FD].flags = UV_INHERIT_FD;
  stdio[MP_WORKER_SHARED_FD].data.fd = mp_shared_fd(m->shared);
  stdio[MP_WORKER_CONTROL_FD].flags =
      UV_CREATE_PIPE | UV_READABLE_PIPE | UV_WRITABLE_PIPE;
  stdio[MP_WORKER_CONTROL_FD].data.stream = (uv_stream_t *)&in->control;
  stdio[MP_WORKER_LISTEN_FD].flags = UV_INHERIT_FD;
  stdio[MP_WORKER_LISTEN_FD].data.fd = mp_listeners_fd(&m->listeners, id);

  char idstr[32];
  snprintf(idstr, sizeof idstr, "%u:%d", id, (int)getpid());
  setenv(MP_WORKER_ENV, idstr, 1);

  uv_process_options_t opt;
  memset(&opt, 0, sizeof opt);
  opt.file = m->exe;
  opt.args = args;
  opt.exit_cb = on_worker_exit;
  opt.stdio = stdio;
  opt.stdio_count = 6;
  int rc = uv_spawn(&m->loop, &in->proc, &opt);
  unsetenv(MP_WORKER_ENV);
  if (rc != 0) {
    mp_log(MP_LOG_ERROR, "worker %u: cannot start %s: %s; trying again in 1 s",
           id, m->exe, uv_strerror(rc));
    in->open_handles = 2;
    uv_close((uv_handle_t *)&in->proc, free_incarnation);
    uv_close((uv_handle_t *)&in->control, free_incarnation);
    p->restart_at_ms = uv_now(&m->loop) + 1000;
    if (!m->started) {
      m->failed = true;
      m->stopping = true;
      kill_all(m, SIGTERM);
      if (m->nrunning == 0) close_master_handles(m);
    }
    return;
  }
  in->open_handles = 2;
  p->current = in;
  p->restart_at_ms = 0;
  m->nrunning++;
  uv_read_start((uv_stream_t *)&in->control, on_control_alloc, on_control);
}

/* Kills workers stuck in one handler, and starts those whose restart
 * delay is over. */
static void on_patrol(uv_timer_t *t) {
  master *m = t->data;
  if (m->stopping) return;
  uint64_t now = mp_shared_now_ms();
  uint64_t loop_now = uv_now(&m->loop);
  for (unsigned id = 1; id <= m->cfg->workers; id++) {
    place *p = &m->places[id - 1];
    incarnation *in = p->current;
    if (in == NULL) {
      if (m->started && loop_now >= p->restart_at_ms) start_worker(m, id);
      continue;
    }
    if (in->exited || in->killed_stuck) continue;
    mp_worker_slot *slot = mp_shared_slot(m->shared, id);
    uint64_t since = slot->busy_since_ms;
    int32_t route = slot->route;
    bool loading = route == MP_SLOT_LOADING;
    uint64_t limit =
        loading ? m->cfg->load_timeout_ms : m->cfg->handler_timeout_ms;
    if (slot->pid != in->proc.pid || since == 0 || since > now ||
        now - since < limit)
      continue;
    in->killed_stuck = true;
    if (loading && !m->started) {
      /* The first load: what --check says. */
      const char *what, *name;
      mp_config_source(m->cfg, &what, &name);
      fprintf(stderr, "%s: loading took longer than --load-timeout (%.3g s)\n",
              name, (double)m->cfg->load_timeout_ms / 1000.0);
      uv_process_kill(&in->proc, SIGKILL);
      continue;
    }
    if (loading) {
      mp_log(MP_LOG_ERROR,
             "worker %u (pid %d) has been loading the app (%s) for %.1f s, "
             "past --load-timeout; killing it", id, in->proc.pid,
             m->cfg->app, (double)(now - since) / 1000.0);
      uv_process_kill(&in->proc, SIGKILL);
      continue;
    }
    /* The master knows the routes of the current code only. */
    bool current = slot->generation == mp_shared_reload(m->shared)->generation;
    const char *name = route == MP_SLOT_TIMER ? "a timer"
                       : !current ? "a handler of code since reloaded"
                       : route >= 0 && (unsigned)route < m->nroutes
                           ? m->route_names[route]
                           : "a handler";
    mp_log(MP_LOG_ERROR,
           "worker %u (pid %d) has been running %s (%s) for %.1f s without "
           "yielding, past --handler-timeout; killing it", id, in->proc.pid,
           name, m->cfg->app, (double)(now - since) / 1000.0);
    uv_process_kill(&in->proc, SIGKILL);
  }
}

static void on_deadline(uv_timer_t *t) {
  master *m = t->data;
  mp_log(MP_LOG_WARN, "shutdown: %u worker%s still running after %.1f s; "
         "killing them", m->nrunning, m->nrunning == 1 ? "" : "s",
         (double)uv_timer_get_repeat(t) / 1000.0);
  kill_all(m, SIGKILL);
}

/* Every worker drains (a second call: they stop at once), and the master
 * exits once they have. */
static void stop(master *m, int signum, const char *why) {
  kill_all(m, SIGTERM);
  if (m->stopping) return;
  m->stopping = true;
  m->stop_signal = signum;
  if (m->check != NULL) mp_check_cancel(m->check);
  if (m->upgrade != NULL) {
    mp_log(MP_LOG_WARN, "stopping the new master of the upgrade under way");
    mp_upgrade_release(m->upgrade, true);
    m->upgrade = NULL;
  }
  if (m->nrunning == 0) {
    close_master_handles(m);
    return;
  }
  unsigned conns = 0;
  for (unsigned id = 1; id <= m->cfg->workers; id++)
    conns += (unsigned)mp_shared_slot(m->shared, id)->conns;
  mp_log(MP_LOG_INFO, "stopping (%s): draining %u connection%s", why, conns,
         conns == 1 ? "" : "s");
  /* The workers give up on requests at --shutdown-timeout themselves;
   * past that and a grace second, the master makes sure. */
  uint64_t grace = m->cfg->shutdown_timeout_ms + 1000;
  uv_timer_start(&m->deadline, on_deadline, grace, 0);
  uv_timer_set_repeat(&m->deadline, grace);
  uv_unref((uv_handle_t *)&m->deadline);
}

/* The new master of an upgrade serves, or will not: this one hands over
 * and drains, or goes on as if nothing happened. */
static void on_upgraded(void *ud, int pid, bool ready, const char *why) {
  master *m = ud;
  mp_upgrade_release(m->upgrade, !ready);
  m->upgrade = NULL;
  if (!ready) {
    mp_log(MP_LOG_ERROR, "upgrade failed: the new master (pid %d) %s before "
           "it served; this one goes on serving", pid, why);
    return;
  }
  mp_log(MP_LOG_INFO, "upgrade: the new master (pid %d) serves; this one "
         "stops accepting", pid);
  m->upgraded = true;
  stop(m, SIGUSR2, "upgraded");
}

/* SIGUSR2: start the binary again, by the path this one was started from,
 * on the same sockets. */
static void upgrade(master *m) {
  if (!m->started || m->stopping || m->upgrade != NULL) {
    mp_log(MP_LOG_WARN, "SIGUSR2 ignored: %s",
           m->upgrade != NULL ? "an upgrade is already under way"
           : m->stopping      ? "stopping"
                              : "not serving yet");
    return;
  }
  mp_log(MP_LOG_INFO, "upgrade (SIGUSR2): starting %s", m->exe);
  m->upgrade = mp_upgrade_start(&m->loop, m->exe, m->argv, &m->listeners,
                                m->pid_fd, on_upgraded, m);
}

/* TERM or INT: every worker drains (a second one: they stop at once).
 * USR1: reopen the logs here and in every worker. HUP: reload the app.
 * USR2: upgrade the binary. */
static void on_signal(uv_signal_t *h, int signum) {
  master *m = h->data;
  if (signum == SIGUSR1) {
    mp_log_reopen();
    kill_all(m, SIGUSR1);
    return;
  }
  if (signum == SIGHUP) {
    reload(m, "SIGHUP");
    return;
  }
  if (signum == SIGUSR2) {
    upgrade(m);
    return;
  }
  stop(m, signum, signum == SIGINT ? "SIGINT" : "SIGTERM");
}

/* Collects the files a load reads that lie in the app's directory tree
 * (the library under lua/ is not the app's to edit). */
static void on_load_file(void *ud, const char *path) {
  master *m = ud;
  char abs[PATH_MAX];
  size_t rlen = strlen(m->root);
  if (!mp_watch_abspath(path, abs, sizeof abs) ||
      strncmp(abs, m->root, rlen) != 0 || abs[rlen] != '/')
    return;
  for (unsigned i = 0; i < m->npending; i++)
    if (strcmp(m->pending[i], abs) == 0) return;
  char **list = realloc(m->pending, (m->npending + 1) * sizeof *list);
  if (list == NULL) return;
  m->pending = list;
  if ((list[m->npending] = strdup(abs)) != NULL) m->npending++;
}

static void free_names(char **names, unsigned n) {
  for (unsigned i = 0; names != NULL && i < n; i++) free(names[i]);
  free(names);
}

/* Keeps a copy of the route names a check reported. Returns 0 or -1. */
static int keep_route_names(master *m, char *const *routes, unsigned n) {
  char **names = calloc(n ? n : 1, sizeof *names);
  for (unsigned i = 0; names != NULL && i < n; i++) {
    if ((names[i] = strdup(routes[i])) == NULL) {
      free_names(names, i);
      names = NULL;
    }
  }
  if (names == NULL) return -1;
  free_names(m->route_names, m->nroutes);
  m->route_names = names;
  m->nroutes = n;
  return 0;
}

/* Watches the app script and every app file the last load read; after a
 * failed load, the files watched before stay watched too, so that the fix
 * of a file the good code never loaded is seen. */
static void update_watch(master *m, bool loaded) {
  if (m->watch == NULL) goto done;
  unsigned n = m->npending + (loaded ? 0 : m->nwatched) + 1;
  char **set = calloc(n, sizeof *set);
  if (set == NULL) goto done;
  unsigned k = 0;
  set[k++] = m->app_path;
  for (unsigned i = 0; i < m->npending; i++)
    if (strcmp(m->pending[i], m->app_path) != 0) set[k++] = m->pending[i];
  for (unsigned i = 0; !loaded && i < m->nwatched; i++) {
    bool dup = false;
    for (unsigned j = 0; j < k && !dup; j++) dup = strcmp(set[j], m->watched[i]) == 0;
    if (!dup) set[k++] = m->watched[i];
  }
  if (mp_watch_set(m->watch, set, k) == 0) {
    /* Keep our own copy of the list for the next union. */
    char **copy = calloc(k, sizeof *copy);
    unsigned c = 0;
    for (unsigned i = 0; copy != NULL && i < k; i++)
      if ((copy[c] = strdup(set[i])) != NULL) c++;
    if (copy != NULL) {
      free_names(m->watched, m->nwatched);
      m->watched = copy;
      m->nwatched = c;
    }
  }
  free(set);
done:
  free_names(m->pending, m->npending);
  m->pending = NULL;
  m->npending = 0;
}

static void on_checked(void *ud, const mp_check_result *res);
static void startup_checked(master *m, const mp_check_result *res);

/* Has the app checked in a child (check.c); on_checked hears how it went. */
static void start_check(master *m, const char *why) {
  m->check_why = why;
  m->check = mp_check_start(&m->loop, m->cfg, m->exe, m->argv, on_checked, m);
  if (m->check != NULL) return;
  char err[256];
  snprintf(err, sizeof err, "moonport: cannot start a process to check the "
           "app in: %s", strerror(errno));
  mp_check_result res = {.error = err};
  on_checked(m, &res);
}

/* The changed app checked: when it loaded, every worker loads it too.
 * Either way the outcome goes to the log and to the stats endpoint. */
static void reload_checked(master *m, const mp_check_result *res) {
  const char *why = m->check_why;
  mp_reload_status *st = mp_shared_reload(m->shared);
  if (!res->ok || keep_route_names(m, res->routes, res->nroutes) != 0) {
    const char *err = res->ok ? "moonport: out of memory" : res->error;
    mp_log(MP_LOG_ERROR, "reload (%s) failed: %s; the workers keep the "
           "code they have", why, err);
    snprintf(st->last_error, sizeof st->last_error, "%.*s",
             (int)sizeof st->last_error - 1, err);
    st->last_ok = 0;
    st->failures++;
    return;
  }
  st->last_error[0] = '\0';
  st->last_ok = 1;
  st->reloads++;
  st->generation++;
  for (unsigned i = 0; i < m->cfg->workers; i++) {
    incarnation *in = m->places[i].current;
    if (in == NULL || in->exited) continue;
    char msg = MP_CONTROL_RELOAD;
    uv_buf_t buf = uv_buf_init(&msg, 1);
    int rc = uv_try_write((uv_stream_t *)&in->control, &buf, 1);
    if (rc < 0)
      mp_log(MP_LOG_WARN, "worker %u: cannot ask it to reload: %s", in->id,
             uv_strerror(rc));
  }
  const char *what, *name;
  mp_config_source(m->cfg, &what, &name);
  mp_log(MP_LOG_INFO, "reloaded %s%s (%s): %u route%s", what, name, why,
         m->nroutes, m->nroutes == 1 ? "" : "s");
}

static void on_checked(void *ud, const mp_check_result *res) {
  master *m = ud;
  m->check = NULL;
  if (res->cancelled || m->stopping) return;
  for (unsigned i = 0; i < res->nfiles; i++) on_load_file(m, res->files[i]);
  /* The startup check adds to what the workers said they read (a file a
   * handler loaded meanwhile included); a reload's replaces it. */
  update_watch(m, res->ok && !m->startup_check_due);
  if (m->startup_check_due) {
    m->startup_check_due = false;
    startup_checked(m, res);
  } else {
    reload_checked(m, res);
  }
  /* Saves and SIGHUPs that came while this check ran: one more. */
  if (m->again_why != NULL && !m->stopping) {
    const char *why = m->again_why;
    m->again_why = NULL;
    mp_shared_reload(m->shared)->last_at = (int64_t)time(NULL);
    start_check(m, why);
  }
}

/* Has the changed app checked and, when it loads, every worker load it.
 * A reload asked for while a check runs waits for it and then makes one
 * check more, however many were asked for. */
static void reload(master *m, const char *why) {
  if (!m->started || m->stopping) return;
  if (m->check != NULL) {
    m->again_why = why;
    return;
  }
  mp_shared_reload(m->shared)->last_at = (int64_t)time(NULL);
  start_check(m, why);
}

static void on_files_changed(void *ud) { reload(ud, "files changed"); }

/* The startup check is in: the route names the workers' code has (for
 * the banner and for naming a stuck handler), then the banner. The
 * workers serve what they loaded whatever it says: a check that fails
 * where the workers' load did not (an app that reads something that
 * changed meanwhile) is logged. */
static void startup_checked(master *m, const mp_check_result *res) {
  if (!res->ok)
    mp_log(MP_LOG_ERROR, "the check of the app the workers loaded failed: %s",
           res->error);
  else if (keep_route_names(m, res->routes, res->nroutes) != 0)
    mp_log(MP_LOG_ERROR, "out of memory");
  announce(m);
}

/* Listens and starts the first workers, which load the app themselves:
 * the first answer comes after one load, not two (the startup check runs
 * once they serve). A worker that cannot load the app says why and exits
 * before it listens, which stops the server (exit 1). */
static void start_first_workers(master *m) {
  const mp_config *cfg = m->cfg;
  mp_reload_status *st = mp_shared_reload(m->shared);
  st->generation = 1;
  st->last_ok = 1;
  if (mp_listeners_listen(&m->listeners) != 0) goto fail;
  m->places = calloc(cfg->workers, sizeof *m->places);
  if (m->places == NULL) {
    fprintf(stderr, "moonport: out of memory\n");
    goto fail;
  }
  /* A tenth of the shorter of the handler and load timeouts, between 50
   * and 250 ms: a stuck worker is found within 10% of its timeout or a
   * quarter second, and a delayed restart happens within a quarter second
   * of its time. */
  uint64_t every = cfg->handler_timeout_ms < cfg->load_timeout_ms
                       ? cfg->handler_timeout_ms / 10
                       : cfg->load_timeout_ms / 10;
  every = every < 50 ? 50 : every > 250 ? 250 : every;
  uv_timer_start(&m->patrol, on_patrol, every, every);
  for (unsigned id = 1; id <= cfg->workers && !m->stopping; id++)
    start_worker(m, id);
  return;

fail:
  m->failed = true;
  m->stopping = true;
  close_master_handles(m);
}

static void free_master(master *m) {
  free_names(m->route_names, m->nroutes);
  free_names(m->watched, m->nwatched);
  free_names(m->pending, m->npending);
  free(m->places);
  mp_listeners_close(&m->listeners);
  /* After an upgrade the file is the new master's; a new master that
   * failed leaves the old one's pid in it. */
  if (m->pid_fd >= 0 && !m->upgraded && (m->pid_written || !m->pid_passed))
    mp_pidfile_remove(m->cfg->pid_file, m->pid_fd);
  else if (m->pid_fd >= 0)
    close(m->pid_fd);
  mp_shared_close(m->shared);
}

/* What needs root, then --user's identity: the pid file, the sockets and
 * the log files first, while the process may still be root. Returns 0,
 * or -1 after printing why. */
static int prepare(master *m) {
  const mp_config *cfg = m->cfg;
  mp_identity id;
  if (cfg->user != NULL && mp_identity_resolve(cfg->user, &id) != 0) return -1;
  if (cfg->pid_file != NULL &&
      (m->pid_fd = mp_pidfile_open(cfg->pid_file, &m->pid_passed)) < 0)
    return -1;
  if (mp_listeners_open(&m->listeners, cfg) != 0) return -1;
  if (cfg->user == NULL) return 0;
  if (geteuid() != 0) {
    /* A master an upgrading one started is the user already. */
    if (m->listeners.inherited && mp_identity_is_current(&id)) return 0;
    fprintf(stderr, "moonport: --user %s: only a master started as root can "
            "change its user (this one runs as uid %u)\n", cfg->user,
            (unsigned)geteuid());
    return -1;
  }
  if ((cfg->error_log != NULL &&
       mp_identity_give_file(&id, cfg->error_log, "--error-log") != 0) ||
      (cfg->access_log != NULL && strcmp(cfg->access_log, "-") != 0 &&
       mp_identity_give_file(&id, cfg->access_log, "--access-log") != 0))
    return -1;
  return mp_identity_assume(&id);
}

/* Widens root (absolute, without a trailing "/": "" is the file
 * system's root) to hold the directory of path, or path itself when
 * is_dir; the first call sets it. root becomes the deepest directory
 * holding both. Returns 0, or -1 with errno set when path's directory
 * cannot be resolved. */
static int add_root(char *root, size_t cap, const char *path, bool is_dir,
                    bool first) {
  char dir[PATH_MAX], abs[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  if (!is_dir) {
    char *slash = strrchr(dir, '/');
    if (slash == NULL) snprintf(dir, sizeof dir, ".");
    else if (slash == dir) dir[1] = '\0';
    else *slash = '\0';
  }
  for (size_t n = strlen(dir); n > 1 && dir[n - 1] == '/'; n--) dir[n - 1] = '\0';
  if (!mp_watch_abspath(dir, abs, sizeof abs)) return -1;
  if (first) {
    snprintf(root, cap, "%s", strcmp(abs, "/") == 0 ? "" : abs);
    return 0;
  }
  /* The common leading directories of root and abs. */
  size_t i = 0, last = 0;
  while (root[i] != '\0' && root[i] == abs[i]) {
    if (root[i] == '/') last = i;
    i++;
  }
  if ((root[i] == '\0' && (abs[i] == '/' || abs[i] == '\0')) ||
      (abs[i] == '\0' && root[i] == '/'))
    last = i;
  root[last] = '\0';
  return 0;
}

int mp_master_run(const mp_config *cfg, int argc, char **argv) {
  static master m;
  memset(&m, 0, sizeof m);
  m.cfg = cfg;
  m.argc = argc;
  m.argv = argv;
  m.pid_fd = -1;
  mp_log_set_process("master", 0);
  mp_upgrade_child_init();
  int status = 1;
  bool loop_open = false;

  size_t exe_len = sizeof m.exe;
  int rc = uv_exepath(m.exe, &exe_len);
  if (rc != 0) {
    fprintf(stderr, "moonport: cannot find its own executable: %s\n",
            uv_strerror(rc));
    goto done;
  }
  rc = mp_worker_shared_create(cfg, cfg->workers, &m.shared);
  if (rc != 0) {
    fprintf(stderr, "moonport: cannot create the shared stores (%zu + %zu + "
            "%zu bytes): %s\n", cfg->shared_size, cfg->mock_state_size,
            cfg->journal_memory, mp_strerror(rc));
    goto done;
  }
  /* Workers get the segment as descriptor 3 (a copy without close-on-exec);
   * nothing else the master might start should. */
  fcntl(mp_shared_fd(m.shared), F_SETFD, FD_CLOEXEC);
  if (uv_loop_init(&m.loop) != 0) {
    fprintf(stderr, "moonport: cannot start its event loop\n");
    goto done;
  }
  loop_open = true;
  if (!mp_watch_abspath(cfg->app, m.app_path, sizeof m.app_path)) {
    fprintf(stderr, "%s: cannot open: %s\n", cfg->app, strerror(errno));
    goto done;
  }
  memcpy(m.root, m.app_path, sizeof m.root);
  *strrchr(m.root, '/') = '\0';
  if (cfg->mock_dir != NULL || cfg->json_db != NULL || cfg->openapi_mock) {
    /* The files to watch are the mock's, not the library's: those under
     * --mock's directory (else the directory holding --json-db's file;
     * with --mock, a --json-db file outside its directory is not watched,
     * so that the database's own writes do not reload it) and the
     * directory holding --openapi's document, so under the deepest
     * directory holding them. */
    const char *sources[] = {cfg->mock_dir,
                             cfg->mock_dir == NULL ? cfg->json_db : NULL,
                             cfg->openapi_mock ? cfg->openapi : NULL};
    bool first = true;
    for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++) {
      if (sources[i] == NULL) continue;
      int bad = add_root(m.root, sizeof m.root, sources[i], i == 0, first);
      first = false;
      if (bad != 0) {
        fprintf(stderr, "moonport: %s: cannot open '%s': %s\n",
                i == 0 ? "--mock" : i == 1 ? "--json-db" : "--openapi",
                sources[i], strerror(errno));
        goto done;
      }
    }
  }
  if (prepare(&m) != 0) goto done;
  if (cfg->watch) {
    m.watch = mp_watch_new(&m.loop, cfg->watch_delay_ms, on_files_changed, &m);
    if (m.watch == NULL) {
      fprintf(stderr, "moonport: out of memory\n");
      goto done;
    }
  }
  static const int signums[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2};
  for (size_t i = 0; i < sizeof signums / sizeof signums[0]; i++) {
    uv_signal_init(&m.loop, &m.signals[i]);
    m.signals[i].data = &m;
    uv_signal_start(&m.signals[i], on_signal, signums[i]);
  }
  uv_timer_init(&m.loop, &m.deadline);
  m.deadline.data = &m;
  uv_timer_init(&m.loop, &m.patrol);
  m.patrol.data = &m;
  start_first_workers(&m);
  uv_run(&m.loop, UV_RUN_DEFAULT);
  status = m.failed ? 1 : 0;
  if (m.stop_signal != 0) mp_log(MP_LOG_INFO, "stopped");

done:
  if (loop_open) {
    if (m.watch != NULL) mp_watch_close(m.watch);
    uv_run(&m.loop, UV_RUN_DEFAULT); /* the close callbacks */
    uv_loop_close(&m.loop);
  }
  free_master(&m);
  return status;
}
