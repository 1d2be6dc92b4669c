/*
 * Response compression (see compress.h).
 *
 * Rules live in a table per worker, filled at load and looked up by
 * number. The whole-body path reuses one deflate stream (deflateReset
 * between bodies, deflateParams when the level changes) and one scratch
 * buffer that grows to the largest compressed body and stays, so that a
 * compressed response costs no malloc once the worker is warm. A streamed
 * body needs a stream of its own (its state lives between writes), made
 * when the stream starts and freed when it ends or the request goes; it
 * uses a 4 KiB window and small tables (about 32 KiB in all, not zlib's
 * default 256 KiB), so that many clients of compressed streams at once
 * cost little: streamed pieces are small, the ratio hardly changes.
 */
#include "compress.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "errors.h"
#include "str.h"

typedef struct rule {
  char types[512]; /* comma-separated, lower case */
  size_t min_length;
  int level;
} rule;

static rule rules[MP_COMPRESS_MAX_RULES + 1]; /* rules[0] unused */
static int nrules;
static int default_rule; /* --gzip's, made on first use */

int mp_compress_rule(const char *types, size_t min_length, int level) {
  if (level < 1 || level > 9) return MP_INVALID;
  if (types == NULL) types = MP_COMPRESS_DEFAULT_TYPES;
  size_t tlen = strlen(types);
  if (tlen >= sizeof rules[0].types) return MP_INVALID;
  for (int i = 1; i <= nrules; i++) {
    rule *u = &rules[i];
    if (u->level == level && u->min_length == min_length &&
        strlen(u->types) == tlen && mp_str_ieq(u->types, types, tlen))
      return i;
  }
  if (nrules == MP_COMPRESS_MAX_RULES) return MP_NOMEM;
  rule *u = &rules[++nrules];
  for (size_t i = 0; i <= tlen; i++) {
    char c = types[i];
    u->types[i] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
  }
  u->min_length = min_length;
  u->level = level;
  return nrules;
}

/* The rule r answers by: its own, else --gzip's, else NULL. */
static const rule *rule_of(const mp_request *r) {
  if (r->compress > 0 && r->compress <= nrules) return &rules[r->compress];
  if (!r->srv->cfg->gzip) return NULL;
  if (default_rule == 0) default_rule = mp_compress_rule(NULL, 1024, 6);
  return default_rule > 0 ? &rules[default_rule] : NULL;
}

/* Whether the media type of content_type (before any ';') is one of the
 * rule's: an entry ending in '/' matches every subtype. */
static bool type_matches(const rule *u, const char *ct, size_t ctlen) {
  size_t tlen = 0;
  while (tlen < ctlen && ct[tlen] != ';' && ct[tlen] != ' ') tlen++;
  const char *p = u->types;
  while (*p != '\0') {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n > 0 && p[n - 1] == '/' ? (tlen > n && mp_str_ieq(ct, p, n))
                                 : (tlen == n && mp_str_ieq(ct, p, n)))
      return true;
    p += n + (end != NULL);
  }
  return false;
}

/* The value of r's first request field named name (lower case), or NULL. */
static const char *field(const mp_request *r, const char *name, size_t *len) {
  size_t nlen = strlen(name);
  for (unsigned i = 0; i < r->msg.nfields; i++) {
    const mp_hfield *f = &r->msg.fields[i];
    if (f->name.len == nlen && mp_str_ieq(r->head + f->name.off, name, nlen)) {
      *len = f->value.len;
      return r->head + f->value.off;
    }
  }
  return NULL;
}

/* Whether Accept-Encoding lists gzip (or "*") without q=0. */
static bool accepts_gzip(const mp_request *r) {
  size_t len;
  const char *v = field(r, "accept-encoding", &len);
  if (v == NULL) return false;
  size_t i = 0;
  while (i < len) {
    while (i < len && (v[i] == ' ' || v[i] == ',')) i++;
    size_t start = i;
    while (i < len && v[i] != ',' && v[i] != ';' && v[i] != ' ') i++;
    size_t n = i - start;
    bool name = (n == 4 && mp_str_ieq(v + start, "gzip", 4)) ||
                (n == 1 && v[start] == '*');
    /* Its parameters: q=0 (or 0.0, 0.00...) refuses it. */
    bool refused = false;
    while (i < len && v[i] != ',') {
      if ((v[i] == 'q' || v[i] == 'Q') && i + 1 < len && v[i + 1] == '=') {
        size_t j = i + 2;
        refused = j < len && v[j] == '0';
        for (j++; refused && j < len && v[j] != ',' && v[j] != ';'; j++)
          if (v[j] != '.' && v[j] != '0' && v[j] != ' ') refused = false;
      }
      i++;
    }
    if (name && !refused) return true;
  }
  return false;
}

/* Whether the handler set a field called name (its header lines). */
static bool has_field(const mp_request *r, const char *name) {
  size_t nlen = strlen(name);
  const char *p = r->headers.data;
  const char *end = p + r->headers.len;
  while (p != NULL && p < end) {
    if ((size_t)(end - p) > nlen && p[nlen] == ':' && mp_str_ieq(p, name, nlen))
      return true;
    p = memchr(p, '\n', (size_t)(end - p));
    if (p != NULL) p++;
  }
  return false;
}

bool mp_compress_wanted(mp_request *r, const char *content_type,
                        size_t ctlen, bool *vary) {
  *vary = false;
  const rule *u = rule_of(r);
  if (u == NULL || r->status == 204 || r->status == 304 || r->status == 206)
    return false;
  if (!type_matches(u, content_type, ctlen)) return false;
  if (has_field(r, "content-encoding")) return false;
  *vary = true;
  return accepts_gzip(r);
}

/* The worker's stream for whole bodies, and its level. */
static z_stream whole;
static bool whole_ready;
static int whole_level;
static char *scratch;
static size_t scratch_cap;

int mp_compress_whole(mp_request *r, const char *in, size_t len,
                      const char **out, size_t *outlen) {
  const rule *u = rule_of(r);
  if (u == NULL || len < u->min_length) {
    *out = in;
    *outlen = len;
    return 1;
  }
  if (!whole_ready) {
    if (deflateInit2(&whole, u->level, Z_DEFLATED, 31, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK)
      return MP_NOMEM;
    whole_ready = true;
    whole_level = u->level;
  } else {
    deflateReset(&whole);
    if (whole_level != u->level) {
      deflateParams(&whole, u->level, Z_DEFAULT_STRATEGY);
      whole_level = u->level;
    }
  }
  size_t bound = deflateBound(&whole, len);
  if (bound > scratch_cap) {
    char *p = realloc(scratch, bound);
    if (p == NULL) return MP_NOMEM;
    scratch = p;
    scratch_cap = bound;
  }
  whole.next_in = (Bytef *)in;
  whole.avail_in = (uInt)len;
  whole.next_out = (Bytef *)scratch;
  whole.avail_out = (uInt)scratch_cap;
  if (deflate(&whole, Z_FINISH) != Z_STREAM_END) return MP_NOMEM;
  *out = scratch;
  *outlen = scratch_cap - whole.avail_out;
  return 0;
}

int mp_compress_stream_start(mp_request *r) {
  const rule *u = rule_of(r);
  z_stream *z = calloc(1, sizeof *z);
  if (z == NULL) return MP_NOMEM;
  /* windowBits 12 (+16: the gzip wrapper), memLevel 5: 16 KiB + 16 KiB. */
  if (deflateInit2(z, u ? u->level : 6, Z_DEFLATED, 12 + 16, 5,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    free(z);
    return MP_NOMEM;
  }
  r->gz = z;
  return 0;
}

int mp_compress_stream(mp_request *r, const char *in, size_t len, bool final,
                       mp_buf *out) {
  z_stream *z = r->gz;
  z->next_in = (Bytef *)in;
  z->avail_in = (uInt)len;
  int flush = final ? Z_FINISH : Z_SYNC_FLUSH;
  for (;;) {
    if (mp_buf_reserve(out, 4096) != 0) return MP_NOMEM;
    z->next_out = (Bytef *)(out->data + out->len);
    z->avail_out = (uInt)(out->cap - out->len);
    size_t room = z->avail_out;
    int rc = deflate(z, flush);
    out->len += room - z->avail_out;
    if (rc == Z_STREAM_END) break;
    if (rc != Z_OK && rc != Z_BUF_ERROR) return MP_NOMEM;
    if (z->avail_out > 0 && z->avail_in == 0) break; /* all flushed */
  }
  if (final) mp_compress_stream_free(r);
  return 0;
}

void mp_compress_stream_free(mp_request *r) {
  if (r->gz == NULL) return;
  deflateEnd(r->gz);
  free(r->gz);
  r->gz = NULL;
}
