/*
 * Return codes shared by every file of the core.
 *
 * 0 is success. Negative values are either libuv's error codes, passed
 * through unchanged, or one of ours below; ours sit far below libuv's range
 * so that the two never collide. mp_strerror() names either kind.
 */
#ifndef MP_ERRORS_H
#define MP_ERRORS_H

#define MP_ERRNO_MAP(XX)                                                     \
  XX(AGAIN, -30001, "operation would block; try again later")                \
  XX(DECLINED, -30002, "declined")                                           \
  XX(BAD_CONTEXT, -30003, "request already finished")                        \
  XX(NOMEM, -30004, "out of memory")                                         \
  XX(INVALID, -30005, "invalid argument")                                    \
  XX(STATE, -30006, "not allowed in the current state")                      \
  XX(NOT_FOUND, -30007, "not found")                                         \
  XX(CLOSED, -30008, "the peer closed the connection")                     \
  XX(TIMEOUT, -30009, "timeout")

enum {
#define XX(name, code, msg) MP_##name = code,
  MP_ERRNO_MAP(XX)
#undef XX
};

/* The message for a return code: ours, libuv's, or "unknown error". */
const char *mp_strerror(int code);

/* The symbolic name ("MP_AGAIN", "ECONNRESET", ...) of a return code. */
const char *mp_errname(int code);

#endif
