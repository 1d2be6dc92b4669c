/*
 * moonport.pg's door (see ../ffi.h): the running request's calls on
 * upstream/pg.c, and a result's rows and fields, read by
 * lua/moonport/core/pg.lua through libpq's accessors.
 */
#include "ffi.h"

#include <libpq-fe.h>
#include <uv.h>

#include "errors.h"
#include "pg.h"
#include "request.h"
#include "server.h"

int mp_pg_open(const char *conninfo, int pool_size) {
  return mp_pg_client(conninfo, pool_size > 0 ? (unsigned)pool_size : 1);
}

const char *mp_pg_default(void) {
  return mp_server_self != NULL ? mp_server_self->cfg->pg : NULL;
}

int mp_pg_pin_open(int client) {
  if (mp_request_current() == NULL) return MP_BAD_CONTEXT;
  return mp_pg_pin(client);
}

void mp_pg_pin_close(int pin) { mp_pg_unpin(pin); }

int mp_pg_query(int client, int pin, const char *sql, int nparams,
                const char **values, const int *lengths, double timeout_ms,
                double *op) {
  return mp_pg_send(mp_request_current(), client, pin, sql, nparams,
                    (const char *const *)values, lengths, timeout_ms, op);
}

int mp_pg_await(void) { return mp_pg_wait(mp_request_current()); }

static PGresult *result_of(double op) {
  PGresult *res;
  const char *msg;
  mp_pg_outcome(op, &res, &msg);
  return res;
}

int mp_pg_result(double op, const char **msg, int *shape) {
  PGresult *res;
  int rc = mp_pg_outcome(op, &res, msg);
  if (rc == UV_EPROTO) return MP_DECLINED;
  if (rc != 0) return rc;
  shape[0] = res != NULL ? PQntuples(res) : 0;
  shape[1] = res != NULL ? PQnfields(res) : 0;
  if (res == NULL) return 0;
  size_t size = PQresultMemorySize(res);
  mp_request *r = mp_request_current();
  if (r != NULL) {
    r->charge.c_bytes += size;
    if (size > r->srv->cfg->request_memory_limit) {
      *msg = "the result is larger than --request-memory-limit";
      return MP_NOMEM;
    }
  }
  return 0;
}

const char *mp_pg_fname(double op, int col) {
  PGresult *res = result_of(op);
  const char *name = res != NULL ? PQfname(res, col) : NULL;
  return name != NULL ? name : "?";
}

int mp_pg_ftype(double op, int col) {
  PGresult *res = result_of(op);
  return res != NULL ? (int)PQftype(res, col) : 0;
}

int mp_pg_value(double op, int row, int col, const char **out) {
  PGresult *res = result_of(op);
  if (res == NULL || PQgetisnull(res, row, col)) return -1;
  *out = PQgetvalue(res, row, col);
  return PQgetlength(res, row, col);
}

const char *mp_pg_affected(double op) {
  PGresult *res = result_of(op);
  return res != NULL ? PQcmdTuples(res) : "";
}

const char *mp_pg_error_field(double op, int field) {
  PGresult *res = result_of(op);
  return res != NULL ? PQresultErrorField(res, field) : NULL;
}

void mp_pg_release(double op) { mp_pg_free(op); }

int mp_pg_listen_open(int client, const char *channel, double *id) {
  return mp_pg_listen(client, channel, id);
}

int mp_pg_listen_next(double id, const char **payload, size_t *len) {
  return mp_pg_notification(mp_request_current(), id, payload, len);
}
