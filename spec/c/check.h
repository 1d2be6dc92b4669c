/*
 * A minimal test harness for the C unit tests: CHECK records a failure with
 * its location and goes on; each test file's main returns check_report().
 */
#ifndef MP_SPEC_CHECK_H
#define MP_SPEC_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                  \
  do {                                                               \
    check_count++;                                                   \
    if (!(cond)) {                                                   \
      check_failures++;                                              \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
              #cond);                                                \
    }                                                                \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                  \
  do {                                                                      \
    long long a_ = (long long)(a), b_ = (long long)(b);                     \
    check_count++;                                                          \
    if (a_ != b_) {                                                         \
      check_failures++;                                                     \
      fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", __FILE__,      \
              __LINE__, #a, a_, b_);                                        \
    }                                                                       \
  } while (0)

/* Compares n bytes at p with the C string s. */
#define CHECK_SPAN(p, n, s)                                                   \
  do {                                                                        \
    check_count++;                                                            \
    if ((size_t)(n) != strlen(s) || memcmp((p), (s), (n)) != 0) {             \
      check_failures++;                                                       \
      fprintf(stderr, "%s:%d: got '%.*s', expected '%s'\n", __FILE__,        \
              __LINE__, (int)(n), (const char *)(p), (s));                    \
    }                                                                         \
  } while (0)

static int check_report(const char *name) {
  printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
  return check_failures == 0 ? 0 : 1;
}

#endif
