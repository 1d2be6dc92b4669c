--- resty.sha384 (lua-resty-string's): a running SHA384 digest on OpenSSL.
--
--     local sha384 = require("resty.sha384"):new()
--     sha384:update("hello")
--     local digest = sha384:final()   -- binary; resty.string's to_hex for hex
--
-- @module resty.sha384

local crypto = require("moonport.core.crypto")

local _M = { _VERSION = "0.16" }

--- A new digest (called with ':' or '.'), or nil when it cannot be made:
-- update(s) returns true, final() the binary digest, reset() starts again.
-- @usage local d = require("resty.sha384"):new()
function _M.new()
  return crypto.new("sha384")
end

return _M
