--- resty.string (lua-resty-string's): to_hex and atoi.
-- @module resty.string

local crypto = require("moonport.core.crypto")

local type, tostring, tonumber = type, tostring, tonumber
local find = string.find

local _M = { _VERSION = "0.16" }

--- Lower-case hex of the bytes of s.
-- @usage require("resty.string").to_hex(digest)
function _M.to_hex(s)
  if type(s) ~= "string" then s = tostring(s) end
  return crypto.hex(s)
end

--- The number the decimal digits of s make, or -1 when s is empty or has
-- anything else (nginx's ngx_atoi).
-- @usage require("resty.string").atoi("42") --> 42
function _M.atoi(s)
  if type(s) ~= "string" or s == "" or find(s, "%D") then return -1 end
  return tonumber(s)
end

return _M
