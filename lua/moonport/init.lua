--- moonport's public Lua API (v1).
--
--     local moonport = require("moonport")
--     local app = moonport.app()
--     app:get("/hello", function(req, res) res:send("Hello, World!") end)
--     return app
--
-- @module moonport

local core = require("moonport.core")

local type, error, getmetatable, rawget = type, error, getmetatable, rawget
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

-- Middleware and hooks (composed when the app is exported:
-- lua/moonport/core/middleware.lua) ------------------------------------------

local middleware_prefix = require("moonport.core.middleware").prefix

-- Appends v to the list app[key], made on first use: an app that never
-- declares one has none, and its routes stay as they are.
local function push(app, key, v)
  local list = rawget(app, key)
  if list == nil then
    list = {}
    app[key] = list
  end
  list[#list + 1] = v
end

--- Adds middleware: fn(req, res) runs before the handler of every route
-- (wherever the route is declared), in the order the middleware was
-- declared, and for requests no route serves (before the not-found
-- answer). With a prefix ("/api"), only for paths that are the prefix or
-- lie under it. A middleware returns nothing to go on; one that answers
-- (res:send, res:json, res:write, ...) ends the chain: later middleware
-- and the handler do not run. Values for later middleware and the
-- handler go in req.ctx. fn may also be a table with `run` (the
-- middleware) and/or `first` (a middleware that runs before every other
-- of the chain, whatever the order of declaration: moonport.cors).
-- Returns the app.
-- @usage app:use(function(req, res) if not req:header("authorization") then res:status(401):json({error = "login"}) end end)
-- @usage app:use("/admin", require_admin)
function App:use(prefix, fn)
  if fn == nil then prefix, fn = "", prefix end
  prefix = middleware_prefix(prefix, "app:use", 2)
  local run, first = fn, nil
  if type(fn) == "table" then
    run, first = fn.run, fn.first
    if (run ~= nil and type(run) ~= "function") or (first ~= nil and type(first) ~= "function")
        or (run == nil and first == nil) then
      error("app:use: a middleware table has a 'run' function, a 'first' one, or both", 2)
    end
  elseif type(run) ~= "function" then
    error("app:use: middleware must be a function or a table with 'run' or 'first'", 2)
  end
  push(self, "middleware", { prefix = prefix, run = run, first = first })
  return self
end

--- Adds an after hook: fn(req, res, err) runs once the handler has
-- returned (and after a middleware ended the chain, or the not-found
-- answer), also when it failed: err is then the error with its traceback
-- (when no error hook answered, the core's 500 follows the hooks). Hooks
-- run in the order declared, those of a mounted app before its parent's;
-- one that fails is logged. The response has usually been sent by then:
-- use res:get_status() to log it; headers must be added before the
-- handler sends (app:use). Returns the app.
-- @usage app:after(function(req, res) moonport.log(req.method .. " " .. req.path .. " " .. res:get_status()) end)
function App:after(fn)
  if type(fn) ~= "function" then error("app:after: fn must be a function", 2) end
  push(self, "afters", fn)
  return self
end

--- Sets the error hook: fn(req, res, err) answers in place of the core's
-- 500 when a handler or a middleware raised and nothing of the response
-- was sent yet (err is the message with its traceback, which goes to the
-- error log as before). A mounted app's hook serves its own routes. When
-- the hook raises too, the core's 500 answers. Returns the app.
-- @usage app:error(function(req, res, err) res:status(500):json({error = "sorry"}) end)
function App:error(fn)
  if type(fn) ~= "function" then error("app:error: fn must be a function", 2) end
  self.error_hook = fn
  return self
end

--- Sets the not-found hook: fn(req, res) answers in place of the core's
-- 404 for every request no route serves, whatever its method (a 405,
-- where a route without a splat serves the path for another method, stays
-- the core's). Middleware runs first. A mounted app's hook serves the
-- paths under its prefix. Returns the app.
-- @usage app:not_found(function(req, res) res:status(404):send("no such page") end)
function App:not_found(fn)
  if type(fn) ~= "function" then error("app:not_found: fn must be a function", 2) end
  self.not_found_hook = fn
  return self
end

--- Mounts another app under prefix: its routes answer at prefix ..
-- pattern ("/" at the prefix itself), its middleware runs for paths
-- under the prefix after the mounting app's, its hooks serve its routes
-- and the paths under the prefix. Apps mount at export time, so routes
-- added to either later count. Returns the app.
-- @usage app:mount("/api", require("api"))
function App:mount(prefix, other)
  prefix = middleware_prefix(prefix, "app:mount", 2)
  if getmetatable(other) == nil or getmetatable(other).__index == nil
      or type(rawget(other, "routes")) ~= "table" then
    error("app:mount: the second argument must be an app", 2)
  end
  if other == self then error("app:mount: an app cannot mount itself", 2) end
  push(self, "mounts", { prefix, other })
  return self
end

--- Declares a group of routes under prefix: fn(group) gets a new app to
-- declare them on (routes, use, after, error, not_found, groups inside),
-- mounted at prefix; its middleware runs for the group's paths only.
-- Returns the app.
-- @usage app:group("/api", function(api) api:use(auth); api:get("/me", me) end)
function App:group(prefix, fn)
  prefix = middleware_prefix(prefix, "app:group", 2)
  if type(fn) ~= "function" then error("app:group: fn must be a function", 2) end
  local group = moonport.app()
  fn(group)
  push(self, "mounts", { prefix, group })
  return self
end

--- CORS middleware for app:use (lua/moonport/cors.lua).
-- @usage app:use(moonport.cors{origins = {"https://app.example"}, credentials = true})
moonport.cors = require("moonport.cors")


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
    -- The middleware declared before it runs for its requests.
    middleware = #(rawget(self, "middleware") or {}),
  }
  return self
end

moonport.sleep = core.sleep
moonport.log = core.log
moonport.shared = core.shared
moonport.json = require("moonport.json")
moonport.yaml = require("moonport.yaml")

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

--- OpenAPI documents as mocks and validators (lua/moonport/openapi/):
-- loaded on first use, so that apps that do not use it never load the
-- YAML parser.
-- @usage app:use(moonport.openapi.validate("openapi.yaml"))
setmetatable(moonport, { __index = function(t, key)
  if key == "openapi" then
    local m = require("moonport.openapi")
    rawset(t, key, m)
    return m
  end
end })

return moonport
