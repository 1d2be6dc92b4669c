/*
 * HTTP's rules for serving a file (see h1file.h). Everything here works
 * on the bytes it is given and a file's size and time; it opens nothing.
 * Parsers are strict where being lenient would serve the wrong bytes (a
 * Range that does not parse is ignored whole, as RFC 9110 section 14.2
 * allows) and lenient where a mistake costs only a cache miss.
 */
#include "h1file.h"

#include <stdio.h>
#include <string.h>

#include "http1_out.h"
#include "str.h"

/* A subset of nginx's mime.types: what web apps serve. */
static const struct {
  const char *ext;
  const char *type;
} types[] = {
    {"html", "text/html; charset=utf-8"},
    {"htm", "text/html; charset=utf-8"},
    {"css", "text/css; charset=utf-8"},
    {"js", "text/javascript; charset=utf-8"},
    {"mjs", "text/javascript; charset=utf-8"},
    {"json", "application/json"},
    {"map", "application/json"},
    {"webmanifest", "application/manifest+json"},
    {"txt", "text/plain; charset=utf-8"},
    {"md", "text/markdown; charset=utf-8"},
    {"csv", "text/csv; charset=utf-8"},
    {"xml", "text/xml; charset=utf-8"},
    {"rss", "application/rss+xml"},
    {"atom", "application/atom+xml"},
    {"svg", "image/svg+xml"},
    {"svgz", "image/svg+xml"},
    {"png", "image/png"},
    {"jpg", "image/jpeg"},
    {"jpeg", "image/jpeg"},
    {"gif", "image/gif"},
    {"webp", "image/webp"},
    {"avif", "image/avif"},
    {"ico", "image/x-icon"},
    {"bmp", "image/x-ms-bmp"},
    {"tif", "image/tiff"},
    {"tiff", "image/tiff"},
    {"woff", "font/woff"},
    {"woff2", "font/woff2"},
    {"ttf", "font/ttf"},
    {"otf", "font/otf"},
    {"eot", "application/vnd.ms-fontobject"},
    {"wasm", "application/wasm"},
    {"pdf", "application/pdf"},
    {"zip", "application/zip"},
    {"gz", "application/gzip"},
    {"tgz", "application/gzip"},
    {"tar", "application/x-tar"},
    {"bz2", "application/x-bzip2"},
    {"xz", "application/x-xz"},
    {"7z", "application/x-7z-compressed"},
    {"rar", "application/vnd.rar"},
    {"mp3", "audio/mpeg"},
    {"ogg", "audio/ogg"},
    {"oga", "audio/ogg"},
    {"m4a", "audio/x-m4a"},
    {"wav", "audio/wav"},
    {"flac", "audio/flac"},
    {"mp4", "video/mp4"},
    {"m4v", "video/x-m4v"},
    {"webm", "video/webm"},
    {"ogv", "video/ogg"},
    {"mov", "video/quicktime"},
    {"avi", "video/x-msvideo"},
    {"mpeg", "video/mpeg"},
    {"mpg", "video/mpeg"},
    {"ts", "video/mp2t"},
    {"m3u8", "application/vnd.apple.mpegurl"},
    {"doc", "application/msword"},
    {"docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
    {"xls", "application/vnd.ms-excel"},
    {"xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
    {"ppt", "application/vnd.ms-powerpoint"},
    {"pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"},
    {"rtf", "application/rtf"},
    {"epub", "application/epub+zip"},
    {"jar", "application/java-archive"},
    {"bin", "application/octet-stream"},
};

#define OCTET_STREAM "application/octet-stream"

const char *mp_h1file_type(const char *name, size_t len) {
  size_t i = len;
  while (i > 0 && name[i - 1] != '.' && name[i - 1] != '/') i--;
  if (i == 0 || name[i - 1] != '.') return OCTET_STREAM;
  const char *ext = name + i;
  size_t n = len - i;
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
    if (strlen(types[k].ext) == n && mp_str_ieq(ext, types[k].ext, n))
      return types[k].type;
  return OCTET_STREAM;
}

size_t mp_h1file_etag(char *out, int64_t mtime, uint64_t size) {
  int n = snprintf(out, MP_H1FILE_ETAG_MAX, "\"%llx-%llx\"",
                   (unsigned long long)mtime, (unsigned long long)size);
  return (size_t)n;
}

size_t mp_h1file_date(char *out, time_t t) {
  char line[40];
  size_t n = mp_http1_date_line(line, t); /* "Date: <date>\r\n" */
  memcpy(out, line + 6, n - 8);
  out[n - 8] = '\0';
  return n - 8;
}

static int digits(const char *s, size_t n) {
  int v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian), for timegm
 * without the C library's time zone state. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  unsigned yoe = (unsigned)(y - era * 400);
  unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + (int64_t)doe - 719468;
}

bool mp_h1file_parse_date(const char *s, size_t n, time_t *out) {
  static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
  /* "Sun, 06 Nov 1994 08:49:37 GMT" */
  if (n != 29 || s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' ||
      s[16] != ' ' || s[19] != ':' || s[22] != ':' || s[25] != ' ' ||
      memcmp(s + 26, "GMT", 3) != 0)
    return false;
  int day = digits(s + 5, 2), year = digits(s + 12, 4);
  int hh = digits(s + 17, 2), mm = digits(s + 20, 2), ss = digits(s + 23, 2);
  int month = -1;
  for (int i = 0; i < 12; i++)
    if (memcmp(s + 8, months + 3 * i, 3) == 0) month = i + 1;
  if (day < 1 || day > 31 || year < 0 || month < 0 || hh < 0 || hh > 23 ||
      mm < 0 || mm > 59 || ss < 0 || ss > 60)
    return false;
  int64_t days = days_from_civil(year, (unsigned)month, (unsigned)day);
  *out = (time_t)(days * 86400 + hh * 3600 + mm * 60 + ss);
  return true;
}

/* The next entity tag of a comma-separated list at *pos: its opaque part
 * (quotes included) in *tag and *tlen, and whether it is weak. Returns
 * false at the end of the list. Malformed members are skipped up to the
 * next comma. */
static bool next_tag(const char *v, size_t n, size_t *pos, const char **tag,
                     size_t *tlen, bool *weak) {
  size_t i = *pos;
  for (;;) {
    while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ',')) i++;
    if (i >= n) return false;
    *weak = false;
    if (n - i >= 2 && v[i] == 'W' && v[i + 1] == '/') {
      *weak = true;
      i += 2;
    }
    if (i < n && v[i] == '"') {
      const char *end = memchr(v + i + 1, '"', n - i - 1);
      if (end != NULL) {
        *tag = v + i;
        *tlen = (size_t)(end - (v + i)) + 1;
        *pos = (size_t)(end - v) + 1;
        return true;
      }
    }
    while (i < n && v[i] != ',') i++; /* not a tag: skip it */
  }
}

static bool only_star(const char *v, size_t n) {
  size_t i = 0;
  while (i < n && (v[i] == ' ' || v[i] == '\t')) i++;
  while (n > i && (v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
  return n - i == 1 && v[i] == '*';
}

bool mp_h1file_none_match(const char *list, size_t n, const char *etag,
                          size_t elen) {
  if (only_star(list, n)) return true;
  size_t pos = 0;
  const char *tag;
  size_t tlen;
  bool weak;
  while (next_tag(list, n, &pos, &tag, &tlen, &weak))
    if (tlen == elen && memcmp(tag, etag, elen) == 0) return true;
  return false;
}

bool mp_h1file_if_range(const char *v, size_t n, const char *etag,
                        size_t elen, time_t mtime) {
  while (n > 0 && (v[0] == ' ' || v[0] == '\t')) v++, n--;
  while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
  if (n > 0 && (v[0] == '"' || v[0] == 'W')) {
    /* A strong comparison: a weak tag never lets a range through. */
    return v[0] == '"' && n == elen && memcmp(v, etag, elen) == 0;
  }
  time_t t;
  return mp_h1file_parse_date(v, n, &t) && t == mtime;
}

/* Reads decimal digits at v[*i..n) into *out. Returns false for none, or
 * a value past 2^62 (no file is that big). */
static bool number(const char *v, size_t n, size_t *i, uint64_t *out) {
  size_t start = *i;
  uint64_t x = 0;
  while (*i < n && v[*i] >= '0' && v[*i] <= '9') {
    if (x > (UINT64_C(1) << 62) / 10) return false;
    x = x * 10 + (uint64_t)(v[*i] - '0');
    (*i)++;
  }
  *out = x;
  return *i > start;
}

int mp_h1file_ranges(const char *v, size_t n, uint64_t size,
                     mp_h1file_range *out, int max) {
  size_t i = 0;
  while (i < n && (v[i] == ' ' || v[i] == '\t')) i++;
  if (n - i < 6 || !mp_str_ieq(v + i, "bytes=", 6))
    return MP_H1FILE_RANGE_IGNORE;
  i += 6;
  int count = 0, specs = 0;
  for (;;) {
    while (i < n && (v[i] == ' ' || v[i] == '\t')) i++;
    if (i < n && v[i] == ',') { /* empty members are allowed */
      i++;
      continue;
    }
    if (i >= n) break;
    uint64_t first = 0, last = 0;
    bool suffix = v[i] == '-', open = false;
    if (suffix) {
      i++;
      if (!number(v, n, &i, &last)) return MP_H1FILE_RANGE_IGNORE;
    } else {
      if (!number(v, n, &i, &first) || i >= n || v[i] != '-')
        return MP_H1FILE_RANGE_IGNORE;
      i++;
      open = !number(v, n, &i, &last);
      if (!open && last < first) return MP_H1FILE_RANGE_IGNORE;
    }
    while (i < n && (v[i] == ' ' || v[i] == '\t')) i++;
    if (i < n && v[i] != ',') return MP_H1FILE_RANGE_IGNORE;
    if (++specs > max) return MP_H1FILE_RANGE_IGNORE;
    /* Satisfiable or not, against this file. */
    if (suffix) {
      if (last == 0 || size == 0) continue; /* "-0" asks for nothing */
      uint64_t len = last < size ? last : size;
      out[count++] = (mp_h1file_range){size - len, len};
    } else {
      if (first >= size) continue;
      uint64_t end = open || last >= size ? size - 1 : last;
      out[count++] = (mp_h1file_range){first, end - first + 1};
    }
  }
  if (specs == 0) return MP_H1FILE_RANGE_IGNORE;
  return count > 0 ? count : MP_H1FILE_RANGE_UNSATISFIABLE;
}

bool mp_h1file_accepts(const char *v, size_t n, const char *coding) {
  size_t clen = strlen(coding);
  bool gzip = clen == 4 && memcmp(coding, "gzip", 4) == 0;
  int star = -1; /* the weight "*" gives: -1 absent, 0 refused, 1 accepted */
  size_t i = 0;
  while (i < n) {
    while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ',')) i++;
    size_t start = i;
    while (i < n && v[i] != ',' && v[i] != ';' && v[i] != ' ' && v[i] != '\t')
      i++;
    const char *name = v + start;
    size_t nlen = i - start;
    /* Its parameters: only q matters; q=0 (0.0, 0.00, 0.000) refuses. */
    bool zero = false;
    while (i < n && v[i] != ',') {
      if (v[i] == ';') {
        size_t j = i + 1;
        while (j < n && (v[j] == ' ' || v[j] == '\t')) j++;
        if (n - j >= 2 && (v[j] == 'q' || v[j] == 'Q') && v[j + 1] == '=') {
          j += 2;
          size_t k = j;
          bool nonzero = false;
          while (k < n && ((v[k] >= '0' && v[k] <= '9') || v[k] == '.')) {
            if (v[k] >= '1' && v[k] <= '9') nonzero = true;
            k++;
          }
          zero = k > j && !nonzero;
        }
      }
      i++;
    }
    if (nlen == 0) continue;
    bool match = (nlen == clen && mp_str_ieq(name, coding, clen)) ||
                 (gzip && nlen == 6 && mp_str_ieq(name, "x-gzip", 6));
    if (match) return !zero;
    if (nlen == 1 && name[0] == '*') star = zero ? 0 : 1;
  }
  return star == 1;
}
