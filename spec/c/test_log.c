/*
 * The access log on strings: the line written for a request, with the
 * request line escaped so that its quoted field stays one field whatever
 * bytes the request held, in each of the log's formats.
 */
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "log.h"

static char path[] = "/tmp/moonport-test-log-XXXXXX";

/* The line the access log wrote for e, read back from the file. */
static const char *logged_entry(const mp_access_entry *e) {
  static char line[8192];
  FILE *f = fopen(path, "w"); /* empty it */
  if (f != NULL) fclose(f);
  mp_access_log(e);
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

static const char *logged(const char *request, size_t len) {
  mp_access_entry e = {.host = "127.0.0.1", .request = request,
                       .request_len = len, .status = 200, .bytes = 5,
                       .seconds = 0.25, .lua_bytes = 7};
  return logged_entry(&e);
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

/* A request with its referer, user agent and id, in every format. */
static void test_formats(void) {
  mp_access_entry e = {
      .host = "127.0.0.1", .request = "GET /a?b=1 HTTP/1.1", .request_len = 19,
      .method = "GET", .target = "/a?b=\"1\"", .target_len = 8, .status = 201,
      .bytes = 12, .seconds = 0.5, .lua_bytes = 3, .c_bytes = 4,
      .referer = "http://x/", .referer_len = 9, .agent = "curl/8\x01",
      .agent_len = 7, .id = "abc-1", .id_len = 5};
  const char *line = logged_entry(&e);
  CHECK(strstr(line, "\"GET /a?b=1 HTTP/1.1\" 201 12 0.500000 3 4 0 abc-1\n") != NULL);
  mp_access_log_close();
  CHECK_EQ_INT(mp_access_log_open(path, MP_ACCESS_COMMON), 0);
  line = logged_entry(&e);
  CHECK(strstr(line, "\"GET /a?b=1 HTTP/1.1\" 201 12\n") != NULL);
  mp_access_log_close();
  CHECK_EQ_INT(mp_access_log_open(path, MP_ACCESS_COMBINED), 0);
  line = logged_entry(&e);
  CHECK(strstr(line, "\" 201 12 \"http://x/\" \"curl/8\\x01\"\n") != NULL);
  mp_access_log_close();
  CHECK_EQ_INT(mp_access_log_open(path, MP_ACCESS_JSON), 0);
  line = logged_entry(&e);
  CHECK(strncmp(line, "{\"time\":\"", 9) == 0);
  CHECK(strstr(line, "\"remote\":\"127.0.0.1\",\"method\":\"GET\","
                     "\"path\":\"/a?b=\\\"1\\\"\",\"status\":201,\"bytes\":12,"
                     "\"duration\":0.500000,\"lua_bytes\":3,\"c_bytes\":4,"
                     "\"worker\":0,\"request_id\":\"abc-1\","
                     "\"user_agent\":\"curl/8\\u0001\",\"referer\":\"http://x/\"}\n") != NULL);
  /* A line without a request: nulls, not empty strings. */
  mp_access_entry bad = {.host = "127.0.0.1", .request = "-", .request_len = 1,
                         .status = 400};
  line = logged_entry(&bad);
  CHECK(strstr(line, "\"method\":null,\"path\":null,\"status\":400") != NULL);
  CHECK(mp_access_format_named("combined") == MP_ACCESS_COMBINED);
  CHECK(mp_access_format_named("apache") == -1);
}

int main(void) {
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd >= 0) close(fd);
  CHECK_EQ_INT(mp_access_log_open(path, MP_ACCESS_MOONPORT), 0);
  test_escaping();
  test_long_request();
  test_formats();
  mp_access_log_close();
  unlink(path);
  return check_report("log");
}
