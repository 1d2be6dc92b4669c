--- JSON Schema validation: a schema compiled once into Lua closures, then
-- run on decoded JSON values (moonport.json's: arrays carry
-- json.array_mt, null is json.null).
--
--     local jsonschema = require("moonport.mock.jsonschema")
--     local validate = assert(jsonschema.compile({ type = "object", required = { "id" } }))
--     local ok, path, why = validate(json.decode('{"name": "x"}'))
--     -- false, "", "required property id is missing"
--
-- Keywords: type, enum, const; properties, patternProperties,
-- additionalProperties, required, minProperties, maxProperties,
-- propertyNames, dependencies, dependentRequired, dependentSchemas;
-- items (a schema, or a list before 2020-12), prefixItems,
-- additionalItems, minItems, maxItems, uniqueItems, contains (with
-- minContains and maxContains); minimum, maximum, exclusiveMinimum and
-- exclusiveMaximum (booleans in draft 4, numbers after), multipleOf;
-- minLength, maxLength (in code points), pattern (anywhere in the
-- string); allOf, anyOf, oneOf, not, if/then/else; $ref to "#", and to
-- JSON pointers into the same document ("#/definitions/x",
-- "#/$defs/x"); true and false as schemas. format and the other
-- annotations (title, description, default, examples, $id, $schema,
-- $comment, readOnly, writeOnly, deprecated) are accepted and not
-- asserted. A keyword not listed here is ignored, as the drafts say.
--
-- @module moonport.mock.jsonschema

local json = require("moonport.json")
local core = require("moonport.core")

local type, pairs, ipairs, tostring, tonumber = type, pairs, ipairs, tostring, tonumber
local getmetatable, next = getmetatable, next
local floor, huge = math.floor, math.huge
local find, gsub, sub, byte = string.find, string.gsub, string.sub, string.byte
local concat, sort = table.concat, table.sort

local null, array_mt = json.null, json.array_mt

local jsonschema = {}

--- The drafts compile() takes, by WireMock's names for them.
jsonschema.versions = { V4 = 4, V6 = 6, V7 = 7, V201909 = 2019, V202012 = 2020 }

local function is_array(v)
  if type(v) ~= "table" then return false end
  if getmetatable(v) == array_mt then return true end
  return next(v) ~= nil and #v > 0 and next(v, #v) == nil and v[1] ~= nil
end

-- The JSON type of a value.
local function json_type(v)
  local t = type(v)
  if t == "string" then return "string" end
  if t == "number" then return "number" end
  if t == "boolean" then return "boolean" end
  if v == null or v == nil then return "null" end
  if t == "table" then
    if getmetatable(v) == json.literal_mt then return "number" end
    return is_array(v) and "array" or "object"
  end
  return t
end

local function num(v)
  if type(v) == "table" and getmetatable(v) == json.literal_mt then return tonumber(tostring(v)) end
  return v
end

-- Whether two JSON values are equal (1 and 1.0 are).
local function equal(a, b)
  local ta, tb = json_type(a), json_type(b)
  if ta ~= tb then return false end
  if ta == "number" then return num(a) == num(b) end
  if ta == "array" then
    if #a ~= #b then return false end
    for i = 1, #a do if not equal(a[i], b[i]) then return false end end
    return true
  end
  if ta == "object" then
    for k, v in pairs(a) do if b[k] == nil or not equal(v, b[k]) then return false end end
    for k in pairs(b) do if a[k] == nil then return false end end
    return true
  end
  return a == b
end
jsonschema.equal = equal

-- The number of code points in a UTF-8 string.
local function length(s)
  local _, n = gsub(s, "[^\128-\191]", "")
  return n
end

local function pointer_unescape(s)
  s = gsub(s, "%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end)
  return (gsub(gsub(s, "~1", "/"), "~0", "~"))
end

local function child(path, key)
  return path .. "/" .. gsub(gsub(tostring(key), "~", "~0"), "/", "~1")
end

local TYPES = { string = true, number = true, integer = true, boolean = true, null = true,
                object = true, array = true }

local compile_schema

-- Each check is function(v, path) -> true, or false, path, message.
local function ok_all(checks)
  local n = #checks
  if n == 0 then return function() return true end end
  if n == 1 then return checks[1] end
  return function(v, path)
    for i = 1, n do
      local ok, at, why = checks[i](v, path)
      if not ok then return false, at, why end
    end
    return true
  end
end

local function fail(at, why) return false, at, why end

-- Compiles schema (at `where`, a JSON pointer, for messages) in context
-- cx: { root, draft, refs = {pointer = check} }.
function compile_schema(schema, where, cx)
  if schema == true then return function() return true end end
  if schema == false then return function(_, path) return fail(path, "no value is allowed here") end end
  if type(schema) ~= "table" or is_array(schema) and next(schema) ~= nil then
    return nil, where .. ": a schema is an object or a boolean"
  end
  local checks = {}
  local function add(c) checks[#checks + 1] = c end
  local function sub_schema(s, at)
    return compile_schema(s, at, cx)
  end
  local function bad(key, what) return nil, ("%s/%s: %s"):format(where, key, what) end
  local function number_of(key)
    local v = num(schema[key])
    if v == nil then return nil end
    if type(v) ~= "number" then return bad(key, "is not a number") end
    return v
  end
  local function count_of(key)
    local v = num(schema[key])
    if v == nil then return nil end
    if type(v) ~= "number" or v < 0 or v % 1 ~= 0 then return bad(key, "is not a non-negative integer") end
    return v
  end
  local function list_of_schemas(key)
    local list = schema[key]
    if type(list) ~= "table" or not is_array(list) or #list == 0 then
      return bad(key, "is not a non-empty array of schemas")
    end
    local out = {}
    for i, s in ipairs(list) do
      local c, err = sub_schema(s, where .. "/" .. key .. "/" .. (i - 1))
      if not c then return nil, err end
      out[i] = c
    end
    return out
  end
  local err

  -- $ref: in drafts before 2019-09, it replaces its siblings.
  if schema["$ref"] ~= nil then
    local ref = schema["$ref"]
    if type(ref) ~= "string" or sub(ref, 1, 1) ~= "#" then
      return bad("$ref", "only references within the schema (#...) are supported")
    end
    local target = cx.root
    for part in ref:sub(2):gmatch("[^/]+") do
      if type(target) ~= "table" then target = nil break end
      local key = pointer_unescape(part)
      local v = target[key]
      if v == nil and is_array(target) and key:match("^%d+$") then v = target[tonumber(key) + 1] end
      target = v
    end
    if target == nil then return bad("$ref", ref .. " names nothing in the schema") end
    local refs = cx.refs
    local function check(v, path)
      local c = refs[ref]
      if c == nil then
        refs[ref] = function() return true end -- a reference to itself, while it compiles
        c = assert(compile_schema(target, ref, cx))
        refs[ref] = c
      end
      return c(v, path)
    end
    -- Compiled now too, so that a bad target is found at load.
    if not cx.compiling[ref] then
      cx.compiling[ref] = true
      local c
      c, err = compile_schema(target, ref, cx)
      if not c then return nil, err end
      refs[ref] = refs[ref] or c
    end
    if cx.draft < 2019 then return check end
    add(check)
  end

  local t = schema.type
  if t ~= nil then
    local list = type(t) == "string" and { t } or t
    if type(list) ~= "table" then return bad("type", "is not a type name or a list of them") end
    local allowed = {}
    for _, name in ipairs(list) do
      if not TYPES[name] then return bad("type", tostring(name) .. " is not a JSON Schema type") end
      allowed[name] = true
    end
    local names = concat(list, " or ")
    add(function(v, path)
      local vt = json_type(v)
      if allowed[vt] or vt == "number" and allowed.integer and num(v) % 1 == 0 then return true end
      return fail(path, ("%s is not %s"):format(vt, names))
    end)
  end
  if schema.enum ~= nil then
    local enum = schema.enum
    if type(enum) ~= "table" then return bad("enum", "is not an array") end
    add(function(v, path)
      for _, e in ipairs(enum) do if equal(v, e) then return true end end
      return fail(path, "not one of the enum's values")
    end)
  end
  if schema.const ~= nil and cx.draft >= 6 then
    local want = schema.const
    add(function(v, path)
      if equal(v, want) then return true end
      return fail(path, "not the const value")
    end)
  end

  -- Numbers.
  local minimum, maximum, xmin, xmax, multiple
  minimum, err = number_of("minimum") if err then return nil, err end
  maximum, err = number_of("maximum") if err then return nil, err end
  multiple, err = number_of("multipleOf") if err then return nil, err end
  if multiple ~= nil and multiple <= 0 then return bad("multipleOf", "is not above 0") end
  if cx.draft == 4 then
    if schema.exclusiveMinimum == true then xmin, minimum = minimum, nil end
    if schema.exclusiveMaximum == true then xmax, maximum = maximum, nil end
  else
    xmin, err = number_of("exclusiveMinimum") if err then return nil, err end
    xmax, err = number_of("exclusiveMaximum") if err then return nil, err end
  end
  if minimum or maximum or xmin or xmax or multiple then
    add(function(v, path)
      if json_type(v) ~= "number" then return true end
      v = num(v)
      if minimum and v < minimum then return fail(path, ("%s is below the minimum %s"):format(v, minimum)) end
      if maximum and v > maximum then return fail(path, ("%s is above the maximum %s"):format(v, maximum)) end
      if xmin and v <= xmin then return fail(path, ("%s is not above %s"):format(v, xmin)) end
      if xmax and v >= xmax then return fail(path, ("%s is not below %s"):format(v, xmax)) end
      if multiple then
        local q = v / multiple
        if math.abs(q - floor(q + 0.5)) > 1e-9 then
          return fail(path, ("%s is not a multiple of %s"):format(v, multiple))
        end
      end
      return true
    end)
  end

  -- Strings.
  local min_len, max_len
  min_len, err = count_of("minLength") if err then return nil, err end
  max_len, err = count_of("maxLength") if err then return nil, err end
  local re
  if schema.pattern ~= nil then
    if type(schema.pattern) ~= "string" then return bad("pattern", "is not a string") end
    re, err = core.regex("(?s).*?(?:" .. schema.pattern .. ").*", false)
    if not re then return bad("pattern", "bad regular expression: " .. err) end
  end
  if min_len or max_len or re then
    local src = schema.pattern
    add(function(v, path)
      if type(v) ~= "string" then return true end
      local n = length(v)
      if min_len and n < min_len then return fail(path, ("shorter than %d"):format(min_len)) end
      if max_len and n > max_len then return fail(path, ("longer than %d"):format(max_len)) end
      if re and not re:match(v) then return fail(path, ("does not match /%s/"):format(src)) end
      return true
    end)
  end

  -- Arrays.
  local items, prefix, extra
  local item_list = schema.prefixItems
  if cx.draft < 2020 and is_array(schema.items) then item_list = schema.items end
  if item_list ~= nil then
    prefix, err = list_of_schemas(cx.draft < 2020 and "items" or "prefixItems")
    if not prefix then return nil, err end
    local rest = cx.draft < 2020 and schema.additionalItems or schema.items
    if rest ~= nil then
      extra, err = sub_schema(rest, where .. "/" .. (cx.draft < 2020 and "additionalItems" or "items"))
      if not extra then return nil, err end
    end
  elseif schema.items ~= nil then
    items, err = sub_schema(schema.items, where .. "/items")
    if not items then return nil, err end
  end
  local min_items, max_items, min_contains, max_contains
  min_items, err = count_of("minItems") if err then return nil, err end
  max_items, err = count_of("maxItems") if err then return nil, err end
  local contains
  if schema.contains ~= nil and cx.draft >= 6 then
    contains, err = sub_schema(schema.contains, where .. "/contains")
    if not contains then return nil, err end
    if cx.draft >= 2019 then
      min_contains, err = count_of("minContains") if err then return nil, err end
      max_contains, err = count_of("maxContains") if err then return nil, err end
    end
    min_contains = min_contains or 1
  end
  local unique = schema.uniqueItems == true
  if items or prefix or extra or min_items or max_items or contains or unique then
    add(function(v, path)
      if json_type(v) ~= "array" then return true end
      local n = #v
      if min_items and n < min_items then return fail(path, ("fewer than %d items"):format(min_items)) end
      if max_items and n > max_items then return fail(path, ("more than %d items"):format(max_items)) end
      for i = 1, n do
        local c = items or (prefix and (prefix[i] or extra))
        if c then
          local ok, at, why = c(v[i], child(path, i - 1))
          if not ok then return false, at, why end
        end
      end
      if contains then
        local hits = 0
        for i = 1, n do if contains(v[i], path) then hits = hits + 1 end end
        if hits < min_contains then return fail(path, "does not contain enough matching items") end
        if max_contains and hits > max_contains then return fail(path, "contains too many matching items") end
      end
      if unique then
        for i = 1, n do
          for j = i + 1, n do
            if equal(v[i], v[j]) then return fail(path, ("items %d and %d are equal"):format(i - 1, j - 1)) end
          end
        end
      end
      return true
    end)
  end

  -- Objects.
  local props, patterns, additional
  if schema.properties ~= nil then
    if type(schema.properties) ~= "table" then return bad("properties", "is not an object") end
    props = {}
    for name, s in pairs(schema.properties) do
      props[name], err = sub_schema(s, child(where .. "/properties", name))
      if not props[name] then return nil, err end
    end
  end
  if schema.patternProperties ~= nil then
    if type(schema.patternProperties) ~= "table" then return bad("patternProperties", "is not an object") end
    patterns = {}
    for src, s in pairs(schema.patternProperties) do
      local pre
      pre, err = core.regex("(?s).*?(?:" .. src .. ").*", false)
      if not pre then return bad("patternProperties", "bad regular expression " .. src .. ": " .. err) end
      local c
      c, err = sub_schema(s, child(where .. "/patternProperties", src))
      if not c then return nil, err end
      patterns[#patterns + 1] = { re = pre, check = c }
    end
  end
  if schema.additionalProperties ~= nil then
    additional, err = sub_schema(schema.additionalProperties, where .. "/additionalProperties")
    if not additional then return nil, err end
  end
  local required = schema.required
  if required ~= nil and (type(required) ~= "table" or not (is_array(required) or next(required) == nil)) then
    if not (cx.draft < 4 and type(required) == "boolean") then return bad("required", "is not an array of names") end
  end
  local min_props, max_props
  min_props, err = count_of("minProperties") if err then return nil, err end
  max_props, err = count_of("maxProperties") if err then return nil, err end
  local names
  if schema.propertyNames ~= nil and cx.draft >= 6 then
    names, err = sub_schema(schema.propertyNames, where .. "/propertyNames")
    if not names then return nil, err end
  end
  local dep_required, dep_schemas = {}, {}
  local deps = {}
  if cx.draft < 2019 then deps.dependencies = schema.dependencies
  else deps.dependentRequired, deps.dependentSchemas = schema.dependentRequired, schema.dependentSchemas end
  for key, map in pairs(deps) do
    if type(map) ~= "table" then return bad(key, "is not an object") end
    for name, d in pairs(map) do
      if type(d) == "table" and is_array(d) or (type(d) == "table" and next(d) == nil and key == "dependentRequired") then
        dep_required[name] = d
      else
        dep_schemas[name], err = sub_schema(d, child(where .. "/" .. key, name))
        if not dep_schemas[name] then return nil, err end
      end
    end
  end
  if props or patterns or additional or required or min_props or max_props or names
      or next(dep_required) or next(dep_schemas) then
    add(function(v, path)
      if json_type(v) ~= "object" then return true end
      if required then
        for _, name in ipairs(required) do
          if v[name] == nil then return fail(path, "required property " .. tostring(name) .. " is missing") end
        end
      end
      local count = 0
      local keys = {}
      for k in pairs(v) do keys[#keys + 1] = k end
      sort(keys, function(a, b) return tostring(a) < tostring(b) end)
      for _, k in ipairs(keys) do
        local val = v[k]
        count = count + 1
        local at = child(path, k)
        local seen = false
        local c = props and props[k]
        if c then
          seen = true
          local ok, p, why = c(val, at)
          if not ok then return false, p, why end
        end
        if patterns then
          for _, pp in ipairs(patterns) do
            if pp.re:match(tostring(k)) then
              seen = true
              local ok, p, why = pp.check(val, at)
              if not ok then return false, p, why end
            end
          end
        end
        if not seen and additional then
          local ok, p, why = additional(val, at)
          if not ok then
            if why == "no value is allowed here" then why = "property " .. tostring(k) .. " is not allowed" end
            return false, p, why
          end
        end
        if names then
          local ok, _, why = names(tostring(k), at)
          if not ok then return false, at, "property name " .. tostring(k) .. ": " .. tostring(why) end
        end
        local dr = dep_required[k]
        if dr then
          for _, other in ipairs(dr) do
            if v[other] == nil then return fail(path, ("%s needs %s"):format(tostring(k), tostring(other))) end
          end
        end
        local ds = dep_schemas[k]
        if ds then
          local ok, p, why = ds(v, path)
          if not ok then return false, p, why end
        end
      end
      if min_props and count < min_props then return fail(path, ("fewer than %d properties"):format(min_props)) end
      if max_props and count > max_props then return fail(path, ("more than %d properties"):format(max_props)) end
      return true
    end)
  end

  -- Combinations.
  if schema.allOf ~= nil then
    local list
    list, err = list_of_schemas("allOf")
    if not list then return nil, err end
    for _, c in ipairs(list) do add(c) end
  end
  if schema.anyOf ~= nil then
    local list
    list, err = list_of_schemas("anyOf")
    if not list then return nil, err end
    add(function(v, path)
      for _, c in ipairs(list) do if c(v, path) then return true end end
      return fail(path, "matches none of anyOf")
    end)
  end
  if schema.oneOf ~= nil then
    local list
    list, err = list_of_schemas("oneOf")
    if not list then return nil, err end
    add(function(v, path)
      local hits = 0
      for _, c in ipairs(list) do if c(v, path) then hits = hits + 1 end end
      if hits == 1 then return true end
      return fail(path, hits == 0 and "matches none of oneOf" or "matches more than one of oneOf")
    end)
  end
  if schema["not"] ~= nil then
    local c
    c, err = sub_schema(schema["not"], where .. "/not")
    if not c then return nil, err end
    add(function(v, path)
      if c(v, path) then return fail(path, "matches the schema under not") end
      return true
    end)
  end
  if schema["if"] ~= nil and cx.draft >= 7 then
    local cif, cthen, celse
    cif, err = sub_schema(schema["if"], where .. "/if")
    if not cif then return nil, err end
    if schema["then"] ~= nil then
      cthen, err = sub_schema(schema["then"], where .. "/then")
      if not cthen then return nil, err end
    end
    if schema["else"] ~= nil then
      celse, err = sub_schema(schema["else"], where .. "/else")
      if not celse then return nil, err end
    end
    add(function(v, path)
      local c = cif(v, path) and cthen or celse
      if c == nil then return true end
      return c(v, path)
    end)
  end
  return ok_all(checks)
end

--- Compiles a schema (a decoded JSON value, or JSON text) for a draft
-- (jsonschema.versions' names; "V202012" when nil). Returns
-- validate(value) -> true, or false, the JSON pointer of the value that
-- failed ("" for the whole) and why; or nil and what is wrong with the
-- schema.
-- @usage local validate = assert(jsonschema.compile(schema, "V7"))
function jsonschema.compile(schema, version)
  local draft = jsonschema.versions[version or "V202012"]
  if draft == nil then
    return nil, ("schemaVersion %s is not one of V4, V6, V7, V201909, V202012"):format(tostring(version))
  end
  if type(schema) == "string" then
    local v, err = json.decode(schema)
    if v == nil then return nil, "the schema is not JSON: " .. tostring(err) end
    schema = v
  end
  local cx = { root = schema, draft = draft, refs = {}, compiling = {} }
  local check, err = compile_schema(schema, "#", cx)
  if not check then return nil, err end
  return function(value) return check(value, "") end
end

--- How many keywords a schema holds, counted through its subschemas
-- (WireMock's measure of how far a value is: failures over this).
-- @usage local n = jsonschema.size(schema)
function jsonschema.size(schema)
  if type(schema) ~= "table" then return 0 end
  local n = 0
  for k, v in pairs(schema) do
    if type(k) == "string" then n = n + 1 end
    if type(v) == "table" then n = n + jsonschema.size(v) end
  end
  return n
end

return jsonschema
