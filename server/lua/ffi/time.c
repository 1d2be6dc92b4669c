/*
 * Time for Lua (see ../ffi.h): the wall clock, which
 * lua/moonport/core/time.lua gives as core.now() (the mock's journal
 * stamps its entries with it).
 */
#include "ffi.h"

#include <uv.h>

double mp_clock_wall(void) {
  uv_timeval64_t tv;
  if (uv_gettimeofday(&tv) != 0) return 0;
  return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}
