--- resty.sha512 (lua-resty-string's): a running SHA512 digest on OpenSSL.
--
--     local sha512 = require("resty.sha512"):new()
--     sha512:update("hello")
--     local digest = sha512:final()   -- binary; resty.string's to_hex for hex
--
-- @module resty.sha512

local crypto = require("moonport.core.crypto")

local _M = { _VERSION = "0.16" }

--- A new digest (called with ':' or '.'), or nil when it cannot be made:
-- update(s) returns true, final() the binary digest, reset() starts again.
-- @usage local d = require("resty.sha512"):new()
function _M.new()
  return crypto.new("sha512")
end

return _M
