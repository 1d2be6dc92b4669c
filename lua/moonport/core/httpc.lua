--- The response parser moonport.http reads responses with
-- (server/lua/ffi/httpc.c, over server/http/h1resp.c): its FFI
-- declarations, and ffi.C to call them through. Its answers are
-- C.MP_HTTPC_MORE, _HEAD, _BODY, _DONE and _ERROR.
-- @module moonport.core.httpc

local ffi = require("ffi")

ffi.cdef[[
size_t mp_httpc_size(void);
void mp_httpc_init(void *p, size_t max_head, unsigned max_fields);
void mp_httpc_start(void *p, int head_only);
int mp_httpc_feed(void *p, const char *buf, size_t len, size_t *pos);
uint32_t mp_httpc_head_start(const void *p);
int mp_httpc_eof(void *p);
int mp_httpc_status(const void *p);
void mp_httpc_reason(const void *p, uint32_t *off, uint32_t *len);
unsigned mp_httpc_nfields(const void *p);
void mp_httpc_field(const void *p, unsigned i, uint32_t *name_off,
                    uint32_t *name_len, uint32_t *value_off,
                    uint32_t *value_len);
const char *mp_httpc_body(const void *p, size_t *len);
int mp_httpc_keep_alive(const void *p);
int64_t mp_httpc_content_length(const void *p);
int mp_httpc_chunked(const void *p);
const char *mp_httpc_error(const void *p);
int mp_httpc_gunzip(const char *in, size_t len, char *out, size_t cap,
                    size_t *outlen);
]]

local C = ffi.C

-- Every symbol is looked up now, so a binary without one fails at
-- require rather than in the middle of a response.
local _ = {
  C.mp_httpc_size, C.mp_httpc_init, C.mp_httpc_start, C.mp_httpc_feed,
  C.mp_httpc_head_start, C.mp_httpc_eof, C.mp_httpc_status,
  C.mp_httpc_reason, C.mp_httpc_nfields, C.mp_httpc_field, C.mp_httpc_body,
  C.mp_httpc_keep_alive, C.mp_httpc_content_length, C.mp_httpc_chunked,
  C.mp_httpc_error, C.mp_httpc_gunzip,
}

return C
