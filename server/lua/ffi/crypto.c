/*
 * Hashes, HMAC, base64, hex and CRC-32 for Lua (see ../ffi.h): what the
 * ngx compatibility module (ngx.md5, ngx.sha1_bin, ngx.hmac_sha1,
 * ngx.encode_base64, ngx.crc32_short, ...) and the resty.md5/sha1/sha256
 * modules compute, through lua/moonport/core/crypto.lua.
 *
 * Digests and HMAC are OpenSSL 3's libcrypto (EVP); CRC-32 is zlib's. Base64
 * and hex are written here: OpenResty's base64 has rules of its own (an
 * unpadded input decodes; what follows the first '=' is not looked at) that
 * EVP's does not share.
 *
 * Every function writes into a buffer its caller gives: digests at most
 * MP_DIGEST_MAX bytes, base64 and hex into a buffer whose size the caller
 * computed and passes in (too small: MP_INVALID, nothing written past it).
 * A running digest (mp_digest_new) is memory of libcrypto's, freed by
 * mp_digest_free, which Lua attaches with ffi.gc.
 */
#include "ffi.h"

#include <limits.h>
#include <stdlib.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <zlib.h>

#include "errors.h"

/* A running digest: the context and whether its final value was taken
 * (libcrypto refuses updates after that; this says so without asking). */
typedef struct digest {
  EVP_MD_CTX *ctx;
  const EVP_MD *md;
  int finished;
} digest;

/* The algorithm for an MP_DIGEST_* number, or NULL. */
static const EVP_MD *algorithm(int alg) {
  switch (alg) {
  case MP_DIGEST_MD5: return EVP_md5();
  case MP_DIGEST_SHA1: return EVP_sha1();
  case MP_DIGEST_SHA224: return EVP_sha224();
  case MP_DIGEST_SHA256: return EVP_sha256();
  case MP_DIGEST_SHA384: return EVP_sha384();
  case MP_DIGEST_SHA512: return EVP_sha512();
  default: return NULL;
  }
}

int mp_digest(int alg, const char *data, size_t len, unsigned char *out) {
  const EVP_MD *md = algorithm(alg);
  unsigned int n = 0;
  if (md == NULL) return MP_INVALID;
  if (EVP_Digest(data, len, out, &n, md, NULL) != 1) return MP_NOMEM;
  return (int)n;
}

int mp_hmac(int alg, const char *key, size_t klen, const char *data,
            size_t len, unsigned char *out) {
  const EVP_MD *md = algorithm(alg);
  unsigned int n = 0;
  if (md == NULL || klen > INT_MAX) return MP_INVALID;
  /* HMAC() takes a NULL key as "no key"; an empty one must still be a
   * key. */
  static const char empty[1];
  if (HMAC(md, klen ? key : empty, (int)klen, (const unsigned char *)data,
           len, out, &n) == NULL)
    return MP_NOMEM;
  return (int)n;
}

void *mp_digest_new(int alg) {
  const EVP_MD *md = algorithm(alg);
  if (md == NULL) return NULL;
  digest *d = malloc(sizeof *d);
  if (d == NULL) return NULL;
  d->md = md;
  d->finished = 0;
  if ((d->ctx = EVP_MD_CTX_new()) == NULL) goto err;
  if (EVP_DigestInit_ex(d->ctx, md, NULL) != 1) goto err;
  return d;

err:
  EVP_MD_CTX_free(d->ctx);
  free(d);
  return NULL;
}

int mp_digest_update(void *p, const char *data, size_t len) {
  digest *d = p;
  if (d->finished) return MP_STATE;
  return EVP_DigestUpdate(d->ctx, data, len) == 1 ? 0 : MP_NOMEM;
}

int mp_digest_final(void *p, unsigned char *out) {
  digest *d = p;
  unsigned int n = 0;
  if (d->finished) return MP_STATE;
  d->finished = 1;
  if (EVP_DigestFinal_ex(d->ctx, out, &n) != 1) return MP_NOMEM;
  return (int)n;
}

int mp_digest_reset(void *p) {
  digest *d = p;
  if (EVP_DigestInit_ex(d->ctx, d->md, NULL) != 1) return MP_NOMEM;
  d->finished = 0;
  return 0;
}

void mp_digest_free(void *p) {
  digest *d = p;
  if (d == NULL) return;
  EVP_MD_CTX_free(d->ctx);
  free(d);
}

static const char b64_std[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64_url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int mp_base64_encode(const char *in, size_t len, int flags, char *out,
                     size_t cap) {
  const unsigned char *s = (const unsigned char *)in;
  const char *abc = (flags & MP_BASE64_URL) ? b64_url : b64_std;
  int pad = !(flags & MP_BASE64_NO_PADDING);
  if (len > (size_t)INT_MAX / 4 * 3) return MP_INVALID;
  size_t need = pad ? (len + 2) / 3 * 4 : len / 3 * 4 + (len % 3 ? len % 3 + 1 : 0);
  if (need > cap) return MP_INVALID;
  char *d = out;
  while (len >= 3) {
    *d++ = abc[s[0] >> 2];
    *d++ = abc[((s[0] & 3) << 4) | (s[1] >> 4)];
    *d++ = abc[((s[1] & 0x0f) << 2) | (s[2] >> 6)];
    *d++ = abc[s[2] & 0x3f];
    s += 3;
    len -= 3;
  }
  if (len > 0) {
    *d++ = abc[s[0] >> 2];
    if (len == 1) {
      *d++ = abc[(s[0] & 3) << 4];
      if (pad) *d++ = '=';
    } else {
      *d++ = abc[((s[0] & 3) << 4) | (s[1] >> 4)];
      *d++ = abc[(s[1] & 0x0f) << 2];
    }
    if (pad) *d++ = '=';
  }
  return (int)(d - out);
}

/* A base64 digit's value, or -1. */
static int b64_value(unsigned char c, int url) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == (url ? '-' : '+')) return 62;
  if (c == (url ? '_' : '/')) return 63;
  return -1;
}

int mp_base64_decode(const char *in, size_t len, int flags, char *out,
                     size_t cap) {
  const unsigned char *s = (const unsigned char *)in;
  int url = (flags & MP_BASE64_URL) != 0;
  /* As nginx's ngx_decode_base64: the digits run to the first '=' (what
   * follows is not looked at), and a run one digit past a whole group
   * cannot be. */
  size_t n = 0;
  while (n < len && s[n] != '=') {
    if (b64_value(s[n], url) < 0) return MP_INVALID;
    n++;
  }
  if (n % 4 == 1 || n > (size_t)INT_MAX) return MP_INVALID;
  if (n / 4 * 3 + (n % 4 ? n % 4 - 1 : 0) > cap) return MP_INVALID;
  unsigned char *d = (unsigned char *)out;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    int a = b64_value(s[i], url), b = b64_value(s[i + 1], url);
    int c = b64_value(s[i + 2], url), e = b64_value(s[i + 3], url);
    *d++ = (unsigned char)(a << 2 | b >> 4);
    *d++ = (unsigned char)(b << 4 | c >> 2);
    *d++ = (unsigned char)(c << 6 | e);
  }
  if (n - i >= 2) {
    int a = b64_value(s[i], url), b = b64_value(s[i + 1], url);
    *d++ = (unsigned char)(a << 2 | b >> 4);
    if (n - i == 3) {
      int c = b64_value(s[i + 2], url);
      *d++ = (unsigned char)(b << 4 | c >> 2);
    }
  }
  return (int)(d - (unsigned char *)out);
}

int mp_hex_encode(const char *in, size_t len, char *out, size_t cap) {
  static const char digits[] = "0123456789abcdef";
  const unsigned char *s = (const unsigned char *)in;
  if (len > (size_t)INT_MAX / 2 || len * 2 > cap) return MP_INVALID;
  for (size_t i = 0; i < len; i++) {
    out[2 * i] = digits[s[i] >> 4];
    out[2 * i + 1] = digits[s[i] & 0x0f];
  }
  return (int)(len * 2);
}

int mp_crc32(const char *data, size_t len, uint32_t *out) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const Bytef *p = (const Bytef *)data;
  /* zlib takes lengths as uInt: feed a long input in pieces. */
  while (len > 0) {
    uInt n = len > UINT_MAX ? UINT_MAX : (uInt)len;
    crc = crc32(crc, p, n);
    p += n;
    len -= n;
  }
  *out = (uint32_t)crc;
  return 0;
}
