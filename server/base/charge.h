/*
 * Whose work the core is doing right now: the one "current request"
 * mechanism. While a request is being served (its body parsed, its handler
 * run), mp_charge_now points at its record, and every byte the core
 * mallocs (base/pool.c) and every byte the Lua heap hands out
 * (lua/heap.c) is counted there. Loading an app counts into a record of
 * its own, with no owner. Between requests it is NULL and nothing is
 * charged.
 */
#ifndef MP_CHARGE_H
#define MP_CHARGE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct mp_charge {
  void *owner;           /* the request (req/request.h), NULL for a load */
  uint64_t c_bytes;      /* malloc'ed by the core on its behalf */
  uint64_t lua_bytes;    /* allocated in the Lua heap (growths count) */
  int64_t lua_live;      /* the Lua heap's growth: allocations less frees */
  bool lua_exceeded;     /* a Lua allocation was refused: past the limit */
  uint64_t refused_size; /* the first refused allocation's size */
  int64_t refused_live;  /* and what lua_live would have been with it */
} mp_charge;

extern mp_charge *mp_charge_now;

/* Makes c current (NULL for none) and returns the one that was. */
static inline mp_charge *mp_charge_switch(mp_charge *c) {
  mp_charge *was = mp_charge_now;
  mp_charge_now = c;
  return was;
}

#endif
