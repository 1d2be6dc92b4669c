/*
 * The park: a wait that other code ends. A parked request (or task) waits
 * until some code of the worker unparks it, until its timeout passes, or
 * until its client leaves before its response is complete (then it is
 * woken as a sleep is, and its wait answers "closed"). What it waited for
 * is the business of the code that parked it: light threads
 * (moonport.thread.wait) and semaphores are built on this in Lua
 * (lua/moonport/core/task.lua), which is why a semaphore works across the
 * coroutines of different requests of one worker.
 */
#ifndef MP_PARK_H
#define MP_PARK_H

#include <stdbool.h>

#include "request.h"

/* Parks r's running code (it must yield right after a 0 return) for at
 * most timeout_ms milliseconds; a negative timeout, or one past 2^53 ms,
 * parks until unparked. children: the end of one of r's tasks unparks it
 * too. Returns 0, MP_INVALID for a NaN timeout, or MP_STATE when r's code
 * is not running or already waits. */
int mp_request_park(mp_request *r, double timeout_ms, bool children);

/* Resumes parked r on the next loop turn, never from inside the caller's
 * stack. Returns 0, or MP_STATE when r is not parked (it waits on
 * something else, runs, or has already been unparked). */
int mp_request_unpark(mp_request *r);

/* Whether r is parked waiting for its children's ends among other things. */
bool mp_request_parked_for_children(const mp_request *r);

#endif
