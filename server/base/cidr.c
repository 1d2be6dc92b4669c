/*
 * Address ranges (see cidr.h). Addresses are compared as bytes under the
 * prefix's mask; an IPv4-mapped IPv6 address counts as the IPv4 address it
 * carries, so that a dual-stack listener's peers match IPv4 ranges.
 */
#include "cidr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"

/* The first 12 bytes of an IPv4-mapped IPv6 address (::ffff:a.b.c.d). */
static const uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

bool mp_cidr_addr(const char *text, size_t len, uint8_t *family,
                  uint8_t addr[16]) {
  char buf[64];
  if (len == 0 || len >= sizeof buf) return false;
  memcpy(buf, text, len);
  buf[len] = '\0';
  memset(addr, 0, 16);
  if (inet_pton(AF_INET, buf, addr) == 1) {
    *family = 4;
    return true;
  }
  if (inet_pton(AF_INET6, buf, addr) != 1) return false;
  if (memcmp(addr, v4_mapped, sizeof v4_mapped) == 0) {
    memmove(addr, addr + 12, 4);
    memset(addr + 4, 0, 12);
    *family = 4;
    return true;
  }
  *family = 6;
  return true;
}

int mp_cidr_parse(const char *text, mp_cidr *out) {
  const char *slash = strchr(text, '/');
  size_t alen = slash ? (size_t)(slash - text) : strlen(text);
  memset(out, 0, sizeof *out);
  if (!mp_cidr_addr(text, alen, &out->family, out->addr)) return MP_INVALID;
  unsigned max = out->family == 4 ? 32 : 128;
  unsigned bits = max;
  if (slash != NULL) {
    char *end;
    const char *b = slash + 1;
    if (*b < '0' || *b > '9') return MP_INVALID;
    unsigned long n = strtoul(b, &end, 10);
    if (*end != '\0' || n > max) return MP_INVALID;
    bits = (unsigned)n;
  }
  out->bits = (uint8_t)bits;
  for (unsigned i = 0; i < 16; i++) {
    unsigned keep = bits >= 8 * (i + 1) ? 8 : bits > 8 * i ? bits - 8 * i : 0;
    out->addr[i] &= (uint8_t)(0xff00u >> keep);
  }
  return 0;
}

static bool in_range(const mp_cidr *c, const uint8_t addr[16]) {
  unsigned whole = c->bits / 8, rest = c->bits % 8;
  if (memcmp(c->addr, addr, whole) != 0) return false;
  if (rest == 0) return true;
  uint8_t mask = (uint8_t)(0xff00u >> rest);
  return (addr[whole] & mask) == c->addr[whole];
}

bool mp_cidr_list_has(const mp_cidr_list *l, uint8_t family,
                      const uint8_t addr[16]) {
  for (unsigned i = 0; i < l->n; i++)
    if (l->v[i].family == family && in_range(&l->v[i], addr)) return true;
  return false;
}

bool mp_cidr_list_contains(const mp_cidr_list *l, const struct sockaddr *sa) {
  uint8_t addr[16] = {0};
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
    memcpy(addr, &in->sin_addr, 4);
    return mp_cidr_list_has(l, 4, addr);
  }
  if (sa->sa_family != AF_INET6) return false;
  const struct sockaddr_in6 *in6 =
      (const struct sockaddr_in6 *)(const void *)sa;
  const uint8_t *a6 = in6->sin6_addr.s6_addr;
  if (memcmp(a6, v4_mapped, sizeof v4_mapped) == 0) {
    memcpy(addr, a6 + 12, 4);
    return mp_cidr_list_has(l, 4, addr);
  }
  memcpy(addr, a6, 16);
  return mp_cidr_list_has(l, 6, addr);
}
