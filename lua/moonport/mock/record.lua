--- Recording for the mock server, as WireMock records: stub mappings made
-- from the journal's proxied exchanges (a request and the response the
-- real API gave), and the files WireMock writes for them, so that a
-- recorded directory serves the same answers in moonport and in WireMock.
--
--     local spec = assert(record.spec(body, compile))
--     local mappings = record.mappings(entries, spec)
--     for _, m in ipairs(mappings) do record.extract(m, spec, root) end
--     for _, m in ipairs(mappings) do record.write(m, root) end
--
-- A record spec is WireMock's (`filters`, `captureHeaders`,
-- `requestBodyPattern`, `extractBodyCriteria`, `outputFormat`, `persist`,
-- `repeatsAsScenarios`); what this module makes of it is `record.spec`'s
-- table. Files are written whole under a hidden name, then renamed, so a
-- reload never reads half a mapping.
--
-- @module moonport.mock.record

local crypto = require("moonport.core.crypto")
local model = require("moonport.mock.model")
local json = require("moonport.json")

local type, pairs, ipairs, tostring, tonumber = type, pairs, ipairs, tostring, tonumber
local concat, sort, floor = table.concat, table.sort, math.floor
local lower = string.lower

local record = {}

-- The default extractBodyCriteria (WireMock's defaults for the field): a
-- text body over 10 KiB, and every binary body, go to a file.
local TEXT_INLINE_MAX, BINARY_INLINE_MAX = 10240, 0

local UNITS = { [""] = 1, b = 1, kb = 1024, mb = 1024 ^ 2, gb = 1024 ^ 3 }

--- A size as WireMock writes one ("255", "56 kb", "10 Mb", "18.2 GB"; a
-- number is bytes) in bytes, or nil.
-- @usage record.size("2 kb") -- 2048
function record.size(v)
  if v == nil then return nil end
  local n, unit = tostring(v):lower():match("^%s*(%d*%.?%d+)%s*(%a*)%s*$")
  if n == nil or UNITS[unit] == nil then return nil end
  return floor(tonumber(n) * UNITS[unit])
end

local MATCHERS = { auto = true, equalTo = true, equalToJson = true, equalToXml = true }

local function flag(v, default, name)
  if v == nil then return default end
  if type(v) ~= "boolean" then return nil, name .. ": true or false" end
  return v
end

--- Checks a record spec (the body of recordings/start or snapshot) and
-- returns what it asks, or nil and why: { target, filter (a compiled
-- request pattern, or nil), ids (a set, or nil), allow_non_proxied,
-- capture (list of {name, case_insensitive}), body = {matcher,
-- ignore_array_order, ignore_extra_elements, case_insensitive}, text_max,
-- binary_max (nil: bodies stay inline), ids_only, persist, repeats }.
-- compile(pattern) compiles a request pattern or returns nil and why.
-- @usage local spec, err = record.spec(body, compile_pattern)
function record.spec(body, compile)
  local spec, err = { capture = {} }
  if body.targetBaseUrl ~= nil then
    local url = tostring(body.targetBaseUrl)
    if not require("moonport.http").parse_url(url) then
      return nil, "targetBaseUrl " .. url .. ": not an http or https URL"
    end
    spec.target = url
  end
  local filters = body.filters
  if filters ~= nil then
    if type(filters) ~= "table" then return nil, "filters: a request pattern" end
    local pattern = {}
    for k, v in pairs(filters) do
      if k ~= "ids" and k ~= "allowNonProxied" then pattern[k] = v end
    end
    if next(pattern) ~= nil then
      spec.filter, err = compile(pattern)
      if spec.filter == nil then return nil, "filters: " .. tostring(err) end
    end
    if filters.ids ~= nil then
      if type(filters.ids) ~= "table" then return nil, "filters.ids: a list of request ids" end
      spec.ids = {}
      for _, id in ipairs(filters.ids) do spec.ids[tostring(id)] = true end
    end
    spec.allow_non_proxied, err = flag(filters.allowNonProxied, false, "filters.allowNonProxied")
    if err then return nil, err end
  end
  if body.captureHeaders ~= nil then
    if type(body.captureHeaders) ~= "table" then return nil, "captureHeaders: a map of header names" end
    for name, opts in pairs(body.captureHeaders) do
      local ci = type(opts) == "table" and opts.caseInsensitive == true
      spec.capture[#spec.capture + 1] = { name = tostring(name), case_insensitive = ci }
    end
    sort(spec.capture, function(a, b) return a.name < b.name end)
  end
  local bp = body.requestBodyPattern
  if bp ~= nil and type(bp) ~= "table" then return nil, "requestBodyPattern: an object" end
  bp = bp or {}
  local matcher = bp.matcher ~= nil and tostring(bp.matcher) or "auto"
  if not MATCHERS[matcher] then
    return nil, "requestBodyPattern.matcher " .. matcher .. ": one of auto, equalTo, equalToJson, equalToXml"
  end
  spec.body = { matcher = matcher }
  for key, default in pairs({ ignoreArrayOrder = true, ignoreExtraElements = true, caseInsensitive = false }) do
    spec.body[key], err = flag(bp[key], default, "requestBodyPattern." .. key)
    if err then return nil, err end
  end
  local criteria = body.extractBodyCriteria
  if criteria ~= nil and type(criteria) ~= "table" then return nil, "extractBodyCriteria: an object" end
  criteria = criteria or {}
  spec.text_max = criteria.textSizeThreshold == nil and TEXT_INLINE_MAX or record.size(criteria.textSizeThreshold)
  spec.binary_max = criteria.binarySizeThreshold == nil and BINARY_INLINE_MAX or record.size(criteria.binarySizeThreshold)
  if spec.text_max == nil or spec.binary_max == nil then
    return nil, "extractBodyCriteria: sizes such as \"2048\", \"56 kb\" or \"1 Mb\""
  end
  local format = body.outputFormat ~= nil and tostring(body.outputFormat):upper() or "FULL"
  if format ~= "FULL" and format ~= "IDS" then return nil, "outputFormat: FULL or IDS" end
  spec.ids_only = format == "IDS"
  spec.persist, err = flag(body.persist, true, "persist")
  if err then return nil, err end
  spec.repeats, err = flag(body.repeatsAsScenarios, true, "repeatsAsScenarios")
  if err then return nil, err end
  if type(body.transformers) == "table" and #body.transformers > 0 then
    return nil, "transformers: moonport has no stub mapping transformers"
  end
  return spec
end

-- Names ------------------------------------------------------------------------

--- WireMock's safe name for a URL path: slashes as underscores, white
-- space as dashes, nothing but letters, digits, "_" and "-", no leading
-- or trailing underscores, at most 200 characters, lower case.
-- @usage record.safe_name("/api/Users/1") -- "api_users_1"
function record.safe_name(path)
  local s = path:gsub("/", "_"):gsub("%s", "-"):gsub("[^%w_-]", "")
  s = s:gsub("^_+", ""):gsub("_+$", "")
  return lower(s:sub(1, 200))
end

-- The last two segments of a URL's path joined by "-" (WireMock's names
-- for recorded scenarios).
local function path_parts(url)
  local parts = {}
  for seg in url:match("^[^?]*"):gmatch("[^/]+") do parts[#parts + 1] = seg end
  return concat(parts, "-", math.max(1, #parts - 1))
end

-- Bodies -------------------------------------------------------------------------

local TEXT_TYPES = { "text", "json", "xml", "html", "javascript", "ecmascript", "x-www-form-urlencoded" }

local function is_text(content_type)
  if content_type == nil then return false end
  content_type = lower(content_type)
  for _, t in ipairs(TEXT_TYPES) do
    if content_type:find(t, 1, true) then return true end
  end
  return false
end

local EXTENSIONS = {
  ["application/json"] = "json", ["text/html"] = "html", ["text/plain"] = "txt",
  ["text/css"] = "css", ["text/csv"] = "csv", ["image/png"] = "png", ["image/jpeg"] = "jpg",
  ["image/gif"] = "gif", ["image/svg+xml"] = "svg", ["application/pdf"] = "pdf",
  ["application/javascript"] = "js", ["text/javascript"] = "js",
}

-- The extension of a body file: from the Content-Type, else the URL's
-- own, else txt or bin.
local function extension(content_type, url, text)
  local mime = content_type and lower(content_type):match("^%s*([^;%s]+)")
  if mime then
    if EXTENSIONS[mime] then return EXTENSIONS[mime] end
    if mime:find("json", 1, true) then return "json" end
    if mime:find("xml", 1, true) then return "xml" end
  end
  local ext = url:match("^[^?]*%.(%w+)$")
  if ext and #ext <= 8 then return lower(ext) end
  return text and "txt" or "bin"
end

local function first(v)
  if type(v) == "table" then return v[1] end
  return v
end

-- Response headers a recorded stub does not keep: the framing and the
-- connection's own, which whoever serves the stub sets.
local NOT_KEPT = { ["content-length"] = true, ["transfer-encoding"] = true, connection = true,
                   ["keep-alive"] = true }

-- A journaled response as WireMock's response definition: status,
-- headers, and the body as text (`body`) or bytes (`base64Body`), decoded
-- when it came gzip- or deflate-encoded. Also returns the Content-Type
-- and whether the body is text.
local function response_of(r)
  local out = { status = tonumber(r.status) or 200 }
  local headers, content_type, encoding = {}, nil, nil
  for name, v in pairs(r.headers or {}) do
    local lname = lower(name)
    if lname == "content-type" then content_type = first(v) end
    if lname == "content-encoding" then encoding = lower(tostring(first(v))) end
    if not NOT_KEPT[lname] then headers[name] = v end
  end
  local body = model.logged_body(r)
  if (encoding == "gzip" or encoding == "deflate") and #body > 0 then
    local plain = require("moonport.http").gunzip(body)
    if plain then
      body = plain
      for name in pairs(headers) do
        if lower(name) == "content-encoding" then headers[name] = nil end
      end
    end
  end
  if next(headers) ~= nil then out.headers = headers end
  -- Text that is not UTF-8 goes as bytes: JSON holds no other text.
  local text = is_text(content_type) and model.is_utf8(body)
  if #body > 0 then
    if text then out.body = body else out.base64Body = model.base64_encode(body) end
  end
  return out, content_type, text
end

-- The body pattern a recorded request gets (requestBodyPattern; auto
-- picks by the request's Content-Type). moonport has no XML matcher:
-- equalToXml records as equalTo. Bytes that are not text are matched as
-- bytes (binaryEqualTo), as WireMock records them.
local function body_pattern(opts, content_type, body)
  if not model.is_utf8(body) then return { binaryEqualTo = model.base64_encode(body) } end
  local matcher = opts.matcher
  if matcher == "auto" then
    local t = content_type and lower(content_type) or ""
    matcher = t:find("json", 1, true) and "equalToJson" or "equalTo"
  end
  if matcher == "equalToJson" and json.decode(body) ~= nil then
    return { equalToJson = body, ignoreArrayOrder = opts.ignoreArrayOrder,
             ignoreExtraElements = opts.ignoreExtraElements }
  end
  return { equalTo = body, caseInsensitive = opts.caseInsensitive or nil }
end

-- Mappings ---------------------------------------------------------------------

--- Whether a journal entry is one the spec records: proxied (unless
-- filters.allowNonProxied), matched by filters, and among filters.ids.
-- test(pattern, entry) tests a compiled pattern against an entry.
-- @usage if record.wanted(entry, spec, test) then ... end
function record.wanted(e, spec, test)
  if not (e.response and e.response.status) and not spec.allow_non_proxied then return false end
  if spec.filter and not test(spec.filter, e) then return false end
  if spec.ids and not spec.ids[e.id] then return false end
  return true
end

--- The stub mapping (WireMock's JSON, a table) for one journal entry,
-- and the key that identifies its request pattern (equal keys, equal
-- patterns). An entry with no journaled response (not proxied) records
-- the status it got, without a body.
-- @usage local mapping, key = record.mapping(entry, spec)
function record.mapping(e, spec)
  local r = e.request
  local pattern = { url = r.url, method = r.method }
  local key = { r.method, r.url }
  local headers = {}
  for name, v in pairs(r.headers or {}) do headers[lower(name)] = first(v) end
  for _, c in ipairs(spec.capture) do
    local v = headers[lower(c.name)]
    if v ~= nil then
      pattern.headers = pattern.headers or {}
      pattern.headers[c.name] = { equalTo = v, caseInsensitive = c.case_insensitive or nil }
      key[#key + 1] = c.name .. "=" .. v
    end
  end
  local body = model.logged_body(r)
  if #body > 0 then
    local bp = body_pattern(spec.body, headers["content-type"], body)
    pattern.bodyPatterns = json.array({ bp })
    key[#key + 1] = (bp.equalToJson and "json:" or bp.binaryEqualTo and "bytes:" or "text:") .. body
  end
  local response, content_type, text
  if e.response and e.response.status then
    response, content_type, text = response_of(e.response)
  else
    response = { status = e.responseDefinition and e.responseDefinition.status or 200 }
  end
  local id = model.uuid()
  local mapping = { id = id, uuid = id, name = record.safe_name(r.url:match("^[^?]*")),
                    request = pattern, response = response, persistent = spec.persist or nil }
  -- Kept for extract, dropped before the mapping is shown or stored.
  mapping[0] = { content_type = content_type, text = text }
  return mapping, concat(key, "\0")
end

--- The mappings for journal entries (oldest first) as WireMock makes them:
-- a request seen again becomes a scenario whose states replay its
-- answers in order, the last one repeating (repeatsAsScenarios), or is
-- recorded once.
-- @usage local mappings = record.mappings(entries, spec)
function record.mappings(entries, spec)
  local list, groups, order = {}, {}, {}
  for _, e in ipairs(entries) do
    local mapping, key = record.mapping(e, spec)
    local group = groups[key]
    if group == nil then
      group = {}
      groups[key] = group
      order[#order + 1] = key
    end
    if #group == 0 or spec.repeats then
      group[#group + 1] = mapping
      list[#list + 1] = mapping
    end
  end
  local index = 0
  for _, key in ipairs(order) do
    local group = groups[key]
    if #group > 1 then
      index = index + 1
      local name = ("scenario-%d-%s"):format(index, path_parts(group[1].request.url))
      for i, m in ipairs(group) do
        m.scenarioName = name
        m.requiredScenarioState = i == 1 and "Started" or ("%s-%d"):format(name, i)
        if i < #group then m.newScenarioState = ("%s-%d"):format(name, i + 1) end
      end
    end
  end
  return list
end

--- The key a mapping's request pattern has (record.mapping's second
-- value), short: a SHA-1 in hex.
-- @usage state:add("recorded:" .. record.digest(key), true)
function record.digest(key)
  return crypto.hex(crypto.digest("sha1", key))
end

-- Files ------------------------------------------------------------------------

-- Writes text to dir/name whole: under a hidden name first, then renamed.
local function write_file(dir, name, text)
  local ok, err = require("moonport.core").dir_make(dir)
  if not ok then return nil, err end
  local tmp = ("%s/.%s.tmp"):format(dir, name)
  local f
  f, err = io.open(tmp, "wb")
  if f == nil then return nil, err end
  ok, err = f:write(text)
  local closed, cerr = f:close()
  if ok and closed then
    ok, err = os.rename(tmp, dir .. "/" .. name)
    if ok then return true end
  end
  os.remove(tmp)
  return nil, err or cerr
end

-- The file name WireMock gives what it records for mapping: its name, a
-- dash and its id (the id alone when the name is empty).
local function file_name(mapping, ext)
  local base = mapping.name ~= "" and (mapping.name .. "-" .. mapping.id) or mapping.id
  return base .. "." .. ext
end

--- Moves a mapping's body to root/__files when it is over the spec's
-- threshold (text_max for text, binary_max for bytes), as bodyFileName.
-- Returns true, or nil and why the file could not be written.
-- @usage assert(record.extract(mapping, spec, root))
function record.extract(mapping, spec, root)
  local info, r = mapping[0], mapping.response
  local body, text = r.body, true
  if body == nil and r.base64Body ~= nil then
    body, text = model.base64_decode(r.base64Body), false
  end
  if body == nil or #body <= (text and spec.text_max or spec.binary_max) then return true end
  local name = file_name(mapping, extension(info and info.content_type, mapping.request.url, text))
  local ok, err = write_file(root .. "/__files", name, body)
  if not ok then return nil, err end
  r.body, r.base64Body, r.bodyFileName = nil, nil, name
  return true
end

--- A mapping as shown and stored: without what record.mapping kept for
-- extract.
-- @usage send_json(res, 200, record.clean(mapping))
function record.clean(mapping)
  mapping[0] = nil
  return mapping
end

--- Writes a mapping to root/mappings as WireMock names recorded ones, or
-- under name (a path relative to root/mappings) when given. Returns the
-- file's path, or nil and why.
-- @usage assert(record.write(mapping, root))
function record.write(mapping, root, name)
  name = name or file_name(mapping, "json")
  local dir = root .. "/mappings"
  local sub, base = name:match("^(.*)/([^/]+)$")
  if sub then dir, name = dir .. "/" .. sub, base end
  local ok, err = write_file(dir, name, json.encode(record.clean(mapping)))
  if not ok then return nil, err end
  return dir .. "/" .. name
end

return record
