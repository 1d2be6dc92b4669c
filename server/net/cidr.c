/*
 * Address ranges (see cidr.h). Parsing uses inet_pton, so only the forms
 * it takes are ranges: dotted quads and RFC 4291 text, no names.
 */
#include "cidr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"

int mp_cidr_parse(const char *text, mp_cidr *out) {
  char addr[64];
  const char *slash = strchr(text, '/');
  size_t alen = slash ? (size_t)(slash - text) : strlen(text);
  if (alen == 0 || alen >= sizeof addr) return MP_INVALID;
  memcpy(addr, text, alen);
  addr[alen] = '\0';
  memset(out, 0, sizeof *out);
  unsigned max;
  if (inet_pton(AF_INET, addr, out->addr) == 1) {
    out->family = 4;
    max = 32;
  } else if (inet_pton(AF_INET6, addr, out->addr) == 1) {
    out->family = 6;
    max = 128;
  } else {
    return MP_INVALID;
  }
  unsigned long bits = max;
  if (slash != NULL) {
    char *end;
    if (slash[1] < '0' || slash[1] > '9') return MP_INVALID;
    bits = strtoul(slash + 1, &end, 10);
    if (*end != '\0' || bits > max) return MP_INVALID;
  }
  out->bits = (uint8_t)bits;
  return 0;
}

/* Whether the first `bits` bits of a and b agree. */
static bool prefix_equal(const uint8_t *a, const uint8_t *b, unsigned bits) {
  unsigned whole = bits / 8, rest = bits % 8;
  if (memcmp(a, b, whole) != 0) return false;
  if (rest == 0) return true;
  uint8_t mask = (uint8_t)(0xff << (8 - rest));
  return (a[whole] & mask) == (b[whole] & mask);
}

static bool contains(const mp_cidr *c, const struct sockaddr *sa) {
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
    return c->family == 4 &&
           prefix_equal(c->addr, (const uint8_t *)&in->sin_addr, c->bits);
  }
  if (sa->sa_family != AF_INET6) return false;
  const struct in6_addr *a6 =
      &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
  if (c->family == 6) return prefix_equal(c->addr, a6->s6_addr, c->bits);
  return IN6_IS_ADDR_V4MAPPED(a6) &&
         prefix_equal(c->addr, a6->s6_addr + 12, c->bits);
}

bool mp_cidr_list_contains(const mp_cidr_list *list,
                           const struct sockaddr *sa) {
  for (unsigned i = 0; i < list->n; i++)
    if (contains(&list->nets[i], sa)) return true;
  return false;
}
