/*
 * The listening sockets (see listeners.h).
 *
 * Binding: a first bind without SO_REUSEPORT makes sure the port is free:
 * with it, a second moonport of the same user could bind a port the first
 * one serves, and the two would silently split its traffic. Then the
 * sockets are bound with SO_REUSEPORT, the first one choosing the port
 * when --listen says 0 and the others taking the one it got; a host name
 * is resolved once, by the first.
 *
 * A bound socket that does not listen gets no connections, so the master
 * binds at startup (before --user drops privileges) and listens only once
 * the app has checked: until then, clients are refused, not queued.
 *
 * Inherited sockets are checked (a listening stream socket each, all on
 * one address) and made non-blocking and close-on-exec here, whoever
 * passed them.
 */
#include "listeners.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "errors.h"
#include "listen.h"

/* "addr:port" of a socket, with brackets around an IPv6 address. */
static int sock_name(int fd, char *out, size_t cap) {
  struct sockaddr_storage sa;
  socklen_t len = sizeof sa;
  char ip[MP_LISTEN_ADDR_MAX];
  int port;
  if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0) return -errno;
  if (sa.ss_family == AF_INET6) {
    uv_ip6_name((struct sockaddr_in6 *)&sa, ip, sizeof ip);
    port = ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
    snprintf(out, cap, "[%s]:%d", ip, port);
  } else if (sa.ss_family == AF_INET) {
    uv_ip4_name((struct sockaddr_in *)&sa, ip, sizeof ip);
    port = ntohs(((struct sockaddr_in *)&sa)->sin_port);
    snprintf(out, cap, "%s:%d", ip, port);
  } else {
    return MP_INVALID;
  }
  return 0;
}

/* Parses "3,4,5" into l->fds. */
static int parse_fds(mp_listeners *l, const char *text) {
  const char *p = text;
  while (*p != '\0') {
    char *end;
    long fd = strtol(p, &end, 10);
    if (end == p || fd < 0 || fd > 65535 || l->n == MP_MAX_WORKERS ||
        (*end != ',' && *end != '\0'))
      return MP_INVALID;
    l->fds[l->n++] = (int)fd;
    p = *end == ',' ? end + 1 : end;
  }
  return l->n > 0 ? 0 : MP_INVALID;
}

/* Checks and prepares the inherited sockets; names their address. */
static int adopt(mp_listeners *l, const char *from) {
  char first[sizeof l->addr] = "";
  for (unsigned i = 0; i < l->n; i++) {
    int fd = l->fds[i], type = 0, listening = 0;
    socklen_t len = sizeof type;
    char name[sizeof l->addr];
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
        type != SOCK_STREAM ||
        getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening,
                   &(socklen_t){sizeof listening}) != 0 ||
        !listening || sock_name(fd, name, sizeof name) != 0) {
      fprintf(stderr, "moonport: %s: descriptor %d is not a listening TCP "
              "socket\n", from, fd);
      return MP_INVALID;
    }
    if (i == 0) {
      snprintf(first, sizeof first, "%s", name);
    } else if (strcmp(first, name) != 0) {
      fprintf(stderr, "moonport: %s: the sockets listen on %s and %s; "
              "moonport serves one address\n", from, first, name);
      return MP_INVALID;
    }
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  snprintf(l->addr, sizeof l->addr, "%s", first);
  l->inherited = true;
  return 0;
}

/* systemd's socket activation: LISTEN_FDS sockets from descriptor 3 on,
 * meant for LISTEN_PID. Returns 1 when it applies, 0 when not, or a
 * negative code. */
static int from_systemd(mp_listeners *l) {
  const char *pid = getenv("LISTEN_PID"), *nfds = getenv("LISTEN_FDS");
  int rc = 0;
  if (pid == NULL || nfds == NULL || atol(pid) != (long)getpid()) goto done;
  long n = atol(nfds);
  if (n < 1 || n > MP_MAX_WORKERS) {
    fprintf(stderr, "moonport: LISTEN_FDS=%s: expected 1 to %d sockets\n",
            nfds, MP_MAX_WORKERS);
    rc = MP_INVALID;
    goto done;
  }
  for (long i = 0; i < n; i++) l->fds[l->n++] = 3 + (int)i;
  rc = adopt(l, "LISTEN_FDS");
  l->systemd = rc == 0;
  rc = rc == 0 ? 1 : rc;
done:
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
  return rc;
}

static int bind_all(mp_listeners *l, const mp_config *cfg) {
  char probed[MP_LISTEN_ADDR_MAX], addr[MP_LISTEN_ADDR_MAX];
  const char *host = cfg->host;
  int port = cfg->port, got, probe;
  if (port != 0) {
    if (mp_listen_socket(host, port, false, &probe, &got, probed) != 0)
      return MP_INVALID;
    close(probe);
    host = probed;
  }
  for (unsigned i = 0; i < cfg->workers; i++) {
    int rc = mp_listen_socket(host, port, true, &l->fds[i], &got,
                              i == 0 ? addr : NULL);
    if (rc != 0) return rc;
    l->n++;
    if (i == 0) {
      host = addr;
      port = got;
    }
  }
  bool v6 = strchr(addr, ':') != NULL;
  snprintf(l->addr, sizeof l->addr, "%s%s%s:%d", v6 ? "[" : "", addr,
           v6 ? "]" : "", port);
  return 0;
}

int mp_listeners_open(mp_listeners *l, const mp_config *cfg) {
  memset(l, 0, sizeof *l);
  int rc;
  const char *passed = getenv(MP_LISTEN_FDS_ENV);
  if (passed != NULL) {
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", passed);
    unsetenv(MP_LISTEN_FDS_ENV);
    rc = parse_fds(l, copy);
    if (rc != 0)
      fprintf(stderr, "moonport: %s=%s: expected descriptors, as 3,4,5\n",
              MP_LISTEN_FDS_ENV, copy);
    else
      rc = adopt(l, MP_LISTEN_FDS_ENV);
    if (rc != 0) goto err;
    /* systemd's variables are for the first master only. */
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
    return 0;
  }
  rc = from_systemd(l);
  if (rc > 0) return 0;
  if (rc < 0) goto err;
  rc = bind_all(l, cfg);
  if (rc != 0) goto err;
  return 0;

err:
  mp_listeners_close(l);
  return rc;
}

int mp_listeners_listen(mp_listeners *l) {
  if (l->inherited) return 0;
  for (unsigned i = 0; i < l->n; i++) {
    if (listen(l->fds[i], 511) != 0) {
      int rc = -errno;
      fprintf(stderr, "moonport: cannot listen on %s: %s\n", l->addr,
              strerror(-rc));
      return rc;
    }
  }
  return 0;
}

int mp_listeners_fd(const mp_listeners *l, unsigned id) {
  return l->fds[(id - 1) % l->n];
}

void mp_listeners_close(mp_listeners *l) {
  for (unsigned i = 0; i < l->n; i++)
    if (l->fds[i] >= 0) close(l->fds[i]);
  l->n = 0;
}
