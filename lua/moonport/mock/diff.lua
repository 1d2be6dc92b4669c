--- WireMock's 404 page for a request no stub matched: the plain-text
-- table of the closest stub's fields beside the request's, a
-- `<<<<< ... does not match` marker on each field that differs, laid out
-- as WireMock 3.13 lays it out (119 columns, or X-WireMock-Console-Width;
-- each side wrapped at its column's width on spaces, a longer word cut).
--
--     local diff = require("moonport.mock.diff")
--     res:send(diff.render(stub, facts, scenario_state(stub.scenario_name)))
--
-- What it cannot show as WireMock does (listed in README.md, "Differences
-- from WireMock"): fields of one kind (headers, query parameters,
-- cookies) come in name order, as a mapping's JSON order is not kept; an
-- `equalToJson` written as an object lists its keys in name order; the
-- request's body for a `binaryEqualTo` is its base64, where WireMock
-- prints a Java array's identity; widths count bytes, not UTF-16 units.
--
-- @module moonport.mock.diff

local json = require("moonport.json")
local jsonpath = require("moonport.mock.jsonpath")
-- moonport.mock.match needs the server's core: loaded when a page is
-- rendered, so that the layout functions load (and are tested) without it.
local match
local model = require("moonport.mock.model")

local type, pairs, ipairs, tostring, tonumber = type, pairs, ipairs, tostring, tonumber
local getmetatable, next = getmetatable, next
local concat, sort, rep = table.concat, table.sort, string.rep
local find, sub, gsub, format = string.find, string.sub, string.gsub, string.format

local literal_mt, array_mt, null = json.literal_mt, json.array_mt, json.null

local diff = {}

--- WireMock's body when there are no stubs at all.
diff.NO_STUBS = "No response could be served as there are no stub mappings in this WireMock instance."

-- JSON as Jackson's default pretty printer writes it ------------------------

-- A JSON document parsed keeping its keys' order and its numbers' text:
-- {object = {{key, value}...}}, {array = {...}}, or {text = "..."} for a
-- scalar, already JSON. nil when text is not JSON.
local function parse_ordered(text)
  local pos = 1
  local function ws() pos = find(text, "[^ \t\r\n]", pos) or #text + 1 end
  local value
  local function string_token()
    local start = pos
    pos = pos + 1
    while true do
      local c = sub(text, pos, pos)
      if c == "" then return nil end
      if c == "\\" then pos = pos + 2
      elseif c == '"' then pos = pos + 1 break
      else pos = pos + 1 end
    end
    return sub(text, start, pos - 1)
  end
  function value()
    ws()
    local c = sub(text, pos, pos)
    if c == "{" then
      pos = pos + 1
      local members = {}
      ws()
      if sub(text, pos, pos) == "}" then pos = pos + 1 return { object = members } end
      while true do
        ws()
        if sub(text, pos, pos) ~= '"' then return nil end
        local k = string_token()
        if k == nil then return nil end
        ws()
        if sub(text, pos, pos) ~= ":" then return nil end
        pos = pos + 1
        local v = value()
        if v == nil then return nil end
        members[#members + 1] = { k, v }
        ws()
        local d = sub(text, pos, pos)
        pos = pos + 1
        if d == "}" then return { object = members } end
        if d ~= "," then return nil end
      end
    elseif c == "[" then
      pos = pos + 1
      local items = {}
      ws()
      if sub(text, pos, pos) == "]" then pos = pos + 1 return { array = items } end
      while true do
        local v = value()
        if v == nil then return nil end
        items[#items + 1] = v
        ws()
        local d = sub(text, pos, pos)
        pos = pos + 1
        if d == "]" then return { array = items } end
        if d ~= "," then return nil end
      end
    elseif c == '"' then
      local s = string_token()
      return s and { text = s }
    end
    local word = text:match("^true", pos) or text:match("^false", pos) or text:match("^null", pos)
      or text:match("^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
    if word == nil or word == "" then return nil end
    pos = pos + #word
    return { text = word }
  end
  local ok, v = pcall(value)
  if not ok or v == nil then return nil end
  ws()
  if pos <= #text then return nil end
  return v
end

-- The same shape from a decoded value (a mapping's): keys in name order.
local function ordered_of(v)
  if type(v) == "table" and getmetatable(v) ~= literal_mt and v ~= null then
    if getmetatable(v) == array_mt or v[1] ~= nil then
      local items = {}
      for i, x in ipairs(v) do items[i] = ordered_of(x) end
      return { array = items }
    end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = tostring(k) end
    sort(keys)
    local members = {}
    for i, k in ipairs(keys) do members[i] = { json.encode(k), ordered_of(v[k]) } end
    return { object = members }
  end
  if getmetatable(v) == literal_mt then return { text = tostring(v) } end
  return { text = json.encode(v) }
end

-- Jackson's DefaultPrettyPrinter: objects one member a line, indented two
-- spaces a level (only objects count levels), `"key" : value`; arrays on
-- one line, `[ a, b ]`; empty ones `{ }` and `[ ]`.
local function pretty(node, level, out)
  if node.object then
    if #node.object == 0 then out[#out + 1] = "{ }" return end
    out[#out + 1] = "{"
    for i, m in ipairs(node.object) do
      out[#out + 1] = (i > 1 and ",\n" or "\n") .. rep("  ", level + 1) .. m[1] .. " : "
      pretty(m[2], level + 1, out)
    end
    out[#out + 1] = "\n" .. rep("  ", level) .. "}"
  elseif node.array then
    if #node.array == 0 then out[#out + 1] = "[ ]" return end
    out[#out + 1] = "[ "
    for i, x in ipairs(node.array) do
      if i > 1 then out[#out + 1] = ", " end
      pretty(x, level, out)
    end
    out[#out + 1] = " ]"
  else
    out[#out + 1] = node.text
  end
end

-- JSON text or a decoded value, pretty printed; nil when text is not JSON.
local function pretty_json(v)
  local node = type(v) == "string" and parse_ordered(v) or (type(v) ~= "string" and ordered_of(v))
  if not node then return nil end
  local out = {}
  pretty(node, 0, out)
  return concat(out)
end
--- JSON text (keys in its order) or a decoded value (keys in name order)
-- as Jackson's default pretty printer writes it; nil for text that is not
-- JSON.
-- @usage diff.pretty_json('{"a":[1,2]}') --> '{\n  "a" : [ 1, 2 ]\n}'
diff.pretty_json = pretty_json

-- Layout -------------------------------------------------------------------

-- Java's String.split on "\n": trailing empty strings dropped.
local function split_lines(s)
  local lines = {}
  local start = 1
  while true do
    local i = find(s, "\n", start, true)
    if i == nil then
      lines[#lines + 1] = sub(s, start)
      break
    end
    lines[#lines + 1] = sub(s, start, i - 1)
    start = i + 1
  end
  while #lines > 0 and lines[#lines] == "" do lines[#lines] = nil end
  if #lines == 0 and s == "" then lines[1] = "" end
  return lines
end

-- WireMock's wrapping (commons-lang's WordUtils.wrap with long words cut):
-- applied to the whole text, line breaks counting as ordinary characters,
-- when its longest line is over width; blank lines it leaves are removed.
local function wrap(s, width)
  local longest = 0
  for _, line in ipairs(split_lines(s)) do
    if #line > longest then longest = #line end
  end
  if longest <= width then return s end
  local out, offset, len = {}, 0, #s
  while offset < len do
    -- 0-based offsets, as the original reads.
    local window = sub(s, offset + 1, math.min(offset + width + 1, len))
    local first = find(window, " ", 1, true)
    local space = -1
    if first then
      if first == 1 then
        offset = offset + 1
        goto continue
      end
      space = first - 1 + offset
    end
    if len - offset <= width then break end
    if first then
      local at = first
      while true do
        local nxt = find(window, " ", at + 1, true)
        if not nxt then break end
        at = nxt
      end
      space = at - 1 + offset
    end
    if space >= offset then
      out[#out + 1] = sub(s, offset + 1, space) .. "\n"
      offset = space + 1
    else
      out[#out + 1] = sub(s, offset + 1, offset + width) .. "\n"
      offset = offset + width
    end
    ::continue::
  end
  out[#out + 1] = sub(s, offset + 1)
  -- (?m)^[ \t]*\r?\n: lines of nothing but blanks go.
  local text, n = "\n" .. concat(out), 1
  while n > 0 do text, n = gsub(text, "\n[ \t]*\r?\n", "\n") end
  return sub(text, 2)
end

--- WireMock's wrapping of a column's text at width (what its 404 page
-- does to each side).
-- @usage diff.wrap("abc\nabcd", 3) --> "abc\nabc\nd"
diff.wrap = wrap

local function rpad(s, n)
  if #s >= n then return s end
  return s .. rep(" ", n - #s)
end

-- Renderer state: width and the output.
local function writer(width)
  local middle = math.floor(width / 2) - 1
  local column = math.floor(width / 2) - 2
  local out = {}
  local w = {}
  function w.single(left, right, message)
    out[#out + 1] = rpad(left, middle + 1) .. "|"
    if right ~= nil and right ~= "" then
      out[#out + 1] = " "
      if message ~= nil and message ~= "" then
        out[#out + 1] = rpad(right, middle - 6) .. "<<<<< " .. message
      else
        out[#out + 1] = right
      end
    elseif message ~= nil and message ~= "" then
      out[#out + 1] = rpad(right or "", middle - 5) .. "<<<<< " .. message
    end
    out[#out + 1] = "\n"
  end
  function w.line(left, right, message)
    local ls = split_lines(wrap(gsub(left or "", "\r\n", "\n"), column))
    local rs = split_lines(wrap(gsub(right or "", "\r\n", "\n"), column))
    w.single(ls[1] or "", rs[1] or "", message)
    for i = 2, math.max(#ls, #rs) do w.single(ls[i] or "", rs[i] or "", nil) end
  end
  function w.blank() w.single("", nil, nil) end
  function w.header()
    local title = "Request was not matched"
    local pad = rep(" ", middle - math.floor(#title / 2))
    out[#out + 1] = "\n" .. pad .. title .. "\n" .. pad .. rep("=", #title) .. "\n\n"
      .. rep("-", width) .. "\n|" .. rpad(" Closest stub", middle) .. "|"
      .. rpad(" Request", middle) .. "|\n" .. rep("-", width) .. "\n"
    w.blank()
  end
  function w.footer() out[#out + 1] = rep("-", width) .. "\n" end
  function w.text() return concat(out) end
  return w
end

-- Matchers as WireMock prints them ------------------------------------------

-- Matchers printed without their name: the equalTo kinds.
local EQUAL_KIND = { equal_to = true, equal_to_json = true, equal_to_xml = true, binary_equal_to = true }
local NAMES = { "equal_to", "equal_to_json", "equal_to_xml", "binary_equal_to", "contains",
  "does_not_contain", "matches", "does_not_match", "absent", "and", "or", "not",
  "matches_json_path", "matches_x_path", "matches_json_schema", "before", "after",
  "equal_to_date_time", "has_exactly", "includes" }
local SKIP = { case_insensitive = true, ignore_array_order = true, ignore_extra_elements = true,
  x_path_namespaces = true, enable_placeholders = true, placeholder_opening_delimiter_regex = true,
  placeholder_closing_delimiter_regex = true, exempted_comparisons = true, actual_format = true,
  truncate_expected = true, truncate_actual = true, expected_offset = true,
  expected_offset_unit = true, schema_version = true }

local describe_matcher

-- The key naming a matcher table's kind, and its value.
local function kind_of(m)
  if type(m) ~= "table" then return "equal_to", m end
  for _, k in ipairs(NAMES) do
    if m[k] ~= nil then return k, m[k] end
  end
  for k, v in pairs(m) do
    if not SKIP[k] then return k, v end
  end
  return "equal_to", ""
end

local function text_of(v)
  if type(v) == "string" then return v end
  if getmetatable(v) == literal_mt then return tostring(v) end
  if type(v) == "table" then return json.encode(v) end
  return tostring(v)
end

-- A matcher's name and expected value as WireMock prints them, and
-- whether it is of the equalTo kind.
function describe_matcher(m)
  local kind, v = kind_of(m)
  local name = model.camel(kind)
  if kind == "absent" then return name, "(absent)", false end
  if kind == "and" or kind == "or" then
    local parts = {}
    for i, sm in ipairs(v) do
      local n, e = describe_matcher(sm)
      parts[i] = n .. " " .. e
    end
    return name, concat(parts, kind == "and" and " AND " or " OR "), false
  end
  if kind == "not" then
    local _, e = describe_matcher(v)
    return name, e, false
  end
  if kind == "equal_to_json" then return name, pretty_json(v) or text_of(v), true end
  return name, text_of(v), EQUAL_KIND[kind] == true
end

-- The operator between a name and its expected value: `eq` for the
-- equalTo kinds, ` [name] ` for the others, and for hasExactly and
-- includes ` exactly [m1 AND m2]` with nothing after.
local function operator(m, eq)
  if type(m) == "table" and (m.has_exactly ~= nil or m.includes ~= nil) then
    local list = m.has_exactly or m.includes
    local parts = {}
    for i, sm in ipairs(list) do
      local n, e = describe_matcher(sm)
      parts[i] = n .. " " .. e
    end
    return (m.has_exactly and " exactly [" or " including [") .. concat(parts, " AND ") .. "]", ""
  end
  local name, expected, equal = describe_matcher(m)
  return equal and eq or (" [" .. name .. "] "), expected
end

-- Whether a value (or a list of values, for the multi-value matchers)
-- satisfies m, with moonport's own matchers.
local function satisfies(m, values, what, absent_unlike)
  if type(m) ~= "table" then m = { equal_to = tostring(m) } end
  local mm = match.multi_matcher(m, what)
  if mm then return mm.test(values) == true end
  local sm = match.string_matcher(m, what, absent_unlike)
  if sm == nil then return false end
  if values == nil then return sm.test(nil) == true end
  for _, v in ipairs(values) do
    if sm.test(v) == true then return true end
  end
  return false
end

local function message(attr, actual, matched)
  if actual == nil or actual == "" then return attr .. " is not present" end
  if matched then return nil end
  return attr .. " does not match"
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t or {}) do keys[#keys + 1] = k end
  sort(keys)
  return keys
end

-- The URL line -----------------------------------------------------------

local function url_line(r)
  if r.url ~= nil then return text_of(r.url), false end
  if r.url_path ~= nil then return "[path] " .. text_of(r.url_path), false end
  if r.url_pattern ~= nil then return "[regex] " .. text_of(r.url_pattern), true end
  if r.url_path_pattern ~= nil then return "[path regex] " .. text_of(r.url_path_pattern), true end
  if r.url_path_template ~= nil then return "[path template] " .. text_of(r.url_path_template), false end
  return "(always)", false, true
end

-- WireMock's hint: a regex's first "?" should be escaped (it checks for
-- two backslashes before it, as Java source writes one).
local function unescaped_question(expected)
  local i = find(expected, "?", 1, true)
  if i == nil then return false end
  if i < 3 then return true end
  return sub(expected, i - 2, i - 1) ~= "\\\\"
end

-- The URL check alone: compiles a pattern of the URL fields only.
local function url_matches(r, facts)
  local only = { method = "ANY", url = r.url, url_path = r.url_path, url_pattern = r.url_pattern,
                 url_path_pattern = r.url_path_pattern, url_path_template = r.url_path_template }
  local c = match.compile(only)
  return c ~= nil and match.test(c, facts) == true
end

-- Bodies ---------------------------------------------------------------------

local function body_text(facts)
  local b = facts:body()
  return b or ""
end

-- A JSON value as Java's toString writes the one WireMock's JSON path
-- gives: maps as {k=v, ...} (keys in name order), lists as [a, b].
local function java_text(v)
  if type(v) ~= "table" or v == null then
    if v == null then return "null" end
    if type(v) == "number" and v == math.floor(v) and v > -1e15 and v < 1e15 then return format("%d", v) end
    return tostring(v)
  end
  local parts = {}
  if getmetatable(v) == array_mt or v[1] ~= nil then
    for i, x in ipairs(v) do parts[i] = java_text(x) end
    return "[" .. concat(parts, ", ") .. "]"
  end
  for _, k in ipairs((function()
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    sort(keys)
    return keys
  end)()) do parts[#parts + 1] = k .. "=" .. java_text(v[k]) end
  return "{" .. concat(parts, ", ") .. "}"
end

-- What WireMock prints of the request's body for a pattern.
local function formatted_body(kind, body)
  if body == "" then return "" end
  if kind == "equal_to_json" then return pretty_json(body) or body end
  if kind == "binary_equal_to" then return model.base64_encode(body) end
  return body
end

local function body_lines(w, patterns, facts)
  local body = body_text(facts)
  for _, m in ipairs(patterns or {}) do
    local bm = match.body_matcher(m)
    local matched = bm ~= nil and bm.test(body) == true
    if not matched then
      local kind, v = kind_of(m)
      local shown = formatted_body(kind, body)
      if kind == "matches_json_path" then
        local expr, rest = v, nil
        if type(v) == "table" then
          expr = v.expression
          for k, x in pairs(v) do
            if k ~= "expression" then rest = rest or {}; rest[k] = x end
          end
        end
        if rest == nil then
          w.line(text_of(expr), shown, message("Body", shown, false))
        else
          local name, expected = describe_matcher(rest)
          local left = text_of(expr) .. " [" .. name .. "] " .. expected
          local result
          if body ~= "" then
            local doc = json.decode(body)
            local c = doc ~= nil and jsonpath.compile(tostring(expr))
            local found = c and jsonpath.query(doc, c)
            -- WireMock shows the first value found (an array's first
            -- element); none when there is nothing there.
            local x = found and found[1]
            if type(x) == "table" and x ~= null and (getmetatable(x) == array_mt or x[1] ~= nil) then
              x = x[1]
            end
            if x ~= nil then result = java_text(x) end
          end
          if result then
            w.line(left, result, message("Body", result, satisfies(rest, { result }, "body")))
          else
            w.line(left, shown, message("Body", shown, false))
          end
        end
      elseif kind == "binary_equal_to" then
        w.line(text_of(v), shown, message("Body", shown, false))
      else
        local name, expected = describe_matcher(m)
        w.line("[" .. name .. "]\n" .. expected, "\n" .. shown, message("Body", "\n" .. shown, false))
      end
    end
  end
end

-- The page -------------------------------------------------------------------

--- WireMock's 404 text for facts (the request, as moonport.mock.match
-- reads it) against its closest stub: its name, the method, the URL, then
-- headers, path parameters, query parameters, cookies, the bodies that
-- differ and the scenario's state, each beside the request's.
-- scenario_state is the stub's scenario's state now (when it has one);
-- width the page's (default 119, as WireMock's).
-- @usage res:send(diff.render(stub, facts, "Started"))
function diff.render(stub, facts, scenario_state, width)
  match = match or require("moonport.mock.match")
  local r = stub.request or {}
  local w = writer(width or 119)
  w.header()
  if stub.name ~= nil then
    w.line(tostring(stub.name), "", nil)
    w.blank()
  end
  local method = r.method or "ANY"
  w.line(method, facts.method, message("HTTP method", facts.method, method == "ANY" or method == facts.method))

  local printed, regex, any = url_line(r)
  local url_ok = any or url_matches(r, facts)
  local msg = message("URL", facts.url, url_ok)
  -- WireMock appends its hints to the message, "null" when there was none.
  if regex and unescaped_question(printed:gsub("^%[[^%]]*%] ", "")) then
    msg = (msg or "null") .. '. When using a regex, "?" should be "\\?"'
  end
  if not any and sub(printed:gsub("^%[[^%]]*%] ", ""), 1, 1) ~= "/" then
    msg = (msg or "null") .. ". URLs must start with a /"
  end
  w.line(printed, facts.url, msg)
  w.blank()

  -- Headers, basic auth's last.
  local headers = {}
  for _, name in ipairs(sorted_keys(r.headers)) do headers[#headers + 1] = { name, r.headers[name] } end
  if r.basic_auth ~= nil then
    local cred = text_of(r.basic_auth.username or "") .. ":" .. text_of(r.basic_auth.password or "")
    headers[#headers + 1] = { "Authorization", { basic = "Basic " .. model.base64_encode(cred) } }
  end
  for _, h in ipairs(headers) do
    local name, m = h[1], h[2]
    local values = facts:header(name) ~= nil
      and (facts.header_values and facts:header_values(name) or { facts:header(name) }) or nil
    local actual = ""
    if values then
      local parts = {}
      for i, v in ipairs(values) do parts[i] = name .. ": " .. v end
      actual = concat(parts, "\n")
    end
    local left, ok
    if type(m) == "table" and m.basic ~= nil then
      left = name .. " [prefix] : " .. m.basic
      ok = values ~= nil and find(values[1], m.basic, 1, true) == 1
    else
      local op, expected = operator(m, "")
      left = name .. op .. ((expected ~= "" and expected ~= nil) and (": " .. expected) or "")
      ok = satisfies(m, values, "header " .. name, true)
    end
    w.line(left, actual, message("Header", actual, ok))
  end
  if #headers > 0 then w.blank() end

  -- Path parameters, when the path fits the template.
  if r.url_path_template ~= nil and next(r.path_parameters or {}) ~= nil and url_ok then
    local params = facts.path_params
    if params == nil then
      local fit = match.path_template(tostring(r.url_path_template))
      params = fit(facts.path) or {}
    end
    for name in tostring(r.url_path_template):gmatch("{([^}]+)}") do
      local m = r.path_parameters[name]
      if m ~= nil then
        local op, expected = operator(m, " = ")
        local v = params[name] or ""
        w.line("Path parameter: " .. name .. op .. expected, v,
          message("Path parameter", v, satisfies(m, { v }, "path parameter " .. name)))
      end
    end
    w.blank()
  end

  local qkeys = sorted_keys(r.query_parameters)
  for _, key in ipairs(qkeys) do
    local m = r.query_parameters[key]
    local op, expected = operator(m, " = ")
    local values = facts.query[key]
    local actual = ""
    if values then
      local parts = {}
      for i, v in ipairs(values) do parts[i] = key .. ": " .. v end
      actual = concat(parts, "\n")
    end
    w.line("Query: " .. key .. op .. expected, actual,
      message("Query", actual, satisfies(m, values, "query parameter " .. key, true)))
  end
  if #qkeys > 0 then w.blank() end

  local ckeys = sorted_keys(r.cookies)
  for _, key in ipairs(ckeys) do
    local m = r.cookies[key]
    local op, expected = operator(m, "=")
    local v = facts:cookies()[key]
    w.line("Cookie: " .. key .. op .. expected, v or "",
      message("Cookie", v, satisfies(m, v and { v } or nil, "cookie " .. key)))
  end
  if #ckeys > 0 then w.blank() end

  body_lines(w, r.body_patterns, facts)

  if stub.scenario_name ~= nil and stub.required_scenario_state ~= nil then
    local want = tostring(stub.required_scenario_state)
    local now = tostring(scenario_state)
    local function line(state) return ("[Scenario '%s' state: %s]"):format(stub.scenario_name, state) end
    w.line(line(want), line(now), message("Scenario", line(now), want == now))
  end
  w.blank()
  w.footer()
  return w.text()
end

return diff
