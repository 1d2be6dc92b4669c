--- The modules OpenResty's libraries probe for beside ngx, as
-- package.loaded entries that moonport.ngx installs: resty.core and its
-- parts (whose work moonport.ngx already does, so each is a table with a
-- version, and resty.core.base the helpers libraries take from it),
-- ngx.base64 and ngx.re's module form.
-- @module moonport.ngx.probes

local crypto = require("moonport.core.crypto")
local current = require("moonport.core.current")

local ok_new, new_tab = pcall(require, "table.new")
if not ok_new then new_tab = function() return {} end end
local ok_clear, clear_tab = pcall(require, "table.clear")
if not ok_clear then
  clear_tab = function(t) for k in pairs(t) do t[k] = nil end end
end

-- lua-resty-core's version that goes with ngx_lua 0.10.26.
local VERSION = "0.1.28"

local modules = {}

modules["resty.core"] = { version = VERSION }

modules["resty.core.base"] = {
  version = VERSION,
  new_tab = new_tab,
  clear_tab = clear_tab,
  FFI_OK = 0, FFI_NO_REQ_CTX = -100, FFI_BAD_CONTEXT = -101, FFI_ERROR = -1,
  FFI_AGAIN = -2, FFI_BUSY = -3, FFI_DONE = -4, FFI_DECLINED = -5,
  --- The running request (moonport's req handle), or nil.
  get_request = function() return current.request() end,
  --- Whether the named subsystems include "http", moonport's only one.
  allows_subsystem = function(...)
    for i = 1, select("#", ...) do
      if select(i, ...) == "http" then return true end
    end
    return false
  end,
  ref_in_table = function(t, v)
    local n = #t + 1
    t[n] = v
    return n
  end,
}

for _, part in ipairs({ "regex", "hash", "base64", "uri", "var", "ctx",
                        "request", "response", "time", "worker", "shdict",
                        "exit", "phase", "ndk", "socket", "misc", "utils",
                        "errlog", "param", "coroutine" }) do
  modules["resty.core." .. part] = { version = VERSION }
end

--- ngx.base64: URL-safe base64 without padding.
modules["ngx.base64"] = {
  version = VERSION,
  encode_base64url = function(s)
    if type(s) ~= "string" then error("must provide a string", 2) end
    return crypto.base64_encode(s, true, true)
  end,
  decode_base64url = function(s)
    if type(s) ~= "string" then error("must provide a string", 2) end
    local out = crypto.base64_decode(s, true)
    if out == nil then return nil, "invalid input" end
    return out
  end,
}

return { modules = modules, version = VERSION }
