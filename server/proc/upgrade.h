/*
 * Upgrading the binary without closing the port (nginx's model): on
 * SIGUSR2 the master starts its executable again, by the path it was
 * started from (so a new file there is the new binary), with the same
 * arguments, handing it the listening sockets (MP_LISTEN_FDS_ENV), the pid
 * file (MP_PID_FD_ENV) and a pipe (MP_UPGRADE_ENV). The new master starts
 * its workers on those sockets and, once they all listen, writes one byte
 * to the pipe; the old master then lets its workers drain and exits. Until
 * then both generations accept on the same sockets, so no connection
 * finds the port closed and none queued is lost. A new master that exits
 * first (a broken binary, an app that no longer loads) changes nothing:
 * the old one keeps serving.
 */
#ifndef MP_UPGRADE_H
#define MP_UPGRADE_H

#include <stdbool.h>
#include <uv.h>

#include "listeners.h"

#define MP_UPGRADE_ENV "MOONPORT_UPGRADE_FD"

typedef struct mp_upgrade mp_upgrade;

/* How it ended: ready (the new master serves), or not, with why ("exited
 * with status 1"). */
typedef void (*mp_upgrade_cb)(void *ud, int pid, bool ready, const char *why);

/* Starts exe with argv and the sockets of l (and pid_fd, or -1). cb(ud,
 * ...) is called once, from the loop. Returns the upgrade, or NULL when
 * the process could not be started (after printing why to the log). */
mp_upgrade *mp_upgrade_start(uv_loop_t *loop, const char *exe, char **argv,
                             const mp_listeners *l, int pid_fd,
                             mp_upgrade_cb cb, void *ud);

/* Lets the new master go its way: closes the handles (the process goes on
 * running) and frees u once they have closed. With kill, sends it SIGTERM
 * first (the old master stops before the new one was ready). */
void mp_upgrade_release(mp_upgrade *u, bool kill);

/* The new master's side: takes MP_UPGRADE_ENV out of the environment.
 * Call once at startup. */
void mp_upgrade_child_init(void);

/* The new master's side: says "ready" to the old master, when there is
 * one. Returns whether there was. */
bool mp_upgrade_child_ready(void);

#endif
