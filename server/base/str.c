/*
 * String helpers (see str.h).
 */
#include "str.h"

#include <string.h>

size_t mp_str_json(char *out, size_t cap, const char *text, size_t len) {
  static const char hex[] = "0123456789abcdef";
  size_t o = 0;
  if (cap < 2) return 0;
  out[o++] = '"';
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)text[i];
    char esc[6];
    size_t k;
    if (c == '"' || c == '\\') {
      esc[0] = '\\';
      esc[1] = (char)c;
      k = 2;
    } else if (c == '\n') {
      memcpy(esc, "\\n", 2);
      k = 2;
    } else if (c == '\t') {
      memcpy(esc, "\\t", 2);
      k = 2;
    } else if (c < 0x20 || c == 0x7f) {
      memcpy(esc, "\\u00", 4);
      esc[4] = hex[c >> 4];
      esc[5] = hex[c & 15];
      k = 6;
    } else {
      esc[0] = (char)c;
      k = 1;
    }
    if (o + k + 1 > cap) break;
    memcpy(out + o, esc, k);
    o += k;
  }
  out[o++] = '"';
  return o;
}

static int hexval(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

size_t mp_str_unescape(char *dst, const char *src, size_t len,
                       bool plus_space) {
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    char c = src[i];
    if (c == '%' && i + 2 < len) {
      int hi = hexval((unsigned char)src[i + 1]);
      int lo = hexval((unsigned char)src[i + 2]);
      if (hi >= 0 && lo >= 0) {
        dst[o++] = (char)(hi * 16 + lo);
        i += 2;
        continue;
      }
    } else if (c == '+' && plus_space) {
      c = ' ';
    }
    dst[o++] = c;
  }
  return o;
}

bool mp_str_ieq(const char *a, const char *b, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
    if (x >= 'A' && x <= 'Z') x += 32;
    if (y >= 'A' && y <= 'Z') y += 32;
    if (x != y) return false;
  }
  return true;
}
