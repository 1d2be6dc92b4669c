--- `moonport --check --openapi FILE APP.lua`: the document's operations
-- against the app's routes (server/proc/main.c calls compare after the
-- app has loaded).
--
-- An operation is routed when a route of its method matches every path
-- its template matches: a literal segment by the same literal or a
-- parameter, a template segment ({id}, or one with a template in it,
-- {id}.json) by a parameter, the rest of the path by a splat; under one
-- of the document's server base paths ("/v1" when the servers say
-- http://host/v1) or none, as moonport.openapi.doc routes them. A route is described when some operation of
-- its method could take a path it matches (a splat route, when some
-- operation lies under its prefix). HEAD and OPTIONS routes the document
-- does not name are left out of both lists: the core answers HEAD from
-- GET, and CORS middleware answers preflights.
-- @module moonport.openapi.check

local openapi = require("moonport.openapi")

local ipairs, tostring = ipairs, tostring
local concat, sort = table.concat, table.sort

local check = {}

-- A path's segments, each {kind = "lit" | "param" | "splat", text}.
local function segments(path, template_style)
  local out = {}
  for seg in path:gmatch("[^/]+") do
    local kind = "lit"
    if template_style then
      if seg:find("{", 1, true) then kind = "param" end
    else
      local c = seg:sub(1, 1)
      if c == ":" then kind = "param" elseif c == "*" then kind = "splat" end
    end
    out[#out + 1] = { kind = kind, text = seg }
  end
  return out
end

local function join(a, b)
  local out = {}
  for _, s in ipairs(a) do out[#out + 1] = s end
  for _, s in ipairs(b) do out[#out + 1] = s end
  return out
end

-- Whether route (its segments) takes every path the operation's
-- segments describe.
local function covers(route, op)
  for i, r in ipairs(route) do
    if r.kind == "splat" then return true end
    local o = op[i]
    if o == nil then return false end
    if o.kind == "param" then
      if r.kind ~= "param" then return false end
    elseif r.kind == "lit" and r.text ~= o.text then
      return false
    end
  end
  -- A trailing splat matches an empty rest too.
  return #route == #op
end

-- Whether some path route matches is one op describes.
local function overlaps(route, op)
  for i, r in ipairs(route) do
    if r.kind == "splat" then return true end
    local o = op[i]
    if o == nil then return false end
    if r.kind == "lit" and o.kind == "lit" and r.text ~= o.text then return false end
  end
  return #route == #op
end

--- Prints how the document at path and the app's routes (strings
-- "METHOD PATTERN") differ, and returns 0 when they agree, 1 when they do
-- not. Raises when the document does not load.
-- @usage check.compare("openapi.yaml", "app.lua", "GET /pets", "POST /pets")
function check.compare(path, app, ...)
  local doc = openapi.load(path).doc
  local routes = {}
  for _, text in ipairs({ ... }) do
    local method, pattern = tostring(text):match("^(%S+) (.*)$")
    if method then routes[#routes + 1] = { method = method, pattern = pattern, segs = segments(pattern, false) } end
  end
  -- The document's operations answer with and without a base path.
  local bases = { {} }
  for _, b in ipairs(doc.base_paths or {}) do
    if b ~= "" then bases[#bases + 1] = segments(b, false) end
  end
  local ops = {}
  for _, op in ipairs(doc.operations) do
    local segs = segments(op.path, true)
    local full = {}
    for i, b in ipairs(bases) do full[i] = join(b, segs) end
    ops[#ops + 1] = { op = op, method = op.method:upper(), full = full }
  end
  local methods = {}
  for _, o in ipairs(ops) do methods[o.method] = true end

  local unrouted, undescribed = {}, {}
  for _, o in ipairs(ops) do
    local routed = false
    for _, r in ipairs(routes) do
      if r.method == o.method then
        for _, full in ipairs(o.full) do
          if covers(r.segs, full) then routed = true break end
        end
      end
      if routed then break end
    end
    if not routed then
      unrouted[#unrouted + 1] = o.method .. " " .. o.op.path .. (o.op.id and (" (" .. o.op.id .. ")") or "")
    end
  end
  for _, r in ipairs(routes) do
    local described = false
    if (r.method == "HEAD" or r.method == "OPTIONS") and not methods[r.method] then described = true end
    for _, o in ipairs(ops) do
      if described then break end
      if r.method == o.method then
        for _, full in ipairs(o.full) do
          if overlaps(r.segs, full) then described = true break end
        end
      end
    end
    if not described then undescribed[#undescribed + 1] = r.method .. " " .. r.pattern end
  end
  sort(undescribed)

  local out = {}
  if #unrouted == 0 and #undescribed == 0 then
    out[1] = ("--openapi %s: ok, %d operation%s, each routed by %s, whose routes it all describes"):format(
      path, #ops, #ops == 1 and "" or "s", app)
  else
    out[1] = ("--openapi %s: %d operation%s; %d not routed by %s, %d route%s it does not describe"):format(
      path, #ops, #ops == 1 and "" or "s", #unrouted, app, #undescribed, #undescribed == 1 and "" or "s")
    for _, line in ipairs(unrouted) do out[#out + 1] = "not routed: " .. line end
    for _, line in ipairs(undescribed) do out[#out + 1] = "not described: " .. line end
  end
  io.stdout:write(concat(out, "\n"), "\n")
  io.stdout:flush()
  return (#unrouted == 0 and #undescribed == 0) and 0 or 1
end

return check
