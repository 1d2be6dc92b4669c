--- Middleware and hooks: what an app's `use`, `after`, `error`,
-- `not_found` and `mount` declared, composed once, when the app is
-- exported (core/app.lua), into one function per route and a fallback
-- for requests no route serves (server/lua/ffi/middleware.c).
--
-- Nothing is decided per request that could be decided at load time: a
-- route gets exactly the middleware whose prefix covers its pattern, in
-- declaration order, as one closure; only a middleware whose prefix a
-- route's parameter or splat segment may or may not fall under tests the
-- path, in C, per request. An app without middleware and hooks exports
-- its routes as they are, and has no fallback: its misses are answered by
-- the core without entering Lua.
--
-- A middleware is a function(req, res), or a table with `run` (that
-- function), `first` (one that runs before every other middleware of the
-- chain: moonport.cors answers preflights there), or both.
-- The chain stops at the first middleware after which the response has
-- begun.
-- @module moonport.core.middleware

local ffi = require("ffi")
local base = require("moonport.core.base")
local runner = require("moonport.core.runner")
local log = require("moonport.core.log").log
local response = require("moonport.core.response")

ffi.cdef[[
int mp_req_under(uint64_t ctx, const char *prefix, size_t len);
int mp_req_miss(uint64_t ctx);
int mp_res_stage(uint64_t ctx, int *status);
int mp_res_miss(uint64_t ctx);
]]

local C = ffi.C
local mp_req_under = C.mp_req_under
local mp_req_miss = C.mp_req_miss
local mp_res_stage = C.mp_res_stage
local mp_res_miss = C.mp_res_miss

local type, error, tostring, ipairs = type, error, tostring, ipairs
local xpcall, insert = xpcall, table.insert
local on_error, EXIT, traced = runner.on_error, runner.EXIT, runner.traced
local fail, check_self = base.fail, base.check_self

-- The out-parameter of mp_res_stage, made once.
local status_out = ffi.new("int[1]")

local middleware = {}

-- res:started() and res:get_status() -----------------------------------------

local Res = response.methods

--- Whether the response has begun (its head is out, or it is complete):
-- what ends a middleware chain.
-- @usage if not res:started() then res:status(404):send("none") end
function Res:started()
  check_self(self, "res:started")
  local rc = mp_res_stage(self, status_out)
  if rc < 0 then fail(rc, "res:started") end
  return rc ~= 0
end

--- The response's status code: what res:status set, 200 until then, or
-- what the core answered (a miss's 404 or 405).
-- @usage app:after(function(req, res) moonport.log(req.path .. " " .. res:get_status()) end)
function Res:get_status()
  check_self(self, "res:get_status")
  local rc = mp_res_stage(self, status_out)
  if rc < 0 then fail(rc, "res:get_status") end
  return status_out[0]
end

-- Prefixes and patterns ---------------------------------------------------------

--- A prefix as middleware and mounts take it: "/a/b" without a trailing
-- "/", literal segments only; "/" and "" are the whole app (""). Raises
-- at level for anything else.
-- @usage local p = middleware.prefix("/api/", "app:use", 3)
function middleware.prefix(prefix, what, level)
  if type(prefix) ~= "string" or (prefix ~= "" and prefix:sub(1, 1) ~= "/") then
    error(what .. ": prefix must be a string starting with '/'", level + 1)
  end
  prefix = prefix:gsub("/+$", "")
  if prefix:find("/[:*]") then
    error(what .. ": a prefix has literal segments only (no :param or *splat)", level + 1)
  end
  if prefix:find("//", 1, true) then
    error(what .. ": a prefix has no empty segment", level + 1)
  end
  return prefix
end

-- The segments of a path or pattern ("/a/b" -> {"a", "b"}; "/", "" -> {}).
local function segments(path)
  local segs = {}
  if path == "/" or path == "" then return segs end
  for seg in (path .. "/"):sub(2):gmatch("([^/]*)/") do segs[#segs + 1] = seg end
  return segs
end

-- Whether the paths pattern matches lie under prefix: "always", "never",
-- or "maybe" (a parameter or splat segment decides, per request).
local function coverage(prefix, pattern)
  local want, have = segments(prefix), segments(pattern)
  local maybe = false
  for i = 1, #want do
    local seg = have[i]
    if seg == nil then return "never" end
    local c = seg:sub(1, 1)
    if c == "*" then return "maybe" end
    if c == ":" then
      maybe = true
    elseif seg ~= want[i] then
      return "never"
    end
  end
  return maybe and "maybe" or "always"
end

-- fn, run only for paths under prefix ("" is every path).
local function guarded(prefix, fn)
  if prefix == "" then return fn end
  local n = #prefix
  return function(req, res, err)
    if mp_req_under(req, prefix, n) == 1 then return fn(req, res, err) end
  end
end

-- Composition ---------------------------------------------------------------------

-- One function running list, in order, then handler; it stops once the
-- response has begun. The common lengths get a loop-free closure.
local function chain(list, handler)
  local n = #list
  if n == 0 then return handler end
  if n == 1 then
    local a = list[1]
    return function(req, res)
      a(req, res)
      if mp_res_stage(res, status_out) ~= 0 then return end
      return handler(req, res)
    end
  end
  return function(req, res)
    for i = 1, n do
      list[i](req, res)
      if mp_res_stage(res, status_out) ~= 0 then return end
    end
    return handler(req, res)
  end
end

-- Runs each after hook, protected: a failing one is logged.
local function run_afters(afters, req, res, err, name)
  for i = 1, #afters do
    local ok, why = xpcall(afters[i], on_error, req, res, err)
    if not ok and why ~= EXIT then
      log("error", name .. ": after hook failed: " .. tostring(why))
    end
  end
end

-- run wrapped in the app's hooks: when it fails, the first of errors (a
-- list of {prefix, fn}, innermost first) whose prefix covers the path
-- answers instead of the core's 500, if nothing was sent yet (the
-- traceback is logged first); then every after hook runs. name is the
-- route as log lines name it, or nil for the fallback (the request's
-- method and "(no route)").
local function hooked(run, afters, errors, name)
  if #afters == 0 and #errors == 0 then return run end
  return function(req, res)
    local ok, err = xpcall(run, on_error, req, res)
    if not ok and err == EXIT then ok, err = true, nil end
    local raise
    if not ok then
      raise = traced(err)
      local hook
      for i = 1, #errors do
        local e = errors[i]
        if e[1] == "" or mp_req_under(req, e[1], #e[1]) == 1 then
          hook = e[2]
          break
        end
      end
      if hook ~= nil and mp_res_stage(res, status_out) == 0 then
        log("error", (name or (req.method .. " (no route)")) .. ": handler failed: "
          .. tostring(err))
        local hook_ok, why = xpcall(hook, on_error, req, res, err)
        if hook_ok or why == EXIT then
          raise = nil
        else
          raise = traced("error hook failed: " .. tostring(why))
        end
      end
    end
    if #afters > 0 then run_afters(afters, req, res, err, name or (req.method .. " (no route)")) end
    if raise ~= nil then error(raise, 0) end
  end
end

-- Every scope of app: {prefix, app, depth}, the app's own first, then its
-- mounts', depth first, in the order they were mounted.
local function scopes_of(app, prefix, depth, out, seen)
  if seen[app] then error("app:mount: an app mounted inside itself", 0) end
  seen[app] = true
  out[#out + 1] = { prefix = prefix, app = app, depth = depth }
  local mounts = app.mounts
  if mounts then
    for _, m in ipairs(mounts) do scopes_of(m[2], prefix .. m[1], depth + 1, out, seen) end
  end
  seen[app] = nil
  return out
end

-- The scope chain of scope s (root first): s and the scopes it lies in.
local function chain_of(scopes, index)
  local s = scopes[index]
  local list = { s }
  for i = index - 1, 1, -1 do
    local t = scopes[i]
    if t.depth < list[1].depth then insert(list, 1, t) end
  end
  return list
end

-- A route's pattern under a mount prefix.
local function joined(prefix, pattern)
  if prefix == "" then return pattern end
  if pattern == "/" then return prefix end
  return prefix .. pattern
end

-- Whether any scope declared middleware or hooks, or mounted an app.
local function plain(app)
  return app.middleware == nil and app.afters == nil and app.error_hook == nil
    and app.not_found_hook == nil and app.mounts == nil
end

-- The middleware list of one route (or, with pattern nil, of the
-- fallback): first parts, then the rest, each guarded by its prefix
-- where the pattern alone cannot tell.
local function route_list(scope_chain, pattern)
  local firsts, runs = {}, {}
  for _, s in ipairs(scope_chain) do
    for _, m in ipairs(s.app.middleware or {}) do
      local prefix = s.prefix .. m.prefix
      local cover = pattern and coverage(prefix, pattern) or (prefix == "" and "always" or "maybe")
      if cover ~= "never" then
        local p = cover == "always" and "" or prefix
        if m.first then firsts[#firsts + 1] = guarded(p, m.first) end
        if m.run then runs[#runs + 1] = guarded(p, m.run) end
      end
    end
  end
  for _, f in ipairs(runs) do firsts[#firsts + 1] = f end
  return firsts
end

-- The handler that serves a static mount from Lua, after middleware:
-- the rest of the path below its prefix through res:send_file, as the
-- core serves a mount of its own; 404 where there is no such file.
local function static_handler(m)
  local skip = m.prefix == "/" and 0 or #m.prefix
  local opts = { root = m.root, index = m.index ~= nil, dotfiles = m.dotfiles,
                 precompressed = m.precompressed, cache_control = m.cache_control }
  return function(req, res)
    local path = req.path:sub(skip + 1)
    if path == "" then path = "/" end
    local ok, err = res:send_file(path, opts)
    if not ok and err ~= "closed" and not res:started() then
      res:status(404):send("not found\n")
    end
  end
end

-- The app's static mounts the core serves alone, and, appended to
-- routes, GET and HEAD routes for those declared after middleware, which
-- runs first (the middleware declared before the mount, and the app's
-- hooks).
local function static_mounts(app, routes, afters, errors)
  local statics = rawget(app, "statics")
  if statics == nil then return nil end
  local kept, taken = {}, {}
  for _, r in ipairs(routes) do taken[r[1] .. " " .. r[2]] = true end
  for _, m in ipairs(statics) do
    local before = m.middleware or 0
    if before == 0 then
      kept[#kept + 1] = m
    else
      local slice = {}
      for i = 1, before do slice[i] = app.middleware[i] end
      local base = m.prefix == "/" and "" or m.prefix
      for _, pattern in ipairs({ m.prefix, base .. "/*path" }) do
        local list = route_list({ { prefix = "", app = { middleware = slice } } }, pattern)
        local handler = hooked(chain(list, static_handler(m)), afters, errors, "GET " .. pattern)
        for _, method in ipairs({ "GET", "HEAD" }) do
          if not taken[method .. " " .. pattern] then
            taken[method .. " " .. pattern] = true
            routes[#routes + 1] = { method, pattern, handler, m.line }
          end
        end
      end
    end
  end
  return kept[1] and kept or nil
end

--- The routes to give the router, as {method, pattern, handler, line},
-- the fallback function for misses (nil when the app needs none), and
-- the static mounts the core serves alone (app:static's, or nil): a
-- mount declared after middleware becomes GET and HEAD routes that run
-- that middleware, then send the file. An app without middleware, hooks
-- and mounts gives its own routes.
-- @usage local routes, fallback, statics = middleware.compose(app)
function middleware.compose(app)
  if plain(app) then return app.routes, nil, rawget(app, "statics") end
  local scopes = scopes_of(app, "", 0, {}, {})
  local routes = {}
  local needs_fallback = false
  local root_afters, root_errors
  for index, s in ipairs(scopes) do
    local a = s.app
    if a.middleware or a.afters or a.not_found_hook then needs_fallback = true end
    local sc = chain_of(scopes, index)
    -- Hooks: innermost first.
    local afters, errors = {}, {}
    for i = #sc, 1, -1 do
      for _, fn in ipairs(sc[i].app.afters or {}) do afters[#afters + 1] = fn end
      if sc[i].app.error_hook then errors[#errors + 1] = { "", sc[i].app.error_hook } end
    end
    if #errors > 1 then errors = { errors[1] } end
    if index == 1 then root_afters, root_errors = afters, errors end
    for _, r in ipairs(a.routes) do
      local pattern = joined(s.prefix, r[2])
      local list = route_list(sc, pattern)
      local name = r[1] .. " " .. pattern
      routes[#routes + 1] = { r[1], pattern, hooked(chain(list, r[3]), afters, errors, name), r[4] }
    end
  end
  local statics = static_mounts(app, routes, root_afters, root_errors)
  if not needs_fallback then return routes, nil, statics end

  -- The fallback: every middleware, each tested against the path; then
  -- the innermost not-found hook whose scope covers the path, or the
  -- core's own 404 or 405.
  local list = route_list(scopes, nil)
  local by_depth = {}
  for i, s in ipairs(scopes) do by_depth[i] = s end
  table.sort(by_depth, function(x, y)
    if x.depth ~= y.depth then return x.depth > y.depth end
    return #x.prefix > #y.prefix
  end)
  local not_found, errors, afters = {}, {}, {}
  for _, s in ipairs(by_depth) do
    if s.app.not_found_hook then not_found[#not_found + 1] = { s.prefix, s.app.not_found_hook } end
    if s.app.error_hook then errors[#errors + 1] = { s.prefix, s.app.error_hook } end
    for _, fn in ipairs(s.app.afters or {}) do afters[#afters + 1] = guarded(s.prefix, fn) end
  end
  local function final(req, res)
    if mp_req_miss(req) == 404 then
      for i = 1, #not_found do
        local p = not_found[i][1]
        if p == "" or mp_req_under(req, p, #p) == 1 then return not_found[i][2](req, res) end
      end
    end
    mp_res_miss(res)
  end
  return routes, hooked(chain(list, final), afters, errors, nil), statics
end

return middleware
