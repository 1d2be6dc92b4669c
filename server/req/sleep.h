/*
 * moonport.sleep's wait: a timer. Cut short when the client leaves before
 * the response is complete; a sleep after that sleeps its time.
 */
#ifndef MP_SLEEP_H
#define MP_SLEEP_H

#include "request.h"

/* The longest sleep, in ms: 2^53, about 285,000 years. A double past
 * 2^64 has no integer to convert to (undefined in C), so longer ones are
 * cut to this. */
#define MP_SLEEP_MAX_MS 9007199254740992.0

/* Suspends r's handler for ms milliseconds (it must yield next). Returns
 * 0, MP_INVALID for a negative or NaN ms, or MP_STATE when r's handler is
 * not running or already waits. */
int mp_request_sleep(mp_request *r, double ms);

#endif
