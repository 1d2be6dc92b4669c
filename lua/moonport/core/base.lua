--- The base of moonport.core, the door between Lua and C: the contract's
-- constants, request handles, the errors failed calls raise, and what Lua
-- keeps for a request while its handler runs.
--
-- Handler scripts never see a pointer: `req` and `res` are handles,
-- numbers holding a request's slot and generation (server/req/request.h),
-- and every C call checks them, so one kept past its request raises
-- "request already finished". C functions return status codes and never
-- raise; moonport.core turns the codes into Lua errors for misuse
-- (`error(msg, 2)`), and into `nil, err` for expected failures.
--
-- Each module of moonport.core declares, in one `ffi.cdef`, the functions
-- of server/lua/ffi.h it calls, and looks them up once, when it loads.
-- @module moonport.core.base

local ffi = require("ffi")

local C = ffi.C
local type, error, tostring = type, error, tostring

ffi.cdef[[
const char *mp_ffi_constants(void);
int mp_req_running(uint64_t ctx);
]]

-- The contract's constants (server/lua/ffi.h): return codes, the handle
-- layout, fault kinds, value types, stores, log levels. C writes their
-- declaration from its own definitions, so each value is written once;
-- modules read them as C.MP_AGAIN, once, when they load.
ffi.cdef(ffi.string(C.mp_ffi_constants()))

local mp_req_running = C.mp_req_running
local MP_BAD_CONTEXT = C.MP_BAD_CONTEXT
local MP_STATE = C.MP_STATE
local MP_NOMEM = C.MP_NOMEM

local base = {}

-- Handles ------------------------------------------------------------------

-- Every handle lies in [HANDLE_MIN, HANDLE_END): its tag bit set, the bits
-- between the tag and the generation clear (request.h). Its kind, req or
-- res, is its lowest bit.
local HANDLE_MIN = 2 ^ C.MP_CTX_TAG_BIT
local HANDLE_END = HANDLE_MIN + 2 ^ (C.MP_CTX_GEN_SHIFT + C.MP_CTX_GEN_BITS)

--- Whether v has the form of a request handle (of a request live or
-- over): Lua's one test of handles.
-- @usage if base.is_handle(v) then ... end
local function is_handle(v)
  return type(v) == "number" and v >= HANDLE_MIN and v < HANDLE_END
end
base.is_handle = is_handle

--- Raises for a req or res method called with '.' instead of ':',
-- blaming the handler's line.
-- @usage check_self(self, "req:header")
function base.check_self(self, name)
  if not is_handle(self) then
    error(name .. ": called with '.' instead of ':'", 3)
  end
end

--- Raises the error for a failed C call, blaming the line that called the
-- method (or read the field) that failed.
-- @usage if rc < 0 then fail(rc, "req:header") end
function base.fail(rc, what)
  if rc == MP_BAD_CONTEXT then
    error("request already finished", 3)
  elseif rc == MP_STATE then
    error(what .. ": response already sent", 3)
  elseif rc == MP_NOMEM then
    error(what .. ": out of memory", 3)
  end
  error(what .. ": failed (" .. tostring(rc) .. ")", 3)
end

-- What Lua keeps for a request --------------------------------------------

-- Values kept for a request, in tables keyed by its req, for as long as its
-- handler runs: its body read whole, its on_abort functions, its params and
-- ctx tables, what the ngx compatibility module keeps for it (its
-- status, headers set, ngx.ctx), and the function that holds its response
-- for a check before it goes out (core/response.lua's response.hold:
-- moonport.openapi.validate). base.forget drops them all when the
-- handler returns (core.run) or ends without returning (server/lua/vm.c
-- calls core.forget). base.keep adds them.
local bodies, aborts, params, ctxs, ngxs, holds = {}, {}, {}, {}, {}, {}
base.kept = { bodies = bodies, aborts = aborts, params = params, ctx = ctxs,
              ngx = ngxs, holds = holds }

--- Keeps value in t (one of base.kept) for req. Returns value, or nil and
-- MP_BAD_CONTEXT once req's handler has returned: nothing would drop it.
-- @usage local ok, rc = keep(base.kept.bodies, req, body)
function base.keep(t, req, value)
  local rc = mp_req_running(req)
  if rc ~= 0 then return nil, rc end
  t[req] = value
  return value
end

--- Drops every value kept for req. Straight-line code: a loop here would
-- make a JIT trace of its own, in every request's path.
-- @usage base.forget(req)
function base.forget(req)
  -- Assigning nil to an absent key would make it a (dead) key.
  if bodies[req] ~= nil then bodies[req] = nil end
  if aborts[req] ~= nil then aborts[req] = nil end
  if params[req] ~= nil then params[req] = nil end
  if ctxs[req] ~= nil then ctxs[req] = nil end
  if ngxs[req] ~= nil then ngxs[req] = nil end
  if holds[req] ~= nil then holds[req] = nil end
end

-- The output buffer of the FFI calls that write a result for Lua to copy
-- out at once (ffi.string): one kept for results up to KEEP bytes, one of
-- their own for larger ones (the garbage collector takes it back).
local KEEP = 64 * 1024
local kept_buffer = ffi.new("char[?]", 1024)
local kept_size = 1024

--- A char buffer of at least n bytes, valid until the next call.
-- @usage local out = base.out_buffer(#s * 2)
function base.out_buffer(n)
  if n <= kept_size then return kept_buffer end
  if n > KEEP then return ffi.new("char[?]", n) end
  kept_size = KEEP
  kept_buffer = ffi.new("char[?]", KEEP)
  return kept_buffer
end

return base
