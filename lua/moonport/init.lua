--- moonport's public Lua API (v1).
--
--     local moonport = require("moonport")
--     local app = moonport.app()
--     app:get("/hello", function(req, res) res:send("Hello, World!") end)
--     return app
--
-- @module moonport

local core = require("moonport.core")

local type, error = type, error
local getinfo = debug.getinfo

local moonport = { _VERSION = "1" }

local App = core.App

--- A new, empty app. The script that makes it ends with `return app`.
-- @usage local app = require("moonport").app()
function moonport.app()
  return setmetatable({ routes = {} }, App)
end

-- Records a route. Called from App methods only, so level 3 is the
-- script line that declared it; errors and the router blame that line.
local function add(app, method, pattern, handler)
  if type(method) ~= "string" then error("method must be a string", 3) end
  if type(pattern) ~= "string" or pattern:sub(1, 1) ~= "/" then
    error("pattern must be a string starting with '/'", 3)
  end
  if type(handler) ~= "function" then error("handler must be a function", 3) end
  local info = getinfo(3, "l")
  local routes = app.routes
  routes[#routes + 1] = { method:upper(), pattern, handler, info and info.currentline or 0 }
end

--- Declares a route for any method; returns the app.
-- Patterns: literal segments, `:name` for one segment, `*name` for the rest.
-- @usage app:route("PURGE", "/cache/*key", handler)
function App:route(method, pattern, handler)
  add(self, method, pattern, handler)
  return self
end

--- Declare a GET, POST, PUT, PATCH, DELETE or OPTIONS route; return the app.
-- @usage app:get("/users/:id", function(req, res) res:json({id = req.params.id}) end)
for _, method in ipairs({ "get", "post", "put", "patch", "delete", "options" }) do
  local upper = method:upper()
  App[method] = function(self, pattern, handler)
    add(self, upper, pattern, handler)
    return self
  end
end

moonport.sleep = core.sleep
moonport.log = core.log
moonport.shared = core.shared
moonport.json = require("moonport.json")

--- The null value: SQL NULL from moonport.pg, JSON null in moonport.json,
-- ngx.null; `res:json` writes it as null.
moonport.null = moonport.json.null
-- Timers, light threads and semaphores (core/task.lua).
moonport.timer = core.timer
moonport.thread = core.thread
moonport.semaphore = core.semaphore

--- Outbound sockets with OpenResty's cosocket API.
-- @usage local sock = moonport.socket.tcp()
moonport.socket = require("moonport.core.socket")

--- HTML templates (etlua's syntax) compiled to Lua functions.
-- @usage local page = moonport.template.load("views/page.html")
moonport.template = require("moonport.template")

--- Response compression, a middleware: app:use(moonport.compress{...}).
moonport.compress = require("moonport.compress")

--- Percent-encoding and query strings: decode, encode, parse_query,
-- build_query (also require("moonport.url")).
-- @usage local q = moonport.url.parse_query(req.query_string)
moonport.url = require("moonport.url")

--- Cookies: parse, serialize, sign and verify (also
-- require("moonport.cookie")); req:cookie and res:cookie are made of them.
-- @usage local uid = moonport.cookie.verify(req:cookie("uid"), secret)
moonport.cookie = require("moonport.cookie")

return moonport
