--- `req`: what a handler reads of its request (server/lua/ffi/req.c).
-- Methods are called with ':' (req:header("host")); fields are read with
-- '.' (req.method), each computed when read. core/handle.lua hands both
-- to req handles.
-- @module moonport.core.request

local ffi = require("ffi")
local base = require("moonport.core.base")
local runner = require("moonport.core.runner")
local json = require("moonport.json")
local url = require("moonport.url")
local cookie = require("moonport.cookie")
local multipart = require("moonport.multipart")
local accept = require("moonport.accept")

ffi.cdef[[
int mp_req_method(uint64_t ctx, const char **out);
int mp_req_target(uint64_t ctx, int which, const char **out);
int mp_req_header(uint64_t ctx, const char *name, size_t nlen,
                  const char **out);
int mp_req_header_count(uint64_t ctx);
int mp_req_header_at(uint64_t ctx, int i, const char **name,
                     int32_t *nlen, const char **value);
int mp_req_query(uint64_t ctx, const char *name, size_t nlen,
                 const char **out);
int mp_req_param_count(uint64_t ctx);
int mp_req_param_at(uint64_t ctx, int i, const char **name,
                    const char **value);
int mp_req_read(uint64_t ctx, const char **out);
int mp_req_abort_told(uint64_t ctx);
int mp_req_remote_addr(uint64_t ctx, const char **out);
int mp_req_id(uint64_t ctx, const char **out);
int mp_req_trailers(uint64_t ctx, const char **out);
]]

local C = ffi.C
local mp_req_method = C.mp_req_method
local mp_req_target = C.mp_req_target
local mp_req_header = C.mp_req_header
local mp_req_header_count = C.mp_req_header_count
local mp_req_header_at = C.mp_req_header_at
local mp_req_query = C.mp_req_query
local mp_req_param_count = C.mp_req_param_count
local mp_req_param_at = C.mp_req_param_at
local mp_req_read = C.mp_req_read
local mp_req_abort_told = C.mp_req_abort_told
local mp_req_remote_addr = C.mp_req_remote_addr
local mp_req_trailers = C.mp_req_trailers
local mp_req_id = C.mp_req_id

local MP_AGAIN = C.MP_AGAIN
local MP_CLOSED = C.MP_CLOSED
local MP_NOT_FOUND = C.MP_NOT_FOUND
local MP_BAD_CONTEXT = C.MP_BAD_CONTEXT
local MP_TARGET_PATH = C.MP_TARGET_PATH
local MP_TARGET_QUERY = C.MP_TARGET_QUERY
local MP_TARGET_WHOLE = C.MP_TARGET_WHOLE

local type, error = type, error
local ffi_string = ffi.string
local concat = table.concat
local json_decode = json.decode
local fail, check_self, keep = base.fail, base.check_self, base.keep
local suspend, run_abort = runner.suspend, runner.run_abort

-- Out-parameters, made once and reused by every call.
local out = ffi.new("const char *[1]")
local out2 = ffi.new("const char *[1]")
local outlen = ffi.new("int32_t[1]")

-- Kept per request (base.kept): the body read whole, so that req:body()
-- answers the same every time; the params and ctx tables, so that
-- req.params and req.ctx are the same table every time.
local bodies = base.kept.bodies
local params_of = base.kept.params
local ctx_of = base.kept.ctx
local aborts = base.kept.aborts

local request = {}
local methods, fields = {}, {}
request.methods, request.fields = methods, fields

-- Fields --------------------------------------------------------------------
-- The number metatable's __index tail-calls a field, so that fail blames
-- the handler's line, as it does for methods. A field keeps its string in
-- a local before it returns it: a tail call of ffi.string from a field
-- returns straight into the metamethod's caller, which a trace started
-- in the field cannot record (LuaJIT: "NYI: return to lower frame"), and
-- after a few such aborts LuaJIT blacklists the field, and with it every
-- trace that reads it (the handler's, the mock's).

local function target(self, which, what)
  local n = mp_req_target(self, which, out)
  if n < 0 then fail(n, what) end
  local s = ffi_string(out[0], n)
  return s
end

function fields.method(self)
  local n = mp_req_method(self, out)
  if n < 0 then fail(n, "req.method") end
  local s = ffi_string(out[0], n)
  return s
end

function fields.path(self) return target(self, MP_TARGET_PATH, "req.path") end
function fields.query_string(self)
  return target(self, MP_TARGET_QUERY, "req.query_string")
end
function fields.target(self) return target(self, MP_TARGET_WHOLE, "req.target") end

function fields.remote_addr(self)
  local n = mp_req_remote_addr(self, out)
  if n == MP_BAD_CONTEXT then fail(n, "req.remote_addr") end
  if n < 0 then return nil end
  local s = ffi_string(out[0], n)
  return s
end

-- The request's id: the client's X-Request-Id when it is 1 to 64 bytes of
-- letters, digits and "-_.:", else 32 hex digits made for it (with
-- --request-id, also the X-Request-Id response field and in its log
-- lines).
function fields.id(self)
  local n = mp_req_id(self, out)
  if n < 0 then fail(n, "req.id") end
  local s = ffi_string(out[0], n)
  return s
end

-- The decoded path parameters: made on first use, then the same table for
-- the rest of the request. mp_req_param_count fails once the handler has
-- returned, as base.keep would, so the table is kept at no further cost.
function fields.params(self)
  local params = params_of[self]
  if params ~= nil then return params end
  local count = mp_req_param_count(self)
  if count < 0 then fail(count, "req.params") end
  params = {}
  for i = 0, count - 1 do
    local n = mp_req_param_at(self, i, out2, out)
    if n < 0 then fail(n, "req.params") end
    params[ffi_string(out2[0])] = ffi_string(out[0], n)
  end
  params_of[self] = params
  return params
end

-- The request's own table, for what handlers and middleware pass each
-- other (ngx.ctx's role): made on first use, dropped with the request.
function fields.ctx(self)
  local ctx = ctx_of[self]
  if ctx ~= nil then return ctx end
  local kept, rc = keep(ctx_of, self, {})
  if not kept then fail(rc, "req.ctx") end
  return kept
end

-- Methods -------------------------------------------------------------------

--- The value of a request header, or nil.
-- Names are case-insensitive; a repeated field's values are joined by ", ".
-- @usage local ua = req:header("User-Agent")
function methods.header(self, name)
  check_self(self, "req:header")
  if type(name) ~= "string" then error("req:header: name must be a string", 2) end
  local n = mp_req_header(self, name, #name, out)
  if n == MP_NOT_FOUND then return nil end
  if n < 0 then fail(n, "req:header") end
  return ffi_string(out[0], n)
end

--- All request headers as a table of lower-case names to values.
-- @usage for name, value in pairs(req:headers()) do ... end
function methods.headers(self)
  check_self(self, "req:headers")
  local count = mp_req_header_count(self)
  if count < 0 then fail(count, "req:headers") end
  local headers = {}
  for i = 0, count - 1 do
    local n = mp_req_header_at(self, i, out2, outlen, out)
    if n < 0 then fail(n, "req:headers") end
    local name = ffi_string(out2[0], outlen[0]):lower()
    local value = ffi_string(out[0], n)
    local seen = headers[name]
    headers[name] = seen and (seen .. ", " .. value) or value
  end
  return headers
end

--- The request's header fields as sent, in order, up to max of them (0
-- or nil: all): an array of names (their case as sent) and one of values,
-- a repeated field once per line. Not a req method: ngx.req.get_headers
-- uses it.
-- @usage local names, values = request.header_fields(req)
function request.header_fields(self, max)
  local count = mp_req_header_count(self)
  if count < 0 then fail(count, "ngx.req.get_headers") end
  if max and max > 0 and count > max then count = max end
  local names, values = {}, {}
  for i = 0, count - 1 do
    local n = mp_req_header_at(self, i, out2, outlen, out)
    if n < 0 then fail(n, "ngx.req.get_headers") end
    names[i + 1] = ffi_string(out2[0], outlen[0])
    values[i + 1] = ffi_string(out[0], n)
  end
  return names, values
end

--- Appends the request's header fields as sent, in order, to buf (a
-- string.buffer), each as its name, ": ", its value and CRLF (a repeated
-- field once per line), copied from the request without making a Lua
-- string. Returns buf. Not a req method: the mock's journal uses it.
-- @usage request.put_header_lines(req, buf)
function request.put_header_lines(self, buf)
  local count = mp_req_header_count(self)
  if count < 0 then fail(count, "req:headers") end
  for i = 0, count - 1 do
    local n = mp_req_header_at(self, i, out2, outlen, out)
    if n < 0 then fail(n, "req:headers") end
    buf:putcdata(out2[0], outlen[0]):put(": "):putcdata(out[0], n):put("\r\n")
  end
  return buf
end

--- A query parameter, percent-decoded with '+' as a space, or nil.
-- @usage local q = req:query("q")
function methods.query(self, name)
  check_self(self, "req:query")
  if type(name) ~= "string" then error("req:query: name must be a string", 2) end
  local n = mp_req_query(self, name, #name, out)
  if n == MP_NOT_FOUND then return nil end
  if n < 0 then fail(n, "req:query") end
  return ffi_string(out[0], n)
end

local function read(self)
  while true do
    local n = mp_req_read(self, out)
    if n > 0 then return ffi_string(out[0], n) end
    if n == 0 then return nil end
    if n == MP_AGAIN then
      if not suspend() then return nil, "closed" end
    elseif n == MP_CLOSED then
      return nil, "closed"
    else
      fail(n, "req:read")
    end
  end
end

--- The next piece of the request body as it arrives, or nil at its end;
-- nil, "closed" when the client left before sending the rest. Waits
-- (other requests go on) while none has come; the first wait sends 100
-- Continue to a client that asked for it.
-- @usage local piece, err = req:read()
function methods.read(self)
  check_self(self, "req:read")
  return read(self)
end

--- Iterates over the pieces of the request body as they arrive (the loop
-- also ends when the client leaves; req:read says which).
-- @usage for piece in req:chunks() do sink(piece) end
function methods.chunks(self)
  check_self(self, "req:chunks")
  return function() return (read(self)) end
end

local function body_closed()
  error("req:body: the client closed the connection before sending the "
        .. "whole body", 3)
end

--- The request body as a string ("" when there is none): the whole body,
-- or what is left of it after req:read; asked again, the same string.
-- Raises when the client leaves before sending all of it.
-- @usage local raw = req:body()
function methods.body(self)
  check_self(self, "req:body")
  local cached = bodies[self]
  if cached ~= nil then return cached end
  local body
  local first, err = read(self)
  if err then body_closed() end
  if first == nil then
    body = ""
  else
    local second
    second, err = read(self)
    if err then body_closed() end
    if second == nil then
      body = first
    else
      local parts = { first, second }
      while true do
        local piece
        piece, err = read(self)
        if err then body_closed() end
        if piece == nil then break end
        parts[#parts + 1] = piece
      end
      body = concat(parts)
    end
  end
  local kept, rc = keep(bodies, self, body)
  if not kept then fail(rc, "req:body") end
  return body
end

--- Calls fn once, in the handler's context, when the client goes away
-- before the response is complete: the wait in progress then returns
-- nil, "closed" after fn has run. Called after the client has gone, fn
-- runs at once. Several functions run in the order given. Returns true.
-- @usage req:on_abort(function() moonport.shared:incr("online", -1) end)
function methods.on_abort(self, fn)
  check_self(self, "req:on_abort")
  if type(fn) ~= "function" then error("req:on_abort: fn must be a function", 2) end
  local told = mp_req_abort_told(self)
  if told < 0 then fail(told, "req:on_abort") end
  if told == 1 then
    run_abort(fn)
    return true
  end
  local fns = aborts[self]
  if fns == nil then
    local rc
    fns, rc = keep(aborts, self, {})
    if not fns then fail(rc, "req:on_abort") end
  end
  fns[#fns + 1] = fn
  return true
end

--- The trailer fields of a chunked body, as a table of lower-case names
-- to values ({} when none); complete once the body has been read to its
-- end. Fields that must not be trailers (Content-Length, Host, ...) are
-- never there.
-- @usage for piece in req:chunks() do end; local sum = req:trailers()["x-checksum"]
function methods.trailers(self)
  check_self(self, "req:trailers")
  local n = mp_req_trailers(self, out)
  if n < 0 then fail(n, "req:trailers") end
  local trailers = {}
  for name, value in ffi_string(out[0], n):gmatch("([^:\n]*): ([^\n]*)\n") do
    name = name:lower()
    trailers[name] = trailers[name] and (trailers[name] .. ", " .. value) or value
  end
  return trailers
end

--- The body decoded as JSON (moonport.json: arrays carry the array
-- marker, null is json.null); nil and "invalid JSON: <what> at byte N"
-- when it is not JSON.
-- @usage local doc, err = req:json()
function methods.json(self)
  check_self(self, "req:json")
  local value, err = json_decode(self:body())
  if value == nil then return nil, "invalid JSON: " .. err end
  return value
end

-- Cookies, forms, multipart bodies, negotiation --------------------------
-- Made of moonport.cookie, moonport.url, moonport.multipart and
-- moonport.accept; nothing here is kept for the request, so a route that
-- calls none of them pays nothing for them.

local parse_cookies, parse_query = cookie.parse, url.parse_query
local multipart_boundary, multipart_parts = multipart.boundary, multipart.parts
local multipart_options = multipart.options
local accept_best = accept.best
local lower, match = string.lower, string.match

-- A request header's value, or nil; what names the method for errors.
local function header_of(self, name, what)
  local n = mp_req_header(self, name, #name, out)
  if n == MP_NOT_FOUND then return nil end
  if n < 0 then fail(n, what) end
  return ffi_string(out[0], n)
end

--- The request's cookies (its Cookie header) as a table of names to
-- values ({} when none), read as moonport.cookie.parse reads them: the
-- first of a repeated name wins, quotes are dropped, values
-- percent-decoded.
-- @usage for name, value in pairs(req:cookies()) do ... end
function methods.cookies(self)
  check_self(self, "req:cookies")
  return parse_cookies(header_of(self, "cookie", "req:cookies"))
end

--- The value of the cookie name, or nil.
-- @usage local sid = req:cookie("sid")
function methods.cookie(self, name)
  check_self(self, "req:cookie")
  if type(name) ~= "string" then error("req:cookie: name must be a string", 2) end
  return parse_cookies(header_of(self, "cookie", "req:cookie"))[name]
end

--- The body of an application/x-www-form-urlencoded request as a table
-- (moonport.url.parse_query: "+" and %XX decoded, a repeated name gives
-- the list of its values); nil and why for any other Content-Type. Reads
-- the body with req:body, so the body is held whole: --max-body-size
-- bounds it.
-- @usage local form, err = req:form(); if not form then return res:status(415):send(err) end
function methods.form(self)
  check_self(self, "req:form")
  local content_type = header_of(self, "content-type", "req:form")
  local media = content_type and lower(match(content_type, "^[ \t]*([^; \t]*)"))
  if media ~= "application/x-www-form-urlencoded" then
    return nil, "not a form: Content-Type is " ..
      (content_type and "'" .. content_type .. "'" or "missing") ..
      ", not application/x-www-form-urlencoded"
  end
  return parse_query(self:body())
end

--- An iterator over the parts of a multipart/form-data body, read as it
-- arrives (moonport.multipart): each part has headers, name, filename,
-- content_type and part:read(n), part:chunks(), part:body(). opts:
-- max_parts (100) and max_header_size (8 KiB, one part's headers). nil
-- and why when the request is not multipart/form-data. A malformed body
-- or a limit passed raises a table with status (400 or 413) and message.
-- @usage for part in req:parts() do print(part.name, part.filename) end
function methods.parts(self, opts)
  check_self(self, "req:parts")
  local max_parts, max_header_size = multipart_options(opts)
  local boundary, err = multipart_boundary(header_of(self, "content-type", "req:parts"))
  if not boundary then return nil, err end
  return multipart_parts(function() return read(self) end, boundary,
                         max_parts, max_header_size)
end

--- Of the types offered, by short name ("json", "html", "text", ...; see
-- moonport.accept.types) or as type/subtype, the one the Accept header
-- prefers, or nil when it accepts none; the first one when the request
-- has no Accept header. Offers come as arguments or as one list.
-- @usage local kind = req:accepts("json", "html")
function methods.accepts(self, ...)
  check_self(self, "req:accepts")
  local offers = ...
  if type(offers) ~= "table" then offers = { ... } end
  return accept_best(header_of(self, "accept", "req:accepts"), offers)
end

return request
