/*
 * Names and messages for the core's return codes (errors.h). Codes that are
 * not ours are libuv's, and libuv names them.
 */
#include "errors.h"

#include <uv.h>

const char *mp_strerror(int code) {
  switch (code) {
#define XX(name, c, msg) \
  case MP_##name:        \
    return msg;
    MP_ERRNO_MAP(XX)
#undef XX
  }
  return uv_strerror(code);
}

const char *mp_errname(int code) {
  switch (code) {
#define XX(name, c, msg) \
  case MP_##name:        \
    return "MP_" #name;
    MP_ERRNO_MAP(XX)
#undef XX
  }
  return uv_err_name(code);
}
