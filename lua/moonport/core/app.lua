--- Apps: the App class moonport.app() makes, the check of what an app
-- script returned, and the files an app loads, which the master watches
-- for reloads (server/lua/ffi/app.c).
-- @module moonport.core.app

local ffi = require("ffi")

ffi.cdef[[
void mp_lua_file_loaded(const char *path, size_t len);
]]

local mp_lua_file_loaded = ffi.C.mp_lua_file_loaded
local compose = require("moonport.core.middleware").compose

local type, error, getmetatable = type, error, getmetatable

local app = {}

local App = {}
App.__index = App
--- The class of apps (lua/moonport/init.lua adds the route methods).
app.App = App

--- Files the app has loaded with require, dofile or loadfile, in order
-- (server/lua/vm.c hands them to the master, which watches them).
local files = {}
app.loaded_files = files

--- Records a file the app read some other way (a mock mapping) so that
-- the master watches it too; a path ending in "/" stands for every file in
-- that directory.
-- @usage core.track_file(dir .. "/mappings/")
function app.track_file(path)
  files[#files + 1] = path
  mp_lua_file_loaded(path, #path)
end

--- Wraps the Lua-file searcher, dofile and loadfile so that every file the
-- app loads is recorded in core.loaded_files and, in a serving worker,
-- reported to the master (a require inside a handler loads late). Called
-- once per state, before the app script runs.
-- @usage core.track_loads()
function app.track_loads()
  local function record(file)
    if type(file) ~= "string" then return end
    files[#files + 1] = file
    mp_lua_file_loaded(file, #file)
  end
  local searchpath = package.searchpath
  local loaders = package.loaders
  local lua_loader = loaders[2]
  loaders[2] = function(name)
    record(searchpath(name, package.path))
    return lua_loader(name)
  end
  local loadfile_, dofile_ = loadfile, dofile
  loadfile = function(file, ...)
    record(file)
    return loadfile_(file, ...)
  end
  dofile = function(file)
    record(file)
    return dofile_(file)
  end
end

--- Checks what an app script returned and lists its routes for the router
-- as {method, pattern, handler, line}, with the app's middleware and hooks
-- composed into them, the function the router runs for requests no route
-- serves (nil when the app has no middleware or hooks for them), and the
-- static mounts (app:static's records, or nil) server/handlers/static.c
-- serves alone (a mount declared after middleware is served by routes).
-- @usage local routes, fallback, statics = core.export(app, "app.lua")
function app.export(value, path)
  local mt = getmetatable(value)
  -- An App, or an app of a kind built on it (moonport.mock's).
  if mt ~= App and not (mt and getmetatable(mt) and getmetatable(mt).__index == App) then
    error(path .. ": the script must end with 'return app' (it returned "
          .. type(value) .. ")", 0)
  end
  return compose(value)
end

return app
