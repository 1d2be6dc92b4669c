/*
 * Per-worker figures in shared memory (see metrics.h).
 *
 * The series table is open addressing over every slot but the last (the
 * overflow series), probed linearly from the key's hash. Only the block's
 * writer inserts, so finding and inserting need no lock; a reader sees a
 * series once its `used` word is set, with a release store after the key,
 * so it never reads a key being written. Nothing is ever removed: a series,
 * once made, keeps its slot for the segment's life, which is what keeps its
 * counters monotonic across reloads and worker restarts.
 *
 * Nothing here allocates, blocks or knows HTTP beyond a status's class.
 */
#include "metrics.h"

#include <string.h>

_Static_assert(sizeof(mp_metrics_series) % 64 == 0,
               "a series is whole cache lines");
_Static_assert(sizeof(mp_metrics_scalars) % 64 == 0,
               "the scalars are whole cache lines");
_Static_assert(MP_METRICS_LABEL_MAX <= 255, "label lengths fit a byte");

const uint64_t mp_metrics_bound_ns[MP_METRICS_BOUNDS] = {
    100000,    250000,    500000,     1000000,    2500000,   5000000,
    10000000,  25000000,  50000000,   100000000,  250000000, 500000000,
    1000000000, 2500000000, 5000000000, 10000000000};

const char *const mp_metrics_bound_text[MP_METRICS_BOUNDS] = {
    "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005",
    "0.01",   "0.025",   "0.05",   "0.1",   "0.25",   "0.5",
    "1",      "2.5",     "5",      "10"};

/* FNV-1a over the method and the label. */
static uint32_t key_hash(int method, const char *label, size_t len) {
  uint32_t h = 2166136261u ^ (uint32_t)(method & 0xff);
  h *= 16777619u;
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char)label[i];
    h *= 16777619u;
  }
  return h;
}

static void set_key(mp_metrics_series *s, int method, const char *label,
                    size_t len) {
  s->method = (uint8_t)method;
  s->label_len = (uint8_t)len;
  memcpy(s->label, label, len);
  __atomic_store_n(&s->used, 1, __ATOMIC_RELEASE);
}

mp_metrics_series *mp_metrics_series_of(mp_worker_metrics *m, int method,
                                        const char *label, size_t len) {
  if (len > MP_METRICS_LABEL_MAX) len = MP_METRICS_LABEL_MAX;
  const unsigned n = MP_METRICS_SERIES - 1;
  unsigned i = key_hash(method, label, len) % n;
  for (unsigned probes = 0; probes < n; probes++, i = (i + 1) % n) {
    mp_metrics_series *s = &m->series[i];
    if (!s->used) {
      set_key(s, method, label, len);
      return s;
    }
    if (s->method == (uint8_t)method && s->label_len == len &&
        memcmp(s->label, label, len) == 0)
      return s;
  }
  mp_metrics_series *over = &m->series[n];
  if (!over->used)
    set_key(over, MP_METRICS_NO_METHOD, MP_METRICS_OVERFLOW,
            sizeof MP_METRICS_OVERFLOW - 1);
  return over;
}

void mp_metrics_count(mp_metrics_series *s, int status, uint64_t ns,
                      uint64_t received, uint64_t sent, uint64_t lua_bytes,
                      uint64_t c_bytes) {
  int cls = status >= 100 && status <= 599 ? status / 100 - 1 : 4;
  mp_metrics_add(&s->requests[cls], 1);
  unsigned b = 0;
  while (b < MP_METRICS_BOUNDS && ns > mp_metrics_bound_ns[b]) b++;
  mp_metrics_add(&s->buckets[b], 1);
  mp_metrics_add(&s->duration_ns, ns);
  mp_metrics_add(&s->received_bytes, received);
  mp_metrics_add(&s->sent_bytes, sent);
  mp_metrics_add(&s->lua_bytes, lua_bytes);
  mp_metrics_add(&s->c_bytes, c_bytes);
}
