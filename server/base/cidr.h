/*
 * Address ranges (CIDR blocks) for --trusted-proxy and --metrics-allow: parsing "10.0.0.0/8",
 * "2001:db8::/32" or a bare address, and testing an address against a
 * list of them. No I/O, no allocation: a list is a fixed array inside the
 * configuration.
 */
#ifndef MP_CIDR_H
#define MP_CIDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* The most ranges one list holds. */
#define MP_CIDR_MAX 32

typedef struct mp_cidr {
  uint8_t family; /* 4 or 6 */
  uint8_t bits;   /* prefix length: 0..32 or 0..128 */
  uint8_t addr[16];
} mp_cidr;

typedef struct mp_cidr_list {
  unsigned n;
  mp_cidr v[MP_CIDR_MAX];
} mp_cidr_list;

/* Parses "ADDR/BITS" or "ADDR" (a whole address) into *out; host bits set
 * in ADDR are cleared. Returns 0, or MP_INVALID. */
int mp_cidr_parse(const char *text, mp_cidr *out);

/* Parses len bytes of text as one IP address, IPv4 or IPv6, into
 * family (4 or 6) and addr (16 bytes, the first 4 for IPv4). An
 * IPv4-mapped IPv6 address ("::ffff:10.0.0.1") is read as the IPv4 one.
 * Returns true when it is one. */
bool mp_cidr_addr(const char *text, size_t len, uint8_t *family,
                  uint8_t addr[16]);

/* Whether the address (as mp_cidr_addr gives it) lies in one of l's
 * ranges. */
bool mp_cidr_list_has(const mp_cidr_list *l, uint8_t family,
                      const uint8_t addr[16]);

/* Whether a peer's address sa (AF_INET or AF_INET6; an IPv4-mapped IPv6
 * address counts as the IPv4 one) lies in one of l's ranges. */
bool mp_cidr_list_contains(const mp_cidr_list *l, const struct sockaddr *sa);

#endif
