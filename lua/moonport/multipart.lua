--- Streaming multipart/form-data (RFC 7578 on RFC 2046's syntax): the
-- parts of a body read piece by piece, each part's data handed on as it
-- arrives, so that a file of any size passes through in pieces no larger
-- than a piece of the body and a delimiter. req:parts is made of it; this
-- module knows nothing of requests, only of a function that gives the
-- body's next piece.
--
--     for part in req:parts() do
--       if part.filename then
--         for piece in part:chunks() do sink(piece) end
--       else
--         fields[part.name] = part:body()
--       end
--     end
--
-- A malformed body or a limit passed raises an error object (a table):
-- err.status is 400 (malformed) or 413 (a limit), err.message says what
-- happened (tostring(err) gives it too), so a handler can answer it:
--
--     local ok, err = pcall(save_upload, req)
--     if not ok and type(err) == "table" and err.status then
--       return res:status(err.status):json({ error = err.message })
--     end
--
-- @module moonport.multipart

local type, error, tostring, pairs = type, error, tostring, pairs
local setmetatable, getmetatable = setmetatable, getmetatable
local find, sub, lower, match, gmatch, byte =
  string.find, string.sub, string.lower, string.match, string.gmatch, string.byte
local concat = table.concat
local unescape = require("moonport.core.url").unescape

local multipart = {}

--- The defaults of req:parts' limits: at most max_parts parts (100), and
-- at most max_header_size bytes (8 KiB) in one part's header block.
multipart.defaults = { max_parts = 100, max_header_size = 8 * 1024 }

-- Errors ------------------------------------------------------------------

local Error = {}
Error.__index = Error
Error.__tostring = function(e) return e.message end

--- Whether v is an error req:parts raised (a table with status and
-- message).
-- @usage if multipart.is_error(err) then res:status(err.status) end
function multipart.is_error(v)
  return type(v) == "table" and getmetatable(v) == Error
end

local function raise(status, message)
  error(setmetatable({ status = status, message = "req:parts: " .. message }, Error), 0)
end

-- The Content-Type ------------------------------------------------------

--- The boundary of a multipart/form-data Content-Type value, or nil and
-- why not: not multipart/form-data, or no boundary of 1 to 70 bytes.
-- @usage local b, err = multipart.boundary(req:header("content-type"))
function multipart.boundary(content_type)
  if type(content_type) ~= "string" then return nil, "no Content-Type" end
  local media, params = match(content_type, "^[ \t]*([^;]-)[ \t]*(;.*)$")
  if not media then media, params = match(content_type, "^[ \t]*(.-)[ \t]*$"), "" end
  if lower(media) ~= "multipart/form-data" then
    return nil, "Content-Type is not multipart/form-data"
  end
  for name, value in gmatch(params, ';[ \t]*([^=; \t]+)[ \t]*=[ \t]*("?[^;"]*"?)') do
    if lower(name) == "boundary" then
      value = match(value, '^"(.*)"$') or value
      -- RFC 2046 section 5.1.1: 1 to 70 characters, and no space at the end.
      if #value < 1 or #value > 70 or find(value, "[%c]") or find(value, " $") then
        return nil, "invalid multipart boundary"
      end
      return value
    end
  end
  return nil, "multipart/form-data without a boundary"
end

-- The stream ------------------------------------------------------------
-- s.buf holds what was read and not yet handed on, from s.pos; a piece
-- read when all of it has been handed on becomes buf as it is, so that the
-- data of a large part is not copied from piece to piece. The body is
-- read as if it began with CRLF, so that the first delimiter is found as
-- every other one: CRLF "--" boundary.

-- Reads the next piece into s.buf; false at the end of the body.
local function fill(s)
  if s.eof then return false end
  local piece, err = s.read()
  if piece == nil then
    if err ~= nil then
      raise(400, "the client closed the connection before the end of the body")
    end
    s.eof = true
    return false
  end
  if s.pos > #s.buf then
    s.buf = piece
  else
    s.buf = sub(s.buf, s.pos) .. piece
  end
  s.pos = 1
  return true
end

-- Ensures n bytes from s.pos, or raises with why.
local function need(s, n, why)
  while #s.buf - s.pos + 1 < n do
    if not fill(s) then raise(400, why) end
  end
end

-- Skips to just past the first delimiter (the preamble is dropped).
local function skip_preamble(s)
  local delim = s.delim
  while true do
    local i = find(s.buf, delim, s.pos, true)
    if i then
      s.pos = i + #delim
      return
    end
    -- Keep what could be the delimiter's beginning.
    local keep = #s.buf - #delim + 2
    if keep > s.pos then s.pos = keep end
    if not fill(s) then raise(400, "no boundary in the body") end
  end
end

-- After a delimiter: true when it was the last ("--"), else skips the
-- transport padding and CRLF that end its line.
local function after_delimiter(s)
  need(s, 2, "the body ended after a boundary")
  if sub(s.buf, s.pos, s.pos + 1) == "--" then return true end
  while true do
    local i = find(s.buf, "\r\n", s.pos, true)
    if i then
      if find(sub(s.buf, s.pos, i - 1), "[^ \t]") then
        raise(400, "a boundary line has more after the boundary")
      end
      s.pos = i + 2
      return false
    end
    if #s.buf - s.pos + 1 > 256 then raise(400, "a boundary line has more after the boundary") end
    if not fill(s) then raise(400, "the body ended after a boundary") end
  end
end

-- The parameters of a header value (Content-Disposition's), lower-case
-- names to values, the first of a repeated name kept: a value is a
-- quoted string (a backslash takes the next byte as it is) or runs to the
-- next ';'.
local function parameters(text)
  local params = {}
  local len = #text
  local i = find(text, ";", 1, true)
  while i do
    local _, e, name = find(text, "^;[ \t]*([^=; \t]+)[ \t]*=[ \t]*", i)
    if not e then
      i = find(text, ";", i + 1, true)
    else
      local value
      i = e + 1
      if byte(text, i) == 34 then
        local out = {}
        i = i + 1
        while i <= len do
          local c = sub(text, i, i)
          if c == '"' then i = i + 1 break end
          if c == "\\" and i < len then i = i + 1 c = sub(text, i, i) end
          out[#out + 1] = c
          i = i + 1
        end
        value = concat(out)
      else
        value = match(text, "^([^;]-)[ \t]*$", i) or match(text, "^([^;]-)[ \t]*;", i)
      end
      name = lower(name)
      if params[name] == nil then params[name] = value end
      i = find(text, ";", i, true)
    end
  end
  return params
end

-- Reads a part's header block into a table of lower-case names to values
-- (repeated names joined by ", ").
local function read_headers(s)
  local max = s.max_header_size
  need(s, 2, "the body ended in a part's headers")
  local block
  if sub(s.buf, s.pos, s.pos + 1) == "\r\n" then
    block = ""
    s.pos = s.pos + 2
  else
    while true do
      local i = find(s.buf, "\r\n\r\n", s.pos, true)
      if i then
        if i - s.pos > max then break end
        block = sub(s.buf, s.pos, i - 1)
        s.pos = i + 4
        break
      end
      if #s.buf - s.pos + 1 > max + 3 then break end
      if not fill(s) then raise(400, "the body ended in a part's headers") end
    end
    if block == nil then
      raise(413, "a part's headers are larger than " .. max .. " bytes (max_header_size)")
    end
  end
  local headers = {}
  if block == "" then return headers end
  for line in gmatch(block .. "\r\n", "(.-)\r\n") do
    local name, value = match(line, "^([!#%$%%&'%*%+%-%.%^_`|~%w]+):[ \t]*(.-)[ \t]*$")
    if not name then raise(400, "a part has a malformed header line") end
    name = lower(name)
    local seen = headers[name]
    headers[name] = seen and (seen .. ", " .. value) or value
  end
  return headers
end

-- The next piece of the current part's data, or nil at its end.
local function data(s)
  local part = s.part
  if part.done then return nil end
  local delim = s.delim
  while true do
    local buf, pos = s.buf, s.pos
    local i = find(buf, delim, pos, true)
    if i then
      s.pos = i + #delim
      part.done = true
      if i > pos then return sub(buf, pos, i - 1) end
      return nil
    end
    -- Hand on all but what could begin the delimiter: from the first CR
    -- among the last #delim - 1 bytes.
    local from = #buf - #delim + 2
    if from < pos then from = pos end
    local cr = find(buf, "\r", from, true)
    local stop = cr and cr - 1 or #buf
    if stop >= pos then
      s.pos = stop + 1
      if pos == 1 and stop == #buf then return buf end
      return sub(buf, pos, stop)
    end
    if not fill(s) then raise(400, "the body ended inside a part") end
  end
end

-- Parts -------------------------------------------------------------------

local Part = {}
Part.__index = Part

--- The part's next piece of data as it arrives, or nil at the part's
-- end; with n, the next n bytes (fewer at the end of the part), nil at
-- its end. Raises as the parts' loop does.
-- @usage local piece = part:read()
function Part:read(n)
  if self._s.part ~= self then return nil end
  local pending = self._pending
  if n == nil then
    if pending then
      self._pending = nil
      return pending
    end
    return data(self._s)
  end
  if type(n) ~= "number" or n < 1 or n % 1 ~= 0 then
    error("part:read: n must be a positive integer", 2)
  end
  local pieces, have = {}, 0
  if pending then pieces[1], have, self._pending = pending, #pending, nil end
  while have < n do
    local piece = data(self._s)
    if piece == nil then break end
    pieces[#pieces + 1] = piece
    have = have + #piece
  end
  if have == 0 then return nil end
  local text = concat(pieces)
  if have > n then
    self._pending = sub(text, n + 1)
    text = sub(text, 1, n)
  end
  return text
end

--- Iterates over the part's data, piece by piece as it arrives.
-- @usage for piece in part:chunks() do digest:update(piece) end
function Part:chunks()
  return function() return self:read() end
end

--- The rest of the part's data as one string ("" when none): for form
-- fields, not for files (it is held whole, and counts against
-- --request-memory-limit).
-- @usage local title = part:body()
function Part:body()
  local pieces = {}
  for piece in self:chunks() do pieces[#pieces + 1] = piece end
  return concat(pieces)
end

-- The part that begins at s.pos.
local function new_part(s)
  local headers = read_headers(s)
  local part = setmetatable({ headers = headers, _s = s }, Part)
  local disposition = headers["content-disposition"]
  if disposition then
    local params = parameters(disposition)
    part.name, part.filename = params.name, params.filename
    -- RFC 5987's charset'language'percent-encoded form, which RFC 7578
    -- tells senders to leave out but some still send.
    local ext = params["filename*"]
    local encoded = ext and match(ext, "^[^']*'[^']*'(.*)$")
    if encoded then part.filename = unescape(encoded) end
  end
  part.content_type = headers["content-type"] or "text/plain"
  return part
end

--- req:parts' limits from its opts (nil: the defaults): max_parts and
-- max_header_size, positive integers. Raises, blaming the caller of
-- req:parts, for anything else.
-- @usage local max_parts, max_header_size = multipart.options(opts)
function multipart.options(opts)
  local defaults = multipart.defaults
  if opts == nil then return defaults.max_parts, defaults.max_header_size end
  if type(opts) ~= "table" then error("req:parts: opts must be a table", 3) end
  for k, v in pairs(opts) do
    if k ~= "max_parts" and k ~= "max_header_size" then
      error("req:parts: unknown option '" .. tostring(k) .. "'", 3)
    end
    if type(v) ~= "number" or v < 1 or v % 1 ~= 0 then
      error("req:parts: " .. k .. " must be a positive integer", 3)
    end
  end
  return opts.max_parts or defaults.max_parts,
         opts.max_header_size or defaults.max_header_size
end

--- An iterator over the parts of a multipart body whose pieces read()
-- gives (a piece, nil at the end, nil and an error when the client left),
-- with boundary and the limits max_parts and max_header_size. Each part is a table: headers (lower-case names to values),
-- name and filename (from Content-Disposition; filename nil for a field;
-- filename* is decoded), content_type ("text/plain" when the part has
-- none), and part:read(n), part:chunks(), part:body(). Asking for the
-- next part skips what was not read of the one before. After the last
-- part, the rest of the body (the epilogue) is read and dropped.
-- @usage for part in multipart.parts(read, boundary, 100, 8192) do ... end
function multipart.parts(read, boundary, max_parts, max_header_size)
  local s = {
    read = read, buf = "\r\n", pos = 1, eof = false,
    delim = "\r\n--" .. boundary, part = nil, count = 0, finished = false,
    max_header_size = max_header_size,
  }
  return function()
    if s.finished then return nil end
    local part = s.part
    if part == nil then
      skip_preamble(s)
    else
      part._pending = nil
      while data(s) do end
    end
    if after_delimiter(s) then
      s.finished = true
      s.part = nil
      -- The epilogue.
      while fill(s) do s.pos = #s.buf + 1 end
      return nil
    end
    s.count = s.count + 1
    if s.count > max_parts then
      raise(413, "more than " .. max_parts .. " parts (max_parts)")
    end
    part = new_part(s)
    s.part = part
    return part
  end
end

return multipart
