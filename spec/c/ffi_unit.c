/*
 * Stand-ins for the FFI contract's request functions in
 * moonport_ffi_unit.so, the library the unit specs load into plain LuaJIT
 * (spec/CMakeLists.txt): lua/moonport/core/base.lua looks mp_req_running
 * up when it loads, and there is no request outside the server. Each
 * answers as the server does outside any request.
 */
#include "ffi.h"

#include "errors.h"

int mp_req_running(uint64_t ctx) {
  (void)ctx;
  return MP_BAD_CONTEXT;
}
