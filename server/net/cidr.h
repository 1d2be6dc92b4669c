/*
 * Address ranges (mp_cidr, config.h): "10.0.0.0/8", "2001:db8::/32", or a
 * single address, parsed once and matched against a peer's address. An
 * IPv4 range also matches the IPv4-mapped form (::ffff:a.b.c.d) of its
 * addresses, which a dual-stack listener reports for IPv4 clients.
 */
#ifndef MP_CIDR_H
#define MP_CIDR_H

#include <stdbool.h>
#include <sys/socket.h>

#include "config.h"

/* Parses "ADDRESS[/BITS]" into *out (BITS defaults to the whole address;
 * host bits past the prefix are ignored). Returns 0 or MP_INVALID. */
int mp_cidr_parse(const char *text, mp_cidr *out);

/* Whether address sa (AF_INET or AF_INET6) is inside any range of list. */
bool mp_cidr_list_contains(const mp_cidr_list *list,
                           const struct sockaddr *sa);

#endif
