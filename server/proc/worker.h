/*
 * A worker: one libuv loop, one listening socket, one Lua VM, and the pools
 * its connections and requests draw from. Everything on the request path
 * belongs to exactly one worker, so nothing on it takes a lock.
 */
#ifndef MP_WORKER_H
#define MP_WORKER_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "http1.h"
#include "pool.h"
#include "router.h"
#include "shared.h"
#include "stats.h"

typedef struct mp_conn mp_conn;
typedef struct mp_request mp_request;
typedef struct mp_vm mp_vm;

/* The stores of the shared segment (mp_shared_store): moonport.shared's,
 * the mock server's state (admin-added mappings, scenario states,
 * counters; never evicted) and the mock's journal (only its entries;
 * the oldest written are dropped first). */
enum {
  MP_STORE_SHARED = 0,
  MP_STORE_MOCK = 1,
  MP_STORE_JOURNAL = 2,
  MP_NSTORES = 3
};

typedef struct mp_worker {
  uv_loop_t *loop;
  const mp_config *cfg;
  unsigned id;          /* 1..--workers; 0 when only loading (--check) */
  mp_shared *shared;    /* the segment of every MP_STORE_*; not owned */
  mp_worker_slot *slot; /* this worker's heartbeat, or NULL */
  uv_pipe_t control;    /* to the master: end of file means it is gone */
  mp_http1_limits limits;
  uv_tcp_t listener;
  uv_signal_t sigterm;
  uv_signal_t sigusr1;
  uv_timer_t drain_timer;
  uv_timer_t sweep_timer; /* connection timeouts, once a second */
  bool stopping; /* draining: no new connections, none kept alive */
  bool stopped;  /* every handle of the worker is closing */

  mp_vm *vm;         /* the current code; requests hold the VM they run on */
  mp_router *router; /* the current VM's router */
  mp_stats stats;    /* per-route figures are the current code's */
  mp_vm **retired;   /* released VMs, closed on the next loop turn */
  unsigned nretired;
  uv_check_t retire;
  /* When set, told every file an app load reads (the master watches them). */
  void (*on_load_file)(void *ud, const char *path);
  void *on_load_ud;
  uv_check_t log_flush; /* writes the access log once per loop turn */

  mp_pool conn_pool; /* connection records */
  mp_pool req_pool;  /* uv_write_t and uv_shutdown_t, while in flight */
  mp_pool rbuf_pool; /* connection read buffers */
  mp_pool out_pool;  /* first blocks of output and header buffers */
  size_t rbuf_size;

  mp_conn *conns; /* every open connection, for shutdown */
  mp_conn *deferred; /* connections waiting for their next turn */
  uv_idle_t turn_idle; /* active while any is deferred */
  unsigned nconns;

  /* Request slots: a request is named to Lua by (slot, generation). */
  mp_request **reqs;
  uint32_t nreqs;
  uint32_t *free_slots;
  uint32_t nfree_slots;
  mp_request *detached; /* requests whose client has gone, handler running */
  unsigned ndetached;

  /* Scratch space FFI getters decode into; Lua copies out at once. */
  char *scratch;
  size_t scratch_cap;

  /* The cached "Date: ...\r\n" line, rebuilt when the second changes. */
  char date[40];
  size_t date_len;
  uint64_t date_sec;
} mp_worker;

/* The worker of this process (the FFI functions reach it here). */
extern mp_worker *mp_worker_self;

/* Creates the shared segment with the MP_STORE_* stores sized as cfg says
 * (--shared-size, --mock-state-size, --journal-memory) and nslots worker
 * slots. Returns what mp_shared_create does. */
int mp_worker_shared_create(const mp_config *cfg, unsigned nslots,
                            mp_shared **out);

/* Sets up the loop, pools, VM (loading cfg->app, with `shared` as
 * moonport.shared) and, unless cfg->check, the listening socket and the
 * signals of worker `id`. On failure prints the reason to stderr and
 * returns the exit code to use (1 for a broken app or an unusable
 * address). Returns 0 on success. */
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

/* A request let go of vm: when nothing else holds it, it is closed on the
 * next loop turn (not now: the caller may be deep in a callback). */
void mp_worker_release_vm(mp_worker *w, mp_vm *vm);

/* Unmaps the clean library pages startup touched (they stay in the page
 * cache), so a process's resident size is what it serves with. */
void mp_release_startup_pages(void);

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

/* Frees everything mp_worker_init made. */
void mp_worker_destroy(mp_worker *w);

/* The idle callback that gives deferred connections their next turn. */
void mp_worker_on_turn(uv_idle_t *h);

/* A connection closed, or a detached request ended, while the worker
 * drains: stop once none of either is left. */
void mp_worker_conn_closed(mp_worker *w);

/* The current Date line. Cheap: formats at most once per second. */
const char *mp_worker_date(mp_worker *w, size_t *len);

/* Appends the stats endpoint's JSON to out. Returns 0 or MP_NOMEM. */
int mp_worker_stats_json(mp_worker *w, mp_buf *out);

/* Grows the scratch buffer to at least n bytes; returns it or NULL. */
char *mp_worker_scratch(mp_worker *w, size_t n);

#endif
