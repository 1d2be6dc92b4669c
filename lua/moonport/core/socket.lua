--- moonport.socket: outbound TCP and Unix-domain sockets that wait
-- without blocking the worker, with OpenResty's cosocket API (method names,
-- arguments, return values and error strings), so that code written for
-- `ngx.socket.tcp` runs as it is. The connection lives in C
-- (server/upstream/socket.c): its buffer, its timers, its pool; this
-- module turns the C codes into OpenResty's answers and yields the
-- request's coroutine (from any depth of user coroutines) while an
-- operation waits.
--
-- Timeouts are in milliseconds, per operation; 60 s each unless set.
-- @module moonport.core.socket

local ffi = require("ffi")
local base = require("moonport.core.base")
local runner = require("moonport.core.runner")

ffi.cdef[[
int mp_sock_connect(const char *host, int port, const char *pool,
                    int pool_size, int backlog, double timeout_ms,
                    double *handle);
int mp_sock_result(double handle);
int mp_sock_receive(double handle, int pattern, size_t n, const char *until,
                    size_t ulen, int inclusive, double timeout_ms,
                    const char **out, size_t *len);
int mp_sock_send(double handle, const char *data, size_t len,
                 double timeout_ms);
int mp_sock_keepalive(double handle, double idle_ms, int pool_size);
int mp_sock_close(double handle);
int mp_sock_reused(double handle);
int mp_sock_option(double handle, int option, int value);
int mp_sock_handshake(double handle, const char *server_name, int verify,
                      const char *cert, size_t cert_len, const char *key,
                      size_t key_len, double timeout_ms);
const char *mp_sock_tls_error(double handle);
int mp_sock_tls_resumed(double handle);
int mp_udp_open(const char *host, int port, double timeout_ms,
                double *handle);
int mp_udp_send(double handle, const char *data, size_t len);
int mp_udp_receive(double handle, size_t max, double timeout_ms,
                   const char **out, size_t *len);
int mp_sock_counts(int *in_use, int *idle);
const char *mp_sock_strerror(int rc);
]]

local C = ffi.C
local ffi_string = ffi.string
local mp_sock_connect, mp_sock_result = C.mp_sock_connect, C.mp_sock_result
local mp_sock_receive, mp_sock_send = C.mp_sock_receive, C.mp_sock_send
local mp_sock_keepalive, mp_sock_close = C.mp_sock_keepalive, C.mp_sock_close
local mp_sock_reused, mp_sock_option = C.mp_sock_reused, C.mp_sock_option
local mp_sock_strerror = C.mp_sock_strerror
local mp_sock_handshake, mp_sock_tls_error = C.mp_sock_handshake, C.mp_sock_tls_error
local mp_sock_tls_resumed = C.mp_sock_tls_resumed

local MP_AGAIN, MP_DECLINED = C.MP_AGAIN, C.MP_DECLINED
local MP_STATE, MP_BAD_CONTEXT = C.MP_STATE, C.MP_BAD_CONTEXT
local MP_TIMEOUT = C.MP_TIMEOUT
local RECV_SIZE, RECV_LINE, RECV_ALL = C.MP_RECV_SIZE, C.MP_RECV_LINE, C.MP_RECV_ALL
local RECV_ANY, RECV_UNTIL = C.MP_RECV_ANY, C.MP_RECV_UNTIL

local type, error, tostring, tonumber = type, error, tostring, tonumber
local setmetatable, getmetatable = setmetatable, getmetatable
local concat = table.concat
local floor = math.floor
local suspend = runner.suspend

-- Reused out-parameters: nothing yields between a call and the reads of
-- what it wrote.
local handle_out = ffi.new("double[1]")
local data_out = ffi.new("const char *[1]")
local len_out = ffi.new("size_t[1]")

-- What OpenResty's timeouts default to (lua_socket_*_timeout, 60 s).
local DEFAULT_TIMEOUT = 60000
-- What setkeepalive's idle limit defaults to (lua_socket_keepalive_timeout).
local DEFAULT_IDLE = 60000

local socket = {}

local function strerror(rc)
  return ffi_string(mp_sock_strerror(rc))
end

-- libuv's getaddrinfo codes (UV_EAI_*) lie in (-3100, -3000].
local function is_dns_error(rc)
  return rc <= -3000 and rc > -3100
end

local function not_serving(what)
  error("moonport.socket: " .. what .. " is only available while serving "
        .. "(in handlers, light threads and timers), not while the app "
        .. "loads; use moonport.timer.at(0, fn) to run it once the worker "
        .. "serves", 3)
end

local tcp = {}
tcp.__index = tcp

--- A new TCP (or Unix-domain) socket object, not yet connected.
-- @usage local sock = moonport.socket.tcp()
function socket.tcp()
  return setmetatable({ h = nil, ct = DEFAULT_TIMEOUT, st = DEFAULT_TIMEOUT,
                        rt = DEFAULT_TIMEOUT }, tcp)
end

local function check(self, name)
  if getmetatable(self) ~= tcp then
    error("moonport.socket: " .. name .. " called with '.' instead of ':'", 3)
  end
end

local function timeout_arg(ms, name)
  if ms == nil or ms == 0 then return DEFAULT_TIMEOUT end
  if type(ms) ~= "number" or ms < 0 or ms ~= ms then
    error(name .. ": the timeout must be a non-negative number of ms", 3)
  end
  return ms
end

--- Sets the connect, send and read timeouts at once, in ms (0 or nil:
-- the default, 60 s).
-- @usage sock:settimeout(1000)
function tcp:settimeout(ms)
  check(self, "settimeout")
  local t = timeout_arg(ms, "settimeout")
  self.ct, self.st, self.rt = t, t, t
end

--- Sets the connect, send and read timeouts, in ms.
-- @usage sock:settimeouts(500, 1000, 5000)
function tcp:settimeouts(connect_ms, send_ms, read_ms)
  check(self, "settimeouts")
  self.ct = timeout_arg(connect_ms, "settimeouts")
  self.st = timeout_arg(send_ms, "settimeouts")
  self.rt = timeout_arg(read_ms, "settimeouts")
end

-- Waits for the operation on h to end and returns its outcome, or
-- nil when the client of the request left meanwhile.
local function outcome(h)
  if not suspend() then return nil end
  return mp_sock_result(h)
end

-- Raises unless host is a non-empty string; whether it names a
-- Unix-domain socket ("unix:/path").
local function host_is_unix(host, name)
  if type(host) ~= "string" or host == "" then
    error(name .. ": host must be a non-empty string", 3)
  end
  return host:sub(1, 5) == "unix:"
end

-- The port as a number (a number or a numeric string, as OpenResty takes
-- it; 0 for a Unix-domain socket), or nil and OpenResty's error.
local function port_arg(host, port)
  if host:sub(1, 5) == "unix:" then return 0 end
  local n = tonumber(port)
  if n == nil or n < 0 or n > 65535 or n ~= floor(n) then
    return nil, "bad port number: " .. tostring(port)
  end
  return n
end

-- Waits for the connect (or setpeername) on h and gives the object its
-- connection: 1, or nil and OpenResty's error.
local function opened(self, h, host)
  local rc = outcome(h)
  if rc == 0 then
    self.h = h
    return 1
  end
  mp_sock_close(h)
  if rc == nil then return nil, "closed" end
  if is_dns_error(rc) then
    return nil, host .. " could not be resolved (" .. strerror(rc) .. ")"
  end
  return nil, strerror(rc)
end

--- Connects to host:port (a name, resolved through the system resolver
-- and cached per worker, or an IP literal), or to "unix:/path"; reuses an
-- idle connection of the pool when there is one. opts: pool (the pool's
-- name; default "host:port" or the path), pool_size (idle connections the
-- pool keeps; with backlog, the most open at once), backlog (connects that
-- may wait for one of those). Returns 1, or nil and an error.
-- @usage local ok, err = sock:connect("127.0.0.1", 6379, { pool_size = 32, backlog = 64 })
function tcp:connect(host, port, opts)
  check(self, "connect")
  if host_is_unix(host, "connect") then
    if type(port) == "table" then opts = port end
  end
  local err
  port, err = port_arg(host, port)
  if not port then return nil, err end
  local pool, pool_size, backlog = nil, 0, -1
  if opts ~= nil then
    if type(opts) ~= "table" then error("connect: opts must be a table", 2) end
    pool = opts.pool
    if pool ~= nil and type(pool) ~= "string" then
      error("connect: opts.pool must be a string", 2)
    end
    if opts.pool_size ~= nil then
      pool_size = tonumber(opts.pool_size)
      if pool_size == nil or pool_size < 1 then
        error("connect: opts.pool_size must be a positive number", 2)
      end
    end
    if opts.backlog ~= nil then
      backlog = tonumber(opts.backlog)
      if backlog == nil or backlog < 0 then
        error("connect: opts.backlog must be a non-negative number", 2)
      end
    end
  end
  if self.h ~= nil then -- a connected object connects again: the old goes
    mp_sock_close(self.h)
    self.h = nil
  end
  local rc = mp_sock_connect(host, port, pool, pool_size, backlog, self.ct,
                             handle_out)
  if rc == MP_BAD_CONTEXT then not_serving("connect") end
  if rc == 0 then
    self.h = handle_out[0]
    return 1
  end
  if rc == MP_DECLINED then return nil, "too many waiting connect operations" end
  if rc ~= MP_AGAIN then return nil, strerror(rc) end
  return opened(self, handle_out[0], host)
end

-- Appends the strings of a (nested) table to out; numbers become
-- strings, as OpenResty's send takes them.
local function flatten(t, out, n)
  for i = 1, #t do
    local v = t[i]
    local tv = type(v)
    if tv == "string" then
      n = n + 1
      out[n] = v
    elseif tv == "number" then
      n = n + 1
      out[n] = tostring(v)
    elseif tv == "table" then
      n = flatten(v, out, n)
    else
      error("send: bad data: a table may hold only strings, numbers and "
            .. "tables, not " .. tv, 4)
    end
  end
  return n
end

-- The bytes of a table send takes: a flat one (strings and numbers, as
-- lua-resty-redis builds) concatenated as it is, a nested one flattened
-- first.
local function joined(t)
  for i = 1, #t do
    local tv = type(t[i])
    if tv ~= "string" and tv ~= "number" then
      local parts = {}
      return concat(parts, "", 1, flatten(t, parts, 0))
    end
  end
  return concat(t)
end

--- Sends a string (or a number, or a nested table of them, sent as their
-- concatenation). Returns the number of bytes sent, or nil and an error
-- (the connection is then closed).
-- @usage local bytes, err = sock:send({ "GET ", key, "\r\n" })
function tcp:send(data)
  check(self, "send")
  local td = type(data)
  if td == "table" then
    data = joined(data)
  elseif td == "number" or td == "boolean" then
    data = tostring(data)
  elseif td ~= "string" then
    error("send: bad data: expected a string or a table, got " .. td, 2)
  end
  local h = self.h
  if h == nil then return nil, "closed" end
  local rc = mp_sock_send(h, data, #data, self.st)
  if rc == 0 then return #data end
  if rc == MP_BAD_CONTEXT then not_serving("send") end
  if rc == MP_STATE then return nil, "socket busy" end
  if rc == MP_AGAIN then
    rc = outcome(h)
    if rc == nil then return nil, "closed" end
    if rc == 0 then return #data end
  end
  return nil, strerror(rc)
end

-- One receive, by pattern: waits as long as it takes (or the timeout).
local function receive(self, pattern, n, boundary, inclusive)
  local h = self.h
  if h == nil then return nil, "closed" end
  local blen = boundary and #boundary or 0
  while true do
    local rc = mp_sock_receive(h, pattern, n, boundary, blen, inclusive, self.rt,
                               data_out, len_out)
    if rc == 0 then return ffi_string(data_out[0], len_out[0]) end
    if rc == MP_DECLINED then return nil end
    if rc ~= MP_AGAIN then
      if rc == MP_BAD_CONTEXT then not_serving("receive") end
      if rc == MP_STATE then return nil, "socket busy" end
      return nil, strerror(rc), ffi_string(data_out[0], len_out[0])
    end
    if not suspend() then return nil, "closed", "" end
  end
end

--- Reads by pattern: a number of bytes, "*l" (a line, without its LF and
-- any CR; the default) or "*a" (everything until the peer closes).
-- Returns the data, or nil, an error and the partial data received. A
-- timeout leaves the connection open; other errors close it.
-- @usage local line, err, partial = sock:receive()
function tcp:receive(pattern)
  check(self, "receive")
  if pattern == nil or pattern == "*l" then
    return receive(self, RECV_LINE, 0, nil, 0)
  elseif pattern == "*a" then
    return receive(self, RECV_ALL, 0, nil, 0)
  end
  local n = tonumber(pattern)
  if n == nil or n < 0 or n ~= floor(n) then
    error("receive: bad pattern argument: " .. tostring(pattern), 2)
  end
  if n == 0 then return "" end
  return receive(self, RECV_SIZE, n, nil, 0)
end

--- Whatever has arrived, at most max bytes (at least one: waits for it).
-- @usage local data, err = sock:receiveany(4096)
function tcp:receiveany(max)
  check(self, "receiveany")
  local n = tonumber(max)
  if n == nil or n < 1 or n ~= floor(n) then
    error("receiveany: max must be a positive integer", 2)
  end
  return receive(self, RECV_ANY, n, nil, 0)
end

--- An iterator reading up to a boundary: it() returns the data before
-- the next boundary (with it when opts.inclusive) and consumes the
-- boundary; it(size) returns the data before it in pieces of at most
-- size bytes, then nil (no error) once the boundary is reached, and
-- starts over after. Errors: nil, the error and the partial data.
-- @usage local reader = sock:receiveuntil("\r\n--boundary")
function tcp:receiveuntil(pattern, opts)
  check(self, "receiveuntil")
  if type(pattern) ~= "string" or pattern == "" then
    error("receiveuntil: the pattern must be a non-empty string", 2)
  end
  local inclusive = 0
  if opts ~= nil then
    if type(opts) ~= "table" then error("receiveuntil: opts must be a table", 2) end
    if opts.inclusive then inclusive = 1 end
  end
  return function(size)
    local n = 0
    if size ~= nil then
      n = tonumber(size)
      if n == nil or n < 1 or n ~= floor(n) then
        error("receiveuntil iterator: size must be a positive integer", 2)
      end
    end
    return receive(self, RECV_UNTIL, n, pattern, inclusive)
  end
end

--- Puts the connection into its pool (idle at most max_idle_ms, default
-- 60 s, 0 for no limit; pool_size sets the pool's size when the pool is
-- new, as OpenResty's deprecated argument) and empties the object.
-- Returns 1, or nil and an error ("unread data in buffer", "closed").
-- @usage local ok, err = sock:setkeepalive(10000, 32)
function tcp:setkeepalive(max_idle_ms, pool_size)
  check(self, "setkeepalive")
  local h = self.h
  if h == nil then return nil, "closed" end
  if max_idle_ms == nil then max_idle_ms = DEFAULT_IDLE end
  if type(max_idle_ms) ~= "number" or max_idle_ms < 0 then
    error("setkeepalive: max_idle_ms must be a non-negative number", 2)
  end
  local size = 0
  if pool_size ~= nil then
    size = tonumber(pool_size)
    if size == nil or size < 1 then
      error("setkeepalive: pool_size must be a positive number", 2)
    end
  end
  local rc = mp_sock_keepalive(h, max_idle_ms, size)
  if rc == 0 then
    self.h = nil
    return 1
  end
  if rc == MP_DECLINED then return nil, "unread data in buffer" end
  if rc == MP_STATE then return nil, "socket busy" end
  self.h = nil
  return nil, "closed"
end

--- Sets the client certificate and key (PEM text, the certificate first
-- and its chain after) the next sslhandshake offers to servers that ask
-- for one.
-- @usage sock:setclientcert(io.open("client.pem"):read("*a"), io.open("client.key"):read("*a"))
function tcp:setclientcert(cert, key)
  check(self, "setclientcert")
  if (cert == nil) ~= (key == nil) then
    error("setclientcert: give both the certificate and the key, or neither", 2)
  end
  if cert ~= nil and (type(cert) ~= "string" or type(key) ~= "string") then
    error("setclientcert: the certificate and the key must be PEM strings", 2)
  end
  self.cert, self.key = cert, key
  return true
end

--- TLS over the connection: server_name is sent as SNI and, with
-- ssl_verify (true unless false is given), checked against the
-- certificate, whose chain is verified against --tls-ca or the system
-- store. Sessions are resumed per pool on their own; reused_session is
-- accepted for OpenResty's signature and otherwise ignored. opts may give
-- client_cert and client_priv_key (PEM text), as setclientcert does. On a
-- pooled connection that is already TLS with the same settings it
-- returns at once. Returns a session object (true when reused_session is
-- false), or nil and an error: "certificate verify failed: <reason>",
-- "certificate host mismatch", "handshake failed", "timeout", "closed".
-- @usage local ok, err = sock:sslhandshake(false, "example.com")
function tcp:sslhandshake(reused_session, server_name, ssl_verify, send_status_req, opts)
  check(self, "sslhandshake")
  if server_name ~= nil and type(server_name) ~= "string" then
    error("sslhandshake: server_name must be a string", 2)
  end
  local cert, key = self.cert, self.key
  if opts ~= nil then
    if type(opts) ~= "table" then error("sslhandshake: opts must be a table", 2) end
    cert = opts.client_cert or cert
    key = opts.client_priv_key or key
  end
  local h = self.h
  if h == nil then return nil, "closed" end
  local rc = mp_sock_handshake(h, server_name, ssl_verify == false and 0 or 1,
                               cert, cert and #cert or 0, key, key and #key or 0,
                               self.ct)
  if rc == MP_AGAIN then
    rc = outcome(h)
    if rc == nil then return nil, "closed" end
  end
  if rc == MP_BAD_CONTEXT then not_serving("sslhandshake") end
  if rc == MP_STATE then
    return nil, "connection is already TLS with other settings (use another pool)"
  end
  if rc ~= 0 then
    local why = ffi_string(mp_sock_tls_error(h))
    if why == "" or rc == MP_TIMEOUT then why = strerror(rc) end
    return nil, why
  end
  if reused_session == false then return true end
  return { resumed = mp_sock_tls_resumed(h) == 1 }
end

--- How many times the connection was taken from its pool (0 when it is
-- new), or nil, "closed".
-- @usage if sock:getreusedtimes() == 0 then authenticate(sock) end
function tcp:getreusedtimes()
  check(self, "getreusedtimes")
  local h = self.h
  if h == nil then return nil, "closed" end
  local n = mp_sock_reused(h)
  if n < 0 then return nil, "closed" end
  return n
end

--- Closes the connection. Returns 1, or nil, "closed" when it was not
-- open.
-- @usage sock:close()
function tcp:close()
  check(self, "close")
  local h = self.h
  if h == nil then return nil, "closed" end
  self.h = nil
  if mp_sock_close(h) ~= 0 then return nil, "closed" end
  return 1
end

local OPTIONS = {
  keepalive = C.MP_STREAM_KEEPALIVE,
  ["tcp-nodelay"] = C.MP_STREAM_NODELAY,
  nodelay = C.MP_STREAM_NODELAY,
  sndbuf = C.MP_STREAM_SNDBUF,
  rcvbuf = C.MP_STREAM_RCVBUF,
}

--- Sets a socket option: "keepalive", "tcp-nodelay" (or "nodelay"), with
-- a boolean or 0/1; "sndbuf", "rcvbuf" with a size in bytes. Returns
-- true, or nil and an error.
-- @usage sock:setoption("keepalive", true)
function tcp:setoption(option, value)
  check(self, "setoption")
  local opt = OPTIONS[option]
  if opt == nil then error("setoption: unknown option: " .. tostring(option), 2) end
  local v = value
  if type(v) == "boolean" then v = v and 1 or 0 end
  v = tonumber(v)
  if v == nil then error("setoption: bad value: " .. tostring(value), 2) end
  local h = self.h
  if h == nil then return nil, "closed" end
  local rc = mp_sock_option(h, opt, v)
  if rc ~= 0 then return nil, strerror(rc) end
  return true
end

-- Datagram sockets -------------------------------------------------------

local mp_udp_open, mp_udp_send = C.mp_udp_open, C.mp_udp_send
local mp_udp_receive = C.mp_udp_receive

local udp = {}
udp.__index = udp

--- A new UDP (or Unix-domain datagram) socket object, without a peer yet.
-- @usage local sock = moonport.socket.udp()
function socket.udp()
  return setmetatable({ h = nil, rt = DEFAULT_TIMEOUT }, udp)
end

local function check_udp(self, name)
  if getmetatable(self) ~= udp then
    error("moonport.socket: " .. name .. " called with '.' instead of ':'", 3)
  end
end

--- Sets the receive timeout, in ms (0 or nil: the default, 60 s).
-- @usage sock:settimeout(500)
function udp:settimeout(ms)
  check_udp(self, "settimeout")
  self.rt = timeout_arg(ms, "settimeout")
end

--- Sets the peer: host (a name or an IP literal) and port, or
-- "unix:/path" for a Unix-domain datagram socket (syslog's /dev/log).
-- Returns 1, or nil and an error.
-- @usage assert(sock:setpeername("127.0.0.1", 8125))
function udp:setpeername(host, port)
  check_udp(self, "setpeername")
  host_is_unix(host, "setpeername")
  local err
  port, err = port_arg(host, port)
  if not port then return nil, err end
  if self.h ~= nil then
    mp_sock_close(self.h)
    self.h = nil
  end
  local rc = mp_udp_open(host, port, self.rt, handle_out)
  if rc == MP_BAD_CONTEXT then not_serving("setpeername") end
  if rc ~= MP_AGAIN then return nil, strerror(rc) end
  return opened(self, handle_out[0], host)
end

--- Sends one datagram (a string, or a nested table of strings sent as
-- their concatenation). Returns 1, or nil and an error.
-- @usage sock:send("hits:1|c")
function udp:send(data)
  check_udp(self, "send")
  if type(data) == "table" then
    data = joined(data)
  elseif type(data) ~= "string" then
    data = tostring(data)
  end
  local h = self.h
  if h == nil then return nil, "closed" end
  local rc = mp_udp_send(h, data, #data)
  if rc ~= 0 then return nil, strerror(rc) end
  return 1
end

--- The next datagram, at most size bytes of it (default 8192; the rest
-- of a longer one is dropped). Returns the data, or nil and an error
-- ("timeout", "connection refused" when the peer's port is closed).
-- @usage local answer, err = sock:receive()
function udp:receive(size)
  check_udp(self, "receive")
  local n = 8192
  if size ~= nil then
    n = tonumber(size)
    if n == nil or n < 1 or n ~= floor(n) then
      error("receive: size must be a positive integer", 2)
    end
  end
  local h = self.h
  if h == nil then return nil, "closed" end
  while true do
    local rc = mp_udp_receive(h, n, self.rt, data_out, len_out)
    if rc == 0 then return ffi_string(data_out[0], len_out[0]) end
    if rc == MP_BAD_CONTEXT then not_serving("receive") end
    if rc ~= MP_AGAIN then
      if rc == MP_STATE then return nil, "socket busy" end
      return nil, strerror(rc)
    end
    if not suspend() then return nil, "closed" end
  end
end

--- Closes the socket. Returns 1, or nil, "closed".
-- @usage sock:close()
function udp:close()
  check_udp(self, "close")
  local h = self.h
  if h == nil then return nil, "closed" end
  self.h = nil
  mp_sock_close(h)
  return 1
end

local counts_out = ffi.new("int[2]")

--- The worker's outbound connections: `in_use` (held by requests) and
-- `idle` (waiting in keep-alive pools).
-- @usage local n = moonport.socket.stats().in_use
function socket.stats()
  C.mp_sock_counts(counts_out, counts_out + 1)
  return { in_use = counts_out[0], idle = counts_out[1] }
end

return socket
