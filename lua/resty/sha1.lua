--- resty.sha1 (lua-resty-string's): a running SHA1 digest on OpenSSL.
--
--     local sha1 = require("resty.sha1"):new()
--     sha1:update("hello")
--     local digest = sha1:final()   -- binary; resty.string's to_hex for hex
--
-- @module resty.sha1

local crypto = require("moonport.core.crypto")

local _M = { _VERSION = "0.16" }

--- A new digest (called with ':' or '.'), or nil when it cannot be made:
-- update(s) returns true, final() the binary digest, reset() starts again.
-- @usage local d = require("resty.sha1"):new()
function _M.new()
  return crypto.new("sha1")
end

return _M
