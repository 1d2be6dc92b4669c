/*
 * The binary upgrade (see upgrade.h).
 *
 * The old master's side owns two handles: the new master's process and
 * the read end of its ready pipe. The callback runs once: at the ready
 * byte, or when the process exits without having sent it. Once the
 * new master is ready, the process handle is closed but the process is
 * not killed: it is the server now, and outlives this one.
 *
 * Descriptors in the new master: 0 to 2 as the old master's, the listening
 * sockets from 3 on, then the ready pipe, then the pid file.
 */
#include "upgrade.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "pidfile.h"

struct mp_upgrade {
  uv_process_t proc;
  uv_pipe_t ready;
  int open_handles;
  bool exited;
  bool done; /* cb has run */
  mp_upgrade_cb cb;
  void *ud;
};

static int child_fd = -1;

static void free_upgrade(uv_handle_t *h) {
  mp_upgrade *u = h->data;
  if (--u->open_handles == 0) free(u);
}

static void finish(mp_upgrade *u, bool ready, const char *why) {
  if (u->done) return;
  u->done = true;
  u->cb(u->ud, u->proc.pid, ready, why);
}

static void on_exit_cb(uv_process_t *p, int64_t status, int sig) {
  mp_upgrade *u = p->data;
  char why[96];
  if (sig != 0)
    snprintf(why, sizeof why, "killed by signal %d (%s)", sig, strsignal(sig));
  else
    snprintf(why, sizeof why, "exited with status %lld", (long long)status);
  u->exited = true;
  finish(u, false, why);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  static char byte[16];
  (void)h;
  (void)hint;
  *buf = uv_buf_init(byte, sizeof byte);
}

static void on_ready(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  mp_upgrade *u = s->data;
  (void)buf;
  if (n == 0) return;
  uv_read_stop(s);
  /* End of file without the byte: the new master is exiting (nothing else
   * holds the pipe: it is close-on-exec there), and its exit says how. */
  if (n > 0) finish(u, true, NULL);
}

mp_upgrade *mp_upgrade_start(uv_loop_t *loop, const char *exe, char **argv,
                             const mp_listeners *l, int pid_fd,
                             mp_upgrade_cb cb, void *ud) {
  mp_upgrade *u = calloc(1, sizeof *u);
  unsigned nfds = 3 + l->n + 1 + (pid_fd >= 0);
  uv_stdio_container_t *stdio = calloc(nfds, sizeof *stdio);
  char fds[4096], ready_fd[16], pid_text[16];
  size_t len = 0;
  if (u == NULL || stdio == NULL) {
    mp_log(MP_LOG_ERROR, "upgrade: out of memory");
    goto err;
  }
  u->cb = cb;
  u->ud = ud;
  for (int fd = 0; fd < 3; fd++) {
    stdio[fd].flags = UV_INHERIT_FD;
    stdio[fd].data.fd = fd;
  }
  fds[0] = '\0';
  for (unsigned i = 0; i < l->n; i++) {
    stdio[3 + i].flags = UV_INHERIT_FD;
    stdio[3 + i].data.fd = l->fds[i];
    len += (size_t)snprintf(fds + len, sizeof fds - len, "%s%u", i ? "," : "",
                            3 + i);
    if (len >= sizeof fds) {
      mp_log(MP_LOG_ERROR, "upgrade: too many sockets to pass");
      goto err;
    }
  }
  unsigned rfd = 3 + l->n;
  uv_pipe_init(loop, &u->ready, 0);
  u->ready.data = u;
  stdio[rfd].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
  stdio[rfd].data.stream = (uv_stream_t *)&u->ready;
  snprintf(ready_fd, sizeof ready_fd, "%u", rfd);
  if (pid_fd >= 0) {
    stdio[rfd + 1].flags = UV_INHERIT_FD;
    stdio[rfd + 1].data.fd = pid_fd;
    snprintf(pid_text, sizeof pid_text, "%u", rfd + 1);
    setenv(MP_PID_FD_ENV, pid_text, 1);
  }
  setenv(MP_LISTEN_FDS_ENV, fds, 1);
  setenv(MP_UPGRADE_ENV, ready_fd, 1);
  uv_process_options_t opt;
  memset(&opt, 0, sizeof opt);
  opt.file = exe;
  opt.args = argv;
  opt.exit_cb = on_exit_cb;
  opt.stdio = stdio;
  opt.stdio_count = (int)nfds;
  u->proc.data = u;
  int rc = uv_spawn(loop, &u->proc, &opt);
  unsetenv(MP_LISTEN_FDS_ENV);
  unsetenv(MP_UPGRADE_ENV);
  unsetenv(MP_PID_FD_ENV);
  free(stdio);
  stdio = NULL;
  u->open_handles = 2;
  if (rc != 0) {
    mp_log(MP_LOG_ERROR, "upgrade: cannot start %s: %s", exe, uv_strerror(rc));
    uv_close((uv_handle_t *)&u->proc, free_upgrade);
    uv_close((uv_handle_t *)&u->ready, free_upgrade);
    return NULL;
  }
  uv_read_start((uv_stream_t *)&u->ready, on_alloc, on_ready);
  return u;

err:
  free(stdio);
  free(u);
  return NULL;
}

void mp_upgrade_release(mp_upgrade *u, bool kill) {
  u->done = true;
  if (kill && !u->exited) uv_process_kill(&u->proc, SIGTERM);
  uv_close((uv_handle_t *)&u->proc, free_upgrade);
  uv_close((uv_handle_t *)&u->ready, free_upgrade);
}

void mp_upgrade_child_init(void) {
  const char *v = getenv(MP_UPGRADE_ENV);
  if (v == NULL) return;
  int fd = atoi(v);
  unsetenv(MP_UPGRADE_ENV);
  if (fd > 2 && fcntl(fd, F_SETFD, FD_CLOEXEC) == 0) child_fd = fd;
}

bool mp_upgrade_child_ready(void) {
  if (child_fd < 0) return false;
  char byte = 'R';
  bool said = write(child_fd, &byte, 1) == 1;
  close(child_fd);
  child_fd = -1;
  return said;
}
