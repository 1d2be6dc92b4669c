--- Request matching for mock stubs: WireMock's matchers, compiled once per
-- stub, and an index by method and literal path so that many stubs cost
-- about what few do.
--
--     local match = require("moonport.mock.match")
--     local compiled = assert(match.compile(stub.request))
--     local ok, why = match.test(compiled, facts)
--
-- `facts` describes one request: { method, url (path and query), path,
-- query = {name = {values}}, headers = function(name) -> value or nil,
-- cookies = {name = value}, body = string }.
--
-- @module moonport.mock.match

local core = require("moonport.core")
local json = require("moonport.json")
local jsonpath = require("moonport.mock.jsonpath")
local model = require("moonport.mock.model")

local type, pairs, ipairs, tostring, tonumber = type, pairs, ipairs, tostring, tonumber
local find, lower, sub, gsub, char = string.find, string.lower, string.sub, string.gsub, string.char
local byte = string.byte
local concat, sort = table.concat, table.sort

local match = {}

local null = json.null

-- String matchers ---------------------------------------------------------

-- Compiles a matcher table into a function(value) -> ok, why, distance.
-- value is a string, or nil when absent. A value that is there but
-- differs is nearer (distance 0.5) than one that is missing (1).
local function string_matcher(m, what)
  if type(m) ~= "table" then m = { equal_to = tostring(m) } end
  local all, any = m["and"], m["or"]
  if all ~= nil or any ~= nil then
    -- WireMock's logical matchers: {and = {m1, m2}}, {or = {m1, m2}}.
    local fns = {}
    for i, sub_m in ipairs(all or any) do
      local fn, err = string_matcher(sub_m, what)
      if fn == nil then return nil, err end
      fns[i] = fn
    end
    return function(v)
      local why, dist
      for _, fn in ipairs(fns) do
        local ok, w, d = fn(v)
        if ok and any then return true end
        if not ok then
          if all then return false, w, d end
          why, dist = w, d
        end
      end
      if all then return true end
      return false, why, dist
    end
  end
  local ci = m.case_insensitive == true
  if m.absent ~= nil then
    local want = m.absent == true
    return function(v)
      if (v == nil) == want then return true end
      return false, what .. (want and " is present" or " is absent")
    end
  end
  local re_src = m.matches or m.does_not_match
  if re_src ~= nil then
    local re, err = core.regex(tostring(re_src), ci)
    if re == nil then return nil, what .. ": bad regular expression: " .. err end
    local negate = m.does_not_match ~= nil
    return function(v)
      -- Only `absent` matches an absent value, doesNotMatch included.
      if v == nil then return false, what .. " is absent" end
      if re:match(v) ~= negate then return true end
      return false, ("%s %q %s /%s/"):format(what, v, negate and "matches" or "does not match", re_src), 0.5
    end
  end
  if m.equal_to ~= nil then
    local want = tostring(m.equal_to)
    if ci then want = lower(want) end
    return function(v)
      if v ~= nil and (ci and lower(v) or v) == want then return true end
      return false, ("%s is %s, not %q"):format(what, v and ("%q"):format(v) or "absent", m.equal_to),
        v and 0.5 or 1
    end
  end
  if m.contains ~= nil then
    local want = tostring(m.contains)
    if ci then want = lower(want) end
    return function(v)
      if v ~= nil and find(ci and lower(v) or v, want, 1, true) then return true end
      return false, ("%s %s does not contain %q"):format(what, v and ("%q"):format(v) or "(absent)", m.contains),
        v and 0.5 or 1
    end
  end
  return nil, what .. ": no matcher I know (equalTo, contains, matches, doesNotMatch, absent)"
end
match.string_matcher = string_matcher

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

-- Body matchers: the string ones, plus equalToJson and matchesJsonPath.
local function body_matcher(m)
  if type(m) ~= "table" then return nil, "a body pattern is a table" end
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
    return function(body)
      local actual = body and json.decode(body)
      if actual == nil then return false, "body is not JSON" end
      if json_equal(expected, actual, opts) then return true end
      return false, "body is not equal to the expected JSON"
    end
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
    return function(body)
      local doc = body and json.decode(body)
      if doc == nil then return false, "body is not JSON" end
      local found = jsonpath.query(doc, compiled)
      if found == nil or #found == 0 then return false, "nothing at " .. expr end
      if sub_m == nil then return true end
      local why
      for _, v in ipairs(found) do
        local ok, w = sub_m(json_text(v))
        if ok then return true end
        why = w
      end
      return false, why
    end
  end
  return string_matcher(m, "body")
end

-- URLs ------------------------------------------------------------------

-- "/users/{id}/posts/{post}" → a function(path) -> params or nil.
local function path_template(tpl)
  local parts = {}
  for seg in tpl:gmatch("[^/]+") do
    local name = seg:match("^{(.-)}$")
    parts[#parts + 1] = name and { name = name } or { literal = seg }
  end
  local trailing = sub(tpl, -1) == "/"
  return function(path)
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

--- Compiles a stub's request pattern. Returns a compiled pattern, or nil and
-- what is wrong (a bad regular expression, an unknown matcher).
function match.compile(req)
  local c = { method = (req.method or "ANY"):upper(), checks = {}, weights = {},
              prefix = literal_prefix(req) }
  local checks, weights = c.checks, c.weights
  -- A URL that differs puts a stub further from a request than any
  -- parameter, header or body that differs (for the report of the closest).
  local function add(fn, weight)
    checks[#checks + 1] = fn
    weights[#checks] = weight or 1
  end
  local err
  if req.url ~= nil then
    c.literal = tostring(req.url):match("^[^?]*")
    local want = tostring(req.url)
    add(function(f) return f.url == want, ("URL is %s, not %s"):format(f.url, want) end, 10)
  elseif req.url_path ~= nil then
    c.literal = tostring(req.url_path)
    local want = c.literal
    add(function(f) return f.path == want, ("path is %s, not %s"):format(f.path, want) end, 10)
  elseif req.url_pattern ~= nil or req.url_path_pattern ~= nil then
    local src = tostring(req.url_pattern or req.url_path_pattern)
    local re, e = core.regex(src, false)
    if re == nil then return nil, "bad URL pattern /" .. src .. "/: " .. e end
    local whole = req.url_pattern ~= nil
    add(function(f)
      local v = whole and f.url or f.path
      return re:match(v), ("%s %s does not match /%s/"):format(whole and "URL" or "path", v, src)
    end, 10)
  elseif req.url_path_template ~= nil then
    local tpl = tostring(req.url_path_template)
    local test = path_template(tpl)
    local params = {}
    for name, m in pairs(req.path_parameters or {}) do
      local fn, e = string_matcher(m, "path parameter " .. name)
      if fn == nil then return nil, e end
      params[name] = fn
    end
    add(function(f)
      local got = test(f.path)
      if got == nil then return false, ("path %s does not fit %s"):format(f.path, tpl) end
      for name, fn in pairs(params) do
        local ok, why = fn(got[name])
        if not ok then return false, why end
      end
      f.path_params = got
      return true
    end, 10)
  end
  for name, m in pairs(req.query_parameters or {}) do
    local fn
    fn, err = string_matcher(m, "query parameter " .. name)
    if fn == nil then return nil, err end
    add(function(f)
      local values = f.query[name]
      if values == nil then return fn(nil) end
      local why, dist
      for _, v in ipairs(values) do
        local ok, w, d = fn(v)
        if ok then return true end
        why, dist = w, d
      end
      return false, why, dist
    end)
  end
  for name, m in pairs(req.headers or {}) do
    local fn
    fn, err = string_matcher(m, "header " .. name)
    if fn == nil then return nil, err end
    add(function(f) return fn(f.header(name)) end)
  end
  for name, m in pairs(req.cookies or {}) do
    local fn
    fn, err = string_matcher(m, "cookie " .. name)
    if fn == nil then return nil, err end
    add(function(f) return fn(f.cookies()[name]) end)
  end
  if req.basic_auth ~= nil then
    local want = "Basic " .. model.base64_encode(tostring(req.basic_auth.username or "")
      .. ":" .. tostring(req.basic_auth.password or ""))
    add(function(f)
      local got = f.header("authorization")
      if got == want then return true end
      -- Compare decoded, so that padding or case in "basic" do not matter.
      local enc = got and got:match("^[Bb][Aa][Ss][Ii][Cc]%s+(%S+)$")
      local dec = enc and model.base64_decode(enc)
      if dec == tostring(req.basic_auth.username or "") .. ":" .. tostring(req.basic_auth.password or "") then
        return true
      end
      return false, "basic auth credentials differ"
    end)
  end
  for i, m in ipairs(req.body_patterns or {}) do
    local fn
    fn, err = body_matcher(m)
    if fn == nil then return nil, "body pattern " .. i .. ": " .. err end
    add(function(f) return fn(f.body()) end)
  end
  return c
end

--- Tests facts against a compiled pattern. Returns true, or false, the
-- reasons it failed (a list) and how far the request is from the pattern
-- (a differing URL counts 10, a method 5, anything else 1). With `all`,
-- every check runs (for the report of the closest stubs).
function match.test(c, facts, all)
  local why, failed = nil, 0
  if c.method ~= "ANY" and c.method ~= facts.method then
    if not all then return false end
    why = { ("method is %s, not %s"):format(facts.method, c.method) }
    failed = 5
  end
  for i, check in ipairs(c.checks) do
    local ok, w, d = check(facts)
    if not ok then
      if not all then return false end
      why = why or {}
      why[#why + 1] = w
      failed = failed + c.weights[i] * (d or 1)
    end
  end
  if failed == 0 then return true end
  return false, why, failed
end

-- The index ---------------------------------------------------------------

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
  return idx
end

-- The lists a request's stubs may be on, and where each one's next stub is.
-- Matching does not yield, so one set serves every call.
local lists, heads, nlists = {}, {}, 0

local function add_list(list)
  if list ~= nil then
    nlists = nlists + 1
    lists[nlists], heads[nlists] = list, 1
  end
end

--- The first stub, best first, whose pattern matches facts and which
-- accept(stub) takes (a scenario state check), or nil. Walks the few
-- lists the index gives for the request together, in priority order,
-- without sorting or allocating.
function match.find(idx, facts, accept)
  nlists = 0
  local path = facts.path
  local m = idx.literal[facts.method]
  if m then add_list(m[path]) end
  local any = idx.literal.ANY
  if any then add_list(any[path]) end
  if idx.has_prefix then
    -- The first one and two segments, found byte by byte: string.match
    -- would keep this loop out of the JIT.
    local len, i = #path, 2
    while i <= len and byte(path, i) ~= 47 do i = i + 1 end -- '/'
    add_list(idx.prefix[sub(path, 1, i - 1)])
    if i < len then
      local j = i + 1
      while j <= len and byte(path, j) ~= 47 do j = j + 1 end
      add_list(idx.prefix[sub(path, 1, j - 1)])
    end
  end
  add_list(idx.rest)
  local n = nlists
  while true do
    local best, bi
    for i = 1, n do
      local s = lists[i][heads[i]]
      if s ~= nil and (best == nil or before(s, best)) then best, bi = s, i end
    end
    if best == nil then return nil end
    heads[bi] = heads[bi] + 1
    if match.test(best.compiled, facts) and (accept == nil or accept(best)) then
      return best
    end
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
