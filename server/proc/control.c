/*
 * The master-worker control protocol (see control.h).
 */
#include "control.h"

#include <string.h>

size_t mp_control_file(char *out, const char *path) {
  size_t len = strlen(path);
  if (len == 0 || len > MP_CONTROL_MAX - 2 || memchr(path, '\n', len) != NULL)
    return 0;
  out[0] = MP_CONTROL_FILE;
  memcpy(out + 1, path, len);
  out[len + 1] = '\n';
  return len + 2;
}

bool mp_control_wants_reload(const char *p, size_t n) {
  return memchr(p, MP_CONTROL_RELOAD, n) != NULL;
}

void mp_control_read(mp_control_reader *rd, const char *p, size_t n,
                     void (*on_message)(void *ud, int kind, const char *path),
                     void *ud) {
  for (size_t i = 0; i < n; i++) {
    char c = p[i];
    if (!rd->ready && rd->len == 0 && c == MP_CONTROL_READY) {
      /* Between messages: the worker listens. */
      rd->ready = true;
      on_message(ud, MP_CONTROL_GOT_READY, NULL);
      continue;
    }
    if (c != '\n') {
      if (rd->len < sizeof rd->line - 1) rd->line[rd->len++] = c;
      continue;
    }
    rd->line[rd->len] = '\0';
    if (rd->line[0] == MP_CONTROL_FILE && rd->len > 1)
      on_message(ud, MP_CONTROL_GOT_FILE, rd->line + 1);
    rd->len = 0;
  }
}
