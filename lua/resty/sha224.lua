--- resty.sha224 (lua-resty-string's): a running SHA224 digest on OpenSSL.
--
--     local sha224 = require("resty.sha224"):new()
--     sha224:update("hello")
--     local digest = sha224:final()   -- binary; resty.string's to_hex for hex
--
-- @module resty.sha224

local crypto = require("moonport.core.crypto")

local _M = { _VERSION = "0.16" }

--- A new digest (called with ':' or '.'), or nil when it cannot be made:
-- update(s) returns true, final() the binary digest, reset() starts again.
-- @usage local d = require("resty.sha224"):new()
function _M.new()
  return crypto.new("sha224")
end

return _M
