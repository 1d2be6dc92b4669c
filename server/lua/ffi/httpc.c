/*
 * moonport.http's response parser door (see ../ffi.h): http/h1resp.h's
 * parser in memory Lua allocates and keeps for the connection. Each call
 * reads or moves that one parser and keeps nothing else; none runs Lua.
 * Spans and body pointers stay valid as long as the caller's buffer does.
 * Also the inflating of gzip bodies (zlib), in one call per body.
 */
#include "ffi.h"

#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <zlib.h>

#include "errors.h"
#include "h1resp.h"

size_t mp_httpc_size(void) { return sizeof(mp_h1resp); }

void mp_httpc_init(void *p, size_t max_head, unsigned max_fields) {
  mp_h1resp_init(p, max_head, max_fields);
}

void mp_httpc_start(void *p, int head_only) {
  mp_h1resp_start(p, head_only != 0);
}

int mp_httpc_feed(void *p, const char *buf, size_t len, size_t *pos) {
  return mp_h1resp_feed(p, buf, len, pos);
}

uint32_t mp_httpc_head_start(const void *p) {
  return ((const mp_h1resp *)p)->head_start;
}

int mp_httpc_eof(void *p) { return mp_h1resp_eof(p); }

int mp_httpc_status(const void *p) { return ((const mp_h1resp *)p)->status; }

void mp_httpc_reason(const void *p, uint32_t *off, uint32_t *len) {
  const mp_h1resp *h = p;
  *off = h->reason.off;
  *len = h->reason.len;
}

unsigned mp_httpc_nfields(const void *p) {
  return ((const mp_h1resp *)p)->nfields;
}

/* i past the fields gives empty spans. */
void mp_httpc_field(const void *p, unsigned i, uint32_t *name_off,
                    uint32_t *name_len, uint32_t *value_off,
                    uint32_t *value_len) {
  const mp_h1resp *h = p;
  mp_hfield f = i < h->nfields ? h->fields[i] : (mp_hfield){{0, 0}, {0, 0}};
  *name_off = f.name.off;
  *name_len = f.name.len;
  *value_off = f.value.off;
  *value_len = f.value.len;
}

const char *mp_httpc_body(const void *p, size_t *len) {
  const mp_h1resp *h = p;
  *len = h->body_len;
  return h->body;
}

int mp_httpc_keep_alive(const void *p) {
  return ((const mp_h1resp *)p)->keep_alive;
}

int64_t mp_httpc_content_length(const void *p) {
  return ((const mp_h1resp *)p)->content_length;
}

int mp_httpc_chunked(const void *p) { return ((const mp_h1resp *)p)->chunked; }

const char *mp_httpc_error(const void *p) {
  return ((const mp_h1resp *)p)->error;
}

int mp_httpc_gunzip(const char *in, size_t len, char *out, size_t cap,
                    size_t *outlen) {
  *outlen = 0;
  if (len > UINT_MAX || cap > UINT_MAX) return MP_INVALID;
  z_stream z;
  memset(&z, 0, sizeof z);
  /* 15 + 32: the largest window, and a gzip or a zlib header alike. */
  if (inflateInit2(&z, 15 + 32) != Z_OK) return MP_NOMEM;
  z.next_in = (Bytef *)(uintptr_t)in;
  z.avail_in = (uInt)len;
  z.next_out = (Bytef *)out;
  z.avail_out = (uInt)cap;
  int rc = inflate(&z, Z_FINISH);
  *outlen = z.total_out;
  bool full = z.avail_out == 0;
  inflateEnd(&z);
  if (rc == Z_STREAM_END) return 0;
  if ((rc == Z_BUF_ERROR || rc == Z_OK) && full) return MP_AGAIN;
  return MP_INVALID;
}
