/*
 * String helpers every layer uses: JSON string escaping, percent-decoding
 * and a case-insensitive compare. No allocation, no locale.
 */
#ifndef MP_STR_H
#define MP_STR_H

#include <stdbool.h>
#include <stddef.h>

/* Writes `"<text>"` as a JSON string into out, escaping as needed; returns
 * bytes written, at most cap (the text is cut to fit). */
size_t mp_str_json(char *out, size_t cap, const char *text, size_t len);

/* Percent-decodes src into dst (at least len bytes); with plus_space, '+'
 * becomes ' '. Malformed escapes are kept as they are. Returns the decoded
 * length. */
size_t mp_str_unescape(char *dst, const char *src, size_t len,
                       bool plus_space);

/* Case-insensitive comparison of n bytes. */
bool mp_str_ieq(const char *a, const char *b, size_t n);

#endif
