/*
 * Listening sockets (see listen.h): resolving --listen's host, binding,
 * and the open-file limit connections need.
 */
#include "listen.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "log.h"

void mp_raise_fd_limit(unsigned max_connections) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  rlim_t want = (rlim_t)max_connections + 64;
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want)
    mp_log(MP_LOG_WARN,
           "open-file limit is %llu, below the %llu that --max-connections "
           "%u needs; connections past it will be refused by the kernel",
           (unsigned long long)rl.rlim_cur, (unsigned long long)want,
           max_connections);
}

/* host:port as a socket address: an IP address as it is (*named stays
 * false), or a name resolved with getaddrinfo, which gives the first IPv4
 * address the name has, else its first IPv6 one (a listener binds one
 * address). Prints the reason to stderr and returns a negative code when
 * there is none. */
static int resolve(const char *host, int port, struct sockaddr_storage *addr,
                   bool *named) {
  *named = false;
  if (uv_ip4_addr(host, port, (struct sockaddr_in *)addr) == 0 ||
      uv_ip6_addr(host, port, (struct sockaddr_in6 *)addr) == 0)
    return 0;
  *named = true;
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
  struct addrinfo *res;
  int rc = getaddrinfo(host, NULL, &hints, &res);
  if (rc != 0) {
    fprintf(stderr, "moonport: --listen: cannot resolve '%s': %s\n", host,
            gai_strerror(rc));
    return UV_EINVAL;
  }
  const struct addrinfo *v4 = NULL, *v6 = NULL;
  for (const struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
    if (ai->ai_family == AF_INET && v4 == NULL) v4 = ai;
    if (ai->ai_family == AF_INET6 && v6 == NULL) v6 = ai;
  }
  const struct addrinfo *pick = v4 != NULL ? v4 : v6;
  if (pick != NULL) {
    memcpy(addr, pick->ai_addr, pick->ai_addrlen);
    if (pick->ai_family == AF_INET)
      ((struct sockaddr_in *)addr)->sin_port = htons((uint16_t)port);
    else
      ((struct sockaddr_in6 *)addr)->sin6_port = htons((uint16_t)port);
  } else {
    fprintf(stderr, "moonport: --listen: '%s' has no IP address\n", host);
  }
  freeaddrinfo(res);
  return pick != NULL ? 0 : UV_EINVAL;
}

int mp_listen_socket(const char *host, int port, bool reuseport, int *fd,
                     int *bound_port, char *bound_addr) {
  struct sockaddr_storage addr;
  int s = -1;
  bool named;
  int rc = resolve(host, port, &addr, &named);
  if (rc != 0) return rc;
  socklen_t len = addr.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                              : sizeof(struct sockaddr_in);
  int one = 1;
  s = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0 ||
      setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      (reuseport &&
       setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) ||
      bind(s, (struct sockaddr *)&addr, len) != 0 ||
      getsockname(s, (struct sockaddr *)&addr, &len) != 0) {
    rc = -errno;
    goto err;
  }
  *bound_port = ntohs(addr.ss_family == AF_INET6
                          ? ((struct sockaddr_in6 *)&addr)->sin6_port
                          : ((struct sockaddr_in *)&addr)->sin_port);
  /* An address given as one is kept as written: an IPv6 zone ("%eth0")
   * would not survive the round trip. */
  if (bound_addr != NULL && !named)
    snprintf(bound_addr, MP_LISTEN_ADDR_MAX, "%s", host);
  else if (bound_addr != NULL && addr.ss_family == AF_INET6)
    uv_ip6_name((struct sockaddr_in6 *)&addr, bound_addr, MP_LISTEN_ADDR_MAX);
  else if (bound_addr != NULL)
    uv_ip4_name((struct sockaddr_in *)&addr, bound_addr, MP_LISTEN_ADDR_MAX);
  *fd = s;
  return 0;

err:
  fprintf(stderr, "moonport: cannot listen on %s:%d: %s\n", host, port,
          uv_strerror(rc));
  if (s >= 0) close(s);
  return rc;
}

