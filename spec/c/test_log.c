/*
 * The access log on strings: the line written for a request, with the
 * request line escaped so that its quoted field stays one field whatever
 * bytes the request held.
 */
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "log.h"

static char path[] = "/tmp/moonport-test-log-XXXXXX";

/* The line the access log wrote for request, read back from the file. */
static const char *logged(const char *request, size_t len) {
  static char line[8192];
  FILE *f = fopen(path, "w"); /* empty it */
  if (f != NULL) fclose(f);
  mp_access_log("127.0.0.1", request, len, 200, 5, 0.25, 7, 0);
  mp_access_log_flush();
  f = fopen(path, "r");
  line[0] = '\0';
  if (f != NULL) {
    size_t n = fread(line, 1, sizeof line - 1, f);
    line[n] = '\0';
    fclose(f);
  }
  return line;
}

/* The quoted request field of a line, without its quotes. */
static void field_is(const char *line, const char *want) {
  const char *open = strchr(line, '"');
  const char *close = open ? strrchr(line, '"') : NULL;
  CHECK(open != NULL && close != NULL && close > open);
  if (open == NULL || close == NULL || close <= open) return;
  CHECK_SPAN(open + 1, (size_t)(close - open - 1), want);
  /* Nothing else in the line is quoted: the figures follow the field. */
  CHECK(strncmp(close, "\" 200 5 0.250000 7 0 ", 21) == 0);
}

static void test_escaping(void) {
  field_is(logged("GET /plain?a=1&b=%41 HTTP/1.1", 29),
           "GET /plain?a=1&b=%41 HTTP/1.1");
  field_is(logged("GET /a\"b\\c HTTP/1.1", 19), "GET /a\\x22b\\x5Cc HTTP/1.1");
  field_is(logged("GET /\x01\t\x1f\x7f\xc3\xa9\xff HTTP/1.0", 21),
           "GET /\\x01\\x09\\x1F\\x7F\\xC3\\xA9\\xFF HTTP/1.0");
  field_is(logged("GET /\0x HTTP/1.1", 16), "GET /\\x00x HTTP/1.1");
  field_is(logged("-", 1), "-");
}

/* A request line of quotes grows fourfold: it is cut at a whole escape,
 * and the line still ends with its figures. */
static void test_long_request(void) {
  static char req[4000];
  memset(req, '"', sizeof req);
  const char *line = logged(req, sizeof req);
  const char *open = strchr(line, '"');
  const char *close = strrchr(line, '"');
  CHECK(open != NULL && close != NULL && close > open);
  if (open == NULL || close == NULL || close <= open) return;
  size_t field = (size_t)(close - open - 1);
  CHECK(field > 3000 && field % 4 == 0);
  CHECK(strlen(line) < 4096);
  CHECK(line[strlen(line) - 1] == '\n');
}

int main(void) {
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd >= 0) close(fd);
  CHECK_EQ_INT(mp_access_log_open(path), 0);
  test_escaping();
  test_long_request();
  mp_access_log_close();
  unlink(path);
  return check_report("log");
}
