/*
 * HTTP's rules for serving a file, on strings: the type an extension
 * stands for, ETags and dates, If-None-Match and If-Range, Range sets
 * (single, several, suffix, open-ended, unsatisfiable, malformed) and
 * Accept-Encoding weights.
 */
#include <string.h>

#include "check.h"
#include "h1file.h"

#define S(lit) lit, sizeof lit - 1

static void test_types(void) {
  CHECK(strcmp(mp_h1file_type(S("/a/index.html")), "text/html; charset=utf-8") == 0);
  CHECK(strcmp(mp_h1file_type(S("app.JS")), "text/javascript; charset=utf-8") == 0);
  CHECK(strcmp(mp_h1file_type(S("x.css")), "text/css; charset=utf-8") == 0);
  CHECK(strcmp(mp_h1file_type(S("logo.svg")), "image/svg+xml") == 0);
  CHECK(strcmp(mp_h1file_type(S("f.woff2")), "font/woff2") == 0);
  CHECK(strcmp(mp_h1file_type(S("m.wasm")), "application/wasm") == 0);
  CHECK(strcmp(mp_h1file_type(S("d.json")), "application/json") == 0);
  CHECK(strcmp(mp_h1file_type(S("p.png")), "image/png") == 0);
  /* No extension, a dot in a directory's name, an unknown one. */
  CHECK(strcmp(mp_h1file_type(S("README")), "application/octet-stream") == 0);
  CHECK(strcmp(mp_h1file_type(S("v1.2/README")), "application/octet-stream") == 0);
  CHECK(strcmp(mp_h1file_type(S("x.unknownext")), "application/octet-stream") == 0);
  CHECK(strcmp(mp_h1file_type(S("trailing.")), "application/octet-stream") == 0);
}

static void test_validators(void) {
  char tag[MP_H1FILE_ETAG_MAX];
  size_t n = mp_h1file_etag(tag, 0x5f5e1000, 0x1000);
  CHECK_SPAN(tag, n, "\"5f5e1000-1000\"");
  char date[40];
  n = mp_h1file_date(date, 784111777);
  CHECK_SPAN(date, n, "Sun, 06 Nov 1994 08:49:37 GMT");
  time_t t = 0;
  CHECK(mp_h1file_parse_date(S("Sun, 06 Nov 1994 08:49:37 GMT"), &t));
  CHECK_EQ_INT(t, 784111777);
  CHECK(mp_h1file_parse_date(S("Thu, 01 Jan 1970 00:00:00 GMT"), &t));
  CHECK_EQ_INT(t, 0);
  CHECK(mp_h1file_parse_date(S("Tue, 29 Feb 2000 12:00:00 GMT"), &t));
  CHECK_EQ_INT(t, 951825600);
  /* The obsolete forms and garbage are not dates. */
  CHECK(!mp_h1file_parse_date(S("Sunday, 06-Nov-94 08:49:37 GMT"), &t));
  CHECK(!mp_h1file_parse_date(S("Sun Nov  6 08:49:37 1994"), &t));
  CHECK(!mp_h1file_parse_date(S("Sun, 06 Nov 1994 08:49:37 UTC"), &t));
  CHECK(!mp_h1file_parse_date(S("Sun, 06 Xyz 1994 08:49:37 GMT"), &t));
}

static void test_conditionals(void) {
  const char *tag = "\"abc-1\"";
  size_t tl = strlen(tag);
  CHECK(mp_h1file_none_match(S("\"abc-1\""), tag, tl));
  CHECK(mp_h1file_none_match(S("\"x\", W/\"abc-1\""), tag, tl));
  CHECK(mp_h1file_none_match(S(" * "), tag, tl));
  CHECK(!mp_h1file_none_match(S("\"abc-2\""), tag, tl));
  CHECK(!mp_h1file_none_match(S("abc-1"), tag, tl));
  CHECK(!mp_h1file_none_match(S(""), tag, tl));
  /* If-Range: strong tags only, or the exact date. */
  CHECK(mp_h1file_if_range(S("\"abc-1\""), tag, tl, 784111777));
  CHECK(!mp_h1file_if_range(S("W/\"abc-1\""), tag, tl, 784111777));
  CHECK(!mp_h1file_if_range(S("\"abc-2\""), tag, tl, 784111777));
  CHECK(mp_h1file_if_range(S("Sun, 06 Nov 1994 08:49:37 GMT"), tag, tl, 784111777));
  CHECK(!mp_h1file_if_range(S("Sun, 06 Nov 1994 08:49:38 GMT"), tag, tl, 784111777));
}

static void test_ranges(void) {
  mp_h1file_range r[8];
  CHECK_EQ_INT(mp_h1file_ranges(S("bytes=0-99"), 1000, r, 8), 1);
  CHECK_EQ_INT(r[0].first, 0);
  CHECK_EQ_INT(r[0].len, 100);
  /* Suffix, open-ended, cut to the end. */
  CHECK_EQ_INT(mp_h1file_ranges(S("bytes=-500"), 1000, r, 8), 1);
  CHECK_EQ_INT(r[0].first, 500);
  CHECK_EQ_INT(r[0].len, 500);
  CHECK_EQ_INT(mp_h1file_ranges(S("bytes=-5000"), 1000, r, 8), 1);
  CHECK_EQ_INT(r[0].first, 0);
  CHECK_EQ_INT(r[0].len, 1000);
  CHECK_EQ_INT(mp_h1file_ranges(S("bytes=500-"), 1000, r, 8), 1);
  CHECK_EQ_INT(r[0].first, 500);
  CHECK_EQ_INT(r[0].len, 500);
  CHECK_EQ_INT(mp_h1file_ranges(S("bytes=900-5000"), 1000, r, 8), 1);
  CHECK_EQ_INT(r[0].len, 100);
  /* Several, in the order asked, spaces and empty members allowed. */
  CHECK_EQ_INT(mp_h1file_ranges(S("bytes=10-19, ,-5,0-0"), 1000, r, 8), 3);
  CHECK_EQ_INT(r[0].first, 10);
  CHECK_EQ_INT(r[1].first, 995);
  CHECK_EQ_INT(r[2].len, 1);
  /* Unsatisfiable ones are dropped; all dropped: 416. */
  CHECK_EQ_INT(mp_h1file_ranges(S("bytes=2000-3000,0-1"), 1000, r, 8), 1);
  CHECK_EQ_INT(mp_h1file_ranges(S("bytes=1000-"), 1000, r, 8),
               MP_H1FILE_RANGE_UNSATISFIABLE);
  CHECK_EQ_INT(mp_h1file_ranges(S("bytes=-0"), 1000, r, 8),
               MP_H1FILE_RANGE_UNSATISFIABLE);
  CHECK_EQ_INT(mp_h1file_ranges(S("bytes=0-"), 0, r, 8),
               MP_H1FILE_RANGE_UNSATISFIABLE);
  /* Malformed, another unit, too many: the whole file. */
  CHECK_EQ_INT(mp_h1file_ranges(S("bytes=5-1"), 1000, r, 8), MP_H1FILE_RANGE_IGNORE);
  CHECK_EQ_INT(mp_h1file_ranges(S("bytes=a-b"), 1000, r, 8), MP_H1FILE_RANGE_IGNORE);
  CHECK_EQ_INT(mp_h1file_ranges(S("bytes=-"), 1000, r, 8), MP_H1FILE_RANGE_IGNORE);
  CHECK_EQ_INT(mp_h1file_ranges(S("bytes="), 1000, r, 8), MP_H1FILE_RANGE_IGNORE);
  CHECK_EQ_INT(mp_h1file_ranges(S("items=0-1"), 1000, r, 8), MP_H1FILE_RANGE_IGNORE);
  CHECK_EQ_INT(mp_h1file_ranges(S("bytes=0-1;x"), 1000, r, 8), MP_H1FILE_RANGE_IGNORE);
  CHECK_EQ_INT(mp_h1file_ranges(S("bytes=99999999999999999999-"), 1000, r, 8),
               MP_H1FILE_RANGE_IGNORE);
  CHECK_EQ_INT(mp_h1file_ranges(S("bytes=0-0,1-1,2-2"), 1000, r, 2),
               MP_H1FILE_RANGE_IGNORE);
}

static void test_accept_encoding(void) {
  CHECK(mp_h1file_accepts(S("gzip, deflate, br"), "br"));
  CHECK(mp_h1file_accepts(S("gzip, deflate, br"), "gzip"));
  CHECK(mp_h1file_accepts(S("x-gzip"), "gzip"));
  CHECK(mp_h1file_accepts(S("GZIP;q=0.5"), "gzip"));
  CHECK(!mp_h1file_accepts(S("gzip;q=0"), "gzip"));
  CHECK(!mp_h1file_accepts(S("gzip; q=0.000"), "gzip"));
  CHECK(!mp_h1file_accepts(S("deflate"), "gzip"));
  CHECK(!mp_h1file_accepts(S("gzipper"), "gzip"));
  CHECK(mp_h1file_accepts(S("*"), "br"));
  CHECK(!mp_h1file_accepts(S("*;q=0"), "br"));
  CHECK(!mp_h1file_accepts(S("br;q=0, *"), "br"));
  CHECK(!mp_h1file_accepts(S(""), "gzip"));
}

int main(void) {
  test_types();
  test_validators();
  test_conditionals();
  test_ranges();
  test_accept_encoding();
  return check_report("h1file");
}
