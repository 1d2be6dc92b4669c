/*
 * The master process: it checks the app, creates the shared segment,
 * holds the listening sockets, starts the workers and keeps them running, and
 * turns signals into what the workers should do. It serves no requests and
 * runs no handler.
 */
#ifndef MP_MASTER_H
#define MP_MASTER_H

#include "config.h"

/* The environment variable that tells an exec'd moonport it is worker N
 * of master PID ("N:PID"), and the descriptors it inherits: the shared segment and its end of the
 * control socket (a byte written there says "listening"; end of file
 * there says the master is gone), and the listening socket it accepts
 * on, which the master holds. */
#define MP_WORKER_ENV "MOONPORT_WORKER"
#define MP_WORKER_SHARED_FD 3
#define MP_WORKER_CONTROL_FD 4
#define MP_WORKER_LISTEN_FD 5

/* Runs the master until the workers have stopped after SIGTERM or SIGINT.
 * argv is the command line as given, which every worker is started with
 * (plus the resolved --listen). Returns the exit status: 0 after a clean
 * stop, 1 when the app is broken or the first workers could not start. */
int mp_master_run(const mp_config *cfg, int argc, char **argv);

#endif
