/*
 * The FFI's scratch buffer: where the door functions of ffi/ decode values
 * (joined header fields, query parameters, path parameters, store values,
 * directory listings) for Lua, which copies them out before its next call
 * into C. One buffer per process, grown as needed and never shrunk.
 */
#ifndef MP_LUA_FFI_SCRATCH_H
#define MP_LUA_FFI_SCRATCH_H

#include <stddef.h>

/* The buffer, at least n bytes long; NULL when it cannot grow (the old
 * one stays). Its contents survive growth. */
char *mp__ffi_scratch(size_t n);

/* The buffer as it is now (possibly NULL) and its size. */
char *mp__ffi_scratch_now(size_t *cap);

#endif
