--- Request matching for mock stubs: WireMock's matchers, compiled once per
-- stub, and an index by method and literal path so that many stubs cost
-- about what few do.
--
--     local match = require("moonport.mock.match")
--     local compiled = assert(match.compile(stub.request))
--     local ok, err = match.test(compiled, facts)
--     local distance, why = match.near(compiled, facts)
--
-- `facts` describes one request: the fields method, url (path and
-- query), path and query = {name = {values}}, and the methods
-- facts:header(name) -> value or nil (the values of a repeated header
-- joined by ", "), facts:header_values(name) -> {value of each line}
-- (optional: a facts object may lack it), facts:cookies() -> {name =
-- value} and facts:body() -> string. Methods rather than closures, so
-- that making facts for a request makes no function (which would keep
-- the request's path out of the JIT).
-- Matching writes into it too: `path_params` (a template's parameters)
-- and `memo`, what each stub tested against it gave, so that the report
-- of the closest stubs runs no check a second time.
--
-- A check is true (matched), false (did not), or nil and a message when it
-- could not decide: a regular expression given up at PCRE2's limits. Such
-- a stub is an error for that request, never "did not match" (which would
-- turn doesNotMatch around).
--
-- @module moonport.mock.match

local core = require("moonport.core")
local json = require("moonport.json")
local jsonpath = require("moonport.mock.jsonpath")
local model = require("moonport.mock.model")
local dates = require("moonport.mock.dates")
local jsonschema = require("moonport.jsonschema")

local type, pairs, ipairs, tostring, tonumber = type, pairs, ipairs, tostring, tonumber
local find, lower, sub, gsub, char = string.find, string.lower, string.sub, string.gsub, string.char
local byte = string.byte
local concat, sort = table.concat, table.sort

local match = {}

local null = json.null

-- Distances -----------------------------------------------------------------

-- How far apart two strings are, from 0 (equal) to 1: the Levenshtein
-- distance over the longer length, as WireMock's equalTo reports it. Long
-- strings are compared by the prefix and suffix they share instead, which
-- is linear.
local function distance(a, b)
  if a == b then return 0 end
  local la, lb = #a, #b
  local longer = la > lb and la or lb
  if la == 0 or lb == 0 then return 1 end
  if la * lb > 65536 then
    local p = 0
    while p < la and p < lb and byte(a, p + 1) == byte(b, p + 1) do p = p + 1 end
    local q = 0
    while q < la - p and q < lb - p and byte(a, la - q) == byte(b, lb - q) do q = q + 1 end
    return 1 - (p + q) / longer
  end
  local prev, cur = {}, {}
  for j = 0, lb do prev[j] = j end
  for i = 1, la do
    cur[0] = i
    local ca = byte(a, i)
    for j = 1, lb do
      local cost = ca == byte(b, j) and 0 or 1
      local v = prev[j - 1] + cost
      if prev[j] + 1 < v then v = prev[j] + 1 end
      if cur[j - 1] + 1 < v then v = cur[j - 1] + 1 end
      cur[j] = v
    end
    prev, cur = cur, prev
  end
  return prev[lb] / longer
end
match.distance = distance

-- How far subject is from matching re: the part of it past the longest
-- start re matches or could match, over its length.
local function regex_distance(re, subject)
  local n = re:prefix(subject)
  if n == nil or #subject == 0 then return 1 end
  return 1 - n / #subject
end

-- String matchers ---------------------------------------------------------

-- matchesJsonSchema: the value as JSON (text that is not JSON, and a
-- scalar the schema refuses, as a JSON string of its text, as WireMock
-- reads them) against a schema, given as an object or as JSON text.
local function schema_matcher(m, what)
  local schema = m.matches_json_schema
  if type(schema) == "string" then
    local v, err = json.decode(schema)
    if v == nil then return nil, what .. ": matchesJsonSchema: the schema is not JSON: " .. tostring(err) end
    schema = v
  elseif type(schema) == "table" then
    -- A mapping's literal numbers, as plain numbers.
    local ok, text = pcall(json.encode, schema)
    if not ok then return nil, what .. ": matchesJsonSchema: " .. tostring(text) end
    schema = json.decode(text)
  end
  local version = m.schema_version ~= nil and tostring(m.schema_version) or "V202012"
  local draft = jsonschema.versions[version]
  if draft == nil then
    return nil, ("%s: matchesJsonSchema: schemaVersion %s is not one of V4, V6, V7, V201909, V202012")
      :format(what, version)
  end
  local v, err = jsonschema.compile(schema, { dialect = draft })
  if not v then return nil, what .. ": matchesJsonSchema: " .. err end
  -- WireMock's answer: matched, or not and where and why (the first of
  -- the errors, which are only gathered for a value that fails).
  local function validate(value)
    if v.valid(value) then return true end
    local e = v.errors(value)[1]
    if e == nil then return false, "", "does not match" end
    return false, jsonschema.pointer(e.path), e.message
  end
  local size = jsonschema.size(schema)
  local function check(v)
    if v == nil then return false, nil, "absent" end
    local doc = json.decode(v)
    if doc == nil then return validate(v) end
    local ok, at, why = validate(doc)
    if not ok and type(doc) ~= "string" and type(doc) ~= "table" then return validate(v) end
    return ok, at, why
  end
  return {
    test = function(v) return (check(v)) end,
    explain = function(v)
      local _, at, why = check(v)
      if v == nil then return what .. " is absent", 1 end
      return ("%s does not match the JSON schema: %s%s"):format(what, why or "",
        at and at ~= "" and " at " .. at or ""), size > 0 and math.min(1 / size, 1) or 1
    end,
  }
end

-- Compiles a matcher table into { test = function(v) -> ok[, err],
-- explain = function(v) -> why, distance }: v is a string, or nil when
-- absent; explain says why a value test refused and how far it was: a
-- value that is there but differs is nearer (0.5; for equalTo, half its
-- edit distance) than one that is missing (1). With absent_unlike, a
-- missing value satisfies doesNotMatch, as WireMock has it for headers and
-- query parameters (not for cookies).
local function string_matcher(m, what, absent_unlike)
  if type(m) ~= "table" then m = { equal_to = tostring(m) } end
  local all, any = m["and"], m["or"]
  if all ~= nil or any ~= nil then
    -- WireMock's logical matchers: {and = {m1, m2}}, {or = {m1, m2}}.
    local subs = {}
    for i, sub_m in ipairs(all or any) do
      local sm, err = string_matcher(sub_m, what, absent_unlike)
      if sm == nil then return nil, err end
      subs[i] = sm
    end
    return {
      test = function(v)
        local err
        for i = 1, #subs do
          local ok, e = subs[i].test(v)
          if ok == nil then err = err or e
          elseif ok and any then return true
          elseif not ok and all then return false end
        end
        if err then return nil, err end
        return all ~= nil
      end,
      explain = function(v)
        return ("%s %s does not satisfy the %s matcher"):format(what,
          v and ("%q"):format(v) or "(absent)", all and "and" or "or"), v and 0.5 or 1
      end,
    }
  end
  if m["not"] ~= nil then
    -- WireMock's not: the value matches when the inner matcher refuses it.
    local sub, err = string_matcher(m["not"], what, absent_unlike)
    if sub == nil then return nil, err end
    return {
      test = function(v)
        local ok, e = sub.test(v)
        if ok == nil then return nil, e end
        return not ok
      end,
      explain = function(v)
        return ("%s %s satisfies the matcher under not"):format(what, v and ("%q"):format(v) or "(absent)"),
          v and 0.5 or 1
      end,
    }
  end
  local ci = m.case_insensitive == true
  if m.absent ~= nil then
    local want = m.absent == true
    return {
      test = function(v) return (v == nil) == want end,
      explain = function() return what .. (want and " is present" or " is absent"), 1 end,
    }
  end
  local re_src = m.matches or m.does_not_match
  if re_src ~= nil then
    local re, err = core.regex(tostring(re_src), ci)
    if re == nil then return nil, what .. ": bad regular expression: " .. err end
    local negate = m.does_not_match ~= nil
    local absent_ok = negate and absent_unlike == true
    return {
      test = function(v)
        if v == nil then return absent_ok end
        local ok, e = re:match(v)
        if ok == nil then return nil, ("%s: /%s/ %s"):format(what, re_src, e) end
        return ok ~= negate
      end,
      explain = function(v)
        if v == nil then return what .. " is absent", 1 end
        return ("%s %q %s /%s/"):format(what, v, negate and "matches" or "does not match", re_src), 0.5
      end,
    }
  end
  if m.equal_to ~= nil then
    local want = tostring(m.equal_to)
    if ci then want = lower(want) end
    return {
      test = function(v) return v ~= nil and (ci and lower(v) or v) == want end,
      explain = function(v)
        return ("%s is %s, not %q"):format(what, v and ("%q"):format(v) or "absent", m.equal_to),
          v and 0.5 * distance(ci and lower(v) or v, want) or 1
      end,
    }
  end
  if m.contains ~= nil then
    local want = tostring(m.contains)
    if ci then want = lower(want) end
    return {
      test = function(v) return v ~= nil and find(ci and lower(v) or v, want, 1, true) ~= nil end,
      explain = function(v)
        return ("%s %s does not contain %q"):format(what, v and ("%q"):format(v) or "(absent)", m.contains),
          v and 0.5 or 1
      end,
    }
  end
  if dates.is_matcher(m) then return dates.matcher(m, what) end
  if m.equal_to_xml ~= nil then return require("moonport.mock.xmlmatch").equal_to_xml(m, what) end
  if m.matches_x_path ~= nil then
    return require("moonport.mock.xmlmatch").matches_xpath(m, what, string_matcher)
  end
  if m.matches_json_schema ~= nil then return schema_matcher(m, what) end
  return nil, what .. ": no matcher I know (equalTo, contains, matches, doesNotMatch, absent, "
    .. "not, and, or, before, after, equalToDateTime, equalToXml, matchesXPath, matchesJsonSchema)"
end
match.string_matcher = string_matcher

-- True when sm takes any of values (each passed through conv, when
-- given); nil and the first message when none does and one of them could
-- not be decided; false otherwise.
local function any_value(sm, values, conv)
  local err
  for _, v in ipairs(values) do
    local ok, e = sm.test(conv and conv(v) or v)
    if ok then return true end
    if ok == nil then err = err or e end
  end
  if err then return nil, err end
  return false
end

-- JSON --------------------------------------------------------------------

local function is_array(t)
  if type(t) ~= "table" then return false end
  local n = #t
  if n == 0 then return next(t) == nil end
  for k in pairs(t) do
    if type(k) ~= "number" or k < 1 or k > n or k % 1 ~= 0 then return false end
  end
  return true
end

-- Whether actual equals expected as JSON, with WireMock's two options.
local function json_equal(expected, actual, opts)
  if type(expected) ~= "table" or type(actual) ~= "table" then
    if type(expected) == "number" and type(actual) == "number" then return expected == actual end
    return expected == actual
  end
  local ea, aa = is_array(expected), is_array(actual)
  if ea and aa and (#expected > 0 or #actual > 0) then
    if #expected ~= #actual and not (opts.ignore_extra_elements and #actual > #expected) then
      return false
    end
    if not opts.ignore_array_order then
      if #expected ~= #actual then return false end
      for i = 1, #expected do
        if not json_equal(expected[i], actual[i], opts) then return false end
      end
      return true
    end
    local used = {}
    for i = 1, #expected do
      local found = false
      for j = 1, #actual do
        if not used[j] and json_equal(expected[i], actual[j], opts) then
          used[j], found = true, true
          break
        end
      end
      if not found then return false end
    end
    return opts.ignore_extra_elements or #expected == #actual
  end
  if ea ~= aa and next(expected) ~= nil and next(actual) ~= nil then return false end
  for k, v in pairs(expected) do
    if actual[k] == nil or not json_equal(v, actual[k], opts) then return false end
  end
  if not opts.ignore_extra_elements then
    for k in pairs(actual) do
      if expected[k] == nil then return false end
    end
  end
  return true
end
match.json_equal = json_equal

-- A JSON value as text, for comparing a JSON path result with a string.
local function json_text(v)
  if type(v) == "string" then return v end
  if type(v) == "number" then
    if v == math.floor(v) and v > -1e15 and v < 1e15 then return ("%d"):format(v) end
    return tostring(v)
  end
  if v == null then return "null" end
  if type(v) == "table" then return json.encode(v) end
  return tostring(v)
end

-- "body is not JSON" (distance 1) for a body that is not.
local function explain_json(what)
  return function(body)
    if body == nil or json.decode(body) == nil then return "body is not JSON", 1 end
    return what, 0.5
  end
end

-- Body matchers: the string ones, plus equalToJson, matchesJsonPath and
-- binaryEqualTo.
local function body_matcher(m)
  if type(m) ~= "table" then return nil, "a body pattern is a table" end
  if m.binary_equal_to ~= nil then
    local bytes = model.base64_decode(tostring(m.binary_equal_to))
    if bytes == nil then return nil, "binaryEqualTo: not base64" end
    return {
      test = function(body) return body == bytes end,
      explain = function() return "body is not the expected bytes", 1 end,
    }
  end
  if m.equal_to_json ~= nil then
    local expected = m.equal_to_json
    if type(expected) == "string" then
      local v, err = json.decode(expected)
      if v == nil then return nil, "equalToJson: not JSON: " .. tostring(err) end
      expected = v
    elseif type(expected) == "table" then
      -- A mapping's literal numbers, as plain numbers to compare.
      local ok, text = pcall(json.encode, expected)
      if not ok then return nil, "equalToJson: " .. tostring(text) end
      expected = json.decode(text)
    end
    local opts = { ignore_array_order = m.ignore_array_order == true,
                   ignore_extra_elements = m.ignore_extra_elements == true }
    return {
      test = function(body)
        local actual = body and json.decode(body)
        return actual ~= nil and json_equal(expected, actual, opts)
      end,
      explain = explain_json("body is not equal to the expected JSON"),
    }
  end
  local jp = m.matches_json_path
  if jp ~= nil then
    local expr, sub_m = jp, nil
    if type(jp) == "table" then
      expr = jp.expression
      local rest = {}
      for k, v in pairs(jp) do if k ~= "expression" then rest[k] = v end end
      if next(rest) ~= nil then
        local err
        sub_m, err = string_matcher(rest, "JSON path " .. tostring(expr))
        if sub_m == nil then return nil, err end
      end
    end
    if type(expr) ~= "string" then return nil, "matchesJsonPath needs an expression" end
    local compiled, err = jsonpath.compile(expr)
    if compiled == nil then return nil, "matchesJsonPath: " .. err end
    return {
      test = function(body)
        local doc = body and json.decode(body)
        if doc == nil then return false end
        local found = jsonpath.query(doc, compiled)
        if found == nil or #found == 0 then return false end
        if sub_m == nil then return true end
        return any_value(sub_m, found, json_text)
      end,
      explain = explain_json(sub_m and ("no value at %s satisfies the matcher"):format(expr)
        or "nothing at " .. expr),
    }
  end
  local sm, err = string_matcher(m, "body")
  if sm == nil or m.absent == nil then return sm, err end
  -- absent on the body: a request without one (an empty body is none).
  return {
    test = function(body) return sm.test(body ~= "" and body or nil) end,
    explain = function(body) return sm.explain(body ~= "" and body or nil) end,
  }
end

match.body_matcher = body_matcher

-- URLs ------------------------------------------------------------------

-- "/users/{id}/posts/{post}" → a function(path) -> params or nil, and a
-- function(path) -> how far path is from fitting (the part past its
-- leading segments that fit, over its length).
local function path_template(tpl)
  local parts = {}
  for seg in tpl:gmatch("[^/]+") do
    local name = seg:match("^{(.-)}$")
    parts[#parts + 1] = name and { name = name } or { literal = seg }
  end
  local trailing = sub(tpl, -1) == "/"
  local function fit(path)
    local params, i = {}, 0
    for seg in path:gmatch("[^/]+") do
      i = i + 1
      local p = parts[i]
      if p == nil then return nil end
      if p.name then params[p.name] = seg elseif p.literal ~= seg then return nil end
    end
    if i ~= #parts or (trailing ~= (sub(path, -1) == "/") and #path > 1) then return nil end
    return params
  end
  local function far(path)
    local covered, i = 0, 0
    for seg, to in path:gmatch("/([^/]*)()") do
      i = i + 1
      local p = parts[i]
      if p == nil or (p.literal and p.literal ~= seg) or seg == "" then break end
      covered = to - 1
    end
    return #path > 0 and 1 - covered / #path or 1
  end
  return fit, far
end
match.path_template = path_template

-- The literal segments a pattern's paths all start with, at most two, as a
-- key ("/api/users"), or nil when the first segment is not literal.
local REGEX_META = "[%.%[%]%(%)%*%+%?%^%$|\\{}]"
local function literal_prefix(req)
  local src, is_re
  if req.url_path_template ~= nil then
    src = tostring(req.url_path_template)
  elseif req.url_path_pattern ~= nil or req.url_pattern ~= nil then
    src, is_re = tostring(req.url_path_pattern or req.url_pattern), true
  else
    return nil
  end
  -- An alternation anywhere may reach other paths: no prefix then.
  if is_re and src:find("|", 1, true) then return nil end
  local segs = {}
  for seg in src:gmatch("/([^/]*)") do
    if #segs == 2 or seg:find(is_re and REGEX_META or "[{}]") then break end
    segs[#segs + 1] = seg
  end
  if #segs == 0 then return nil end
  return "/" .. concat(segs, "/")
end

-- How much each part of a request weighs in the distance of a near miss,
-- as WireMock weighs them: the URL most, then the method, then each group
-- of the rest (the mean of its checks).
local WEIGHT_URL, WEIGHT_METHOD = 10, 3
-- WireMock's matchers of a parameter's or header's every value: includes
-- (each matcher takes one of the values at least) and hasExactly (as
-- many values as matchers, each matcher taking one of them, every value
-- taken). Returns {test = function(values), explain = function(values)},
-- values a list or nil, or nil when m is neither (a one-value matcher).
local function multi_matcher(m, what)
  local list, exact = m.includes, false
  if m.has_exactly ~= nil then list, exact = m.has_exactly, true end
  if list == nil then return nil end
  if type(list) ~= "table" then return nil, what .. ": hasExactly and includes take a list of matchers" end
  local subs = {}
  for i, sub_m in ipairs(list) do
    local sm, err = string_matcher(sub_m, what)
    if sm == nil then return nil, err end
    subs[i] = sm
  end
  local name = exact and "hasExactly" or "includes"
  return {
    test = function(values)
      if values == nil or (exact and #values ~= #subs) then return false end
      local taken = {}
      for _, sm in ipairs(subs) do
        local found = false
        for j, v in ipairs(values) do
          local ok, e = sm.test(v)
          if ok == nil then return nil, e end
          if ok then taken[j], found = true, true end
        end
        if not found then return false end
      end
      if exact then
        for j = 1, #values do if not taken[j] then return false end end
      end
      return true
    end,
    explain = function(values)
      return ("%s does not satisfy %s"):format(what, name), values and 0.5 or 1
    end,
  }
end
match.multi_matcher = multi_matcher

-- The least a failed check counts.
local MIN_MISS = 0.01

-- A query parameter check: true when any of the parameter's values does.
local function query_check(name, sm)
  return {
    test = function(f)
      local values = f.query[name]
      if values == nil then return sm.test(nil) end
      return any_value(sm, values)
    end,
    explain = function(f)
      local values = f.query[name]
      return sm.explain(values and values[#values])
    end,
  }
end

-- The checks from i on as one function(facts): true, or what the first
-- that fails gives and its index. A chain of calls, not a loop: a loop
-- would make a JIT trace of its own on every request's path.
local function chain(checks, i)
  local check = checks[i]
  if check == nil then return function() return true end end
  local test, rest = check.test, chain(checks, i + 1)
  return function(f)
    local ok, err = test(f)
    if not ok then return ok, err, i end
    return rest(f)
  end
end

--- Compiles a stub's request pattern. Returns a compiled pattern, or nil and
-- what is wrong (a bad regular expression, an unknown matcher).
function match.compile(req)
  local c = { method = (req.method or "ANY"):upper(), checks = {}, prefix = literal_prefix(req) }
  local checks = c.checks
  -- group: "url", or the part whose checks are averaged ("query",
  -- "header", "cookie", "body").
  local function add(check, group)
    check.group = group
    checks[#checks + 1] = check
  end
  local err
  if req.url ~= nil then
    c.literal = tostring(req.url):match("^[^?]*")
    local want = tostring(req.url)
    add({ test = function(f) return f.url == want end,
          explain = function(f) return ("URL is %s, not %s"):format(f.url, want), distance(f.url, want) end },
        "url")
  elseif req.url_path ~= nil then
    c.literal = tostring(req.url_path)
    local want = c.literal
    add({ test = function(f) return f.path == want end,
          explain = function(f) return ("path is %s, not %s"):format(f.path, want), distance(f.path, want) end },
        "url")
  elseif req.url_pattern ~= nil or req.url_path_pattern ~= nil then
    local src = tostring(req.url_pattern or req.url_path_pattern)
    local re, e = core.regex(src, false)
    if re == nil then return nil, "bad URL pattern /" .. src .. "/: " .. e end
    local whole = req.url_pattern ~= nil
    local what = whole and "URL" or "path"
    add({
      test = function(f)
        local ok, why = re:match(whole and f.url or f.path)
        if ok == nil then return nil, ("%s pattern /%s/ %s"):format(what, src, why) end
        return ok
      end,
      explain = function(f)
        local v = whole and f.url or f.path
        return ("%s %s does not match /%s/"):format(what, v, src), regex_distance(re, v)
      end,
    }, "url")
  elseif req.url_path_template ~= nil then
    local tpl = tostring(req.url_path_template)
    local fit, far = path_template(tpl)
    local params = {}
    for name, m in pairs(req.path_parameters or {}) do
      local sm, e = string_matcher(m, "path parameter " .. name)
      if sm == nil then return nil, e end
      params[name] = sm
    end
    add({
      test = function(f)
        local got = fit(f.path)
        if got == nil then return false end
        for name, sm in pairs(params) do
          local ok, e = sm.test(got[name])
          if not ok then return ok, e end
        end
        f.path_params = got
        return true
      end,
      explain = function(f)
        local got = fit(f.path)
        if got == nil then return ("path %s does not fit %s"):format(f.path, tpl), far(f.path) end
        for name, sm in pairs(params) do
          if not sm.test(got[name]) then
            local why, d = sm.explain(got[name])
            return why, d * 0.5
          end
        end
        return ("path %s does not fit %s"):format(f.path, tpl), 1
      end,
    }, "url")
  end
  for name, m in pairs(req.query_parameters or {}) do
    local mm, sm
    mm, err = multi_matcher(m, "query parameter " .. name)
    if mm == nil and err then return nil, err end
    if mm then
      add({ test = function(f) return mm.test(f.query[name]) end,
            explain = function(f) return mm.explain(f.query[name]) end }, "query")
    else
      sm, err = string_matcher(m, "query parameter " .. name, true)
      if sm == nil then return nil, err end
      add(query_check(name, sm), "query")
    end
  end
  for name, m in pairs(req.headers or {}) do
    local mm, sm
    mm, err = multi_matcher(m, "header " .. name)
    if mm == nil and err then return nil, err end
    if mm then
      local function values_of(f)
        if f:header(name) == nil then return nil end
        return f.header_values and f:header_values(name) or { f:header(name) }
      end
      add({ test = function(f) return mm.test(values_of(f)) end,
            explain = function(f) return mm.explain(values_of(f)) end }, "header")
      goto next_header
    end
    sm, err = string_matcher(m, "header " .. name, true)
    if sm == nil then return nil, err end
    add({ test = function(f)
            local v = f:header(name)
            -- A header sent on several lines (joined by ", ") matches when
            -- one of its values does, as in WireMock.
            if v ~= nil and f.header_values ~= nil and find(v, ",", 1, true) then
              local values = f:header_values(name)
              if #values > 1 then return any_value(sm, values) end
            end
            return sm.test(v)
          end,
          explain = function(f) return sm.explain(f:header(name)) end }, "header")
    ::next_header::
  end
  for name, m in pairs(req.cookies or {}) do
    local sm
    sm, err = string_matcher(m, "cookie " .. name)
    if sm == nil then return nil, err end
    add({ test = function(f) return sm.test(f:cookies()[name]) end,
          explain = function(f) return sm.explain(f:cookies()[name]) end }, "cookie")
  end
  if req.basic_auth ~= nil then
    local user_pass = tostring(req.basic_auth.username or "") .. ":" .. tostring(req.basic_auth.password or "")
    local want = "Basic " .. model.base64_encode(user_pass)
    add({
      test = function(f)
        local got = f:header("authorization")
        if got == want then return true end
        -- Compare decoded, so that padding or case in "basic" do not matter.
        local enc = got and got:match("^[Bb][Aa][Ss][Ii][Cc]%s+(%S+)$")
        return enc ~= nil and model.base64_decode(enc) == user_pass
      end,
      explain = function(f)
        return "basic auth credentials differ", f:header("authorization") and 0.5 or 1
      end,
    }, "header")
  end
  for i, m in ipairs(req.body_patterns or {}) do
    local bm
    bm, err = body_matcher(m)
    if bm == nil then return nil, "body pattern " .. i .. ": " .. err end
    add({ test = function(f) return bm.test(f:body()) end,
          explain = function(f) return bm.explain(f:body()) end }, "body")
  end
  c.run = chain(checks, 1)
  return c
end

-- What a stub tested against facts gave, for match.near: the index of the
-- check that failed (0: the method differed), {at = index, err = message}
-- when that check could not decide, or true when every check passed
-- (recorded only for a stub then turned down for its scenario state: a
-- request that matches needs no report).
local function remember(facts, c, result)
  local memo = facts.memo
  if memo == nil then
    memo = {}
    facts.memo = memo
  end
  memo[c] = result
end

--- Tests facts against a compiled pattern: true; false; or nil and a
-- message when a check could not decide (a regular expression given up at
-- its limits). Stops at the first check that fails.
-- @usage if match.test(stub.compiled, facts) then ... end
function match.test(c, facts)
  if c.method ~= "ANY" and c.method ~= facts.method then
    remember(facts, c, 0)
    return false
  end
  local ok, err, at = c.run(facts)
  if not ok then
    remember(facts, c, ok == nil and { at = at, err = err } or at)
    return ok, err
  end
  return true
end

--- How far facts are from matching a compiled pattern, as WireMock ranks
-- near misses: the URL's distance (0 to 1) weighted 10, the method's 3,
-- and the mean distance of each other part (query, headers, cookies,
-- body) 1; a check that could not decide counts as failed. Returns the
-- distance (0 when it matches) and the reasons it did not (a list).
-- Checks match.test already ran on these facts are not run again.
-- @usage local d, why = match.near(stub.compiled, facts)
function match.near(c, facts)
  local known = facts.memo and facts.memo[c]
  -- Checks before `upto` are known to have passed.
  local upto = known == true and math.huge or type(known) == "table" and known.at or known or 0
  local why = {}
  local total = 0
  if c.method ~= "ANY" and c.method ~= facts.method then
    why[1] = ("method is %s, not %s"):format(facts.method, c.method)
    total = WEIGHT_METHOD
  end
  local sums, counts = {}, {}
  for i, check in ipairs(c.checks) do
    local ok, err
    if i < upto then
      ok = true
    elseif i == upto then
      if type(known) == "table" then
        ok, err = nil, known.err
      else
        ok = false
      end
    else
      ok, err = check.test(facts)
    end
    local d = 0
    if ok == nil then
      why[#why + 1] = err
      d = 1
    elseif not ok then
      local w
      w, d = check.explain(facts)
      why[#why + 1] = w
      -- A check that failed is never "no distance": a path that is a
      -- template's or a pattern's start, all of it fitting, still missed.
      if d < MIN_MISS then d = MIN_MISS end
    end
    local g = check.group
    if g == "url" then
      total = total + WEIGHT_URL * d
    else
      sums[g] = (sums[g] or 0) + d
      counts[g] = (counts[g] or 0) + 1
    end
  end
  for g, sum in pairs(sums) do total = total + sum / counts[g] end
  return total, why
end

-- The index ---------------------------------------------------------------

-- The shape of a path's start, a number: its length, its second byte and
-- the byte after its second '/' (0 for none). The index keeps the shapes
-- of its prefix keys, so that a request whose start has none of them is
-- known to have no prefix stubs without making the string to look up.
local function shape(len, a, b)
  return (len * 256 + (a or 0)) * 256 + (b or 0)
end

-- Priority first (1 is highest), then the newest.
local function before(a, b)
  if a.priority ~= b.priority then return a.priority < b.priority end
  return a.seq > b.seq
end
match.before = before

--- Builds the index of a list of stubs (each with .compiled, .priority and
-- .seq, a number that grows with age: newer stubs have larger ones). A
-- stub with a literal URL or path is found by method and path; one whose
-- path pattern or template starts with literal segments, by those; only
-- the rest are tried for every request. Every list is kept best first.
function match.index(stubs)
  local idx = { literal = {}, prefix = {}, rest = {} }
  local function put(map, key, s)
    local list = map[key]
    if list == nil then
      list = {}
      map[key] = list
    end
    list[#list + 1] = s
  end
  for _, s in ipairs(stubs) do
    local c = s.compiled
    if c.literal then
      local by_method = idx.literal[c.method]
      if by_method == nil then
        by_method = {}
        idx.literal[c.method] = by_method
      end
      put(by_method, c.literal, s)
    else
      local key = c.prefix
      if key then put(idx.prefix, key, s) else idx.rest[#idx.rest + 1] = s end
    end
  end
  local function sort_all(map)
    for _, list in pairs(map) do sort(list, before) end
  end
  for _, by_method in pairs(idx.literal) do sort_all(by_method) end
  sort_all(idx.prefix)
  sort(idx.rest, before)
  idx.has_prefix = next(idx.prefix) ~= nil
  idx.shapes = {}
  for key in pairs(idx.prefix) do
    local second = find(key, "/", 2, true)
    idx.shapes[shape(#key, byte(key, 2), second and byte(key, second + 1))] = true
  end
  return idx
end

-- The lists a request's stubs may be on, and where each one's next stub is.
-- Matching does not yield (the caller reads the body before it matches), so
-- one set serves every call.
local lists, heads, nlists = {}, {}, 0

local function add_list(list)
  if list ~= nil and list[1] ~= nil then
    nlists = nlists + 1
    lists[nlists], heads[nlists] = list, 1
  end
end

-- s when its pattern matches facts and accept(s) takes it, else nil.
local function try(s, facts, accept, on_error)
  local ok, err = match.test(s.compiled, facts)
  if ok then
    if accept == nil or accept(s) then return s end
    remember(facts, s.compiled, true)
  elseif ok == nil and on_error ~= nil then
    on_error(s, err)
  end
  return nil
end

--- The first stub, best first, whose pattern matches facts and which
-- accept(stub) takes (a scenario state check), or nil. Walks the few
-- lists the index gives for the request together, in priority order,
-- without sorting; it allocates only facts.memo, once a stub fails. A stub whose check could not decide is
-- passed over, with on_error(stub, message) told when given.
function match.find(idx, facts, accept, on_error)
  nlists = 0
  local path = facts.path
  local m = idx.literal[facts.method]
  if m then add_list(m[path]) end
  local any = idx.literal.ANY
  if any then add_list(any[path]) end
  if idx.has_prefix then
    -- The first one and two segments. A plain find, which the JIT
    -- compiles, rather than string.match or a loop of our own.
    local len, shapes = #path, idx.shapes
    local i = find(path, "/", 2, true) or len + 1
    local a = byte(path, 2)
    if shapes[shape(i - 1, a, nil)] then add_list(idx.prefix[sub(path, 1, i - 1)]) end
    if i < len then
      local j = find(path, "/", i + 1, true) or len + 1
      if shapes[shape(j - 1, a, byte(path, i + 1))] then add_list(idx.prefix[sub(path, 1, j - 1)]) end
    end
  end
  add_list(idx.rest)
  local n = nlists
  if n == 0 then return nil end
  if n == 1 and lists[1][2] == nil then
    -- One stub to try, as for most literal paths: no loop.
    return try(lists[1][1], facts, accept, on_error)
  end
  while true do
    local best, bi
    for i = 1, n do
      local s = lists[i][heads[i]]
      if s ~= nil and (best == nil or before(s, best)) then best, bi = s, i end
    end
    if best == nil then return nil end
    heads[bi] = heads[bi] + 1
    if try(best, facts, accept, on_error) then return best end
  end
end

-- Requests ------------------------------------------------------------------

local function unescape(s)
  s = gsub(s, "+", " ")
  return (gsub(s, "%%(%x%x)", function(h) return char(tonumber(h, 16)) end))
end

--- Query parameters of a query string: name → list of decoded values.
function match.parse_query(qs)
  local q = {}
  if qs == nil or qs == "" then return q end
  for pair in qs:gmatch("[^&]+") do
    local k, v = pair:match("^([^=]*)=?(.*)$")
    k = unescape(k)
    local list = q[k]
    if list == nil then
      list = {}
      q[k] = list
    end
    list[#list + 1] = unescape(v)
  end
  return q
end

--- Cookies of a Cookie header: name → value.
function match.parse_cookies(header)
  local c = {}
  if header == nil then return c end
  for pair in header:gmatch("[^;]+") do
    local k, v = pair:match("^%s*([^=]-)%s*=%s*(.-)%s*$")
    if k then c[k] = v:match('^"(.*)"$') or v end
  end
  return c
end

return match
