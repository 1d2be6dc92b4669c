/*
 * Checking the app in a process of its own. The master never runs the
 * app's code: a script may loop forever or allocate without end while it
 * loads, and the master must stay free to take signals, replace workers
 * and kill stuck ones. So it starts this same executable with
 * MP_CHECK_ENV set; that child loads the app under --load-memory-limit,
 * reports the routes and the files the load read (or the error) over a
 * pipe, and exits. The master kills a child that has not finished within
 * --load-timeout, and hears of the outcome through one callback.
 */
#ifndef MP_CHECK_H
#define MP_CHECK_H

#include <stdbool.h>
#include <uv.h>

#include "config.h"

/* The environment variable that makes an exec'd moonport a check child
 * (its value: the master's pid), and the descriptor it writes its report
 * to. */
#define MP_CHECK_ENV "MOONPORT_CHECK"
#define MP_CHECK_REPORT_FD 3

/* What a check found. Strings are the check's; they live until the
 * callback returns. */
typedef struct mp_check_result {
  bool ok;
  bool cancelled;       /* mp_check_cancel stopped it; nothing else is set */
  const char *error;    /* one line, "app.lua:7: message", when !ok */
  char **routes;        /* "GET /users/:id", in route order, when ok */
  unsigned nroutes;
  char **files;         /* every file the load read, ok or not */
  unsigned nfiles;
} mp_check_result;

typedef struct mp_check mp_check;
typedef void (*mp_check_cb)(void *ud, const mp_check_result *result);

/* Starts checking the app of cfg: runs exe with argv (the command line
 * the master was given) in a child. cb(ud, result) is called once, from
 * the loop, when the child has reported and exited, has been killed past
 * --load-timeout, or the check was cancelled. Returns the check, or NULL
 * when the child could not be started (after calling nothing). */
mp_check *mp_check_start(uv_loop_t *loop, const mp_config *cfg,
                         const char *exe, char **argv, mp_check_cb cb,
                         void *ud);

/* Kills the child; cb is called with result->cancelled set once its
 * handles are closed, and the check's memory goes with them. */
void mp_check_cancel(mp_check *c);

/* The child's side: loads the app of cfg and writes the report to
 * MP_CHECK_REPORT_FD. The kernel kills it when master (a pid) dies; one
 * whose master is already gone returns 1 at once. Runs Lua. Returns the
 * exit status (0 when the app loaded). */
int mp_check_child_main(const mp_config *cfg, int master);

#endif
