--- What indexing a number does: the number metatable, which hands req
-- handles the methods and fields of core/request.lua and res handles the
-- methods of core/response.lua. Every other number raises, as a number
-- without a metatable would ("attempt to index a number value"), so a
-- number a script mistakes for a table is caught where it is indexed.
-- Handles get no fields of their own: req.ctx is where a request keeps
-- values.
--
-- Handles are told from other numbers by their range alone (base.is_handle,
-- server/req/request.h), a test JIT-compiled code makes in two
-- comparisons; the C functions then check that the request is live.
-- @module moonport.core.handle

local ffi = require("ffi")
local base = require("moonport.core.base")
local request = require("moonport.core.request")
local response = require("moonport.core.response")

local error, tostring = error, tostring
local is_handle = base.is_handle
local req_methods, req_fields = request.methods, request.fields
local res_methods = response.methods
-- The kind is a handle's lowest bit.
local CTX_REQ = ffi.C.MP_CTX_REQ

local NOT_INDEXABLE = "attempt to index a number value"

debug.setmetatable(0, {
  __index = function(self, key)
    if not is_handle(self) then error(NOT_INDEXABLE, 2) end
    if self % 2 == CTX_REQ then
      local method = req_methods[key]
      if method then return method end
      local field = req_fields[key]
      -- A tail call: a field that raises blames the handler's line.
      if field then return field(self) end
      return nil
    end
    return res_methods[key]
  end,
  __newindex = function(self, key)
    if not is_handle(self) then error(NOT_INDEXABLE, 2) end
    local name = self % 2 == CTX_REQ and "req" or "res"
    error(name .. "." .. tostring(key) .. ": a request handle takes no fields "
          .. "of its own; keep values in req.ctx", 2)
  end,
})

return {}
