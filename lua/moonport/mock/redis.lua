--- A compact Redis client for the mock's shared store (--mock-store):
-- RESP2 over moonport.socket, pipelined, with a keep-alive pool per worker
-- and a backoff while the server cannot be reached.
--
-- Every call sends a whole pipeline of commands and reads all their
-- replies: one round trip, during which the request's coroutine waits
-- (moonport.socket yields it). A connection is taken from the worker's
-- pool (moonport.socket keeps it in C, by the pool's name), AUTH and SELECT
-- are sent once on a new one, and it goes back to the pool after the
-- replies are read.
--
-- Once a connection cannot be made (or a pipeline fails on a new one), the
-- client is "down": calls fail at once, without touching the network,
-- until a delay has passed (50 ms, doubling up to 1 s); the next call
-- then tries again. A pooled connection that the server closed meanwhile
-- (a restart) is retried once on a fresh one, which is safe: a server that
-- closed the connection has not read the pipeline.
--
-- Debian's lua-nginx-redis (resty.redis) runs over moonport.ngx too, but
-- its package depends on nginx-extras; this is the part of it the mock
-- needs, with no dependency.
-- @module moonport.mock.redis

local socket = require("moonport.core.socket")
local now = require("moonport.core.time").now

local type, tostring, tonumber, setmetatable = type, tostring, tonumber, setmetatable
local concat = table.concat
local byte, sub, format = string.byte, string.sub, string.format
local min = math.min

local BACKOFF_FIRST = 0.05 -- seconds
local BACKOFF_MAX = 1
local POOL_SIZE = 32      -- idle connections a worker keeps
local IDLE_MS = 60000     -- how long one may stay idle in the pool

local redis = {}

--- What a nil reply (a missing key, a missing hash field) reads as.
redis.null = false

local Client = {}
Client.__index = Client

local function decode_component(s)
  return (s:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

-- The query of a URL as a table.
local function query_of(q)
  local t = {}
  for k, v in (q or ""):gmatch("([^&=]+)=([^&]*)") do t[k] = decode_component(v) end
  return t
end

--- Parses a store URL: `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB][?QUERY]`
-- or `unix:/PATH[?QUERY]` (QUERY: `db=N`, `password=P`, `prefix=P`,
-- `timeout=MS`). Returns a table {host, port, path, password, user, db,
-- prefix, timeout}, or nil and why.
-- @usage local where = assert(redis.parse_url("redis://127.0.0.1:6379/2"))
function redis.parse_url(url)
  if type(url) ~= "string" then return nil, "not a string" end
  local t = {}
  local rest, query = url:match("^([^?]*)%??(.*)$")
  local q = query_of(query)
  if rest:sub(1, 5) == "unix:" then
    t.path = rest:sub(6)
    if t.path:sub(1, 2) == "//" then t.path = t.path:sub(3) end
    if t.path == "" then return nil, "unix: needs the socket's path" end
  else
    local auth_host = rest:match("^redis://(.*)$")
    if auth_host == nil then return nil, "expected redis://HOST:PORT[/DB] or unix:/PATH" end
    local auth, hostpart = auth_host:match("^(.*)@([^@]*)$")
    if auth == nil then hostpart = auth_host end
    if auth then
      local user, password = auth:match("^([^:]*):(.*)$")
      if user then
        t.user = user ~= "" and decode_component(user) or nil
        t.password = decode_component(password)
      else
        t.password = decode_component(auth)
      end
    end
    local hostport, db = hostpart:match("^([^/]*)/?(.*)$")
    local host, port = hostport:match("^%[(.+)%]:?(%d*)$")
    if host == nil then host, port = hostport:match("^([^:]*):?(%d*)$") end
    if host == nil or host == "" then return nil, "no host" end
    t.host = host
    t.port = tonumber(port ~= "" and port or "6379")
    if t.port < 1 or t.port > 65535 then return nil, "bad port " .. port end
    if db ~= "" then t.db = db end
  end
  t.db = q.db or t.db
  if t.db ~= nil and not tostring(t.db):find("^%d+$") then return nil, "bad database number " .. tostring(t.db) end
  t.db = tonumber(t.db)
  t.password = q.password or t.password
  t.prefix = q.prefix or "moonport:mock:"
  t.timeout = tonumber(q.timeout or "1000")
  if t.timeout == nil or t.timeout <= 0 then return nil, "bad timeout " .. tostring(q.timeout) end
  return t
end

--- A client for a parsed URL (redis.parse_url). Makes no connection.
-- @usage local c = redis.new(assert(redis.parse_url(url)))
function redis.new(where)
  local pool = where.path and ("unix:" .. where.path) or (where.host .. ":" .. where.port)
  pool = format("mock-store:%s/%s", pool, tostring(where.db or 0))
  return setmetatable({ where = where, pool = pool, down_until = 0, backoff = 0 }, Client)
end

--- What the client talks to, for messages: "redis 127.0.0.1:6379".
-- @usage log("info", client:name())
function Client:name()
  local w = self.where
  return "redis " .. (w.path and ("unix:" .. w.path) or (w.host .. ":" .. w.port))
end

-- One command in RESP: an array of bulk strings.
local function encode(cmd, out, n)
  n = n + 1
  out[n] = "*" .. #cmd .. "\r\n"
  for i = 1, #cmd do
    local a = cmd[i]
    if type(a) ~= "string" then a = type(a) == "number" and format("%.17g", a) or tostring(a) end
    n = n + 1
    out[n] = "$" .. #a .. "\r\n"
    n = n + 1
    out[n] = a
    n = n + 1
    out[n] = "\r\n"
  end
  return n
end

-- Reads one reply. Returns the value (nil bulk: false; an error reply:
-- {err = message}), or nil and a connection error.
local function read_reply(sock)
  local line, err = sock:receive("*l")
  if line == nil then return nil, err end
  local kind, rest = byte(line, 1), sub(line, 2)
  if kind == 36 then -- '$'
    local n = tonumber(rest)
    if n == nil then return nil, "bad reply: " .. line end
    if n < 0 then return false end
    local data
    data, err = sock:receive(n + 2)
    if data == nil then return nil, err end
    return sub(data, 1, n)
  elseif kind == 58 then -- ':'
    return tonumber(rest)
  elseif kind == 43 then -- '+'
    return rest
  elseif kind == 45 then -- '-'
    return { err = rest }
  elseif kind == 42 then -- '*'
    local n = tonumber(rest)
    if n == nil then return nil, "bad reply: " .. line end
    if n < 0 then return false end
    local list = {}
    for i = 1, n do
      local v
      v, err = read_reply(sock)
      if v == nil then return nil, err end
      list[i] = v
    end
    return list
  end
  return nil, "bad reply: " .. line
end

-- Sends commands and reads as many replies. Returns the list of replies,
-- or nil and an error (the socket is then unusable).
local function exchange(sock, cmds)
  local out, n = {}, 0
  for i = 1, #cmds do n = encode(cmds[i], out, n) end
  local ok, err = sock:send(concat(out, "", 1, n))
  if not ok then return nil, err end
  local replies = {}
  for i = 1, #cmds do
    local v
    v, err = read_reply(sock)
    if v == nil then return nil, err end
    replies[i] = v
  end
  return replies
end

local function mark_down(self, err)
  self.backoff = self.backoff == 0 and BACKOFF_FIRST or min(self.backoff * 2, BACKOFF_MAX)
  self.down_until = now() + self.backoff
  self.down_err = err
  self.down = true
end

-- A connected socket, fresh or from the pool. Returns it and whether it
-- was reused, or nil and why.
local function connect(self)
  local w = self.where
  local sock = socket.tcp()
  sock:settimeouts(w.timeout, w.timeout, w.timeout)
  local ok, err
  local opts = { pool = self.pool, pool_size = POOL_SIZE }
  if w.path then
    ok, err = sock:connect("unix:" .. w.path, opts)
  else
    ok, err = sock:connect(w.host, w.port, opts)
  end
  if not ok then return nil, err end
  local reused = sock:getreusedtimes() > 0
  if not reused then
    local setup = {}
    if w.password then
      setup[#setup + 1] = w.user and { "AUTH", w.user, w.password } or { "AUTH", w.password }
    end
    if w.db and w.db ~= 0 then setup[#setup + 1] = { "SELECT", w.db } end
    if #setup > 0 then
      local replies
      replies, err = exchange(sock, setup)
      if replies == nil then
        sock:close()
        return nil, err
      end
      for _, r in ipairs(replies) do
        if type(r) == "table" and r.err then
          sock:close()
          return nil, r.err
        end
      end
    end
  end
  return sock, reused
end

--- Runs a pipeline: cmds is a list of commands, each a list of arguments
-- (strings or numbers). Returns the list of replies (a nil bulk reads as
-- false, an error reply as {err = message}, an array as a list), or nil
-- and why the server could not be reached: then, and until the backoff
-- has passed, calls fail without trying.
-- @usage local r, err = client:run({ { "GET", "a" }, { "INCR", "n" } })
function Client:run(cmds)
  if self.down and now() < self.down_until then
    return nil, self.down_err
  end
  for attempt = 1, 2 do
    local sock, reused = connect(self)
    if sock == nil then
      mark_down(self, tostring(reused))
      return nil, self.down_err
    end
    local replies, err = exchange(sock, cmds)
    if replies then
      sock:setkeepalive(IDLE_MS)
      if self.down then
        self.down, self.backoff = false, 0
        if self.on_up then self.on_up() end
      end
      return replies
    end
    sock:close()
    -- A pooled connection the server closed: once more on a new one.
    if not (reused and attempt == 1 and (err == "closed" or err == "broken pipe"
        or err == "connection reset by peer")) then
      mark_down(self, tostring(err))
      return nil, self.down_err
    end
  end
end

--- Whether the client is in its backoff after a failure.
-- @usage if client:is_down() then ... end
function Client:is_down()
  return self.down == true
end

return redis
