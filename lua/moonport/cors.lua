--- moonport.cors: Cross-Origin Resource Sharing for apps, as middleware.
--
--     local cors = require("moonport.cors")
--     app:use(cors{ origins = { "https://app.example" }, credentials = true })
--
-- The middleware runs first in its chain, before any other middleware,
-- wherever it sits in `app:use`'s order, and for every path, routed or
-- not: it answers preflights (OPTIONS with Origin and
-- Access-Control-Request-Method) with 204, so an authentication
-- middleware never turns one into a 401, and puts the CORS headers on
-- every other response, a 401 of such a middleware and the 404 of a
-- path no route serves included. The mock server (moonport.mock) uses
-- the same middleware.
--
-- What it answers (the Fetch standard's CORS protocol):
--
-- - an allowed Origin gets Access-Control-Allow-Origin: `*` when `origins`
--   is "*" and `credentials` is off, the Origin itself otherwise, with
--   `Vary: Origin`; a request without Origin gets `*` when `origins` is
--   "*" and nothing otherwise. Credentials never go with `*`.
-- - an Origin that is not allowed gets no CORS header (and `Vary: Origin`):
--   the browser then refuses the page the answer. Its preflight still gets
--   its 204, which tells it nothing.
-- @module moonport.cors

local type, error, tostring, ipairs = type, error, tostring, ipairs
local concat = table.concat

local DEFAULT_METHODS = "GET, HEAD, PUT, PATCH, POST, DELETE"

-- A list option as one header value: a string as it is, a list joined
-- with ", "; nil stays nil.
local function joined(value, name)
  if value == nil then return nil end
  if type(value) == "string" then return value end
  if type(value) ~= "table" then
    error("moonport.cors: " .. name .. " must be a string or a list of strings", 3)
  end
  for _, v in ipairs(value) do
    if type(v) ~= "string" then
      error("moonport.cors: " .. name .. " must be a string or a list of strings", 3)
    end
  end
  return #value > 0 and concat(value, ", ") or nil
end

-- The test of an Origin: true for any with "*", membership for a list,
-- the function's answer for a function.
local function origin_test(origins)
  if origins == "*" then return nil end
  if type(origins) == "string" then origins = { origins } end
  if type(origins) == "function" then return origins end
  if type(origins) ~= "table" then
    error("moonport.cors: origins must be \"*\", a list of origins or a function", 3)
  end
  local set = {}
  for _, o in ipairs(origins) do
    if type(o) ~= "string" then
      error("moonport.cors: origins must be \"*\", a list of origins or a function", 3)
    end
    set[o] = true
  end
  return function(origin) return set[origin] == true end
end

local cors = {}

--- A CORS middleware for `app:use`. Options (all optional):
--
-- - `origins`: `"*"` (the default), a list of origins
--   (`"https://app.example"`, scheme, host and port as browsers send them),
--   or a function(origin) returning true for an allowed one;
-- - `methods`: what preflights allow (list or string; default
--   `GET, HEAD, PUT, PATCH, POST, DELETE`);
-- - `headers`: the request headers preflights allow (list or string;
--   default: those the preflight asks for);
-- - `credentials`: true sends `Access-Control-Allow-Credentials: true`
--   (cookies, Authorization), with the Origin echoed, never `*`;
-- - `max_age`: seconds a browser may cache a preflight's answer;
-- - `expose`: response headers the page's script may read besides the
--   safelisted ones (`Location`, `X-Total-Count`, ...; list or string).
--
-- Returns a middleware: a table whose `first(req, res)` answers a
-- preflight (and returns true) or adds the headers (and returns false);
-- calling the table does the same.
-- @usage app:use(moonport.cors{ origins = { "https://app.example" }, credentials = true, expose = { "Location" } })
function cors.new(opts)
  if opts == nil then opts = {} end
  if type(opts) ~= "table" then error("moonport.cors: options must be a table", 2) end
  local test = origin_test(opts.origins == nil and "*" or opts.origins)
  local methods = joined(opts.methods, "methods") or DEFAULT_METHODS
  local headers = joined(opts.headers, "headers")
  local expose = joined(opts.expose, "expose")
  local credentials = opts.credentials and true or false
  local max_age = opts.max_age
  if max_age ~= nil then
    if type(max_age) ~= "number" or max_age < 0 or max_age % 1 ~= 0 then
      error("moonport.cors: max_age must be a whole number of seconds", 2)
    end
    max_age = tostring(max_age)
  end
  -- Whether the answer depends on the Origin (and so must say Vary).
  local echo = test ~= nil or credentials

  -- The headers every allowed request gets; returns whether it was
  -- allowed.
  local function allow(req, res)
    local origin = req:header("origin")
    if origin == nil then
      if test == nil then res:header("Access-Control-Allow-Origin", "*") end
      if test ~= nil then res:header("Vary", "Origin") end
      return false
    end
    if test ~= nil and not test(origin) then
      res:header("Vary", "Origin")
      return false
    end
    if echo then
      res:header("Access-Control-Allow-Origin", origin)
      res:header("Vary", "Origin")
    else
      res:header("Access-Control-Allow-Origin", "*")
    end
    if credentials then res:header("Access-Control-Allow-Credentials", "true") end
    return true
  end

  local function headers_only(req, res)
    if allow(req, res) and expose then
      res:header("Access-Control-Expose-Headers", expose)
    end
    return false
  end

  local function first(req, res)
    if req.method ~= "OPTIONS" or req:header("access-control-request-method") == nil
        or req:header("origin") == nil then
      return headers_only(req, res)
    end
    if allow(req, res) then
      res:header("Access-Control-Allow-Methods", methods)
      if headers then
        res:header("Access-Control-Allow-Headers", headers)
      else
        local wanted = req:header("access-control-request-headers")
        if wanted then res:header("Access-Control-Allow-Headers", wanted) end
        res:header("Vary", "Access-Control-Request-Headers")
      end
      if max_age then res:header("Access-Control-Max-Age", max_age) end
    end
    res:status(204):send("")
    return true
  end

  return setmetatable({ first = first }, {
    __call = function(_, req, res) return first(req, res) end,
  })
end

return setmetatable(cors, {
  __call = function(_, opts) return cors.new(opts) end,
})
