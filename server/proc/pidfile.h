/*
 * --pid-file: the master's pid in a file, for service managers and
 * scripts (kill -USR2 $(cat moonport.pid)).
 *
 * The file is opened and locked (flock) at startup, before --user drops
 * privileges, and the lock is held as long as the descriptor is open: a
 * second moonport finds it locked and refuses to start, while a file left
 * by a moonport that died holds no lock and is taken over. On an upgrade
 * the old master passes its descriptor to the new one (MP_PID_FD_ENV),
 * which shares the lock; the new one writes its pid there once it serves,
 * before the old one exits, so that systemd, which reads PIDFile= again
 * when the main process exits, follows it.
 */
#ifndef MP_PIDFILE_H
#define MP_PIDFILE_H

#include <stdbool.h>

#define MP_PID_FD_ENV "MOONPORT_PID_FD"

/* Opens and locks path (or takes the descriptor an upgrading master
 * passed, and sets *passed), close-on-exec. Returns the descriptor, or -1
 * after printing why (another moonport holds it, or it cannot be
 * opened). */
int mp_pidfile_open(const char *path, bool *passed);

/* Writes this process's pid into the file. Returns 0 or a negative
 * code. */
int mp_pidfile_write(int fd);

/* Removes path (or, when the directory does not let this process, empties
 * the file) and closes fd. */
void mp_pidfile_remove(const char *path, int fd);

#endif
