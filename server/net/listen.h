/*
 * Listening sockets: a socket bound to --listen's address (a name is
 * resolved once), and the open-file limit its connections need. No loop
 * here: the worker hands the socket to libuv.
 */
#ifndef MP_LISTEN_H
#define MP_LISTEN_H

#include <stdbool.h>

#define MP_LISTEN_ADDR_MAX 64 /* an IP address as text, with an IPv6 zone */

/* Opens a TCP socket bound to host:port with SO_REUSEADDR (and
 * SO_REUSEPORT when reuseport), not listening yet, and stores it in *fd
 * and the port it got in *bound_port; with bound_addr (MP_LISTEN_ADDR_MAX
 * bytes), the address it bound, as text. host is an IP address, or a
 * name: getaddrinfo resolves it, and the socket binds the first IPv4
 * address, else the first IPv6 one. Prints the reason to stderr and
 * returns a negative code on failure. */
int mp_listen_socket(const char *host, int port, bool reuseport, int *fd,
                     int *bound_port, char *bound_addr);

/* Every connection is a descriptor: raises the soft open-file limit as
 * far as the hard one allows, and logs a warning when that is still short
 * of max_connections and some room. */
void mp_raise_fd_limit(unsigned max_connections);

#endif
