/*
 * What the libFuzzer targets of spec/fuzz/ share: a failed invariant that
 * crashes the run with its message (libFuzzer then keeps the input), a
 * growing byte log for transcripts, and read sizes drawn from a generator
 * seeded by the input itself, so that one input always splits the same
 * way and a mutated one splits differently.
 */
#ifndef MP_FUZZ_H
#define MP_FUZZ_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stops the run: an invariant of the code under test does not hold. */
#define FUZZ_CHECK(cond, ...)                                             \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: invariant failed: %s: ", __FILE__, __LINE__, \
              #cond);                                                     \
      fprintf(stderr, __VA_ARGS__);                                       \
      fputc('\n', stderr);                                                \
      abort();                                                            \
    }                                                                     \
  } while (0)

/* A growing byte log. */
typedef struct fuzz_log {
  char *p;
  size_t len, cap;
} fuzz_log;

static inline void fuzz_put(fuzz_log *l, const void *p, size_t n) {
  if (l->len + n + 1 > l->cap) {
    size_t cap = l->cap ? l->cap : 256;
    while (cap < l->len + n + 1) cap *= 2;
    l->p = realloc(l->p, cap);
    FUZZ_CHECK(l->p != NULL, "out of memory");
    l->cap = cap;
  }
  if (n > 0) memcpy(l->p + l->len, p, n);
  l->len += n;
  l->p[l->len] = '\0';
}

static inline void fuzz_printf(fuzz_log *l, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n > 0) fuzz_put(l, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static inline void fuzz_log_free(fuzz_log *l) {
  free(l->p);
  *l = (fuzz_log){0};
}

/* The first byte where two logs differ, for the message. */
static inline size_t fuzz_diff_at(const fuzz_log *a, const fuzz_log *b) {
  size_t i = 0;
  while (i < a->len && i < b->len && a->p[i] == b->p[i]) i++;
  return i;
}

/* Where the last line of a log that ends in '\n' starts. */
static inline size_t fuzz_last_line(const fuzz_log *l) {
  size_t i = l->len > 0 ? l->len - 1 : 0;
  while (i > 0 && l->p[i - 1] != '\n') i--;
  return i;
}

/* Two transcripts of one input read whole and in pieces: equal, or equal
 * but for their last lines, both errors, one of them a limit that the
 * parser's callbacks enforce on a span (`limits`, NULL-terminated).
 * llhttp calls back with a span's bytes when the span ends or the read
 * does, so such a limit trips at the end of a read inside the span,
 * before llhttp has seen the span's later bytes; read at once, llhttp may
 * refuse one of those first. Either way the message fails there. */
static inline bool fuzz_same_transcript(const fuzz_log *a, const fuzz_log *b,
                                        const char *const *limits) {
  if (a->len == b->len && memcmp(a->p, b->p, a->len) == 0) return true;
  size_t la = fuzz_last_line(a), lb = fuzz_last_line(b);
  if (la != lb || memcmp(a->p, b->p, la) != 0) return false;
  const char *ea = a->p + la, *eb = b->p + lb;
  if (strncmp(ea, "ERROR ", 6) != 0 || strncmp(eb, "ERROR ", 6) != 0)
    return false;
  for (const char *const *l = limits; *l != NULL; l++)
    if (strstr(ea, *l) != NULL || strstr(eb, *l) != NULL) return true;
  return false;
}

/* splitmix64, seeded with the FNV-1a hash of the input. */
typedef struct fuzz_rng {
  uint64_t s;
} fuzz_rng;

static inline fuzz_rng fuzz_rng_of(const uint8_t *data, size_t size) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 1099511628211ull;
  return (fuzz_rng){h};
}

static inline uint64_t fuzz_next(fuzz_rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A read size: often one byte, often a few, sometimes many. */
static inline size_t fuzz_split(fuzz_rng *r) {
  uint64_t v = fuzz_next(r);
  switch (v & 3) {
    case 0: return 1;
    case 1: return 1 + (size_t)((v >> 8) % 8);
    case 2: return 1 + (size_t)((v >> 8) % 64);
    default: return 1 + (size_t)((v >> 8) % 1024);
  }
}

/* Copies p[0, n) into a new heap block of exactly n bytes (one for n = 0),
 * so that AddressSanitizer catches a read past the end. */
static inline char *fuzz_exact(const void *p, size_t n) {
  char *b = malloc(n ? n : 1);
  FUZZ_CHECK(b != NULL, "out of memory");
  if (n > 0) memcpy(b, p, n);
  return b;
}

#endif
