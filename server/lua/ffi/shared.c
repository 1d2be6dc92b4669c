/*
 * moonport.shared's door (see ../ffi.h): the stores of the shared segment
 * (base/shared.c) for lua/moonport/core/shared.lua, moonport.shared and the
 * mock's state and journal alike. The segment is the VM host's. Strings
 * and key lists come back in the scratch buffer: a value longer than it
 * grows it and is read again.
 */
#include "ffi.h"

#include <stdbool.h>

#include "errors.h"
#include "scratch.h"
#include "shared.h"
#include "vm.h"

/* Store `store` (MP_STORE_*) of this process's segment, or NULL. */
static mp_store *store_of(int store) {
  const mp_vm_host *host = mp_vm_host_self;
  if (host == NULL || host->shared == NULL || store < 0) return NULL;
  return mp_shared_store(host->shared, (unsigned)store);
}

#define STORE(st, store)                        \
  mp_store *st = store_of(store);               \
  if (st == NULL) return MP_INVALID

int mp_store_get(int store, const char *key, size_t klen, double *num,
                 const char **str, size_t *len) {
  mp_shared_value v;
  size_t cap;
  STORE(st, store);
  char *buf = mp__ffi_scratch_now(&cap);
  /* A string longer than the scratch buffer: grow it and look again (the
   * value may have changed in between; the second answer is the one). */
  int rc = mp_shared_get(st, key, klen, &v, buf, cap);
  while (rc == MP_AGAIN) {
    if ((buf = mp__ffi_scratch(v.len)) == NULL) return MP_NOMEM;
    rc = mp_shared_get(st, key, klen, &v, buf, v.len);
  }
  if (rc != 0) return MP_SHARED_NIL;
  *num = v.number;
  *str = v.str;
  *len = v.len;
  return v.type;
}

int mp_store_set(int store, const char *key, size_t klen, int type,
                 double num, const char *str, size_t len, double ttl,
                 int add) {
  mp_shared_value v = {.type = type, .number = num, .str = str, .len = len};
  bool evicted = false;
  STORE(st, store);
  int rc = mp_shared_set(st, key, klen, &v, ttl, add ? MP_SHARED_ADD : 0,
                         &evicted);
  return rc != 0 ? rc : evicted;
}

int mp_store_incr(int store, const char *key, size_t klen, double by,
                  double init, double ttl, double *result) {
  bool evicted = false;
  STORE(st, store);
  int rc = mp_shared_incr(st, key, klen, by, init, ttl, result, &evicted);
  return rc != 0 ? rc : evicted;
}

int mp_store_delete(int store, const char *key, size_t klen) {
  STORE(st, store);
  return mp_shared_delete(st, key, klen);
}

int mp_store_ttl(int store, const char *key, size_t klen, double *ttl) {
  STORE(st, store);
  return mp_shared_ttl(st, key, klen, ttl);
}

int mp_store_keys(int store, unsigned max, const char **out, size_t *len) {
  unsigned count = 0;
  size_t used = 0, cap;
  STORE(st, store);
  char *buf = mp__ffi_scratch_now(&cap);
  int rc = mp_shared_keys(st, max, buf, cap, &used, &count);
  while (rc == MP_AGAIN) {
    if ((buf = mp__ffi_scratch(used)) == NULL) return MP_NOMEM;
    rc = mp_shared_keys(st, max, buf, used, &used, &count);
  }
  *out = buf;
  *len = used;
  return rc != 0 ? rc : (int)count;
}

int mp_store_flush(int store) {
  STORE(st, store);
  mp_shared_flush(st);
  return 0;
}
