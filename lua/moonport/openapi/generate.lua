--- OpenAPI mock responses: which response of an operation a request
-- gets, and the body and headers it carries, chosen as Stoplight Prism
-- 5.14.2 chooses them (its mocker's negotiator and generators).
--
--     local gen = require("moonport.openapi.generate")
--     local answer, problem = gen.respond(op, req, { dynamic = false })
--     -- answer = { status = 200, content_type = "application/json",
--     --            headers = { { "x-next", "string" } }, body = { ... } }
--
-- The parts, in the order a request meets them:
--
-- * Preferences: the `Prefer` header (`code=404`, `example=name`,
--   `dynamic=true`, `seed=...`), parsed as parse-prefer-header does and
--   checked as Prism's decoder checks it (a code is three digits, dynamic
--   is true or false), or, without that header, the query parameters
--   `__code`, `__example`, `__dynamic`, `__seed`.
-- * The response: the code asked for (then `default`, then the nXX range
--   answering with the code asked for), or the lowest 2xx (sorted as
--   strings, "2XX" serving as 200), then `default` (as 200), then the
--   first response.
-- * The media type: without Accept, a `*/*` content, else the best for
--   "application/json,*/*"; with Accept, negotiator 0.6's ranking (q,
--   then specificity, then the order of the ranges, then of the
--   contents), retried once with the ranges' parameters other than q
--   left out. Nothing acceptable: 406, or an empty answer when the
--   response has no content, is a 204, or Accept names `*/*`. When a
--   code was asked for and its response fails, Prism tries the
--   unspecified choice once more and reports that failure, wrapped, as a
--   500 ("... We tried default response, but we got ...").
-- * The body: the example named by `example=`, else (static) the media
--   type's `example`, or its schema's first example, or the first of its
--   `examples`, else a value built from the schema: gen.sample (static,
--   json-schema-sampler 0.3's rules on the schema as Prism's http-spec
--   converts it) or gen.fake (dynamic: random, valid against the schema).
-- * Headers: each header of the response, its first example, or a value
--   built from its schema; anything but a string or a number becomes the
--   text "null", as Node prints Prism's null. `deprecation: true` for a
--   deprecated operation.
--
-- Schemas are the decoded document's tables with $ref already resolved
-- into shared (possibly cyclic) tables; null is json.null and arrays
-- carry json.array_mt, both read and generated. Decoded objects keep no
-- key order: where Prism takes "the first" of a map (contents, examples,
-- responses, headers, properties) this module takes the document's order,
-- which moonport.openapi.doc records for every mapping it reads
-- (oadoc.keys), and the keys sorted as strings for other tables.
--
-- What it does not do: serialize bodies (the caller encodes by content
-- type), validate requests (moonport.openapi.request), build Prism's own
-- problem answers for invalid requests (the caller holds the violations).
--
-- @module moonport.openapi.generate

local json = require("moonport.json")
local oadoc_keys = require("moonport.openapi.doc").keys
local jsonschema = require("moonport.jsonschema")
local bit = require("bit")

local type, pairs, ipairs, tostring, tonumber, next = type, pairs, ipairs, tostring, tonumber, next
local getmetatable, setmetatable, rawget, error, pcall = getmetatable, setmetatable, rawget, error, pcall
local floor, ceil, huge, max, min, abs = math.floor, math.ceil, math.huge, math.max, math.min, math.abs
local find, sub, byte, char, lower, format, rep, gsub, match, gmatch =
  string.find, string.sub, string.byte, string.char, string.lower, string.format,
  string.rep, string.gsub, string.match, string.gmatch
local concat, sort = table.concat, table.sort
local band, bor, bxor, lshift, rshift, tobit = bit.band, bit.bor, bit.bxor, bit.lshift, bit.rshift, bit.tobit

local null, array_mt = json.null, json.array_mt

local gen = {}

-- Tables and their keys ---------------------------------------------------

local function is_array(v)
  return type(v) == "table" and getmetatable(v) == array_mt
end

-- A plain JSON object (not an array, not null).
local function is_object(v)
  return type(v) == "table" and getmetatable(v) ~= array_mt
end

-- A list: an array, or a table used as one (a Lua literal in a spec).
local function is_list(v)
  if type(v) ~= "table" then return false end
  if getmetatable(v) == array_mt then return true end
  return v[1] ~= nil and next(v, #v) == nil
end

local function new_array() return setmetatable({}, array_mt) end


--- The keys of a decoded object in the document's order (oadoc.keys):
-- as the document lists them for a mapping the loader read, else sorted
-- as strings (so that every choice of "the first" is the same on every
-- run).
-- @usage for _, name in ipairs(gen.keys(response.content)) do ... end
function gen.keys(t)
  if type(t) ~= "table" then return {} end
  return oadoc_keys(t)
end
local keys = gen.keys

-- Numbers as JavaScript prints them (header values, seeds).
local js_number = jsonschema.jsnum

-- Seedable random numbers -------------------------------------------------

-- sfc32 (Chris Doty-Humphrey's small fast counting generator): only 32-bit
-- additions, shifts and xors, which LuaJIT's bit library computes the
-- same on every platform, so a seed gives the same values everywhere.
local rng_mt = {}
rng_mt.__index = rng_mt

-- The next 32-bit output, as a signed integer.
local function sfc32(r)
  local a, b, c, d = r[1], r[2], r[3], r[4]
  local t = tobit(tobit(a + b) + d)
  d = tobit(d + 1)
  a = bxor(b, rshift(b, 9))
  b = tobit(c + lshift(c, 3))
  c = bor(lshift(c, 21), rshift(c, 11))
  c = tobit(c + t)
  r[1], r[2], r[3], r[4] = a, b, c, d
  return t
end

--- A number in [0, 1).
-- @usage local x = rng:random()
function rng_mt:random()
  local t = sfc32(self)
  if t < 0 then t = t + 4294967296 end
  return t / 4294967296
end

--- An integer in [lo, hi] (lo when hi < lo).
-- @usage local n = rng:int(1, 6)
function rng_mt:int(lo, hi)
  if hi <= lo then return lo end
  return lo + floor(self:random() * (hi - lo + 1))
end

--- One element of a non-empty list.
-- @usage local v = rng:pick({ "a", "b" })
function rng_mt:pick(list)
  return list[self:int(1, #list)]
end

-- A 32-bit hash of a string (Java's String.hashCode over bytes).
local function hash32(s, h)
  h = h or 0
  for i = 1, #s do h = tobit(lshift(h, 5) - h + byte(s, i)) end
  return h
end

--- A seedable random generator: the same seed (a number or a string)
-- gives the same sequence; no seed takes one from the clock.
-- @usage local rng = gen.rng(42); local x = rng:random()
function gen.rng(seed)
  if seed == nil then
    seed = tostring(os.time()) .. tostring(os.clock()) .. tostring({})
  end
  local s = type(seed) == "number" and js_number(seed) or tostring(seed)
  local r = setmetatable({
    hash32(s, 0x2545F491), hash32(s, 0x68E31DA4), hash32(s, 0x1B56C4E9), tobit(0x9E3779B9),
  }, rng_mt)
  for _ = 1, 12 do sfc32(r) end
  return r
end

-- Prism's schema conversion ----------------------------------------------

-- http-spec converts every schema of the document before Prism samples
-- it (oas/transformers/schema): `example` becomes `examples: [example]`,
-- int32/int64/float/double clamp minimum and maximum to the format's
-- range, byte gets a pattern, nullable becomes a type list, boolean
-- exclusiveMinimum/Maximum become numbers. It goes down allOf, anyOf,
-- oneOf, not, items, additionalProperties, additionalItems and
-- properties only, as http-spec does. The converted copies are kept per
-- original table, so shared and cyclic schemas stay shared and cyclic.
local converted = setmetatable({}, { __mode = "k" })

local STRUCTS = { "allOf", "anyOf", "oneOf", "not", "items", "additionalProperties", "additionalItems" }
local RANGES = {
  int32 = { -2 ^ 31, 2 ^ 31 - 1 },
  int64 = { -9007199254740991, 9007199254740991 },
  float = { -2 ^ 128, 2 ^ 128 - 1 },
  double = { -1.7976931348623157e308, 1.7976931348623157e308 },
}
local TYPE_NAMES = { string = true, number = true, integer = true, boolean = true,
  object = true, array = true, null = true }

-- JavaScript's Number(v), NaN as nil.
local function js_to_number(v)
  if type(v) == "number" then return v end
  if v == nil then return nil end
  if v == null then return 0 end
  if v == true then return 1 elseif v == false then return 0 end
  if type(v) == "string" then
    if not find(v, "%S") then return 0 end
    return tonumber(v)
  end
  return nil
end

local convert

local function convert_keywords(c)
  for _, kw in ipairs({ "x-example", "example" }) do
    if c[kw] ~= nil then
      c.examples = setmetatable({ c[kw] }, array_mt)
      c[kw] = nil
    end
  end
  if c.id ~= nil then
    local id = c.id
    c.id = nil
    if type(id) == "string" then c["$id"] = id end
  end
  local fmt = c.format
  if type(fmt) == "string" then
    local range = RANGES[fmt]
    if range then
      c.minimum = max(js_to_number(c.minimum) or range[1], range[1])
      c.maximum = min(js_to_number(c.maximum) or range[2], range[2])
    elseif fmt == "byte" then
      c.pattern = "^[\\w\\d+\\/=]*$"
    elseif fmt == "base64" then
      c.contentEncoding, c.format = "base64", nil
    elseif fmt == "binary" then
      c.contentMediaType, c.format = "application/octet-stream", nil
    end
  end
  for _, kw in ipairs({ "x-nullable", "nullable" }) do
    if c[kw] ~= nil and type(c.type) == "string" and TYPE_NAMES[c.type] then
      if c[kw] == true then
        c.type = setmetatable({ c.type, "null" }, array_mt)
        if is_list(c.enum) then
          local e = new_array()
          for i = 1, #c.enum do e[i] = c.enum[i] end
          e[#e + 1] = null
          c.enum = e
        end
      end
      c[kw] = nil
    end
  end
  for _, pair in ipairs({ { "exclusiveMinimum", "minimum" }, { "exclusiveMaximum", "maximum" } }) do
    local kw, value_kw = pair[1], pair[2]
    local v = c[kw]
    if v ~= nil and type(v) ~= "number" then
      if v ~= true or type(c[value_kw]) ~= "number" then
        c[kw] = nil
      else
        c[kw], c[value_kw] = c[value_kw], nil
      end
    end
  end
end

-- memo maps originals to copies: `converted` (the copies every schema
-- shares) or a fresh table for one top schema (gen.sample's, below), in
-- which the top met again leads back to the shared copies.
local function convert_in(schema, memo, top)
  if not is_object(schema) then return schema end
  if memo ~= converted and schema == top and memo[schema] then
    return convert_in(schema, converted)
  end
  local c = memo[schema]
  if c then return c end
  c = {}
  for k, v in pairs(schema) do c[k] = v end
  memo[schema] = c
  for _, kw in ipairs(STRUCTS) do
    local v = c[kw]
    if is_list(v) then
      local list = new_array()
      for i = 1, #v do
        if type(v[i]) == "table" then list[#list + 1] = convert_in(v[i], memo, top) end
      end
      c[kw] = list
    elseif type(v) == "table" then
      c[kw] = convert_in(v, memo, top)
    end
  end
  if is_object(c.properties) then
    local props = {}
    local mt = getmetatable(c.properties)
    for k, v in pairs(c.properties) do props[k] = is_object(v) and convert_in(v, memo, top) or v end
    c.properties = mt and setmetatable(props, mt) or props
  end
  convert_keywords(c)
  return c
end

function convert(schema) return convert_in(schema, converted) end

-- The copy gen.sample starts from: Prism samples a top schema that is not
-- the very table its own nested references lead to (a schema that refers
-- to itself is expanded once more below the top than a nested one is),
-- so the top and what it holds inline are converted apart, and the top
-- met again inside leads to the shared copies. Where two schemas refer
-- to each other, Prism's line between inline and referenced parts is not
-- visible in resolved tables; this copy may expand one level more there.
local sample_roots = setmetatable({}, { __mode = "k" })
local function sample_root(schema)
  if not is_object(schema) then return schema end
  local root = sample_roots[schema]
  if not root then
    root = convert_in(schema, {}, schema)
    sample_roots[schema] = root
  end
  return root
end

--- A schema as Prism's http-spec hands it to its generators (see above):
-- a converted copy, made once per table.
-- @usage local s = gen.prism_schema(op.responses["200"].content["application/json"].schema)
gen.prism_schema = convert

-- Static samples: json-schema-sampler 0.3.0 ------------------------------

-- Its traverse() step by step, with its quirks: a stack of the schemas
-- being sampled (a schema met again inside itself gives {} or [] or
-- nothing), popped only when a context was passed (so the top call and
-- allOf's first call leave theirs behind, as they do there), a depth limit
-- of 15 and a budget of 2,500 steps (Prism's; past it the schema is "too
-- complex"). JavaScript's undefined is nil here and null is json.null; a
-- type of JavaScript null is false.
local MAX_DEPTH, TICKS = 15, 2500
local TOO_COMPLEX = {}

local KEYWORD_TYPES = {
  { "multipleOf", "number" }, { "maximum", "number" }, { "exclusiveMaximum", "number" },
  { "minimum", "number" }, { "exclusiveMinimum", "number" },
  { "maxLength", "string" }, { "minLength", "string" }, { "pattern", "string" },
  { "items", "array" }, { "maxItems", "array" }, { "minItems", "array" },
  { "uniqueItems", "array" }, { "additionalItems", "array" },
  { "maxProperties", "object" }, { "minProperties", "object" }, { "required", "object" },
  { "additionalProperties", "object" }, { "properties", "object" },
  { "patternProperties", "object" }, { "dependencies", "object" },
}

local EMPTY = {}
local function fields(schema) return type(schema) == "table" and schema or EMPTY end

local function infer_type(schema)
  local s = fields(schema)
  if s.type ~= nil then
    if is_list(s.type) then return s.type[1] == nil and false or s.type[1] end
    if s.type == null then return false end
    return s.type
  end
  for _, kt in ipairs(KEYWORD_TYPES) do
    if s[kt[1]] ~= nil then return kt[2] end
  end
  return false
end

local function circular(t)
  if t == "object" then return {} end
  if t == "array" then return new_array() end
  return nil
end

-- JavaScript's truthiness of a sampled value.
local function truthy(v)
  return v ~= nil and v ~= null and v ~= false and v ~= 0 and v ~= ""
end

local function is_js_object(v) return type(v) == "table" end

-- The keys of an object or array as JavaScript's Object.keys lists them:
-- { lua key, "js key" } pairs.
local function js_entries(v)
  local list = {}
  if is_array(v) then
    for i = 1, #v do list[#list + 1] = { i, tostring(i - 1) } end
  else
    for _, k in ipairs(keys(v)) do list[#list + 1] = { k, k } end
  end
  return list
end

-- json-schema-sampler's mergeDeep(...): a new object (an array when the
-- last one is), each in turn merged in, objects into objects recursively.
local function merge_deep(objects)
  local last = objects[#objects]
  local into_array = is_array(last)
  local prev = into_array and new_array() or {}
  for _, obj in ipairs(objects) do
    for _, e in ipairs(js_entries(obj)) do
      local lk, jk = e[1], e[2]
      local key = jk
      if into_array then key = tonumber(jk) and tonumber(jk) + 1 or jk end
      local p, o = prev[key], obj[lk]
      if is_js_object(p) and is_js_object(o) then
        prev[key] = merge_deep({ p, o })
      else
        prev[key] = o
      end
    end
  end
  return prev
end

-- The deterministic UUID of a property name: hashCode over UTF-16 units,
-- then jsf32 seeded with it, as the sampler's utils.uuid.
local function utf16_units(s)
  local units, i, n = {}, 1, #s
  while i <= n do
    local c = byte(s, i)
    local cp, len
    if c < 0x80 then cp, len = c, 1
    elseif c >= 0xF0 then
      cp = band(c, 0x07) * 0x40000 + band(byte(s, i + 1) or 0, 0x3F) * 0x1000
        + band(byte(s, i + 2) or 0, 0x3F) * 0x40 + band(byte(s, i + 3) or 0, 0x3F)
      len = 4
    elseif c >= 0xE0 then
      cp = band(c, 0x0F) * 0x1000 + band(byte(s, i + 1) or 0, 0x3F) * 0x40 + band(byte(s, i + 2) or 0, 0x3F)
      len = 3
    elseif c >= 0xC0 then
      cp = band(c, 0x1F) * 0x40 + band(byte(s, i + 1) or 0, 0x3F)
      len = 2
    else cp, len = c, 1 end
    if cp >= 0x10000 then
      cp = cp - 0x10000
      units[#units + 1] = 0xD800 + floor(cp / 0x400)
      units[#units + 1] = 0xDC00 + cp % 0x400
    else
      units[#units + 1] = cp
    end
    i = i + len
  end
  return units
end

local function sampler_uuid(str)
  local hash = 0
  for _, u in ipairs(utf16_units(str)) do hash = tobit(lshift(hash, 5) - hash + u) end
  local a, b, c, d = hash, hash, hash, hash
  local function random()
    local t = tobit(a - bor(lshift(b, 27), rshift(b, 5)))
    a = bxor(b, bor(lshift(c, 17), rshift(c, 15)))
    b = tobit(c + d)
    c = tobit(d + t)
    d = tobit(a + t)
    local u = d < 0 and d + 4294967296 or d
    return u / 4294967296
  end
  return (gsub("xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx", "[xy]", function(ch)
    local r = floor((random() * 16) % 16)
    if ch == "y" then r = bor(band(r, 0x3), 0x8) end
    return format("%x", r)
  end))
end

local function ensure_min_length(sample, n)
  if n > #sample then
    return sub(rep(sample, floor(n / #sample) + 1), 1, n)
  end
  return sample
end

local STRING_SAMPLES = {
  email = "user@example.com",
  ["idn-email"] = "пользователь@пример.ру",
  ["date-time"] = "2019-08-24T14:15:22Z",
  date = "2019-08-24",
  time = "14:15:22Z",
  ipv4 = "192.168.0.1",
  ipv6 = "2001:0db8:85a3:0000:0000:8a2e:0370:7334",
  hostname = "example.com",
  ["idn-hostname"] = "пример.ру",
  iri = "http://пример.ру",
  ["iri-reference"] = "../словарь",
  uri = "http://example.com",
  ["uri-reference"] = "../dictionary",
  ["uri-template"] = "http://example.com/{endpoint}",
  ["json-pointer"] = "/json/pointer",
  ["relative-json-pointer"] = "1/relative/json/pointer",
  regex = "/regex/",
}

-- JavaScript's `x | 0` for a minLength.
local function js_int(v)
  v = js_to_number(v)
  if not v or v ~= v or v == huge or v == -huge then return 0 end
  v = v < 0 and ceil(v) or floor(v)
  return tobit(v % 4294967296 >= 2147483648 and v % 4294967296 - 4294967296 or v % 4294967296)
end

local function sample_string(schema, _, context)
  local fmt = schema.format or "default"
  local minlen, maxlen = js_int(schema.minLength), schema.maxLength
  if fmt == "password" then
    local res = "pa$$word"
    if minlen > #res then
      res = res .. "_"
      res = res .. sub(ensure_min_length("qwerty!@#$%^123456", minlen - #res), 1, minlen - #res)
    end
    return res
  end
  if fmt == "uuid" then return sampler_uuid(context and context.property or "id") end
  local fixed = STRING_SAMPLES[fmt]
  if fixed then return fixed end
  local res = ensure_min_length("string", minlen)
  local m = js_to_number(maxlen)
  if truthy(maxlen) and m and #res > m then res = sub(res, 1, max(m, 0)) end
  return res
end

local function sample_number(schema)
  if schema.minimum ~= nil then return schema.minimum end
  local res = 0
  if schema.exclusiveMinimum ~= nil then
    res = schema.exclusiveMinimum + 1
    if res == schema.exclusiveMaximum then res = (res + schema.exclusiveMaximum - 1) / 2 end
  elseif schema.exclusiveMaximum ~= nil then
    res = schema.exclusiveMaximum - 1
  elseif schema.maximum ~= nil then
    res = schema.maximum
  end
  return res
end

local traverse

local function sample_array(schema, st, context)
  local depth = context and context.depth or 1
  local maxitems = schema.maxItems ~= nil and js_to_number(schema.maxItems) or huge
  local minitems = schema.minItems
  if not truthy(minitems) then minitems = 1 end
  local length = min(maxitems or 0, minitems)
  local items = schema.items
  if not truthy(items) then items = schema.contains end
  local tuple = is_list(schema.items) and (getmetatable(schema.items) == array_mt or schema.items[1] ~= nil)
  if is_list(items) and (getmetatable(items) == array_mt or items[1] ~= nil) then
    length = max(length, #items)
  end
  local res = new_array()
  if not truthy(items) then return res end
  for i = 1, length do
    local item
    if tuple then item = items[i] or {} else item = items or {} end
    local r = traverse(item, st, { depth = depth + 1 })
    res[i] = r.value == nil and null or r.value
  end
  return res
end

local function sample_object(schema, st, context)
  local res = {}
  local depth = context and context.depth or 1
  if type(schema.properties) == "table" then
    for _, name in ipairs(keys(schema.properties)) do
      local r = traverse(schema.properties[name], st, { property = name, depth = depth + 1 })
      if not ((st.skip_read_only and r.readOnly) or (st.skip_write_only and r.writeOnly)) then
        res[name] = r.value
      end
    end
  end
  if type(schema.additionalProperties) == "table" then
    res.property1 = traverse(schema.additionalProperties, st, { depth = depth + 1 }).value
    res.property2 = traverse(schema.additionalProperties, st, { depth = depth + 1 }).value
  end
  return res
end

local SAMPLERS = {
  array = sample_array, boolean = function() return true end,
  integer = sample_number, number = sample_number,
  object = sample_object, string = sample_string,
}

local function includes(stack, schema)
  for i = 1, #stack do
    if stack[i] == schema then return true end
  end
  return false
end

local function pop(stack, context)
  if context then stack[#stack] = nil end
end

local function all_of_sample(into, children, st, context)
  local res = traverse(into, st)
  local sub_samples = {}
  for _, child in ipairs(children) do
    local s = {}
    if res.type ~= nil then s.type = res.type end
    for k, v in pairs(fields(child)) do s[k] = v end
    local r = traverse(s, st, context)
    if truthy(res.type) and truthy(r.type) and r.type ~= res.type then res.type = r.type end
    if not truthy(res.type) then res.type = r.type end
    res.readOnly = truthy(res.readOnly) and res.readOnly or r.readOnly
    res.writeOnly = truthy(res.writeOnly) and res.writeOnly or r.writeOnly
    if r.value ~= nil and r.value ~= null then sub_samples[#sub_samples + 1] = r.value end
  end
  if res.type == "object" then
    local objects = { truthy(res.value) and res.value or {} }
    for _, v in ipairs(sub_samples) do
      if is_js_object(v) then objects[#objects + 1] = v end
    end
    res.value = merge_deep(objects)
  else
    local last = sub_samples[#sub_samples]
    if last ~= nil then res.value = last end
  end
  return res
end

function traverse(schema, st, context)
  st.ticks = st.ticks - 1
  if st.ticks == 0 then error(TOO_COMPLEX, 0) end
  local stack = st.stack
  if includes(stack, schema) then return { value = circular(infer_type(schema)) } end
  stack[#stack + 1] = schema
  if context and context.depth > MAX_DEPTH then
    pop(stack, context)
    return { value = circular(infer_type(schema)) }
  end
  local s = fields(schema)
  -- A "#/..." $ref the loader left unresolved has nothing to sample.
  if s.example ~= nil then
    pop(stack, context)
    return { value = s.example, readOnly = s.readOnly, writeOnly = s.writeOnly, type = s.type }
  end
  if s.allOf ~= nil then
    pop(stack, context)
    local into = {}
    for k, v in pairs(s) do if k ~= "allOf" then into[k] = v end end
    return all_of_sample(into, is_list(s.allOf) and s.allOf or {}, st, context)
  end
  if is_list(s.oneOf) and s.oneOf[1] ~= nil then
    pop(stack, context)
    return traverse(s.oneOf[1], st, context)
  end
  if is_list(s.anyOf) and s.anyOf[1] ~= nil then
    pop(stack, context)
    return traverse(s.anyOf[1], st, context)
  end
  if truthy(s["if"]) and truthy(s["then"]) then
    -- The sampler leaves this schema on its stack here, as it does.
    return traverse(merge_deep({ s["if"], s["then"] }), st, context)
  end
  local example, t = null, false
  if s.default ~= nil then
    example = s.default
  elseif s.const ~= nil then
    example = s.const
  elseif s.enum ~= nil and is_list(s.enum) and s.enum[1] ~= nil then
    example = s.enum[1]
  elseif s.examples ~= nil and is_list(s.examples) and s.examples[1] ~= nil then
    example = s.examples[1]
  else
    t = s.type
    if is_list(t) and t[1] ~= nil then t = t[1] end
    if t == null then t = false end
    if not t then t = infer_type(s) end
    local sampler = type(t) == "string" and SAMPLERS[t]
    if sampler then example = sampler(s, st, context) end
  end
  pop(stack, context)
  return { value = example, readOnly = s.readOnly, writeOnly = s.writeOnly, type = t }
end

--- The value Prism serves for schema in static mode: json-schema-sampler
-- 0.3's, on the schema as http-spec converts it (example -> examples,
-- format ranges, nullable). Defaults first, then const, the first enum
-- value, the first example; else by type: "string" (or a format's
-- sample, a deterministic UUID per property name), 0 or the minimum
-- (int32 -2147483648, int64 -9007199254740991), true, one item per array
-- (minItems of them, each tuple item), each property, allOf merged, the
-- first oneOf/anyOf branch, {} or [] where a schema recurs. Returns the
-- value (nil where Prism's is undefined: nothing is served), or nil and
-- a message when the schema takes over 2,500 steps (Prism's 500 "Schema
-- too complex"). version ("3.0" | "3.1") is accepted for symmetry with
-- gen.fake: Prism converts both alike.
-- @usage local body = gen.sample(schema, "3.0")
function gen.sample(schema, version, opts)
  local _ = version
  local st = { ticks = TICKS, stack = {},
    skip_read_only = opts and opts.skip_read_only, skip_write_only = opts and opts.skip_write_only }
  local top = sample_root(schema)
  if type(top) ~= "table" then top = {} end
  local ok, r = pcall(traverse, top, st)
  if not ok then
    if r == TOO_COMPLEX then
      return nil, "the schema is too complex to generate"
    end
    error(r, 0)
  end
  return r.value
end

-- Strings from regular expressions -----------------------------------------

-- A small parser for the patterns people write: literals, escapes (\d \w
-- \s and their negations, \t \n \r, \xHH, \uHHHH, escaped punctuation),
-- `.`, classes with ranges and negation, groups (capturing, (?:...),
-- named), alternation, quantifiers (* + ? {n} {n,} {n,m}, lazy or not),
-- ^ and $. Backreferences, lookarounds, \b and Unicode property classes
-- are beyond it: parse() fails and the caller falls back to the schema's
-- examples, default or static sample.
local PRINTABLE = {}
for c = 32, 126 do PRINTABLE[#PRINTABLE + 1] = c end
local CLASS_SETS = {
  d = function(c) return c >= 48 and c <= 57 end,
  w = function(c) return (c >= 48 and c <= 57) or (c >= 65 and c <= 90) or (c >= 97 and c <= 122) or c == 95 end,
  s = function(c) return c == 32 or c == 9 or c == 10 or c == 13 end,
}

local function utf8_char(cp)
  if cp < 0x80 then return char(cp) end
  if cp < 0x800 then return char(0xC0 + floor(cp / 0x40), 0x80 + cp % 0x40) end
  if cp < 0x10000 then
    return char(0xE0 + floor(cp / 0x1000), 0x80 + floor(cp / 0x40) % 0x40, 0x80 + cp % 0x40)
  end
  return char(0xF0 + floor(cp / 0x40000), 0x80 + floor(cp / 0x1000) % 0x40,
    0x80 + floor(cp / 0x40) % 0x40, 0x80 + cp % 0x40)
end

-- The length of a string in code points, as minLength counts it.
local function ulen(s)
  local _, n = gsub(s, "[^\128-\191]", "")
  return n
end

local ESCAPES = { t = 9, n = 10, r = 13, f = 12, v = 11, ["0"] = 0 }

-- A class as a predicate over code points, plus the set to draw from.
local function class_node(pred)
  local pool = {}
  for _, c in ipairs(PRINTABLE) do if pred(c) then pool[#pool + 1] = c end end
  return { kind = "set", pool = pool, pred = pred }
end

local parse_alt

-- An escape after the backslash at i: a predicate or a code point, and
-- the next position; nil for what the generator does not handle.
local function parse_escape(p, i)
  local c = sub(p, i, i)
  if c == "" then return nil end
  local lc = lower(c)
  if CLASS_SETS[lc] then
    local f = CLASS_SETS[lc]
    if c == lc then return { pred = f }, i + 1 end
    return { pred = function(x) return not f(x) end }, i + 1
  end
  if ESCAPES[c] then return { cp = ESCAPES[c] }, i + 1 end
  if c == "x" then
    local h = match(p, "^%x%x", i + 1)
    if not h then return nil end
    return { cp = tonumber(h, 16) }, i + 3
  end
  if c == "u" then
    local h = match(p, "^%x%x%x%x", i + 1)
    if not h then return nil end
    return { cp = tonumber(h, 16) }, i + 5
  end
  if find(c, "[%w]") then return nil end -- \b, \B, \1, \p{...}, \k<...>: not handled
  return { cp = byte(c) }, i + 1
end

local function parse_class(p, i)
  -- i is just after '['.
  local negate = false
  if sub(p, i, i) == "^" then negate, i = true, i + 1 end
  local preds, first = {}, true
  while true do
    local c = sub(p, i, i)
    if c == "" then return nil end
    if c == "]" and not first then i = i + 1 break end
    first = false
    local lo, pred
    if c == "\\" then
      local e, ni = parse_escape(p, i + 1)
      if not e then return nil end
      i = ni
      if e.pred then pred = e.pred else lo = e.cp end
    else
      local cp = byte(c)
      local len = cp >= 0xF0 and 4 or cp >= 0xE0 and 3 or cp >= 0xC0 and 2 or 1
      if len > 1 then cp = utf16_units(sub(p, i, i + len - 1))[1] end
      lo, i = cp, i + len
    end
    if pred then
      preds[#preds + 1] = pred
    elseif sub(p, i, i) == "-" and sub(p, i + 1, i + 1) ~= "]" and sub(p, i + 1, i + 1) ~= "" then
      local hc = sub(p, i + 1, i + 1)
      local hi
      if hc == "\\" then
        local e, ni = parse_escape(p, i + 2)
        if not e or not e.cp then return nil end
        hi, i = e.cp, ni
      else
        hi, i = byte(hc), i + 2
      end
      local a, b = lo, hi
      preds[#preds + 1] = function(x) return x >= a and x <= b end
    else
      local a = lo
      preds[#preds + 1] = function(x) return x == a end
    end
  end
  local function inside(x)
    for _, f in ipairs(preds) do if f(x) then return true end end
    return false
  end
  local node = class_node(negate and function(x) return not inside(x) end or inside)
  if #node.pool == 0 and not negate then
    -- Only characters outside printable ASCII: draw from the ranges given.
    node.wide = preds
  end
  return node, i
end

local function parse_atom(p, i)
  local c = sub(p, i, i)
  if c == "(" then
    local j = i + 1
    if sub(p, j, j) == "?" then
      local k = sub(p, j + 1, j + 1)
      if k == ":" then j = j + 2
      elseif k == "<" and sub(p, j + 2, j + 2) ~= "=" and sub(p, j + 2, j + 2) ~= "!" then
        local close = find(p, ">", j, true)
        if not close then return nil end
        j = close + 1
      else
        return nil -- lookarounds
      end
    end
    local node, ni = parse_alt(p, j)
    if not node or sub(p, ni, ni) ~= ")" then return nil end
    return node, ni + 1
  elseif c == "[" then
    return parse_class(p, i + 1)
  elseif c == "." then
    return class_node(function(x) return x ~= 10 and x ~= 13 end), i + 1
  elseif c == "\\" then
    local e, ni = parse_escape(p, i + 1)
    if not e then return nil end
    if e.pred then return class_node(e.pred), ni end
    return { kind = "lit", text = utf8_char(e.cp) }, ni
  elseif c == "^" then
    return { kind = "lit", text = "" }, i + 1
  elseif c == "$" then
    return { kind = "lit", text = "" }, i + 1
  elseif c == "*" or c == "+" or c == "?" or c == "{" and find(p, "^{%d", i) then
    return nil
  else
    local cp = byte(c)
    local len = cp >= 0xF0 and 4 or cp >= 0xE0 and 3 or cp >= 0xC0 and 2 or 1
    return { kind = "lit", text = sub(p, i, i + len - 1) }, i + len
  end
end

local function parse_seq(p, i)
  local items = {}
  while true do
    local c = sub(p, i, i)
    if c == "" or c == "|" or c == ")" then break end
    local atom, ni = parse_atom(p, i)
    if not atom then return nil end
    i = ni
    local q = sub(p, i, i)
    local lo, hi
    if q == "*" then lo, hi, i = 0, nil, i + 1
    elseif q == "+" then lo, hi, i = 1, nil, i + 1
    elseif q == "?" then lo, hi, i = 0, 1, i + 1
    elseif q == "{" then
      local a, b, comma, e
      a, e = match(p, "^{(%d+)}()", i)
      if a then lo, hi, i = tonumber(a), tonumber(a), e
      else
        a, comma, b, e = match(p, "^{(%d+)(,)(%d*)}()", i)
        if a then
          lo, hi, i = tonumber(a), b ~= "" and tonumber(b) or nil, e
        end
      end
    end
    if lo then
      if sub(p, i, i) == "?" then i = i + 1 end
      atom = { kind = "rep", node = atom, lo = lo, hi = hi }
    end
    items[#items + 1] = atom
  end
  return { kind = "seq", items = items }, i
end

function parse_alt(p, i)
  local alts = {}
  while true do
    local node, ni = parse_seq(p, i)
    if not node then return nil end
    alts[#alts + 1] = node
    i = ni
    if sub(p, i, i) ~= "|" then break end
    i = i + 1
  end
  return { kind = "alt", alts = alts }, i
end

local function parse_pattern(p)
  local ok, node, i = pcall(parse_alt, p, 1)
  if not ok or not node or i ~= #p + 1 then return nil end
  return node
end

-- out.n counts the code points emitted so far; with a target length,
-- unbounded repetitions go on until the output reaches it.
local function put(out, text)
  out[#out + 1] = text
  out.n = out.n + ulen(text)
end

local function emit(node, rng, out, stretch, target)
  local k = node.kind
  if k == "lit" then
    put(out, node.text)
  elseif k == "set" then
    if node.wide then
      local f = rng:pick(node.wide)
      for cp = 0xA0, 0x2FFF do
        if f(cp) then put(out, utf8_char(cp)) return end
      end
      put(out, "?")
    elseif #node.pool > 0 then
      put(out, char(rng:pick(node.pool)))
    else
      put(out, utf8_char(0xE9)) -- a negated class of every printable character
    end
  elseif k == "seq" then
    for _, item in ipairs(node.items) do emit(item, rng, out, stretch, target) end
  elseif k == "alt" then
    emit(rng:pick(node.alts), rng, out, stretch, target)
  elseif k == "rep" then
    if target and not node.hi then
      local count = 0
      while count < node.lo or (out.n < target and count < node.lo + 64) do
        emit(node.node, rng, out, stretch, target)
        count = count + 1
      end
    else
      local hi = node.hi or node.lo + stretch
      for _ = 1, rng:int(node.lo, hi) do emit(node.node, rng, out, stretch, target) end
    end
  end
end

--- A random string that the regular expression pattern matches, or nil
-- when the pattern uses what the generator does not handle (see above).
-- Unbounded repetitions (*, +, {n,}) repeat up to stretch (default 4)
-- more times than their minimum.
-- @usage gen.from_pattern("^[a-z]{3}-\\d+$", gen.rng(1)) --> e.g. "qkd-407"
function gen.from_pattern(pattern, rng, stretch, target)
  local node = parse_pattern(pattern)
  if not node then return nil end
  local out = { n = 0 }
  emit(node, rng, out, stretch or 4, target)
  return concat(out)
end

-- Whether the string s matches pattern (anywhere, as JSON Schema's
-- pattern does), compiled as the validators compile it (jsonschema.regex:
-- ECMAScript syntax on PCRE2); true when it does not compile.
local pattern_cache = {}
local function matches(pattern, s)
  local test = pattern_cache[pattern]
  if test == nil then
    test = jsonschema.regex(pattern) or false
    pattern_cache[pattern] = test
  end
  return not test or test(s)
end

-- Random data valid against a schema -----------------------------------------

-- Whether value is valid against schema (moonport.jsonschema, in the
-- response direction), to check the branches of oneOf and not.
local validators = setmetatable({}, { __mode = "k" })
local function validates(schema, version, value)
  if type(schema) ~= "table" then return schema ~= false end
  local v = validators[schema]
  if v == nil then
    v = assert(jsonschema.compile(schema, {
      dialect = version == "3.1" and "oas3.1" or "oas3.0", direction = "response" }))
    validators[schema] = v
  end
  return v.valid(value)
end

local WORDS = { "lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit",
  "sed", "do", "eiusmod", "tempor", "incididunt", "ut", "labore", "et", "dolore", "magna",
  "aliqua", "enim", "minim", "veniam", "quis", "nostrud", "exercitation", "ullamco" }
local ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
local HEX = "0123456789abcdef"

local function pad2(n) return format("%02d", n) end

local function rand_chars(rng, set, n)
  local out = {}
  for i = 1, n do
    local k = rng:int(1, #set)
    out[i] = sub(set, k, k)
  end
  return concat(out)
end

local function rand_date(rng)
  local y, m = rng:int(1970, 2030), rng:int(1, 12)
  return format("%04d-%s-%s", y, pad2(m), pad2(rng:int(1, 28)))
end

local function rand_time(rng)
  return format("%s:%s:%sZ", pad2(rng:int(0, 23)), pad2(rng:int(0, 59)), pad2(rng:int(0, 59)))
end

local function rand_uuid(rng)
  local out = {}
  for i, c in ipairs({ 8, 4, 4, 4, 12 }) do out[i] = rand_chars(rng, HEX, c) end
  -- Version 4, variant 10xx, as ajv-formats' uuid and RFC 4122 accept.
  out[3] = "4" .. sub(out[3], 2)
  local k = rng:int(1, 4)
  out[4] = sub("89ab", k, k) .. sub(out[4], 2)
  return concat(out, "-")
end

local FORMATS = {
  email = function(rng) return rand_chars(rng, "abcdefghijklmnopqrstuvwxyz", rng:int(3, 10)) .. "@"
    .. rand_chars(rng, "abcdefghijklmnopqrstuvwxyz", rng:int(3, 8)) .. ".com" end,
  ["idn-email"] = function(rng) return rand_chars(rng, ALNUM, rng:int(3, 8)) .. "@example.org" end,
  uuid = rand_uuid,
  ["date-time"] = function(rng) return rand_date(rng) .. "T" .. rand_time(rng) end,
  date = rand_date,
  time = rand_time,
  uri = function(rng) return "https://" .. rand_chars(rng, "abcdefghijklmnopqrstuvwxyz", rng:int(3, 10))
    .. ".example.com/" .. rand_chars(rng, ALNUM, rng:int(1, 8)) end,
  ["uri-reference"] = function(rng) return "/" .. rand_chars(rng, ALNUM, rng:int(1, 8)) end,
  iri = function(rng) return "https://" .. rand_chars(rng, "abcdefghijklmnopqrstuvwxyz", rng:int(3, 10)) .. ".example.org/" end,
  ["iri-reference"] = function(rng) return "/" .. rand_chars(rng, ALNUM, rng:int(1, 8)) end,
  url = function(rng) return "https://" .. rand_chars(rng, "abcdefghijklmnopqrstuvwxyz", rng:int(3, 10)) .. ".example.com/" end,
  ipv4 = function(rng) return format("%d.%d.%d.%d", rng:int(1, 223), rng:int(0, 255), rng:int(0, 255), rng:int(1, 254)) end,
  ipv6 = function(rng)
    local out = {}
    for i = 1, 8 do out[i] = format("%x", rng:int(0, 65535)) end
    return concat(out, ":")
  end,
  hostname = function(rng) return rand_chars(rng, "abcdefghijklmnopqrstuvwxyz", rng:int(3, 10)) .. ".example.com" end,
  ["idn-hostname"] = function(rng) return rand_chars(rng, "abcdefghijklmnopqrstuvwxyz", rng:int(3, 10)) .. ".example.org" end,
  byte = function(rng)
    local n = rng:int(1, 6) * 4
    return rand_chars(rng, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", n)
  end,
  ["json-pointer"] = function(rng) return "/" .. rand_chars(rng, "abcdefghijklmnopqrstuvwxyz", rng:int(1, 8)) end,
  ["relative-json-pointer"] = function(rng) return rng:int(0, 3) .. "/" .. rand_chars(rng, "abcdefghijklmnopqrstuvwxyz", rng:int(1, 8)) end,
  ["uri-template"] = function(rng) return "https://example.com/{" .. rand_chars(rng, "abcdefghijklmnopqrstuvwxyz", rng:int(2, 8)) .. "}" end,
  regex = function(rng) return rand_chars(rng, "abcdefghijklmnopqrstuvwxyz", rng:int(1, 8)) end,
  duration = function(rng) return "P" .. rng:int(1, 30) .. "D" end,
}


local function fits_length(s, schema)
  local n = ulen(s)
  local lo = tonumber(schema.minLength) or 0
  local hi = tonumber(schema.maxLength)
  return n >= lo and (not hi or n <= hi)
end

local function words(rng, lo, hi)
  -- Words up to a length in [lo, hi], then cut or padded to it.
  local target = rng:int(lo, hi)
  local out = {}
  local n = 0
  while n < target do
    local w = rng:pick(WORDS)
    out[#out + 1] = w
    n = n + #w + 1
  end
  local s = concat(out, " ")
  if #s > target then s = sub(s, 1, target) end
  s = gsub(s, " $", "x")
  while #s < target do s = s .. "x" end
  return s
end

local fake

local function fake_string(s, ctx)
  local rng = ctx.rng
  local minlen = max(0, floor(tonumber(s.minLength) or 0))
  local maxlen = tonumber(s.maxLength)
  if s.pattern ~= nil and type(s.pattern) == "string" then
    -- Lengths are met by trying repetition counts up to the bounds.
    local lo = floor(tonumber(s.minLength) or 0)
    local hi = floor(tonumber(s.maxLength) or lo + 8)
    for try = 1, 20 do
      local target = try > 5 and rng:int(lo, max(lo, hi)) or nil
      local v = gen.from_pattern(s.pattern, rng, 4, target)
      if not v then break end
      if fits_length(v, s) and matches(s.pattern, v) then return v end
    end
    -- Beyond the generator (lookarounds, backreferences, \p{...}) or no
    -- match within the lengths: the schema's own default or examples,
    -- which the author wrote to match, else the static sample.
    local examples = is_list(s.examples) and s.examples or {}
    local candidates = { s.default, s.example, examples[1], examples[2] }
    for i = 1, 4 do
      if type(candidates[i]) == "string" then return candidates[i] end
    end
    return sample_string(s)
  end
  local f = s.format and FORMATS[s.format]
  if f then
    for _ = 1, 10 do
      local v = f(rng)
      if fits_length(v, s) then return v end
    end
  end
  -- A large maxLength (a "no real limit") bounds the length, it does
  -- not pick it: at most 100 characters past the minimum.
  local hi = min(maxlen and floor(maxlen) or max(minlen, 1) + 12, max(minlen, 1) + 100)
  if hi < minlen then hi = minlen end
  local lo = minlen
  if lo == 0 and hi > 0 then lo = 1 end
  return words(rng, lo, hi)
end

-- The bounds of a number schema under version's rules: lo, hi, and
-- whether each is exclusive.
local function bounds(s, version)
  local lo, hi, xlo, xhi = tonumber(s.minimum), tonumber(s.maximum), false, false
  if s.exclusiveMinimum == true then
    xlo = lo ~= nil
  elseif type(s.exclusiveMinimum) == "number" and version ~= "3.0" then
    if lo == nil or s.exclusiveMinimum >= lo then lo, xlo = s.exclusiveMinimum, true end
  end
  if s.exclusiveMaximum == true then
    xhi = hi ~= nil
  elseif type(s.exclusiveMaximum) == "number" and version ~= "3.0" then
    if hi == nil or s.exclusiveMaximum <= hi then hi, xhi = s.exclusiveMaximum, true end
  end
  local range = RANGES[s.format]
  if range and s.format ~= "float" and s.format ~= "double" then
    if lo == nil or lo < range[1] then lo, xlo = range[1], false end
    if hi == nil or hi > range[2] then hi, xhi = range[2], false end
  end
  return lo, hi, xlo, xhi
end

local function fake_number(s, ctx, integer)
  local rng = ctx.rng
  local lo, hi, xlo, xhi = bounds(s, ctx.version)
  local span = 1000
  if lo == nil and hi == nil then
    lo, hi = integer and 1 or 0, span
  elseif lo == nil then
    lo = hi - span
  elseif hi == nil then
    hi = lo + span
  end
  -- Keep random values human-sized within huge ranges.
  if hi - lo > 1e9 then
    if lo <= 0 and hi >= 0 then lo, hi = max(lo, -1e6), min(hi, 1e9)
    elseif lo > 0 then hi = lo + 1e6 else lo = hi - 1e6 end
  end
  local m = tonumber(s.multipleOf)
  if integer then
    local a = xlo and floor(lo) + 1 or ceil(lo)
    local b = xhi and ceil(hi) - 1 or floor(hi)
    if m and m > 0 then
      local step = m
      if m ~= floor(m) then
        -- An integer multiple of a fraction: a multiple of the smallest
        -- integer it divides (0.5 -> 1); 0 always is one.
        step = 0
        for k = 1, 1000 do
          local x = m * k
          if x == floor(x) then step = x break end
        end
        if step == 0 then return 0 end
      end
      local ka, kb = ceil(a / step), floor(b / step)
      if ka > kb then return a end
      return rng:int(ka, kb) * step
    end
    if a > b then return a end
    return rng:int(a, b)
  end
  if m and m > 0 then
    local ka = xlo and floor(lo / m) + 1 or ceil(lo / m)
    local kb = xhi and ceil(hi / m) - 1 or floor(hi / m)
    for _ = 1, 20 do
      local k = rng:int(ka, max(ka, kb))
      local v = k * m
      local q = v / m
      if q == floor(q) then return v end
    end
    return 0
  end
  for _ = 1, 20 do
    local v = floor((lo + rng:random() * (hi - lo)) * 100 + 0.5) / 100
    if (xlo and v > lo or not xlo and v >= lo) and (xhi and v < hi or not xhi and v <= hi) then
      return v
    end
  end
  return (lo + hi) / 2
end

-- A schema with the keywords of both: the sub-schemas of an allOf, or a
-- oneOf branch with the keywords beside the oneOf. Lists (required, type)
-- are combined; properties present in both become an allOf of the two.
local function merge_schemas(a, b)
  if type(a) ~= "table" then return b end
  if type(b) ~= "table" then return a end
  local m = {}
  for k, v in pairs(a) do m[k] = v end
  for k, v in pairs(b) do
    local old = m[k]
    if old == nil then
      m[k] = v
    elseif k == "required" and is_list(old) and is_list(v) then
      local r, seen = new_array(), {}
      for _, list in ipairs({ old, v }) do
        for _, name in ipairs(list) do
          if not seen[name] then seen[name] = true r[#r + 1] = name end
        end
      end
      m[k] = r
    elseif k == "properties" and type(old) == "table" and type(v) == "table" then
      local p = {}
      for name, ps in pairs(old) do p[name] = ps end
      for name, ps in pairs(v) do
        p[name] = p[name] ~= nil and { allOf = setmetatable({ p[name], ps }, array_mt) } or ps
      end
      m[k] = p
    elseif (k == "minimum" or k == "minLength" or k == "minItems" or k == "minProperties") and type(v) == "number" then
      m[k] = max(old, v)
    elseif (k == "maximum" or k == "maxLength" or k == "maxItems" or k == "maxProperties") and type(v) == "number" then
      m[k] = min(old, v)
    elseif k == "type" then
      -- Keep the types both allow.
      local function set(t)
        local r = {}
        if is_list(t) then for _, x in ipairs(t) do r[x] = true end else r[t] = true end
        if r.number then r.integer = true end
        return r
      end
      local sa, sb = set(old), set(v)
      local both = new_array()
      for _, name in ipairs({ "integer", "number", "string", "boolean", "object", "array", "null" }) do
        if sa[name] and sb[name] and not (name == "number" and both[#both] == "integer" and not (is_list(old) and is_list(v))) then
          both[#both + 1] = name
        end
      end
      m[k] = #both == 1 and both[1] or both
    elseif k == "allOf" or k == "anyOf" or k == "oneOf" then
      m[k] = old -- the other stays checked by the caller
      m.allOf = setmetatable({ { [k] = v } }, array_mt)
    else
      m[k] = v
    end
  end
  if a.nullable == true and b.nullable ~= true and b.type ~= nil then m.nullable = nil end
  return m
end

-- The schema an allOf amounts to, merged (recursively).
local function flatten(s)
  if type(s) ~= "table" or not is_list(s.allOf) then return s end
  local base = {}
  for k, v in pairs(s) do if k ~= "allOf" then base[k] = v end end
  for _, part in ipairs(s.allOf) do base = merge_schemas(base, flatten(part)) end
  if base.allOf then return flatten(base) end
  return base
end

local function types_of(s, version)
  local t = s.type
  local list = {}
  if is_list(t) then
    for _, x in ipairs(t) do list[#list + 1] = x end
  elseif type(t) == "string" then
    list[1] = t
  else
    local inferred = infer_type(s)
    if inferred then list[1] = inferred
    else list = { "string", "integer", "boolean" } end
  end
  if version == "3.0" and s.nullable == true and t ~= nil then list[#list + 1] = "null" end
  return list
end

local deep_equal = jsonschema.equal

-- The most schemas one dynamic value visits (gen.fake).
local FAKE_TICKS = 20000

local function fake_array(s, ctx)
  local rng = ctx.rng
  local lo = max(0, floor(tonumber(s.minItems) or 0))
  local hi = tonumber(s.maxItems)
  -- Likewise a large maxItems: at most 10 items past the minimum.
  hi = min(hi and floor(hi) or lo + (ctx.depth > 4 and 0 or 3), lo + 10)
  if ctx.depth > 4 and hi > lo then hi = lo end
  if hi < lo then hi = lo end
  local prefix = s.prefixItems
  local items = s.items
  if is_list(items) and ctx.version ~= "3.1" then prefix, items = items, s.additionalItems end
  if not is_list(prefix) then prefix = nil end
  local n = rng:int(lo, hi)
  if s.contains ~= nil and n == 0 then n = 1 end
  if prefix and n < #prefix and (items == false) then n = min(n, #prefix) end
  if items == false and prefix then n = min(n, #prefix) end
  local out = new_array()
  local contains_left = s.contains ~= nil and max(1, tonumber(s.minContains) or 1) or 0
  for i = 1, n do
    local item = prefix and prefix[i]
    if item == nil then item = items end
    if contains_left > 0 then
      item = merge_schemas(item == nil and {} or item, s.contains)
      contains_left = contains_left - 1
    end
    local v, dup
    for _ = 1, (s.uniqueItems == true) and 20 or 1 do
      v = fake(item, ctx)
      dup = false
      if s.uniqueItems == true then
        for j = 1, #out do if deep_equal(out[j], v) then dup = true break end end
      end
      if not dup then break end
    end
    -- Past minItems, an item that keeps repeating another is left out.
    if dup and #out >= lo then break end
    out[#out + 1] = v == nil and null or v
  end
  return out
end

local function fake_object(s, ctx)
  local rng = ctx.rng
  local out = {}
  local props = type(s.properties) == "table" and s.properties or {}
  local required, is_required = {}, {}
  if is_list(s.required) then
    for _, name in ipairs(s.required) do
      if not is_required[name] then is_required[name] = true required[#required + 1] = name end
    end
  end
  local count = 0
  local maxprops = tonumber(s.maxProperties) or huge
  local function put(name, schema)
    local v = fake(schema == nil and {} or schema, ctx)
    if v ~= nil then out[name] = v count = count + 1 end
  end
  for _, name in ipairs(required) do
    local ps = props[name]
    -- A writeOnly property is not in responses, as Prism strips it.
    if not (type(ps) == "table" and ps.writeOnly == true) then put(name, ps) end
  end
  local optional = {}
  for _, name in ipairs(keys(props)) do
    local ps = props[name]
    if not is_required[name] and not (type(ps) == "table" and ps.writeOnly == true) and ps ~= false then
      optional[#optional + 1] = name
    end
  end
  local minprops = tonumber(s.minProperties) or 0
  local deep = ctx.depth > 4
  for _, name in ipairs(optional) do
    if count >= maxprops then break end
    if (count < minprops) or (not deep and rng:random() < 0.7) then put(name, props[name]) end
  end
  local extra = s.additionalProperties
  local n = 1
  while count < minprops and count < maxprops and extra ~= false and s.patternProperties == nil
      and s.propertyNames == nil and n < 100 do
    local name = "property" .. n
    if out[name] == nil and props[name] == nil then put(name, type(extra) == "table" and extra or {}) end
    n = n + 1
  end
  -- dependentRequired (and draft 4's dependencies lists): bring the
  -- properties a present one asks for.
  local deps = s.dependentRequired or s.dependencies
  if type(deps) == "table" then
    for name, list in pairs(deps) do
      if out[name] ~= nil and is_list(list) then
        for _, other in ipairs(list) do
          if out[other] == nil then put(other, props[other]) end
        end
      end
    end
  end
  return out
end

-- One branch of oneOf/anyOf (with the schema's other keywords), a value
-- valid against it and, for oneOf, against no other branch.
local function fake_branch(s, list, ctx, exclusive)
  local base = {}
  for k, v in pairs(s) do if k ~= "oneOf" and k ~= "anyOf" then base[k] = v end end
  local order = {}
  for i = 1, #list do order[i] = i end
  for i = #order, 2, -1 do
    local j = ctx.rng:int(1, i)
    order[i], order[j] = order[j], order[i]
  end
  local first
  for _, i in ipairs(order) do
    for _ = 1, 8 do
      local v = fake(merge_schemas(base, list[i]), ctx)
      if first == nil then first = v end
      local ok = true
      if exclusive then
        for j = 1, #list do
          if j ~= i and validates(list[j], ctx.version, v) then ok = false break end
        end
      end
      if ok then return v end
    end
  end
  return first
end

function fake(s, ctx)
  if s == nil or s == true then s = {} end
  if s == false or type(s) ~= "table" then return nil end
  if ctx.depth > 30 then return nil end
  ctx.ticks = ctx.ticks - 1
  if ctx.ticks < 0 then error(TOO_COMPLEX, 0) end
  ctx.depth = ctx.depth + 1
  local v = (function()
    if is_list(s.allOf) then return fake(flatten(s), ctx) end
    if s.const ~= nil then return s.const end
    if is_list(s.enum) and s.enum[1] ~= nil then return ctx.rng:pick(s.enum) end
    if is_list(s.oneOf) and s.oneOf[1] ~= nil then return fake_branch(s, s.oneOf, ctx, true) end
    if is_list(s.anyOf) and s.anyOf[1] ~= nil then return fake_branch(s, s.anyOf, ctx, false) end
    if type(s["not"]) == "table" then
      local rest = {}
      for k, x in pairs(s) do if k ~= "not" then rest[k] = x end end
      local value
      for _ = 1, 10 do
        value = fake(rest, ctx)
        if not validates(s["not"], ctx.version, value) then return value end
      end
      return value
    end
    local types = types_of(s, ctx.version)
    -- Null only now and then when the schema allows others too.
    local t = types[1]
    if #types > 1 then
      local non_null = {}
      for _, x in ipairs(types) do if x ~= "null" then non_null[#non_null + 1] = x end end
      t = (#non_null == 0 or ctx.rng:random() < 0.1) and "null" or ctx.rng:pick(non_null)
    end
    if t == "null" then return null end
    if t == "boolean" then return ctx.rng:random() < 0.5 end
    if t == "integer" then return fake_number(s, ctx, true) end
    if t == "number" then return fake_number(s, ctx, false) end
    if t == "string" then return fake_string(s, ctx) end
    if t == "array" then return fake_array(s, ctx) end
    if t == "object" then return fake_object(s, ctx) end
    return fake_string(s, ctx)
  end)()
  ctx.depth = ctx.depth - 1
  return v
end

--- A random value valid against schema (as a response: writeOnly
-- properties left out, as Prism strips them), drawn from rng (gen.rng;
-- the same seed gives the same value). version: "3.0" (nullable, boolean
-- exclusiveMinimum/Maximum, tuple-less items) or "3.1" (draft 2020-12).
-- Types, formats (email, uuid, date-time, date, time, uri, ipv4, ipv6,
-- hostname, byte, ...), patterns (gen.from_pattern; the schema's example
-- or default where the pattern is beyond it), lengths, ranges,
-- multipleOf, enums, const, required properties and some optional ones,
-- arrays within minItems/maxItems (uniqueItems, contains), allOf merged,
-- one oneOf branch (checked against the others when a validator is at
-- hand), not. Recursion is cut below a depth of 30 (optional parts are
-- left out from depth 5). Returns the value, or nil and a message when
-- it takes over 20,000 schema visits (required properties that recur,
-- oneOf retried at every level, a huge minItems): the caller's 500
-- "Schema too complex", as with gen.sample, rather than unbounded work.
-- @usage local v = gen.fake(schema, gen.rng(42), "3.1")
function gen.fake(schema, rng, version)
  local ctx = { rng = rng or gen.rng(), version = version or "3.0", depth = 0, ticks = FAKE_TICKS }
  local ok, v = pcall(fake, schema, ctx)
  if not ok then
    if v == TOO_COMPLEX then return nil, "the schema is too complex to generate" end
    error(v, 0)
  end
  return v
end

-- Responses as Prism chooses them -----------------------------------------------

local PROBLEMS = {
  NOT_ACCEPTABLE = { 406, "The server cannot produce a representation for your accept header" },
  NOT_FOUND = { 404, "The server cannot find the requested content" },
  NO_RESPONSE_RESPONSE_DEFINED = { 500, "No response defined for the selected operation" },
  UNPROCESSABLE_ENTITY = { 422, "Invalid request" },
  SCHEMA_TOO_COMPLEX = { 500, "Schema too complex" },
}

local function problem(kind, detail)
  local p = PROBLEMS[kind]
  return { status = p[1], type = kind, title = p[2], detail = detail or "" }
end

-- A plain JavaScript Error inside Prism: a 500 "UNKNOWN" with the message
-- as title.
local function plain_error(message)
  return { status = 500, type = "UNKNOWN", title = message, detail = "", plain = true }
end

-- How JavaScript's `${error}` prints an error.
local function error_text(e)
  if e.plain then return "Error: " .. e.title end
  return "https://stoplight.io/prism/errors#" .. e.type .. ": " .. e.title
end

-- Prefer header, as parse-prefer-header reads it: preferences split on
-- commas and their parameters on semicolons (outside quotes), the first
-- name of each wins, a name without a value is true.
local function camel(token)
  local s = gsub(token, "[^%w]+(%w?)", function(c) return c:upper() end)
  return s
end

local function split_quoted(s, sep)
  local parts, start, quote = {}, 1, false
  for i = 1, #s + 1 do
    local c = i <= #s and sub(s, i, i) or sep
    if c == '"' then quote = not quote
    elseif c == sep and not quote then
      parts[#parts + 1] = sub(s, start, i - 1)
      start = i + 1
    end
  end
  return parts
end

local function trim(s) return (gsub(s, "^%s+", ""):gsub("%s+$", "")) end

local function parse_prefer(header)
  local result = {}
  for _, preference in ipairs(split_quoted(header, ",")) do
    local base
    for _, segment in ipairs(split_quoted(preference, ";")) do
      local eq = find(segment, "=", 1, true)
      local token, value
      if not eq then
        token, value = lower(trim(segment)), ""
      else
        token, value = lower(trim(sub(segment, 1, eq - 1))), trim(sub(segment, eq + 1))
        if sub(value, 1, 1) == '"' and sub(value, -1) == '"' and #value >= 2 then value = sub(value, 2, -2) end
      end
      if base == nil then base = token else token = base .. "-" .. token end
      local key = camel(token)
      if result[key] == nil then result[key] = value ~= "" and value or true end
    end
  end
  return result
end

-- JSON.stringify of a decoded preference (true or a string): control
-- characters a percent-encoded query brings are escaped as there.
local function js_stringify(v)
  local ok, text = pcall(json.encode, v)
  return ok and text or '"' .. tostring(v) .. '"'
end

-- The preferences of a request: { code = 404, example = "name",
-- dynamic = true|false, seed = "..." } or nil and Prism's 422 problem.
local function preferences(req)
  local raw
  local prefer = req.header and req:header("prefer")
  if prefer and prefer ~= "" then
    raw = parse_prefer(prefer)
  else
    local ok, q = pcall(function()
      return { code = req:query("__code"), dynamic = req:query("__dynamic"),
        seed = req:query("__seed"), example = req:query("__example") }
    end)
    raw = ok and type(q) == "table" and q or {}
  end
  local out, errors = {}, {}
  local function bad(name, value, expected)
    errors[#errors + 1] = 'optional property "' .. name .. '"\n└─ cannot decode '
      .. js_stringify(value) .. ", should be " .. expected
  end
  if raw.code ~= nil then
    if type(raw.code) ~= "string" then bad("code", raw.code, "string")
    elseif not find(raw.code, "^%d%d%d$") then bad("code", raw.code, "a number")
    -- Prism tests the decoded number for truth: 000 asks for no code.
    elseif tonumber(raw.code) ~= 0 then out.code = tonumber(raw.code) end
  end
  if raw.dynamic ~= nil then
    if type(raw.dynamic) ~= "string" then bad("dynamic", raw.dynamic, "string")
    elseif raw.dynamic == "true" then out.dynamic = true
    elseif raw.dynamic == "false" then out.dynamic = false
    else bad("dynamic", raw.dynamic, "a boolean") end
  end
  if raw.seed ~= nil then
    if type(raw.seed) ~= "string" then bad("seed", raw.seed, "string") else out.seed = raw.seed end
  end
  if raw.example ~= nil then
    if type(raw.example) ~= "string" then bad("example", raw.example, "string") else out.example = raw.example end
  end
  if #errors > 0 then return nil, problem("UNPROCESSABLE_ENTITY", concat(errors, "\n")) end
  return out
end
gen.preferences = preferences

-- Accept, as negotiator 0.6 ranks media types -------------------------------

local function parse_media_range(str, i)
  local t, s, params = match(str, "^%s*([^%s/;]+)/([^;%s]+)%s*;(.*)$")
  if not t then
    t, s = match(str, "^%s*([^%s/;]+)/([^;%s]+)%s*$")
    params = nil
  end
  if not t then return nil end
  local p, q = {}, 1
  if params then
    for _, kv in ipairs(split_quoted(params, ";")) do
      kv = trim(kv)
      local eq = find(kv, "=", 1, true)
      local key, val = kv, nil
      if eq then key, val = sub(kv, 1, eq - 1), sub(kv, eq + 1) end
      key = lower(key)
      if val and sub(val, 1, 1) == '"' and sub(val, -1) == '"' and #val >= 2 then val = sub(val, 2, -2) end
      if key == "q" then
        q = tonumber(match(val or "", "^%s*([%+%-]?%d*%.?%d*[eE]?[%+%-]?%d*)")) or (0 / 0)
        break
      end
      p[key] = val
    end
  end
  return { type = t, subtype = s, params = p, q = q, i = i }
end

local function parse_accept(accept)
  -- negotiator numbers the ranges as split, before dropping bad ones.
  local out = {}
  for i, part in ipairs(split_quoted(accept, ",")) do
    local r = parse_media_range(trim(part), i - 1)
    if r then out[#out + 1] = r end
  end
  return out
end

local function specify(provided, spec, index)
  local p = parse_media_range(provided, 0)
  if not p then return nil end
  local s = 0
  if lower(spec.type) == lower(p.type) then s = s + 4
  elseif spec.type ~= "*" then return nil end
  if lower(spec.subtype) == lower(p.subtype) then s = s + 2
  elseif spec.subtype ~= "*" then return nil end
  if next(spec.params) ~= nil then
    for k, v in pairs(spec.params) do
      if v ~= "*" and lower(v or "") ~= lower(p.params[k] or "") then return nil end
    end
    s = s + 1
  end
  return { i = index, o = spec.i, q = spec.q, s = s }
end

-- The media type of provided (a list) the Accept value prefers, or nil.
local function preferred(accept, provided)
  local specs = parse_accept(accept)
  local best
  for index, t in ipairs(provided) do
    local pr = { o = -1, q = 0, s = 0, i = index }
    for _, spec in ipairs(specs) do
      local sp = specify(t, spec, index)
      if sp then
        local d = pr.s - sp.s
        if d == 0 then d = pr.q - sp.q end
        if d == 0 then d = pr.o - sp.o end
        if d < 0 then pr = sp end
      end
    end
    if pr.q > 0 then
      if not best or pr.q > best.q or (pr.q == best.q and (pr.s > best.s
          or (pr.s == best.s and (pr.o < best.o or (pr.o == best.o and pr.i < best.i))))) then
        best = pr
      end
    end
  end
  return best and provided[best.i]
end

-- The contents of a response in order: { media_type, media = object }.
local function contents_of(response)
  local list = {}
  local content = type(response) == "table" and response.content
  if type(content) ~= "table" then return list end
  for _, mt in ipairs(keys(content)) do
    if is_object(content[mt]) then list[#list + 1] = { media_type = mt, media = content[mt] } end
  end
  return list
end

-- Prism's findBestHttpContentByMediaType: accepts' choice among the
-- contents' media types, then once more with the ranges' parameters other
-- than q dropped (only the ranges that had some).
local function best_content(contents, accept_ranges)
  if #contents == 0 then return nil end
  local provided = {}
  for i, c in ipairs(contents) do provided[i] = c.media_type end
  local t = preferred(concat(accept_ranges, ","), provided)
  if t then
    for _, c in ipairs(contents) do if c.media_type == t then return c end end
  end
  local stripped = {}
  for _, range in ipairs(accept_ranges) do
    local r = parse_media_range(trim(range), 0)
    local other = false
    if r then
      for k in pairs(r.params) do if k ~= "q" then other = true end end
      -- contentType.parse keeps q only when it is written as q.
      if other then
        local q = match(range, ";%s*[qQ]%s*=%s*([^;]*)")
        stripped[#stripped + 1] = lower(r.type .. "/" .. r.subtype) .. (q and ("; q=" .. trim(q)) or "")
      end
    end
  end
  if #stripped == 0 then return nil end
  return best_content(contents, stripped)
end

local function split_commas(s)
  local list = {}
  for part in gmatch(s .. ",", "([^,]*),") do list[#list + 1] = part end
  return list
end

-- A media type's examples in Prism's order: `example` (or the schema's
-- first example, as http-spec converts it) under the key "default", then
-- `examples` in order. Each { key, value, has_value }.
local function examples_of(media)
  local list = {}
  local default_value
  if media.example ~= nil then
    default_value = media.example
  elseif is_object(media.schema) then
    local ex = convert(media.schema).examples
    if is_list(ex) and ex[1] ~= nil then default_value = ex[1] end
  end
  if default_value ~= nil then list[1] = { key = "default", value = default_value, has_value = true } end
  if is_object(media.examples) then
    for _, key in ipairs(keys(media.examples)) do
      local ex = media.examples[key]
      if is_object(ex) then
        list[#list + 1] = { key = key, value = ex.value, has_value = ex.externalValue == nil }
      end
    end
  end
  return list
end

-- negotiateByPartialOptionsAndHttpContent.
local function by_content(prefs, code, content)
  local media = content.media
  if prefs.example then
    for _, ex in ipairs(examples_of(media)) do
      if ex.key == prefs.example then
        return { code = code, media_type = content.media_type, example = ex, schema = media.schema }
      end
    end
    return nil, problem("NOT_FOUND", "Response for contentType: " .. content.media_type
      .. " and exampleKey: " .. prefs.example .. " does not exist.")
  elseif prefs.dynamic then
    if media.schema == nil then
      return nil, plain_error("Tried to force a dynamic response for: " .. content.media_type
        .. " but schema is not defined.")
    end
    return { code = code, media_type = content.media_type, schema = media.schema }
  end
  local first = examples_of(media)[1]
  return { code = code, media_type = content.media_type, example = first, schema = media.schema }
end

local function normalize_range(code)
  if find(code, "^%dXX$") then return sub(code, 1, 1) .. "00" end
  return code
end

local function response_codes(op)
  local list = {}
  for _, code in ipairs(keys(op.responses)) do
    if is_object(op.responses[code]) then list[#list + 1] = tostring(code) end
  end
  return list
end

local function response_at(op, code)
  local r = op.responses[code]
  if r == nil then r = op.responses[tonumber(code) or code] end
  return r
end

-- findResponseByStatusCode: the code itself, else its nXX range answering
-- with the code.
local function find_by_status(op, code)
  local want = tostring(code)
  for _, c in ipairs(response_codes(op)) do
    if lower(c) == want then return { code = c, response = response_at(op, c) } end
  end
  local range = sub(want, 1, 1) .. "XX"
  for _, c in ipairs(response_codes(op)) do
    if c == range then return { code = want, response = response_at(op, c) } end
  end
  return nil
end

local function find_default(op, code)
  for _, c in ipairs(response_codes(op)) do
    if c == "default" then return { code = tostring(code or 200), response = response_at(op, c) } end
  end
  return nil
end

local function find_lowest_2xx(op)
  local list = {}
  for _, c in ipairs(response_codes(op)) do
    if find(c, "^2%d%d$") or c == "2XX" then list[#list + 1] = c end
  end
  sort(list)
  if list[1] then return { code = normalize_range(list[1]), response = response_at(op, list[1]) } end
  return nil
end

local function find_first(op)
  local c = response_codes(op)[1]
  if c then return { code = normalize_range(c), response = response_at(op, c) } end
  return nil
end

-- negotiateOptionsBySpecificResponse: the content Accept asks for, or the
-- default media type without Accept.
local function by_response(method, prefs, found)
  local code, response = found.code, found.response
  local headers = response.headers
  if method == "HEAD" then return { code = code, headers = headers } end
  local contents = contents_of(response)
  if not prefs.accept then
    local content
    for _, c in ipairs(contents) do
      if c.media_type == "*/*" then content = c break end
    end
    content = content or best_content(contents, { "application/json", "*/*" })
    if not content then
      return { code = code, media_type = "text/plain", headers = headers, no_body = true }
    end
    local r, err = by_content(prefs, code, content)
    if not r then return nil, err end
    r.headers = headers
    return r
  end
  local ranges = split_commas(prefs.accept)
  local content = best_content(contents, ranges)
  if not content then
    if #contents > 0 then
      if code == "204" or find(prefs.accept, "*/*", 1, true) then
        return { code = code, headers = headers }
      end
      return nil, problem("NOT_ACCEPTABLE", "Unable to find content for " .. prefs.accept)
    end
    return { code = code, headers = headers }
  end
  local r, err = by_content(prefs, code, content)
  if not r then return nil, err end
  r.headers = headers
  if r.media_type == "*/*" then r.media_type = "text/plain" end
  return r
end

local function by_unspecified_code(op, prefs)
  local found = find_lowest_2xx(op) or find_default(op) or find_first(op)
  if not found then return nil, problem("NO_RESPONSE_RESPONSE_DEFINED") end
  return by_response(op.method, prefs, found)
end

local function by_specific_code(op, prefs)
  local found = find_by_status(op, prefs.code) or find_default(op, prefs.code)
  if not found then
    return nil, problem("NOT_FOUND", "Requested status code " .. prefs.code .. " is not defined in the document.")
  end
  local r = by_response(op.method, prefs, found)
  if r then return r end
  local r2, err2 = by_unspecified_code(op, prefs)
  if r2 then return r2 end
  local text = error_text(err2)
  return nil, plain_error(text .. ". We tried default response, but we got " .. text)
end

-- The value a header gets: its first example, or one built from its
-- schema; as text.
local function header_text(v)
  if type(v) == "string" then return v end
  if type(v) == "number" then return js_number(v) end
  if v == true then return "true" elseif v == false then return "false" end
  if v == nil or v == null then return "null" end
  local ok, text = pcall(json.encode, v)
  return ok and text or "null"
end

local function header_examples(h)
  local list = {}
  local content = h.content
  if is_object(content) then
    local first = content[keys(content)[1]]
    if is_object(first) then
      if is_object(first.examples) then
        for _, k in ipairs(keys(first.examples)) do
          local ex = first.examples[k]
          if is_object(ex) then list[#list + 1] = ex end
        end
      end
      if first.example ~= nil then list[#list + 1] = { value = first.example } end
    end
  end
  if is_object(h.examples) then
    for _, k in ipairs(keys(h.examples)) do
      local ex = h.examples[k]
      if is_object(ex) then list[#list + 1] = ex end
    end
  end
  if h.example ~= nil then list[#list + 1] = { value = h.example } end
  return list
end

local function payload(schema, dynamic, rng, version)
  if dynamic then
    return gen.fake(schema, rng, version)
  end
  local v, err = gen.sample(schema, version)
  if err then return nil, err end
  return v
end

local function mocked_headers(headers, dynamic, rng, version)
  local out = {}
  if not is_object(headers) then return out end
  for _, name in ipairs(keys(headers)) do
    local h = headers[name]
    local value = nil
    if is_object(h) and h.schema ~= nil then
      local exs = header_examples(h)
      if #exs > 0 then
        if exs[1].value ~= nil and exs[1].externalValue == nil then value = exs[1].value end
      else
        local v, err = payload(h.schema, dynamic, rng, version)
        if err then return nil, problem("SCHEMA_TOO_COMPLEX",
          "Unable to generate header for response. The schema is too complex to generate.") end
        if type(v) == "number" or type(v) == "string" then value = v end
      end
    end
    out[#out + 1] = { name, header_text(value) }
  end
  return out
end

-- assembleResponse: the body, the headers, Content-Type, deprecation.
local function assemble(op, r, prefs, opts)
  local dynamic = prefs.dynamic
  if dynamic == nil then dynamic = opts.dynamic and true or false end
  local rng = prefs.seed and gen.rng(prefs.seed) or opts.rng or gen.rng()
  local version = opts.version or op.version or "3.0"
  local body
  if r.example and r.example.has_value and r.example.value ~= nil then
    body = r.example.value
  elseif r.schema ~= nil and not r.no_body then
    local err
    body, err = payload(r.schema, dynamic, rng, version)
    if err then return nil, problem("SCHEMA_TOO_COMPLEX",
      "Unable to generate body for response. The schema is too complex to generate.") end
  end
  local headers, err = mocked_headers(r.headers, dynamic, rng, version)
  if not headers then return nil, err end
  if type(op.raw) == "table" and op.raw.deprecated == true then
    headers[#headers + 1] = { "deprecation", "true" }
  end
  return { status = tonumber(r.code) or 200, content_type = r.media_type, headers = headers, body = body }
end

local function request_prefs(req, opts)
  local prefs, err = preferences(req)
  if not prefs then return nil, err end
  local accept = req.header and req:header("accept")
  if accept == "" then accept = nil end
  prefs.accept = accept
  if prefs.dynamic == nil and opts.dynamic ~= nil then prefs.dynamic = opts.dynamic and true or false end
  return prefs
end

--- The answer Prism gives a valid request to op (see the top of this
-- file for the rules), or nil and a problem: { status = 406 | 404 | 422 |
-- 500, type = "NOT_ACCEPTABLE" | "NOT_FOUND" | "UNPROCESSABLE_ENTITY" (a
-- bad Prefer) | "NO_RESPONSE_RESPONSE_DEFINED" | "SCHEMA_TOO_COMPLEX" |
-- "UNKNOWN", title, detail } for the caller to send as Prism's
-- application/problem+json (type under https://stoplight.io/prism/errors#).
-- req: reads req:header("accept"), req:header("prefer") and, without a
-- Prefer header, req:query("__code" | "__example" | "__dynamic" |
-- "__seed"); req.method for HEAD. opts: { dynamic = bool (--dynamic),
-- rng = gen.rng(seed) (--seed), version = "3.0" | "3.1" }. answer: {
-- status, content_type (nil: no Content-Type), headers = { { name, value
-- }, ... } (values as text), body = a Lua value, a string for text types,
-- or nil for none }.
-- @usage local answer, problem = gen.respond(op, req, { dynamic = false })
function gen.respond(op, req, opts)
  opts = opts or {}
  local prefs, err = request_prefs(req, opts)
  if not prefs then return nil, err end
  local r
  if req.method == "HEAD" then op = setmetatable({ method = "HEAD" }, { __index = op }) end
  if prefs.code then
    r, err = by_specific_code(op, prefs)
  else
    r, err = by_unspecified_code(op, prefs)
  end
  if not r then
    err.plain = nil
    return nil, err
  end
  local answer, aerr = assemble(op, r, prefs, opts)
  if not answer then return nil, aerr end
  return answer
end

--- The answer Prism gives an invalid request, from op's own responses:
-- for status 401 (security) the 401 response, else `default` (as 401);
-- for 415 the 415, 422 or 400 response, else `default` (as 415); for
-- anything else the 422 or 400 response, else `default` (as 422). Its
-- first content with examples gives its first example (or the one
-- `Prefer: example=` names, when Prefer's code is one of those), else its
-- first content with a schema gives a body built from it, else no body.
-- No Accept negotiation, as Prism. Returns the answer (as gen.respond's),
-- nil when the document has no such response (the caller then sends
-- Prism's own problem listing the violations), or nil and a problem (a
-- bad Prefer header: 422; an example named that is not there: 404).
-- @usage local answer, problem = gen.for_invalid(op, 422, req, opts)
function gen.for_invalid(op, status, req, opts)
  opts = opts or {}
  local prefs, err = request_prefs(req, opts)
  if not prefs then return nil, err end
  local codes
  if status == 401 then codes = { 401 }
  elseif status == 415 then codes = { 415, 422, 400 }
  else codes = { 422, 400 } end
  local found
  for _, c in ipairs(codes) do
    found = find_by_status(op, c)
    if found then break end
  end
  found = found or find_default(op, codes[1])
  if not found then return nil end
  local example_key
  if prefs.code then
    for _, c in ipairs(codes) do if c == prefs.code then example_key = prefs.example end end
  end
  local response = found.response
  local contents = contents_of(response)
  local r
  for _, c in ipairs(contents) do
    local exs = examples_of(c.media)
    if #exs > 0 then
      local ex = exs[1]
      if example_key then
        ex = nil
        for _, e in ipairs(exs) do if e.key == example_key then ex = e break end end
        if not ex then
          return nil, problem("NOT_FOUND", "Response for contentType: " .. c.media_type
            .. " and exampleKey: " .. example_key .. " does not exist.")
        end
      end
      -- No schema here: an externalValue example serves no body, as Prism.
      r = { code = found.code, media_type = c.media_type, headers = response.headers, example = ex }
      break
    end
  end
  if not r then
    for _, c in ipairs(contents) do
      if c.media.schema ~= nil then
        r = { code = found.code, media_type = c.media_type, headers = response.headers, schema = c.media.schema }
        break
      end
    end
  end
  r = r or { code = found.code, headers = response.headers }
  return assemble(op, r, prefs, opts)
end

return gen
