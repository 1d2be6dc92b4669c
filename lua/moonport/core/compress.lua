--- Response compression rules and their use (server/lua/ffi/compress.c).
-- @module moonport.core.compress

local ffi = require("ffi")
local base = require("moonport.core.base")

ffi.cdef[[
int mp_compress_rule_new(const char *types, double min_length, int level);
int mp_res_compress(uint64_t ctx, int rule);
]]

local C = ffi.C

local compress = {}

--- Registers a rule in this worker: types (a comma-separated string, or
-- nil for the default list), the least length, the level. Returns its
-- number, or nil and why.
-- @usage local rule = assert(compress.rule("text/,application/json", 1024, 6))
function compress.rule(types, min_length, level)
  local n = C.mp_compress_rule_new(types, min_length, level)
  if n == C.MP_INVALID then return nil, "bad level or types" end
  if n < 0 then return nil, "too many compression rules" end
  return n
end

--- Puts res's body under rule; raises once its head has gone out.
-- @usage compress.apply(res, rule)
function compress.apply(res, rule)
  local rc = C.mp_res_compress(res, rule)
  if rc ~= 0 then base.fail(rc, "moonport.compress") end
end

return compress
