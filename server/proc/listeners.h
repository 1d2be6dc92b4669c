/*
 * The listening sockets: the master holds them and hands each worker one
 * as an inherited descriptor, so that a port below 1024 is bound before
 * --user drops privileges, a worker started again after a crash accepts
 * on the socket its predecessor had (the connections queued there wait
 * for it instead of being reset), and a new binary takes them over on an
 * upgrade without the port ever closing.
 *
 * Where they come from: a master started by an upgrading one inherits
 * them (MP_LISTEN_FDS_ENV); under systemd socket activation it inherits
 * the unit's (LISTEN_FDS and LISTEN_PID); else it binds one per worker
 * itself, all with SO_REUSEPORT, so the kernel spreads connections over
 * them. Worker N gets socket (N - 1) modulo their number: when there are
 * fewer sockets than workers (systemd's single socket), workers share.
 */
#ifndef MP_LISTENERS_H
#define MP_LISTENERS_H

#include <stdbool.h>

#include "config.h"

/* The descriptors an upgrading master passes, "3,4,5" (nginx's model). */
#define MP_LISTEN_FDS_ENV "MOONPORT_LISTEN_FDS"

typedef struct mp_listeners {
  int fds[MP_MAX_WORKERS];
  unsigned n;
  bool inherited;   /* from MP_LISTEN_FDS_ENV or systemd: already listening */
  bool systemd;     /* from systemd's LISTEN_FDS */
  char addr[300];   /* "127.0.0.1:8080" or "[::1]:8080", as --listen takes it */
} mp_listeners;

/* Fills l with the inherited sockets, or binds cfg's address workers
 * times (without listening yet; mp_listeners_listen does). Takes the
 * environment variables that name inherited sockets out of the
 * environment, so no child sees them. Every descriptor is close-on-exec.
 * Prints the reason to stderr and returns a negative code on failure,
 * with nothing left open. */
int mp_listeners_open(mp_listeners *l, const mp_config *cfg);

/* Starts listening on sockets this process bound. Returns 0 or a negative
 * code (after printing it). */
int mp_listeners_listen(mp_listeners *l);

/* The socket of worker id (1-based). */
int mp_listeners_fd(const mp_listeners *l, unsigned id);

/* Closes every socket; l is empty after it. */
void mp_listeners_close(mp_listeners *l);

#endif
