/*
 * A worker process: one libuv loop, one listening socket, the signals and
 * the control socket to the master, around one server (req/server.h: the
 * connections, requests, pools and code) whose code is a Lua VM.
 */
#ifndef MP_WORKER_H
#define MP_WORKER_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "listen.h"
#include "server.h"
#include "shared.h"
#include "vm.h"

typedef struct mp_worker {
  mp_server srv;        /* what it serves with (req/server.h) */
  const mp_config *cfg;
  unsigned id;          /* 1..--workers */
  mp_vm_host host;      /* what its Lua VMs get from it */
  uv_pipe_t control;    /* to the master: end of file means it is gone */
  uv_tcp_t listener;
  uv_signal_t sigterm;
  uv_signal_t sigusr1;
  uv_timer_t drain_timer;
  uv_timer_t sweep_timer; /* connection timeouts, once a second */
  bool stopped;  /* every handle of the worker is closing */
  uv_check_t log_flush; /* writes the access log once per loop turn */
} mp_worker;

/* Creates the shared segment with the MP_STORE_* stores sized as cfg says
 * (--shared-size, --mock-state-size, --journal-memory) and nslots worker
 * slots. Returns what mp_shared_create does. */
int mp_worker_shared_create(const mp_config *cfg, unsigned nslots,
                            mp_shared **out);

/* Sets up the loop, the server, the VM (loading cfg->app, with `shared`
 * as its stores), the listening socket (MP_WORKER_LISTEN_FD, inherited
 * from the master) and the signals of worker `id`.
 * On failure prints the reason to stderr and returns the exit code to use
 * (1 for a broken app or an unusable address). Returns 0 on success. */
int mp_worker_init(mp_worker *w, const mp_config *cfg, mp_shared *shared,
                   unsigned id);

/* The life of worker process `id`, started by master (its pid): maps the
 * shared segment, starts serving, tells the master it listens, and serves
 * until SIGTERM. The kernel kills it if the master dies. Returns the exit
 * status. */
int mp_worker_main(const mp_config *cfg, unsigned id, int master);

/* Loads the app again into a new VM and makes it current, between
 * requests: requests already running finish on the VM they started on.
 * On failure logs "reload failed: file:line: message" and keeps the code
 * it has. Returns 0 or -1. */
int mp_worker_reload(mp_worker *w);

/* Unmaps the clean library pages startup touched (they stay in the page
 * cache), so a process's resident size is what it serves with. */
void mp_release_startup_pages(void);

/* Frees everything mp_worker_init made. */
void mp_worker_destroy(mp_worker *w);

#endif
