--- resty.sha256 (lua-resty-string's): a running SHA256 digest on OpenSSL.
--
--     local sha256 = require("resty.sha256"):new()
--     sha256:update("hello")
--     local digest = sha256:final()   -- binary; resty.string's to_hex for hex
--
-- @module resty.sha256

local crypto = require("moonport.core.crypto")

local _M = { _VERSION = "0.16" }

--- A new digest (called with ':' or '.'), or nil when it cannot be made:
-- update(s) returns true, final() the binary digest, reset() starts again.
-- @usage local d = require("resty.sha256"):new()
function _M.new()
  return crypto.new("sha256")
end

return _M
