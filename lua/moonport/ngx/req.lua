--- ngx.var and ngx.req: the request whose code runs, read as OpenResty
-- reads it. Both raise outside a request ("API disabled in the context
-- of init_by_lua*", or "... of ngx.timer"), as OpenResty does.
-- @module moonport.ngx.req

local context = require("moonport.ngx.context")
local request = require("moonport.core.request")
local args = require("moonport.ngx.args")

local type, error, tostring, setmetatable, rawget = type, error, tostring, setmetatable, rawget
local find, sub, lower, gsub, match, char = string.find, string.sub, string.lower, string.gsub, string.match, string.char
local tonumber = tonumber
local current_request, state = context.request, context.state
local decode_args = args.decode_args
local header_fields = request.header_fields

local M = {}

-- ngx.var ---------------------------------------------------------------

local function hex_byte(h) return char(tonumber(h, 16)) end

-- The query string, or nil when the target has no "?".
local function query(req)
  local q = req.query_string
  if q ~= "" or find(req.target, "?", 1, true) then return q end
  return nil
end

-- nginx's variables moonport has, by name.
local vars = {
  request_method = function(req) return req.method end,
  request_uri = function(req) return req.target end,
  -- The path percent-decoded ("+" stays "+"), as nginx's $uri; dot
  -- segments and repeated slashes are left as sent.
  uri = function(req) return (gsub(req.path, "%%(%x%x)", hex_byte)) end,
  args = query,
  query_string = query,
  is_args = function(req) return query(req) and "?" or "" end,
  scheme = function() return "http" end,
  -- The Host header's name, lower-case, without the port.
  host = function(req)
    local h = req:header("host")
    if not h then return nil end
    return lower(match(h, "^%[[^%]]*%]") or match(h, "^[^:]*"))
  end,
  remote_addr = function(req) return req.remote_addr end,
  content_type = function(req) return req:header("content-type") end,
  content_length = function(req) return req:header("content-length") end,
  -- The body once ngx.req.read_body has read it.
  request_body = function(req)
    local body = state(req).body
    if body == nil or body == "" then return nil end
    return body
  end,
}

-- $arg_NAME: the raw value of the first query argument NAME (case
-- insensitive, as nginx), "" for one without "=".
local function arg_var(req, name)
  local q = query(req)
  if not q then return nil end
  name = lower(name)
  for piece in q:gmatch("[^&]+") do
    local eq = find(piece, "=", 1, true)
    local key = eq and sub(piece, 1, eq - 1) or piece
    if lower(key) == name then return eq and sub(piece, eq + 1) or "" end
  end
  return nil
end

-- $cookie_NAME: the value of cookie NAME in the Cookie header.
local function cookie_var(req, name)
  local cookies = req:header("cookie")
  if not cookies then return nil end
  for pair in cookies:gmatch("[^;]+") do
    local k, v = match(pair, "^%s*([^=]-)%s*=%s*(.-)%s*$")
    if k == name then return v end
  end
  return nil
end

--- ngx.var: nginx's variables for the running request: http_NAME (a
-- request header, "_" for "-"), arg_NAME, cookie_NAME, uri, request_uri,
-- is_args, args, query_string, scheme, host, remote_addr,
-- request_method, content_type, content_length, request_body; nil for
-- any other name. None can be set.
M.var = setmetatable({}, {
  __index = function(_, name)
    local req = current_request(1)
    if type(name) ~= "string" then return nil end
    local f = vars[name]
    if f then return f(req) end
    if sub(name, 1, 5) == "http_" then
      return req:header((gsub(sub(name, 6), "_", "-")))
    elseif sub(name, 1, 4) == "arg_" then
      return arg_var(req, sub(name, 5))
    elseif sub(name, 1, 7) == "cookie_" then
      return cookie_var(req, sub(name, 8))
    end
    return nil
  end,
  __newindex = function(_, name)
    current_request(1)
    error('variable "' .. tostring(name) .. '" not changeable: moonport has no '
          .. "nginx variables to set (keep values in ngx.ctx)", 2)
  end,
})

-- ngx.req ---------------------------------------------------------------

local req_api = {}
M.req = req_api

--- The request method ("GET", ...).
-- @usage if ngx.req.get_method() == "POST" then ... end
function req_api.get_method()
  return current_request(1).method
end

--- The query arguments as ngx.decode_args gives them (max_args: default
-- 100, 0 for all; past it a second result, "truncated").
-- @usage local args = ngx.req.get_uri_args()
function req_api.get_uri_args(max_args)
  return decode_args(current_request(1).query_string, max_args)
end

-- A field name as get_headers' table keys it: lower-case, "_" as "-".
local function normal(name)
  return (gsub(lower(name), "_", "-"))
end
local headers_mt = {
  __index = function(t, name)
    if type(name) ~= "string" then return nil end
    local key = normal(name)
    if key == name then return nil end
    return rawget(t, key)
  end,
}

--- The request headers: lower-case names (raw: as sent) to values, a
-- repeated field as an array of its values; the table also answers
-- h["Content-Type"] and h.content_type. At most max_headers fields
-- (default 100, 0 for all); past them a second result, "truncated".
-- @usage local h = ngx.req.get_headers(); local ua = h.user_agent
function req_api.get_headers(max_headers, raw)
  local req = current_request(1)
  max_headers = max_headers or 100
  local names, values = header_fields(req, 0)
  local headers = {}
  local truncated = max_headers > 0 and #names > max_headers
  local n = truncated and max_headers or #names
  for i = 1, n do
    local name = raw and names[i] or lower(names[i])
    local seen = headers[name]
    if seen == nil then
      headers[name] = values[i]
    elseif type(seen) == "table" then
      seen[#seen + 1] = values[i]
    else
      headers[name] = { seen, values[i] }
    end
  end
  if not raw then setmetatable(headers, headers_mt) end
  if truncated then return headers, "truncated" end
  return headers
end

--- Reads the whole request body, for get_body_data and get_post_args.
-- Raises when the client leaves before sending it.
-- @usage ngx.req.read_body()
function req_api.read_body()
  local req = current_request(1)
  local st = state(req)
  if st.body == nil then
    if st.socket then error("ngx.req.read_body: the body is being read through ngx.req.socket", 2) end
    st.body = req:body()
  end
end

--- Reads and drops the request body.
-- @usage ngx.req.discard_body()
function req_api.discard_body()
  req_api.read_body()
end

--- The body ngx.req.read_body read, or nil (not read, or empty).
-- @usage ngx.req.read_body(); local data = ngx.req.get_body_data()
function req_api.get_body_data()
  local body = state(current_request(1)).body
  if body == nil or body == "" then return nil end
  return body
end

--- Always nil: moonport keeps bodies in memory, never in a file.
-- @usage local file = ngx.req.get_body_file()
function req_api.get_body_file()
  current_request(1)
  return nil
end

--- The body read by ngx.req.read_body, decoded as a query string
-- (application/x-www-form-urlencoded), as ngx.decode_args.
-- @usage ngx.req.read_body(); local form = ngx.req.get_post_args()
function req_api.get_post_args(max_args)
  local body = state(current_request(1)).body
  if body == nil then
    return nil, "request body not read yet: call ngx.req.read_body() first"
  end
  return decode_args(body, max_args)
end

--- HTTP/1.1: the version moonport answers in.
-- @usage local v = ngx.req.http_version()
function req_api.http_version()
  current_request(1)
  return 1.1
end

--- false: moonport makes no internal redirects or subrequests.
-- @usage if ngx.req.is_internal() then ... end
function req_api.is_internal()
  current_request(1)
  return false
end

-- ngx.req.socket ---------------------------------------------------------

local Socket = {}
Socket.__index = Socket

-- Reads the next piece of the body into the socket's buffer; false at
-- the end of the body or when the client left.
local function fill(s)
  if s.eof then return false end
  local piece, err = s.req:read()
  if piece == nil then
    s.eof = true
    s.err = err
    return false
  end
  s.buf = s.buf .. piece
  return true
end

-- The first n bytes of the buffer, removed from it.
local function take(s, n)
  local buf = s.buf
  if n >= #buf then
    s.buf = ""
    return buf
  end
  s.buf = sub(buf, n + 1)
  return sub(buf, 1, n)
end

--- Reads the body: size bytes, a line ("*l", the default: without its
-- "\n", CRs dropped) or all that is left ("*a"). Returns the data, or
-- nil, "closed" and what was read when the body ends first.
-- @usage local line, err, partial = sock:receive()
function Socket:receive(pattern)
  if pattern == nil then pattern = "*l" end
  if type(pattern) == "number" then
    if pattern < 0 then error("bad argument #1 to 'receive' (bad size)", 2) end
    while #self.buf < pattern do
      if not fill(self) then return nil, "closed", take(self, #self.buf) end
    end
    return take(self, pattern)
  end
  if pattern == "*a" or pattern == "a" then
    while fill(self) do end
    return take(self, #self.buf)
  end
  if pattern == "*l" or pattern == "l" then
    while true do
      local at = find(self.buf, "\n", 1, true)
      if at then
        local line = take(self, at)
        return (gsub(sub(line, 1, -2), "\r", ""))
      end
      if not fill(self) then return nil, "closed", take(self, #self.buf) end
    end
  end
  error("bad argument #1 to 'receive' (bad pattern argument: " .. tostring(pattern) .. ")", 2)
end

--- Up to max bytes of the body, as soon as there are any; nil, "closed"
-- at its end.
-- @usage local data, err = sock:receiveany(4096)
function Socket:receiveany(max)
  if type(max) ~= "number" or max <= 0 then error("bad argument #1 to 'receiveany' (bad max)", 2) end
  if self.buf == "" and not fill(self) then return nil, "closed" end
  return take(self, max)
end

--- An iterator that reads the body up to the next occurrence of pattern
-- (a plain string): it returns the data before it (with it, when
-- opts.inclusive) and moves past it; nil, "closed" and the rest when the
-- body ends first. Given a size, it returns at most size bytes a call,
-- and nil once the data before the pattern has all been returned.
-- @usage local reader = sock:receiveuntil("\r\n--" .. boundary)
function Socket:receiveuntil(pattern, opts)
  if type(pattern) ~= "string" or pattern == "" then
    error("bad argument #1 to 'receiveuntil' (pattern must be a non-empty string)", 2)
  end
  local inclusive = type(opts) == "table" and opts.inclusive
  local plen = #pattern
  local ended = false
  return function(size)
    if ended then
      ended = false
      return nil
    end
    while true do
      local at = find(self.buf, pattern, 1, true)
      if at then
        if size and at - 1 > size then return take(self, size) end
        local data = take(self, at - 1)
        local found = take(self, plen)
        if inclusive then data = data .. found end
        if size then
          if data == "" then return nil end
          ended = true
        end
        return data
      end
      if size then
        -- Bytes that cannot be the start of the pattern can go now.
        local safe = #self.buf - (plen - 1)
        if safe >= size then return take(self, size) end
      end
      if not fill(self) then return nil, "closed", take(self, #self.buf) end
    end
  end
end

--- Accepted and kept; it does not bound the reads, which the server's
-- --body-timeout bounds.
-- @usage sock:settimeout(1000)
function Socket:settimeout(ms)
  self.timeout = ms
end

--- As settimeout.
-- @usage sock:settimeouts(1000, 1000, 1000)
function Socket:settimeouts(connect, send, read)
  self.timeout = read
end

--- Nothing to close: the body belongs to the request. Returns 1.
-- @usage sock:close()
function Socket:close()
  return 1
end

--- A read-only cosocket over the request body (receive, receiveuntil,
-- receiveany, settimeout). With raw, nil and an error: moonport keeps the
-- connection, which its handlers answer through ngx.say or res.
-- @usage local sock, err = ngx.req.socket()
function req_api.socket(raw)
  local req = current_request(1)
  if raw then
    return nil, "moonport does not hand out the raw connection: read the body "
                .. "with ngx.req.socket() and answer with ngx.say/ngx.print"
  end
  local st = state(req)
  if st.socket then return st.socket end
  if st.body ~= nil then return nil, "request body already read" end
  local s = setmetatable({ req = req, buf = "", eof = false }, Socket)
  st.socket = s
  return s
end

return M
