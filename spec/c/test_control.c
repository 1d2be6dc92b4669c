/*
 * The master-worker control protocol (server/proc/control.c) on strings:
 * every message, split across reads at every point, and what it refuses.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "control.h"

typedef struct heard {
  int ready;
  int files;
  char last[MP_CONTROL_MAX];
} heard;

static void on_message(void *ud, int kind, const char *path) {
  heard *h = ud;
  if (kind == MP_CONTROL_GOT_READY) {
    h->ready++;
  } else {
    h->files++;
    snprintf(h->last, sizeof h->last, "%s", path);
  }
}

static void test_file_message(void) {
  char out[MP_CONTROL_MAX];
  size_t n = mp_control_file(out, "/app/lib.lua");
  CHECK_SPAN(out, n, "F/app/lib.lua\n");
  CHECK_EQ_INT(mp_control_file(out, ""), 0);
  CHECK_EQ_INT(mp_control_file(out, "a\nb"), 0);
  char *long_path = malloc(MP_CONTROL_MAX);
  memset(long_path, 'x', MP_CONTROL_MAX - 1);
  long_path[MP_CONTROL_MAX - 1] = '\0';
  CHECK_EQ_INT(mp_control_file(out, long_path), 0); /* one byte too long */
  long_path[MP_CONTROL_MAX - 2] = '\0';
  CHECK_EQ_INT(mp_control_file(out, long_path), MP_CONTROL_MAX);
  free(long_path);
}

static void test_reload(void) {
  CHECK(mp_control_wants_reload("L", 1));
  CHECK(mp_control_wants_reload("LLL", 3));
  CHECK(!mp_control_wants_reload("", 0));
  CHECK(!mp_control_wants_reload("x", 1));
}

/* What a worker says, read whole and split at every point. */
static void test_reader_splits(void) {
  const char *said = "RF/a.lua\nF/b/c.lua\n";
  size_t len = strlen(said);
  for (size_t cut = 0; cut <= len; cut++) {
    mp_control_reader rd = {0};
    heard h = {0};
    mp_control_read(&rd, said, cut, on_message, &h);
    mp_control_read(&rd, said + cut, len - cut, on_message, &h);
    CHECK_EQ_INT(h.ready, 1);
    CHECK_EQ_INT(h.files, 2);
    CHECK(strcmp(h.last, "/b/c.lua") == 0);
  }
}

/* Files the first load read come before the worker listens. */
static void test_reader_files_first(void) {
  const char *said = "F/app.lua\nF/lib/x.lua\nRF/late.lua\n";
  size_t len = strlen(said);
  for (size_t cut = 0; cut <= len; cut++) {
    mp_control_reader rd = {0};
    heard h = {0};
    mp_control_read(&rd, said, cut, on_message, &h);
    mp_control_read(&rd, said + cut, len - cut, on_message, &h);
    CHECK_EQ_INT(h.ready, 1);
    CHECK_EQ_INT(h.files, 3);
    CHECK(strcmp(h.last, "/late.lua") == 0);
  }
}

static void test_reader_skips(void) {
  mp_control_reader rd = {0};
  heard h = {0};
  /* An empty line and a line of another kind say nothing. */
  mp_control_read(&rd, "R\nX/nope\nF\n", 11, on_message, &h);
  CHECK_EQ_INT(h.ready, 1);
  CHECK_EQ_INT(h.files, 0);
}

int main(void) {
  test_file_message();
  test_reload();
  test_reader_splits();
  test_reader_files_first();
  test_reader_skips();
  return check_report("control");
}
