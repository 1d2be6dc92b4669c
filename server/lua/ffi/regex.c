/*
 * Regular expressions for Lua (see ../ffi.h): PCRE2 patterns that the mock
 * library matches requests with (lua/moonport/core/regex.lua). A pattern
 * matches a whole subject, as Java's String.matches (WireMock's) does, and
 * every match runs within limits, so a pattern that backtracks
 * catastrophically cannot hold the worker.
 */
#include "ffi.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "errors.h"

/* One match may take REGEX_STEPS plus REGEX_STEPS_PER_BYTE for every byte
 * of its subject steps of PCRE2's matcher (the JIT honours this limit
 * too), and as much backtracking depth, within REGEX_HEAP_LIMIT_KIB of
 * heap (the interpreter's limits). A pattern that backtracks
 * catastrophically costs about a tenth of a millisecond on a header, and
 * a pattern that is merely linear has room for a megabyte of body. */
#define REGEX_STEPS 100000u
#define REGEX_STEPS_PER_BYTE 8u
#define REGEX_HEAP_LIMIT_KIB 32768u

void *mp_regex_compile(const char *pattern, size_t len, int flags, char *err,
                       size_t errlen) {
  int code;
  PCRE2_SIZE at;
  /* Anchored at both ends. Invalid UTF-8 in a subject just fails to
   * match. */
  uint32_t options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_ANCHORED |
                     ((flags & MP_REGEX_CASELESS) ? PCRE2_CASELESS : 0);
  /* PCRE2 refuses partial matching with PCRE2_ENDANCHORED: the partial
   * form ends the pattern with \z instead, which a partial match may stop
   * short of. */
  char *wrapped = NULL;
  bool partial = (flags & MP_REGEX_PARTIAL) != 0;
  if (partial) {
    if (len > SIZE_MAX - 6 || (wrapped = malloc(len + 6)) == NULL) {
      snprintf(err, errlen, "out of memory");
      return NULL;
    }
    memcpy(wrapped, "(?:", 3);
    memcpy(wrapped + 3, pattern, len);
    memcpy(wrapped + 3 + len, ")\\z", 3);
    pattern = wrapped;
    len += 6;
  } else {
    options |= PCRE2_ENDANCHORED;
  }
  pcre2_code *re =
      pcre2_compile((PCRE2_SPTR)pattern, len, options, &code, &at, NULL);
  free(wrapped);
  if (re == NULL) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(code, msg, sizeof msg);
    snprintf(err, errlen, "%s at offset %zu", (const char *)msg, (size_t)at);
    return NULL;
  }
  /* The interpreter otherwise. */
  pcre2_jit_compile(re, partial ? PCRE2_JIT_PARTIAL_HARD : PCRE2_JIT_COMPLETE);
  return re;
}

/* Runs re over all of subject with the limits above. One match block and
 * context serve every match: only success is looked at. */
static int regex_run(void *re, const char *subject, size_t len,
                     uint32_t options) {
  static pcre2_match_data *md;
  static pcre2_match_context *mc;
  if (md == NULL && (md = pcre2_match_data_create(1, NULL)) == NULL)
    return PCRE2_ERROR_NOMEMORY;
  if (mc == NULL) {
    if ((mc = pcre2_match_context_create(NULL)) == NULL)
      return PCRE2_ERROR_NOMEMORY;
    pcre2_set_heap_limit(mc, REGEX_HEAP_LIMIT_KIB);
  }
  uint64_t steps = REGEX_STEPS + (uint64_t)REGEX_STEPS_PER_BYTE * len;
  uint32_t limit = steps > UINT32_MAX ? UINT32_MAX : (uint32_t)steps;
  pcre2_set_match_limit(mc, limit);
  pcre2_set_depth_limit(mc, limit);
  return pcre2_match(re, (PCRE2_SPTR)subject, len, 0, options, md, mc);
}

int mp_regex_match(void *re, const char *subject, size_t len) {
  int rc = regex_run(re, subject, len, 0);
  if (rc >= 0) return MP_REGEX_MATCH;
  if (rc == PCRE2_ERROR_NOMATCH) return MP_REGEX_NOMATCH;
  if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
      rc == PCRE2_ERROR_HEAPLIMIT)
    return MP_REGEX_LIMIT;
  return MP_INVALID;
}

/* Whether the first n bytes of subject match, or could if more followed
 * (re compiled with MP_REGEX_PARTIAL). An empty subject is never a
 * partial match to PCRE2: the caller takes it as one. */
static int regex_viable(void *re, const char *subject, size_t n) {
  int rc = regex_run(re, subject, n, PCRE2_PARTIAL_HARD);
  if (rc >= 0 || rc == PCRE2_ERROR_PARTIAL) return 1;
  return rc == PCRE2_ERROR_NOMATCH ? 0 : MP_INVALID;
}

int mp_regex_prefix(void *re, const char *subject, size_t len) {
  if (len > INT_MAX) return MP_INVALID;
  /* Binary search: a prefix of a viable prefix is viable. */
  size_t lo = 0, hi = len;
  while (lo < hi) {
    size_t mid = lo + (hi - lo + 1) / 2;
    int rc = regex_viable(re, subject, mid);
    if (rc < 0) return rc;
    if (rc)
      lo = mid;
    else
      hi = mid - 1;
  }
  return (int)lo;
}

void mp_regex_free(void *re) { pcre2_code_free(re); }
