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

-- ---- Static files ----------------------------------------------------------

-- The directory of the Lua file that called (level 3: past App:static).
local function caller_dir()
  local info = getinfo(3, "S")
  local src = info and info.source or ""
  if src:sub(1, 1) ~= "@" then return "." end
  return src:sub(2):match("^(.*)/[^/]*$") or "."
end

--- Serves the files under root at the URL prefix, from the core: GET and
-- HEAD of `prefix/name` answer with the file `root/name`, sent with
-- sendfile off the loop, never entering Lua; a name with no file behind it
-- goes on to the routes. A relative root is relative to the directory of
-- the file that calls this. opts: `cache_control` (a Cache-Control value),
-- `index` (the file for a directory, default "index.html"; false: none),
-- `dotfiles` (default false: names with a segment starting with "." are
-- not served), `precompressed` (default true: NAME.br or NAME.gz to
-- clients that take them). Returns the app.
-- @usage app:static("/assets", "public", { cache_control = "max-age=3600" })
function App:static(prefix, root, opts)
  if type(prefix) ~= "string" or prefix:sub(1, 1) ~= "/" then
    error("app:static: prefix must be a string starting with '/'", 2)
  end
  if type(root) ~= "string" or root == "" then error("app:static: root must be a directory name", 2) end
  opts = opts or {}
  if type(opts) ~= "table" then error("app:static: opts must be a table", 2) end
  local cache_control, index = opts.cache_control, opts.index
  if cache_control ~= nil and type(cache_control) ~= "string" then
    error("app:static: cache_control must be a string", 2)
  end
  if index == nil then index = "index.html" end
  if index ~= false and type(index) ~= "string" then
    error("app:static: index must be a file name or false", 2)
  end
  if root:sub(1, 1) ~= "/" then root = caller_dir() .. "/" .. root end
  local statics = rawget(self, "statics")
  if statics == nil then
    statics = {}
    self.statics = statics
  end
  local info = getinfo(2, "l")
  -- `declared`: how many routes came before it, and its place among the
  -- app's mounts, so that declarations can be put back in order.
  statics[#statics + 1] = {
    prefix = prefix, root = root, cache_control = cache_control,
    index = index or nil, dotfiles = opts.dotfiles == true,
    precompressed = opts.precompressed ~= false,
    line = info and info.currentline or 0,
    declared = { routes = #self.routes, statics = #statics },
  }
  return self
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

return moonport
