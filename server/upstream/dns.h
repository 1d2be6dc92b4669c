/*
 * Host names to addresses for outbound sockets, per worker: IP literals
 * at once, names through libuv's getaddrinfo (on its thread pool; the
 * system resolver, so /etc/hosts counts), and what was resolved kept for
 * a while (--resolver-cache). getaddrinfo gives no TTL, so the time kept
 * is the setting's, for every name. Failed lookups are not kept.
 */
#ifndef MP_DNS_H
#define MP_DNS_H

#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

typedef struct mp_dns mp_dns;
typedef struct mp_dns_query mp_dns_query;

/* A lookup finished: status 0 with the address (its port set), or a
 * negative code (libuv's UV_EAI_* for a name that does not resolve). */
typedef void (*mp_dns_cb)(void *ud, int status, const struct sockaddr *addr);

/* A resolver for loop keeping names ttl_ms (0: not at all). NULL when out
 * of memory. */
mp_dns *mp_dns_new(uv_loop_t *loop, uint64_t ttl_ms);

/* Cancels every lookup in flight and frees the resolver once they are
 * done (their callbacks are not called). */
void mp_dns_free(mp_dns *d);

/* Resolves host (NUL-terminated) with port. Returns 0 with *out filled
 * when it is an IP literal or known; MP_AGAIN when a lookup started (then
 * cb(ud, ...) follows once, from the loop, unless cancelled, and *q names
 * the lookup); or a negative code. */
int mp_dns_resolve(mp_dns *d, const char *host, int port,
                   struct sockaddr_storage *out, mp_dns_cb cb, void *ud,
                   mp_dns_query **q);

/* The lookup's callback will not be called. */
void mp_dns_cancel(mp_dns_query *q);

#endif
