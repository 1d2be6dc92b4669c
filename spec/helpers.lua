--- Helpers for moonport's integration specs.
--
-- Speaks raw HTTP/1.1 over lua-socket with a strict response parser (CRLF
-- line ends, Content-Length, chunked framing, read-until-close), and
-- re-exports spec/support/process.lua's `run` and `start`. Every wait in
-- here is bounded by a deadline. Specs start their servers through
-- spec/support/server.lua, which also stops and checks them.
--
-- Usage:
--   local helpers = require("spec.helpers")
--   local support = require("spec.support.server")
--   local server = support.serve("scripts/api.lua")  -- in a describe block
--   local status, headers, body = helpers.request(server.port, "GET", "/health")

local socket = require("socket")
local cjson = require("cjson.safe")
local unistd = require("posix.unistd")
local dirent = require("posix.dirent")
local process = require("spec.support.process")

local helpers = {}

-- What the process module offers, for the specs that run the binary
-- themselves.
for _, name in ipairs({ "root", "bin", "now", "nap", "shorten", "run", "start",
                        "children", "listening_pattern" }) do
  helpers[name] = process[name]
end
local shorten = helpers.shorten

--- Default bound, in seconds, on any single wait on a socket.
helpers.timeout = 5

--- `path` as an absolute path: relative ones are under the repository root.
function helpers.resolve(path)
  if path:sub(1, 1) == "/" then return path end
  return helpers.root .. "/" .. path
end

------------------------------------------------------------------------------
-- Building requests
------------------------------------------------------------------------------

-- Normalises headers given as a list of {name, value} pairs or a map into a
-- list of pairs.
local function header_list(headers)
  local list = {}
  if not headers then return list end
  if #headers > 0 then
    for _, h in ipairs(headers) do list[#list + 1] = { h[1], h[2] } end
  else
    local names = {}
    for k in pairs(headers) do names[#names + 1] = k end
    table.sort(names)
    for _, k in ipairs(names) do list[#list + 1] = { k, headers[k] } end
  end
  return list
end

--- Builds the raw bytes of a request. `headers` is a list of {name, value}
-- pairs or a map. Adds `Host: 127.0.0.1` unless a Host header is given, and
-- `Content-Length` for a body unless Content-Length or Transfer-Encoding is
-- given. `version` defaults to "HTTP/1.1".
function helpers.build_request(method, target, headers, body, version)
  local list = header_list(headers)
  local has = {}
  for _, h in ipairs(list) do has[h[1]:lower()] = true end
  local out = { ("%s %s %s\r\n"):format(method, target, version or "HTTP/1.1") }
  if not has.host then out[#out + 1] = "Host: 127.0.0.1\r\n" end
  for _, h in ipairs(list) do out[#out + 1] = h[1] .. ": " .. h[2] .. "\r\n" end
  if body and not has["content-length"] and not has["transfer-encoding"] then
    out[#out + 1] = "Content-Length: " .. #body .. "\r\n"
  end
  out[#out + 1] = "\r\n"
  out[#out + 1] = body or ""
  return table.concat(out)
end

--- Encodes `body` with chunked framing, in chunks of `size` bytes (default:
-- one chunk), followed by the last chunk and an empty trailer.
function helpers.chunked(body, size)
  local out = {}
  size = size or math.max(#body, 1)
  local i = 1
  while i <= #body do
    local piece = body:sub(i, i + size - 1)
    out[#out + 1] = ("%x\r\n%s\r\n"):format(#piece, piece)
    i = i + size
  end
  out[#out + 1] = "0\r\n\r\n"
  return table.concat(out)
end

--- The body GET /blob/:n must return: `n` bytes of "abcdefghij" repeating.
function helpers.blob(n)
  return ("abcdefghij"):rep(math.floor(n / 10) + 1):sub(1, n)
end

------------------------------------------------------------------------------
-- Parsing responses
------------------------------------------------------------------------------

local function parse_error(msg, buf)
  error("bad HTTP response from server: " .. msg .. "; bytes: " .. shorten(buf, 400), 0)
end

-- Parses one response at the start of `buf`. Returns the response and the
-- number of bytes it took; nil, "more" if `buf` holds only part of it; nil,
-- "eof" if the stream ended cleanly before any byte. Raises on bytes that
-- are not HTTP/1.1.
local function parse_response(buf, eof, is_head)
  local head_end = buf:find("\r\n\r\n", 1, true)
  if not head_end then
    if #buf == 0 and eof then return nil, "eof" end
    if eof then parse_error("stream ended inside the head", buf) end
    if buf:find("\n\n", 1, true) then parse_error("head ends with bare LF", buf) end
    return nil, "more"
  end
  local head = buf:sub(1, head_end - 1)
  local lines = {}
  for line in (head .. "\r\n"):gmatch("(.-)\r\n") do lines[#lines + 1] = line end
  for _, line in ipairs(lines) do
    if line:find("[\r\n]") then parse_error("bare CR or LF in the head", buf) end
  end
  local version, status, reason = lines[1]:match("^HTTP/(%d%.%d) (%d%d%d) ?(.*)$")
  if not version then parse_error("bad status line", buf) end
  local resp = {
    version = version, status = tonumber(status), reason = reason,
    header_list = {}, headers = {}, head = head,
  }
  for i = 2, #lines do
    local name, value = lines[i]:match("^([!#$%%&'*+%-.^_`|~%w]+):[ \t]*(.-)[ \t]*$")
    if not name then parse_error("bad header line " .. shorten(lines[i]), buf) end
    resp.header_list[#resp.header_list + 1] = { name, value }
    local key = name:lower()
    if resp.headers[key] then
      resp.headers[key] = resp.headers[key] .. ", " .. value
    else
      resp.headers[key] = value
    end
  end

  local pos = head_end + 4
  local code = resp.status
  local te = resp.headers["transfer-encoding"]
  local cl = resp.headers["content-length"]
  if is_head or code < 200 or code == 204 or code == 304 then
    resp.body = ""
    return resp, pos - 1
  end
  if te then
    if cl then parse_error("both Content-Length and Transfer-Encoding", buf) end
    if te:lower() ~= "chunked" then parse_error("unexpected Transfer-Encoding " .. te, buf) end
    resp.chunked = true
    resp.chunk_sizes = {}
    local parts = {}
    while true do
      local line_end = buf:find("\r\n", pos, true)
      if not line_end then
        if eof then parse_error("stream ended inside a chunk size line", buf) end
        return nil, "more"
      end
      local line = buf:sub(pos, line_end - 1)
      local hex = line:match("^(%x+)[ \t]*;?.*$")
      if not hex or line:find("[\r\n]") then parse_error("bad chunk size line " .. shorten(line), buf) end
      local size = tonumber(hex, 16)
      pos = line_end + 2
      if size == 0 then
        -- Trailer section: header lines until an empty line.
        while true do
          local t_end = buf:find("\r\n", pos, true)
          if not t_end then
            if eof then parse_error("stream ended inside the trailer", buf) end
            return nil, "more"
          end
          local t = buf:sub(pos, t_end - 1)
          pos = t_end + 2
          if t == "" then break end
        end
        break
      end
      if #buf < pos + size + 1 then
        if eof then parse_error("stream ended inside a chunk", buf) end
        return nil, "more", pos + size + 1
      end
      parts[#parts + 1] = buf:sub(pos, pos + size - 1)
      resp.chunk_sizes[#resp.chunk_sizes + 1] = size
      if buf:sub(pos + size, pos + size + 1) ~= "\r\n" then
        parse_error("chunk data not followed by CRLF", buf)
      end
      pos = pos + size + 2
    end
    resp.body = table.concat(parts)
    return resp, pos - 1
  end
  if cl then
    if not cl:match("^%d+$") then parse_error("bad Content-Length " .. cl, buf) end
    local n = tonumber(cl)
    if #buf < pos + n - 1 then
      if eof then
        parse_error(("stream ended after %d of %d body bytes"):format(#buf - pos + 1, n), buf)
      end
      return nil, "more", pos + n - 1
    end
    resp.body = buf:sub(pos, pos + n - 1)
    return resp, pos + n - 1
  end
  if not eof then return nil, "more" end
  resp.body = buf:sub(pos)
  resp.until_close = true
  return resp, #buf
end
helpers.parse_response = parse_response

------------------------------------------------------------------------------
-- Raw client connections
------------------------------------------------------------------------------

-- A connection keeps what it has read as `buf`. Reads are kept as a list
-- of pieces and joined only when `buf` is asked for, and a response whose
-- length is known is not parsed again until enough bytes are in: a large
-- body read in 64 KiB pieces costs linear time, not quadratic.
local Conn = {}

function Conn.__index(self, key)
  if key == "buf" then
    local parts = rawget(self, "parts")
    if #parts > 0 then
      rawset(self, "joined", rawget(self, "joined") .. table.concat(parts))
      for i = #parts, 1, -1 do parts[i] = nil end
      rawset(self, "pending", 0)
    end
    return rawget(self, "joined")
  end
  return Conn[key]
end

function Conn.__newindex(self, key, value)
  if key ~= "buf" then return rawset(self, key, value) end
  rawset(self, "joined", value)
  local parts = rawget(self, "parts")
  for i = #parts, 1, -1 do parts[i] = nil end
  rawset(self, "pending", 0)
  rawset(self, "need", nil)
end

--- Opens a TCP connection to 127.0.0.1:port. Returns a connection object.
function helpers.connect(port, timeout)
  local sock = assert(socket.tcp())
  sock:settimeout(timeout or helpers.timeout)
  local ok, err = sock:connect("127.0.0.1", port)
  if not ok then
    sock:close()
    error(("connect to 127.0.0.1:%s failed: %s"):format(tostring(port), tostring(err)), 2)
  end
  return setmetatable({ sock = sock, joined = "", parts = {}, pending = 0, eof = false,
                        port = port }, Conn)
end

--- Turns on TCP_NODELAY so that each send goes out as its own segment.
function Conn:nodelay()
  assert(self.sock:setoption("tcp-nodelay", true))
  return self
end

--- Sends all of `data`, within `timeout` seconds. Returns true, or nil and
-- the error ("closed", "timeout", ...).
function Conn:try_send(data, timeout)
  local deadline = helpers.now() + (timeout or helpers.timeout)
  local i = 1
  while i <= #data do
    local left = deadline - helpers.now()
    if left <= 0 then return nil, "timeout", i - 1 end
    self.sock:settimeout(left)
    local last, err, partial = self.sock:send(data, i)
    if last then
      i = last + 1
    elseif err == "timeout" then
      i = partial + 1
    else
      return nil, err, partial
    end
  end
  return true
end

--- Sends all of `data`; raises on failure.
function Conn:send(data, timeout)
  local ok, err, sent = self:try_send(data, timeout)
  if not ok then
    error(("send failed after %d of %d bytes: %s"):format(sent or 0, #data, err), 2)
  end
  return self
end

--- Sends `data` one byte per send call (turn on nodelay first).
function Conn:send_bytewise(data, timeout)
  for i = 1, #data do self:send(data:sub(i, i), timeout) end
  return self
end

--- Reads whatever is available, waiting until `deadline` at most. Returns
-- true if something changed (data or end of stream), false on timeout.
function Conn:fill(deadline)
  if self.eof then return false end
  local left = deadline - helpers.now()
  if left <= 0 then return false end
  local readable = socket.select({ self.sock }, nil, left)
  if not readable or #readable == 0 then return false end
  return self:read_available()
end

--- Reads what the socket holds now without waiting. Returns true if it read
-- bytes or saw the end of the stream.
function Conn:read_available()
  if self.eof then return false end
  self.sock:settimeout(0)
  local data, err, partial = self.sock:receive(65536)
  local chunk = data or partial
  local changed = false
  if chunk and #chunk > 0 then
    self.parts[#self.parts + 1] = chunk
    self.pending = self.pending + #chunk
    changed = true
  end
  if err == "closed" then
    self.eof, changed = true, true
  elseif err and err ~= "timeout" then
    self.eof, self.error, changed = true, err, true
  end
  return changed
end

--- Tries to take one complete response off the buffer without reading.
-- Returns the response, or nil and "more" / "eof".
function Conn:take_response(opts)
  opts = opts or {}
  while true do
    if self.need and not self.eof and #self.joined + self.pending < self.need then
      return nil, "more"
    end
    local resp, used, need = parse_response(self.buf, self.eof, opts.head)
    if not resp then
      self.need = need
      return nil, used
    end
    self.buf = self.buf:sub(used + 1)
    if resp.status >= 200 or resp.status == 101 or opts.interim then return resp end
  end
end

--- Reads one response. `opts.head`: the request was HEAD (no body);
-- `opts.timeout`: seconds to wait (default 5); `opts.interim`: return 1xx
-- responses instead of skipping them. Returns nil if the server closed the
-- connection cleanly before sending any byte of a response; raises on a
-- timeout or malformed bytes.
function Conn:read_response(opts)
  opts = opts or {}
  local deadline = helpers.now() + (opts.timeout or helpers.timeout)
  while true do
    local resp, why = self:take_response(opts)
    if resp then return resp end
    if why == "eof" then return nil, self.error or "closed" end
    if not self:fill(deadline) and helpers.now() >= deadline then
      error(("timed out after %gs waiting for a response; have %d bytes: %s"):format(
        opts.timeout or helpers.timeout, #self.buf, shorten(self.buf)), 2)
    end
  end
end

--- Waits up to `timeout` seconds for the server to close the connection.
-- Returns true if the stream ended with no further bytes; false and the
-- extra bytes (or "timeout") otherwise.
function Conn:wait_eof(timeout)
  local deadline = helpers.now() + (timeout or helpers.timeout)
  while not self.eof do
    if not self:fill(deadline) and helpers.now() >= deadline then break end
  end
  if self.eof and #self.buf == 0 then return true end
  if #self.buf > 0 then return false, "unexpected bytes before EOF: " .. shorten(self.buf) end
  return false, ("connection still open after %gs"):format(timeout or helpers.timeout)
end

--- Sends one request and reads its response.
function Conn:request(method, target, headers, body, opts)
  self:send(helpers.build_request(method, target, headers, body, opts and opts.version))
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  o.head = o.head or method == "HEAD"
  local resp = self:read_response(o)
  if not resp then error(("connection closed before a response to %s %s"):format(method, target), 2) end
  return resp
end

--- POSTs `piece` to `target` as `count` chunks, each sent once the
-- handler has read the one before: GET `progress` (on another connection)
-- answers how many pieces it has read so far. So the body arrives in
-- pieces however slow the machine, and the handler sees `count` of them.
-- Returns the response.
function Conn:post_in_pieces(target, piece, count, progress)
  self:nodelay()
  self:send("POST " .. target .. " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
  for k = 1, count do
    self:send(("%x\r\n%s\r\n"):format(#piece, piece))
    local read = helpers.eventually(function()
      local _, _, body = helpers.request(self.port, "GET", progress)
      return (tonumber(body) or 0) >= k
    end, 10)
    if not read then error(("the handler did not read piece %d of %d"):format(k, count), 2) end
  end
  self:send("0\r\n\r\n")
  return self:read_response()
end

function Conn:close()
  if self.sock then self.sock:close() end
  self.sock = nil
end

--- One request on a new connection. Returns status, headers (lowercase
-- map), body, and the whole response object.
function helpers.request(port, method, target, headers, body, opts)
  local conn = helpers.connect(port)
  local ok, resp = pcall(conn.request, conn, method, target, headers, body, opts)
  conn:close()
  if not ok then error(resp, 2) end
  return resp.status, resp.headers, resp.body, resp
end

--- Decodes a JSON body; raises with the body if it is not JSON.
function helpers.json(body)
  local v, err = cjson.decode(body)
  if v == nil then error(("body is not JSON (%s): %s"):format(tostring(err), shorten(body)), 2) end
  return v
end

--- Whether `text` is the JSON object made of `members` (each a
-- '"key":value' text) in some order: objects are written in table order,
-- which Lua does not fix. Returns true, or false and why.
function helpers.json_object_text(members, text)
  local function orders(list, n, out)
    if n <= 1 then
      out[#out + 1] = "{" .. table.concat(list, ",") .. "}"
      return out
    end
    for i = 1, n do
      list[i], list[n] = list[n], list[i]
      orders(list, n - 1, out)
      list[i], list[n] = list[n], list[i]
    end
    return out
  end
  for _, candidate in ipairs(orders({ unpack(members) }, #members, {})) do
    if candidate == text then return true end
  end
  return false, ("%s is not {%s} in any order"):format(tostring(text), table.concat(members, ","))
end

--- The document GET /__moonport/stats answers (the server runs with
-- --stats). Raises unless the answer is a 200 with JSON.
function helpers.stats(port)
  local status, _, body = helpers.request(port, "GET", "/__moonport/stats")
  if status ~= 200 then
    error(("GET /__moonport/stats answered %d: %s"):format(status, shorten(body)), 2)
  end
  return helpers.json(body)
end

--- Checks that `resp` carries a JSON error body: {"error": "<string>"}.
-- Returns the message.
function helpers.json_error(resp)
  local ct = resp.headers["content-type"] or ""
  if not ct:lower():find("^application/json") then
    error(("error response Content-Type is %q, want application/json; body: %s"):format(
      ct, shorten(resp.body)), 2)
  end
  local v, err = cjson.decode(resp.body)
  if type(v) ~= "table" or type(v.error) ~= "string" or v.error == "" then
    error(("want a JSON body with a string \"error\" key, got %s (%s)"):format(
      shorten(resp.body), tostring(err)), 2)
  end
  return v.error
end

--- Values of every header named `name` (case-insensitive), in order.
function helpers.header_values(resp, name)
  local out = {}
  name = name:lower()
  for _, h in ipairs(resp.header_list) do
    if h[1]:lower() == name then out[#out + 1] = h[2] end
  end
  return out
end

--- Index of the first byte where `a` and `b` differ, or nil if equal.
function helpers.first_difference(a, b)
  if a == b then return nil end
  local n = math.min(#a, #b)
  local lo = 1
  -- Compare in blocks, then bytes, so megabyte bodies stay cheap.
  while lo <= n do
    local hi = math.min(lo + 4095, n)
    if a:sub(lo, hi) ~= b:sub(lo, hi) then
      for i = lo, hi do
        if a:byte(i) ~= b:byte(i) then return i end
      end
    end
    lo = hi + 1
  end
  return n + 1
end

------------------------------------------------------------------------------
-- Scratch files
------------------------------------------------------------------------------

--- Writes `text` to `path` (replacing it).
function helpers.write_file(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

--- What an editor that saves by rename does: a new file, renamed over.
function helpers.write_by_rename(path, text)
  helpers.write_file(path .. ".swp", text)
  assert(os.rename(path .. ".swp", path))
end

--- A new empty directory under /tmp.
function helpers.scratch_dir()
  local dir = os.tmpname()
  os.remove(dir)
  assert(require("posix.sys.stat").mkdir(dir, 493))
  return dir
end

--- Removes a scratch directory and everything in it, subdirectories
-- included (a symbolic link is removed, never followed).
function helpers.remove_dir(dir)
  local ok, names = pcall(dirent.files, dir)
  if not ok then return end
  for name in names do
    if name ~= "." and name ~= ".." then
      local path = dir .. "/" .. name
      local st = require("posix.sys.stat").lstat(path)
      if st and require("posix.sys.stat").S_ISDIR(st.st_mode) ~= 0 then
        helpers.remove_dir(path)
      else
        os.remove(path)
      end
    end
  end
  unistd.rmdir(dir)
end

--- The whole contents of the file at path (raises when it cannot be read).
function helpers.read_file(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("*a")
  f:close()
  return text
end

--- Waits until `fn()` returns a true value or `timeout` seconds pass.
-- Returns that value, or nil on timeout.
function helpers.eventually(fn, timeout)
  local deadline = helpers.now() + (timeout or helpers.timeout)
  repeat
    local v = fn()
    if v then return v end
    helpers.nap(0.02)
  until helpers.now() >= deadline
  return nil
end

return helpers
