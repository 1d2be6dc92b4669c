/*
 * What pg.c and pg_listen.c share, and nothing else uses.
 */
#ifndef MP_PG_INT_H
#define MP_PG_INT_H

#include <libpq-fe.h>
#include <uv.h>

/* pg.c: sends sql (no parameters; its answer is dropped) on client's
 * LISTEN connection, made and connected when needed (once connected,
 * mp__pg_relisten sends every LISTEN again). Returns 0 or a code. */
int mp__pg_listener_send(int client, const char *sql);
/* The worker's loop, or NULL once closed. */
uv_loop_t *mp__pg_loop(void);

/* pg_listen.c: the notifications conn has received, for client's
 * listeners. */
void mp__pg_take_notifications(int client, PGconn *conn);
/* client's LISTEN connection has (re)connected: every channel listened to
 * is sent again. */
void mp__pg_relisten(int client);

#endif
