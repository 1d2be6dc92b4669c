--- moonport.http: an HTTP/1.1 client for handlers, on moonport.socket.
--
--     local http = require("moonport.http")
--     local res, err = http.request({ url = "http://127.0.0.1:8081/users/42" })
--     if not res then return res_:status(502):send(err) end
--     local user = res:json()
--
-- How it works. A request takes a connection from the keep-alive pool of
-- its origin (scheme, host, port, TLS settings and the proxy, if any: a
-- proxy gets http requests in absolute form and a CONNECT tunnel for
-- https ones), sends the head and the
-- body (Content-Length for a string or a table of strings, chunked for an
-- iterator), and reads the answer through server/http/h1resp.c (llhttp in
-- response mode, as strict as the server side: obs-fold, bare CR, NUL and
-- conflicting lengths are errors). The head's bytes stay in one buffer
-- until the head is whole; body bytes are handed out as they are parsed.
-- A connection goes back to its pool only after a whole response that
-- allows another request; any failure closes it. Every wait is a socket
-- wait: other requests go on meanwhile, and a client that leaves ends it.
-- @module moonport.http

local ffi = require("ffi")
local buffer = require("string.buffer")
local socket = require("moonport.core.socket")
local json = require("moonport.json")
local crypto = require("moonport.core.crypto")
local C = require("moonport.core.httpc")

local type, tostring, tonumber, error, setmetatable, rawget, rawset, pairs, ipairs =
  type, tostring, tonumber, error, setmetatable, rawget, rawset, pairs, ipairs
local lower, upper, find, sub, match, format, gsub =
  string.lower, string.upper, string.find, string.sub, string.match, string.format, string.gsub
local concat = table.concat
local ffi_string = ffi.string
local clock = require("moonport.core.time").now
local function now() return clock() * 1000 end

local MORE, HEAD, BODY, DONE = C.MP_HTTPC_MORE, C.MP_HTTPC_HEAD, C.MP_HTTPC_BODY, C.MP_HTTPC_DONE

-- Limits of a response head and of a read.
local MAX_HEAD = 64 * 1024
local MAX_FIELDS = 256
local READ_SIZE = 64 * 1024
-- Defaults, in ms; a body larger than max_body_size fails the request.
local DEFAULT_TIMEOUT = 60000
local DEFAULT_MAX_BODY = 64 * 1024 * 1024

local PARSER_WORDS = math.floor((tonumber(C.mp_httpc_size()) + 7) / 8)
-- Parsers of ended exchanges, for the next ones: a request allocates none
-- once the worker has as many as it runs at once.
local spare, nspare = {}, 0
local u32 = ffi.typeof("uint32_t[4]")
local sizeout = ffi.new("size_t[1]")

local http = {}

-- URLs ---------------------------------------------------------------------

local DEFAULT_PORT = { http = 80, https = 443 }

--- Splits an absolute http or https URL: scheme, host (without IPv6
-- brackets), port, and the request target (path and query, "/" when
-- empty). nil and an error for anything else, a URL with a space or a
-- control byte included (it would write another request line or header).
-- @usage local scheme, host, port, target = http.parse_url("https://api.example.com/v1?x=1")
local function parse_url(url)
  if type(url) ~= "string" then return nil, "url must be a string" end
  if find(url, "[%z\1-\32\127]") then return nil, "bad url: a space or a control byte" end
  local scheme, rest = match(url, "^(%a[%w+.-]*)://(.*)$")
  scheme = scheme and lower(scheme)
  if not DEFAULT_PORT[scheme] then return nil, "unsupported url: " .. url end
  local authority, target = match(rest, "^([^/?#]*)(.*)$")
  target = gsub(target, "#.*$", "")
  if target == "" then target = "/" elseif sub(target, 1, 1) == "?" then target = "/" .. target end
  authority = gsub(authority, "^.*@", "") -- userinfo is not sent
  local host, port = match(authority, "^%[([^%]]+)%]:?(%d*)$")
  if not host then host, port = match(authority, "^([^:]+):?(%d*)$") end
  if not host or host == "" then return nil, "no host in url: " .. url end
  port = port ~= "" and tonumber(port) or DEFAULT_PORT[scheme]
  if port < 1 or port > 65535 then return nil, "bad port in url: " .. url end
  return scheme, host, port, target
end
http.parse_url = parse_url

-- parse_url's answers for the URLs requests name, kept (at most
-- PARSED_MAX, then forgotten together): most code calls a few URLs again
-- and again.
local PARSED_MAX = 256
local parsed, nparsed = {}, 0
local function parse_url_cached(url)
  local p = parsed[url]
  if p then return p[1], p[2], p[3], p[4] end
  local scheme, host, port, target = parse_url(url)
  if scheme and type(url) == "string" then
    if nparsed >= PARSED_MAX then parsed, nparsed = {}, 0 end
    nparsed = nparsed + 1
    parsed[url] = { scheme, host, port, target }
  end
  return scheme, host, port, target
end

-- The forward proxy opts.proxy names: its host, port and the
-- Proxy-Authorization to send (opts.proxy_authorization, else Basic from
-- the URL's user:password); nil and an error for anything but http://.
local function proxy_of(opts)
  local scheme, host, port = parse_url(opts.proxy)
  if scheme ~= "http" then return nil, "proxy must be an http:// URL" end
  local auth = opts.proxy_authorization
  local userinfo = match(opts.proxy, "^%a[%w+.-]*://([^/?#]*)@")
  if auth == nil and userinfo then
    userinfo = gsub(userinfo, "%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end)
    auth = "Basic " .. crypto.base64_encode(userinfo)
  end
  if auth ~= nil and find(auth, "[%z\r\n]") then return nil, "bad proxy_authorization" end
  return host, port, auth
end

-- host:port as a request target or Host field writes it.
local function authority(host, port)
  return (find(host, ":", 1, true) and "[" .. host .. "]" or host) .. ":" .. port
end

local function escape(s)
  return (gsub(tostring(s), "[^%w%-%._~]", function(c) return format("%%%02X", c:byte()) end))
end

-- A query table as "a=1&b=2" (sorted keys, repeated values for arrays).
local function encode_query(q)
  if type(q) == "string" then return q end
  local keys = {}
  for k in pairs(q) do keys[#keys + 1] = tostring(k) end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do
    local v = q[k]
    if type(v) == "table" then
      for _, item in ipairs(v) do parts[#parts + 1] = escape(k) .. "=" .. escape(item) end
    elseif v == true then
      parts[#parts + 1] = escape(k)
    elseif v ~= false then
      parts[#parts + 1] = escape(k) .. "=" .. escape(v)
    end
  end
  return concat(parts, "&")
end

-- Headers ------------------------------------------------------------------

-- Response headers: h["content-type"] in any case gives the value (fields
-- of one name joined with ", ", Set-Cookie's kept apart: use all()), and
-- h:all(name) every value in order.
local Headers = {}
Headers.__index = function(t, name)
  local m = Headers[name]
  if m then return m end
  if type(name) ~= "string" then return nil end
  local values = rawget(t, "_fields")[lower(name)]
  if values == nil or type(values) == "string" then return values end
  return concat(values, ", ")
end

--- Every value of a header, in the order they came.
function Headers.all(t, name)
  local values = rawget(t, "_fields")[lower(name)]
  if values == nil then return {} end
  if type(values) == "string" then return { values } end
  return values
end

--- The header fields as they came: an array of {name, value}.
function Headers.list(t)
  local list = rawget(t, "_list")
  if list then return list end
  list = {}
  local flat = rawget(t, "_flat")
  for i = 1, #flat, 2 do list[#list + 1] = { flat[i], flat[i + 1] } end
  rawset(t, "_list", list)
  return list
end

-- Responses -----------------------------------------------------------------

local Response = {}
Response.__index = Response

--- The body decoded as JSON (moonport.json), or nil and an error.
function Response:json()
  if type(self.body) ~= "string" then return nil, "no body read" end
  return json.decode(self.body)
end

-- The connection and the parser of one exchange.
local Exchange = {}
Exchange.__index = Exchange

-- Read buffers of exchanges that ended well, emptied, for the next ones.
local spare_bufs, nbufs = {}, 0

local function new_buf()
  if nbufs == 0 then return buffer.new() end
  local buf = spare_bufs[nbufs]
  spare_bufs[nbufs] = nil
  nbufs = nbufs - 1
  return buf
end

-- The exchange is over: its parser goes back to the spares.
local function release(x)
  if x.parser and nspare < 64 then
    nspare = nspare + 1
    spare[nspare] = x.parser
  end
  x.parser = nil
end

local function fail(x, err)
  if x.sock then x.sock:close() end
  x.sock = nil
  release(x)
  return nil, err
end

-- Reads more bytes into x.buf within the request's deadline.
local function read_more(x)
  local left = x.deadline - now()
  if left <= 0 then return nil, "timeout" end
  x.sock:settimeouts(x.connect_timeout, x.send_timeout, left < x.read_timeout and left or x.read_timeout)
  local data, err = x.sock:receiveany(READ_SIZE)
  if not data then return nil, err end
  x.buf:put(data)
  return true
end

-- Runs the parser over what x.buf holds; returns its code.
local function feed(x)
  local ptr, len = x.buf:ref()
  sizeout[0] = x.pos
  local rc = C.mp_httpc_feed(x.parser, ptr, len, sizeout)
  x.pos = tonumber(sizeout[0])
  return rc
end

-- One step towards the whole head: true once it is, false after reading
-- more, or nil and an error.
local function head_step(x)
  local rc = feed(x)
  if rc == HEAD then return true end
  if rc < 0 then return fail(x, ffi_string(C.mp_httpc_error(x.parser))) end
  if rc == DONE or rc == BODY then return fail(x, "invalid response") end
  local ok, err = read_more(x)
  if not ok then
    if err == "closed" then return fail(x, "closed before the response head") end
    return fail(x, err)
  end
  return false
end

-- Waits until the head is whole: true, or nil and an error.
local function read_head(x)
  -- Most heads take one read; a loop only for the others, so that the
  -- JIT compiles the usual way through.
  local whole, err = head_step(x)
  if whole == false then whole, err = head_step(x) end
  while whole == false do whole, err = head_step(x) end
  return whole, err
end

-- The whole head's status, reason and headers.
local function head_of(x)
  local ptr = x.buf:ref()
  local base = C.mp_httpc_head_start(x.parser)
  local span = u32()
  local status = C.mp_httpc_status(x.parser)
  C.mp_httpc_reason(x.parser, span, span + 1)
  local reason = ffi_string(ptr + base + span[0], span[1])
  -- By lower-case name: the value, or the values in order when the name
  -- came more than once; and every name and value in order, flat.
  local fields, flat = {}, {}
  for i = 0, C.mp_httpc_nfields(x.parser) - 1 do
    C.mp_httpc_field(x.parser, i, span, span + 1, span + 2, span + 3)
    local name = ffi_string(ptr + base + span[0], span[1])
    local value = ffi_string(ptr + base + span[2], span[3])
    flat[2 * i + 1], flat[2 * i + 2] = name, value
    local key = lower(name)
    local had = fields[key]
    if had == nil then
      fields[key] = value
    elseif type(had) == "string" then
      fields[key] = { had, value }
    else
      had[#had + 1] = value
    end
  end
  x.keep_alive = C.mp_httpc_keep_alive(x.parser) == 1
  return status, reason, setmetatable({ _fields = fields, _flat = flat }, Headers)
end

-- One step of next_piece: a piece, nil at the end, nil and an error, or
-- nil, nil, true to step again.
local function piece_step(x)
  local rc = feed(x)
  if rc == BODY then
    local p = C.mp_httpc_body(x.parser, sizeout)
    local n = tonumber(sizeout[0])
    if n == 0 then return nil, nil, true end
    x.got = x.got + n
    if x.got > x.max_body then return fail(x, "body too large") end
    return ffi_string(p, n)
  elseif rc == DONE then
    x.done = true
    release(x)
    local buf = x.buf
    if x.keep_alive and x.pos == #buf then
      x.sock:setkeepalive(x.keepalive_timeout, x.keepalive_pool)
      x.sock = nil
    else -- bytes past the response, or no keep-alive: not reusable
      x.sock:close()
      x.sock = nil
    end
    -- Its buffer, for the next exchange.
    x.buf = nil
    if nbufs < 64 then
      buf:reset()
      nbufs = nbufs + 1
      spare_bufs[nbufs] = buf
    end
    return nil
  elseif rc < 0 then
    return fail(x, ffi_string(C.mp_httpc_error(x.parser)))
  else
    -- Head bytes are no longer needed: keep only what is unparsed.
    x.buf:skip(x.pos)
    x.pos = 0
    local ok, err = read_more(x)
    if not ok then
      if err == "closed" then
        if C.mp_httpc_eof(x.parser) == DONE then
          x.done = true
          release(x)
          x.sock:close()
          x.sock = nil
          return nil
        end
        return fail(x, "closed")
      end
      return fail(x, err)
    end
    return nil, nil, true
  end
end

-- The next piece of the body, "" never; nil when the body has ended (and
-- the connection went back to its pool), or nil and an error.
local function next_piece(x)
  if x.done then return nil end
  -- A loop only when a step is not enough (see read_head).
  local piece, err, again = piece_step(x)
  while again do piece, err, again = piece_step(x) end
  return piece, err
end

--- Reads up to n bytes of the body being streamed (body = false), or the
-- next piece when n is nil; nil at the end, or nil and an error.
function Response:read(n)
  local x = self._x
  local pending = self._pending
  if pending == nil or pending == "" then
    local piece, err = next_piece(x)
    if not piece then return nil, err end
    pending = piece
  end
  if n == nil or n >= #pending then
    self._pending = nil
    return pending
  end
  self._pending = sub(pending, n + 1)
  return sub(pending, 1, n)
end

--- An iterator over the pieces of the body being streamed.
function Response:chunks()
  return function() return self:read() end
end

-- The body inflated (gzip or zlib), at most max bytes: nil and an error
-- when it is larger or not a valid gzip or zlib stream.
local function gunzip(body, max)
  local cap = #body * 4 < 4096 and 4096 or #body * 4
  while true do
    if cap > max then cap = max end
    local out = ffi.new("char[?]", cap)
    local rc = C.mp_httpc_gunzip(body, #body, out, cap, sizeout)
    if rc == 0 then return ffi_string(out, sizeout[0]) end
    if rc ~= C.MP_AGAIN then return nil, "bad gzip body" end
    if cap >= max then return nil, "body too large" end
    cap = cap * 2
  end
end

-- Requests ------------------------------------------------------------------

local function header_lines(out, headers, seen)
  if headers == nil then return end
  if type(headers) ~= "table" then error("moonport.http: headers must be a table", 4) end
  for name, value in pairs(headers) do
    if type(name) ~= "string" or find(name, "[^%w!#$%%&'*+%-.^_`|~]") then
      error("moonport.http: bad header name " .. tostring(name), 4)
    end
    local values = type(value) == "table" and value or { value }
    for _, v in ipairs(values) do
      v = tostring(v)
      if find(v, "[%z\r\n]") then error("moonport.http: bad value for header " .. name, 4) end
      out[#out + 1] = name .. ": " .. v .. "\r\n"
    end
    seen[lower(name)] = true
  end
end

-- Sends an iterator's pieces as chunks, then the last chunk.
local function send_chunked(sock, it)
  while true do
    local piece = it()
    if piece == nil then break end
    piece = tostring(piece)
    if #piece > 0 then
      local ok, err = sock:send({ format("%x\r\n", #piece), piece, "\r\n" })
      if not ok then return nil, err end
    end
  end
  return sock:send("0\r\n\r\n")
end

-- The headers a request without any names.
local NONE = setmetatable({}, { __newindex = function() error("read-only") end })

local METHODS_WITHOUT_BODY = { GET = true, HEAD = true, DELETE = true, OPTIONS = true, TRACE = true }

local function ms(v, name, default)
  if v == nil then return default end
  if type(v) ~= "number" or v <= 0 or v ~= v then
    error("moonport.http: " .. name .. " must be a positive number of milliseconds", 4)
  end
  return v
end

-- Whether x failed before any byte of its answer on a connection from
-- the pool: the server may have closed it just as the request went out
-- (it had timed the connection out), and a fresh connection may do.
local function stale(x, err)
  return x.reused and #x.buf == 0 and err ~= "timeout"
end

-- Asks the proxy on x.sock for a tunnel to host:port (CONNECT); true once
-- it answers 2xx, else nil and an error naming its answer.
local function tunnel(x, host, port, auth)
  local target = authority(host, port)
  local ok, err = x.sock:send({ "CONNECT ", target, " HTTP/1.1\r\nHost: ", target, "\r\n",
    auth and "Proxy-Authorization: " .. auth .. "\r\n" or "", "\r\n" })
  if not ok then return nil, err end
  local line
  line, err = x.sock:receive("*l")
  if not line then return nil, err == "closed" and "proxy closed the connection" or err end
  local status = tonumber(match(line, "^HTTP/1%.%d (%d%d%d)"))
  if not status then return nil, "proxy answered CONNECT with no HTTP status" end
  local lines = 0
  repeat -- the rest of the head, which a 2xx to CONNECT ends with
    local field
    field, err = x.sock:receive("*l")
    if not field then return nil, err end
    lines = lines + 1
    if lines > MAX_FIELDS then return nil, "proxy answered CONNECT with too many header fields" end
  until field == ""
  if status < 200 or status > 299 then
    return nil, "proxy refused CONNECT: " .. gsub(line, "^HTTP/1%.%d ", "")
  end
  return true
end

-- The response of x once its head is whole, its body read unless opts
-- ask to stream it; or nil and an error. A function of its own, not the
-- end of exchange_once: LuaJIT goes on in its interpreter in a frame that
-- waited, and compiles a function called afterwards from its entry.
local function response(x, opts)
  local status, reason, headers = head_of(x)
  if opts.stream or opts.body == false then
    return setmetatable({ _x = x, status = status, reason = reason, headers = headers }, Response)
  end
  -- The body: most often one piece, kept as it is.
  local piece, perr = next_piece(x)
  if not piece then
    if perr then return nil, perr end
    piece = ""
  else
    local more
    more, perr = next_piece(x)
    if more then
      local pieces = { piece, more }
      while true do
        more, perr = next_piece(x)
        if not more then break end
        pieces[#pieces + 1] = more
      end
      piece = concat(pieces)
    end
    if perr then return nil, perr end
  end
  local res = setmetatable({ _x = x, status = status, reason = reason, headers = headers,
    body = piece }, Response)
  if opts.gzip then
    local coding = lower(res.headers["content-encoding"] or "")
    if coding == "gzip" or coding == "x-gzip" or coding == "deflate" then
      local body, err = gunzip(res.body, x.max_body)
      if not body then return nil, err end
      res.body = body
    end
  end
  return res
end

-- One request and its response: body is what to send (nil for none).
-- Returns the response, or nil, an error and whether it failed stale.
local function exchange_once(opts, method, url, body)
  local scheme, host, port, target = parse_url_cached(url)
  if not scheme then return nil, host end
  if opts.query then
    local q = encode_query(opts.query)
    if q ~= "" then target = target .. (find(target, "?", 1, true) and "&" or "?") .. q end
  end
  local timeout = ms(opts.timeout, "timeout", DEFAULT_TIMEOUT)
  local x = setmetatable({
    deadline = now() + timeout,
    connect_timeout = ms(opts.connect_timeout, "connect_timeout", timeout),
    send_timeout = ms(opts.send_timeout, "send_timeout", timeout),
    read_timeout = ms(opts.read_timeout, "read_timeout", timeout),
    max_body = opts.max_body_size or DEFAULT_MAX_BODY,
    keepalive_timeout = opts.keepalive_timeout or 60000,
    keepalive_pool = opts.keepalive_pool or 64,
    buf = new_buf(), pos = 0, got = 0,
  }, Exchange)
  local verify = opts.tls_verify ~= false
  local phost, pport, pauth
  if opts.proxy ~= nil then
    phost, pport, pauth = proxy_of(opts)
    if not phost then return nil, pport end
  end
  local sock = socket.tcp()
  if x.connect_timeout > timeout then x.connect_timeout = timeout end
  sock:settimeouts(x.connect_timeout, x.send_timeout, x.read_timeout)
  -- A pool per origin and TLS settings, and per proxy: through one, a
  -- connection is the proxy's (http) or a tunnel to the origin (https).
  local pool
  local p = not phost and parsed[url]
  if p then
    pool = p[verify and 5 or 6]
    if not pool then
      pool = format("%s://%s:%d%s", scheme, host, port,
        scheme == "https" and (verify and "" or "#noverify") or "")
      p[verify and 5 or 6] = pool
    end
  else
    pool = format("%s://%s:%d%s%s", scheme, host, port,
      scheme == "https" and (verify and "" or "#noverify") or "",
      phost and ("@" .. authority(phost, pport) .. (pauth and "#" .. pauth or "")) or "")
  end
  local ok, err = sock:connect(phost or host, pport or port, { pool = pool, pool_size = x.keepalive_pool })
  if not ok then return nil, err end
  x.sock = sock
  x.reused = sock:getreusedtimes() > 0
  if scheme == "https" then
    if phost and not x.reused then
      ok, err = tunnel(x, host, port, pauth)
      if not ok then return fail(x, err) end
    end
    ok, err = sock:sslhandshake(false, opts.server_name or host, verify)
    if not ok then return fail(x, err) end
  elseif phost then
    -- Through a proxy, the target names the origin (absolute form).
    target = "http://" .. (port == 80 and (find(host, ":", 1, true) and "[" .. host .. "]" or host)
      or authority(host, port)) .. target
  end

  -- The head.
  local chunked = false
  local head = { method, " ", target, " HTTP/1.1\r\n" }
  local seen = NONE
  if opts.headers ~= nil then
    seen = {}
    header_lines(head, opts.headers, seen)
  end
  if not seen.host then
    local default = port == DEFAULT_PORT[scheme]
    local h = find(host, ":", 1, true) and "[" .. host .. "]" or host
    head[#head + 1] = "Host: " .. h .. (default and "" or ":" .. port) .. "\r\n"
  end
  if not seen["user-agent"] then head[#head + 1] = "User-Agent: moonport\r\n" end
  if pauth and scheme == "http" and not seen["proxy-authorization"] then
    head[#head + 1] = "Proxy-Authorization: " .. pauth .. "\r\n"
  end
  if opts.gzip and not seen["accept-encoding"] then
    head[#head + 1] = "Accept-Encoding: gzip\r\n"
  end
  if opts.json ~= nil and body ~= nil and not seen["content-type"] then
    head[#head + 1] = "Content-Type: application/json\r\n"
  end
  if type(body) == "function" then
    chunked = true
    if not seen["transfer-encoding"] then head[#head + 1] = "Transfer-Encoding: chunked\r\n" end
  elseif body ~= nil then
    if type(body) == "table" then body = concat(body) end
    body = tostring(body)
    if not seen["content-length"] then head[#head + 1] = "Content-Length: " .. #body .. "\r\n" end
  elseif not METHODS_WITHOUT_BODY[method] and not seen["content-length"] then
    head[#head + 1] = "Content-Length: 0\r\n"
  end
  head[#head + 1] = "\r\n"
  if body ~= nil and not chunked then head[#head + 1] = body end
  -- The whole request's deadline bounds the sending too.
  local left = x.deadline - now()
  if left <= 0 then return fail(x, "timeout") end
  sock:settimeouts(x.connect_timeout, left < x.send_timeout and left or x.send_timeout, x.read_timeout)
  ok, err = sock:send(head)
  if not ok then
    fail(x, err)
    return nil, err, stale(x, err)
  end
  if chunked then
    ok, err = send_chunked(sock, body)
    if not ok then return fail(x, err) end
  end

  -- The answer.
  if nspare > 0 then
    x.parser, spare[nspare] = spare[nspare], nil
    nspare = nspare - 1
  else
    x.parser = ffi.new("uint64_t[?]", PARSER_WORDS) -- 8-byte aligned
  end
  C.mp_httpc_init(x.parser, MAX_HEAD, MAX_FIELDS)
  C.mp_httpc_start(x.parser, method == "HEAD" and 1 or 0)
  ok, err = read_head(x)
  if not ok then return nil, err, stale(x, err) end
  return response(x, opts)
end

-- Methods as given, of those requests name most, and as they are sent.
local METHOD = {}
for _, m in ipairs({ "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS" }) do
  METHOD[m], METHOD[lower(m)] = m, m
end

-- Methods a request may be sent again with (RFC 9110, 9.2.2).
local IDEMPOTENT = { GET = true, HEAD = true, PUT = true, DELETE = true, OPTIONS = true, TRACE = true }
-- How many times such a request is sent again after a stale failure.
local STALE_RETRIES = 2

local REDIRECTS = { [301] = true, [302] = true, [303] = true, [307] = true, [308] = true }

-- One request (exchange_once), sent again while it fails stale, when it
-- is idempotent (a body from an iterator cannot be sent twice).
local function exchange(opts, method, url, body)
  local res, err, failed_stale = exchange_once(opts, method, url, body)
  local retries = 0
  while not res and failed_stale and IDEMPOTENT[method] and type(body) ~= "function"
    and retries < STALE_RETRIES do
    retries = retries + 1
    res, err, failed_stale = exchange_once(opts, method, url, body)
  end
  return res, err
end

-- The target of a Location header, made absolute against url.
local function resolve(url, location)
  if match(location, "^%a[%w+.-]*://") then return location end
  local scheme, host, port = parse_url(url)
  local origin = scheme .. "://" .. (find(host, ":", 1, true) and "[" .. host .. "]" or host)
    .. (port == DEFAULT_PORT[scheme] and "" or ":" .. port)
  if sub(location, 1, 2) == "//" then return scheme .. ":" .. location end
  if sub(location, 1, 1) == "/" then return origin .. location end
  local _, _, _, target = parse_url(url)
  return origin .. gsub(match(target, "^[^?]*"), "[^/]*$", "") .. location
end

--- Sends a request and reads its response. opts: url (http or https),
-- method (default GET), headers (a table: name -> value or array of
-- values), query (a string or a table), body (a string, a table of
-- strings, or an iterator function sent chunked), json (a value sent as
-- JSON), timeout (ms for the whole request, default 60000),
-- connect_timeout, send_timeout, read_timeout (ms each, default timeout),
-- tls_verify (default true), server_name (SNI, default the host),
-- max_body_size (default 64 MiB), follow_redirects (how many, default
-- 0), stream (true, or body = false: the answer's body is not read;
-- res:read and res:chunks give it), keepalive_timeout and keepalive_pool (the pool's idle time in ms
-- and size), proxy (an http:// forward proxy, user:password@ for Basic
-- authentication) and proxy_authorization. An idempotent request whose
-- pooled connection was closed as it went out is sent again. Returns the response ({status, reason, headers, body}), or
-- nil and an error ("timeout", "closed", "connection refused", a TLS or
-- parse error).
-- @usage local res, err = http.request({ method = "POST", url = u, json = { a = 1 } })
function http.request(opts)
  if type(opts) ~= "table" then error("moonport.http.request: takes a table of options", 2) end
  local method = METHOD[opts.method or "GET"]
  if not method then
    method = upper(opts.method)
    if find(method, "[^%u%-_]") then error("moonport.http.request: bad method " .. method, 2) end
  end
  local url = opts.url
  local body = opts.body
  if body == false then body = nil end -- body = false: stream the answer's
  if opts.json ~= nil then body = json.encode(opts.json) end
  local redirects = opts.follow_redirects or 0
  local res, err = exchange(opts, method, url, body)
  -- Redirects, when asked for (no loop in the common case, so that the
  -- JIT compiles the way through).
  while res and redirects > 0 and REDIRECTS[res.status] and res.headers.location do
    redirects = redirects - 1
    url = resolve(url, res.headers.location)
    -- 303, and 301/302 after a POST, as browsers do: a GET without body.
    if res.status == 303 or ((res.status == 301 or res.status == 302) and method == "POST") then
      method, body = "GET", nil
    end
    res, err = exchange(opts, method, url, body)
  end
  if not res then return nil, err end
  return res
end

--- GET url. opts as for request.
-- @usage local res, err = http.get("http://127.0.0.1:8081/health")
function http.get(url, opts)
  local o = setmetatable({ url = url, method = "GET" }, { __index = opts or {} })
  return http.request(o)
end

--- POST body (a string, a table of strings or an iterator) to url.
-- @usage local res, err = http.post(url, "a=1", { headers = { ["Content-Type"] = "application/x-www-form-urlencoded" } })
function http.post(url, body, opts)
  local o = setmetatable({ url = url, method = "POST", body = body }, { __index = opts or {} })
  return http.request(o)
end

return http
