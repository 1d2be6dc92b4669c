--- A JSONPath subset, as Jayway JsonPath (WireMock's engine) reads it.
--
--     local jsonpath = require("moonport.mock.jsonpath")
--     local doc = json.decode('{"pets":[{"type":"dog"},{"type":"cat"}]}')
--     jsonpath.query(doc, "$.pets[?(@.type == 'cat')].type")  --> { "cat" }
--
-- Documents are Lua values as moonport.json decodes them: objects and arrays
-- are both tables, JSON null is `json.null`. A table whose keys are exactly
-- 1..n is an array, any other table an object; an empty table is both, and
-- yields nothing to iterate.
--
-- Supported: `$`, `.name`, `['name']` and `["name"]` (several names make a
-- union), `[n]` (0-based, negative from the end), `[n,m]`, `[start:end]`,
-- `[*]` and `.*`, recursive descent `..name`, `..*`, `..[...]`, and filters
-- `[?(...)]` with `@` and `$` paths, `==`, `!=`, `<`, `<=`, `>`, `>=`,
-- existence (`@.x`), `!`, `&&`, `||`, parentheses, and string, number,
-- `true`, `false` and `null` literals. Not supported: `=~` regexes, `in`,
-- `nin` and the other named operators, functions such as `length()`, and
-- slice steps.
--
-- Comparisons never coerce: a string and a number are never equal, nor
-- ordered. A path with no match is equal to nothing, so `!=`, being the
-- negation of `==`, holds for it. Ordering applies to two numbers or two
-- strings (byte order).
-- @module moonport.mock.jsonpath

local json = require("moonport.json")

local type, pairs, next, error, pcall = type, pairs, next, error, pcall
local setmetatable, getmetatable = setmetatable, getmetatable
local sub, find, match, format = string.sub, string.find, string.match, string.format
local concat = table.concat
local tonumber = tonumber

local null = json.null

local jsonpath = {}

local Compiled = {}
Compiled.__index = Compiled

-- Compiled paths by source text. The same few paths run on every request;
-- the cache is emptied whole when full, so a stream of distinct paths
-- costs a recompile now and then, never unbounded memory.
local CACHE_MAX = 256
local cache, cache_n = {}, 0

-- Stands for "this path matched nothing" in comparisons.
local UNDEF = {}

-- True when t's keys are exactly 1..n; also true for the empty table.
local function is_array(t)
  local n = #t
  if n == 0 then return next(t) == nil end
  for i = 1, n do
    if t[i] == nil then return false end
  end
  local count = 0
  for _ in pairs(t) do
    count = count + 1
    if count > n then return false end
  end
  return true
end

------------------------------------------------------------------------
-- Parsing. Every parse function takes the source and a position, and
-- returns what it read and the position after it; a syntax error is
-- raised as { pos, msg } and turned into `nil, err` by compile.
------------------------------------------------------------------------

local function fail(pos, msg)
  error({ pos, msg }, 0)
end

local function skip_ws(s, i)
  return find(s, "[^ \t\r\n]", i) or #s + 1
end

local function char_at(s, i)
  return sub(s, i, i)
end

-- Describes the character at i for an error message.
local function seen(s, i)
  if i > #s then return "end of path" end
  return "'" .. char_at(s, i) .. "'"
end

local function expect(s, i, c)
  i = skip_ws(s, i)
  if char_at(s, i) ~= c then
    fail(i, "expected '" .. c .. "', found " .. seen(s, i))
  end
  return i + 1
end

-- A name in dot notation runs up to the next character that has a meaning
-- in paths or filters.
local NAME = "^[^%.%[%]%(%)%s=!<>&|,'\"%*]+"

local function parse_name(s, i, what)
  local name = match(s, NAME, i)
  if not name then fail(i, "expected " .. what .. ", found " .. seen(s, i)) end
  return name, i + #name
end

-- A quoted string; a backslash makes the next character literal.
local function parse_string(s, i)
  local quote, start = char_at(s, i), i
  local buf, n = {}, 0
  i = i + 1
  while true do
    local j = find(s, "[\\" .. quote .. "]", i)
    if not j then fail(start, "unterminated string") end
    n = n + 1
    buf[n] = sub(s, i, j - 1)
    if char_at(s, j) == quote then
      return concat(buf), j + 1
    end
    if j == #s then fail(start, "unterminated string") end
    n = n + 1
    buf[n] = char_at(s, j + 1)
    i = j + 2
  end
end

local function parse_int(s, i)
  local digits = match(s, "^%-?%d+", i)
  if not digits then return nil, i end
  return tonumber(digits), i + #digits
end

local parse_or

-- The inside of [...], i at the '['.
local function parse_bracket(s, i)
  local open = i
  i = skip_ws(s, i + 1)
  local c = char_at(s, i)
  if c == "*" then
    return { op = "all" }, expect(s, i + 1, "]")
  elseif c == "?" then
    i = expect(s, i + 1, "(")
    local expr
    expr, i = parse_or(s, i)
    i = expect(s, i, ")")
    return { op = "filter", expr = expr }, expect(s, i, "]")
  elseif c == "'" or c == '"' then
    local names = {}
    while true do
      names[#names + 1], i = parse_string(s, i)
      i = skip_ws(s, i)
      c = char_at(s, i)
      if c == "]" then return { op = "name", names = names }, i + 1 end
      if c ~= "," then fail(i, "expected ',' or ']', found " .. seen(s, i)) end
      i = skip_ws(s, i + 1)
      c = char_at(s, i)
      if c ~= "'" and c ~= '"' then
        fail(i, "expected a quoted name, found " .. seen(s, i))
      end
    end
  elseif c == "-" or c == ":" or match(c, "%d") then
    local first
    first, i = parse_int(s, i)
    i = skip_ws(s, i)
    if char_at(s, i) == ":" then
      local last
      last, i = parse_int(s, skip_ws(s, i + 1))
      i = skip_ws(s, i)
      if char_at(s, i) == ":" then fail(i, "slice steps are not supported") end
      return { op = "slice", from = first, to = last }, expect(s, i, "]")
    end
    if not first then fail(i, "expected an index, found " .. seen(s, i)) end
    local list = { first }
    while true do
      c = char_at(s, i)
      if c == "]" then return { op = "index", list = list }, i + 1 end
      if c ~= "," then fail(i, "expected ',', ':' or ']', found " .. seen(s, i)) end
      local n
      n, i = parse_int(s, skip_ws(s, i + 1))
      if not n then fail(i, "expected an index, found " .. seen(s, i)) end
      list[#list + 1] = n
      i = skip_ws(s, i)
    end
  end
  if i > #s then fail(open, "unclosed '['") end
  fail(i, "expected a quoted name, an index, '*' or '?(' after '[', found " .. seen(s, i))
end

-- The steps after '$' or '@', up to the first character that cannot
-- start a step.
local function parse_steps(s, i)
  local steps = {}
  while true do
    local c = char_at(s, i)
    local step
    if c == "[" then
      step, i = parse_bracket(s, i)
    elseif c == "." then
      if char_at(s, i + 1) == "." then
        i = i + 2
        local inner
        c = char_at(s, i)
        if c == "[" then
          inner, i = parse_bracket(s, i)
        elseif c == "*" then
          inner, i = { op = "all" }, i + 1
        else
          local name
          name, i = parse_name(s, i, "a name, '*' or '[' after '..'")
          inner = { op = "name", names = { name } }
        end
        step = { op = "scan", step = inner }
      elseif char_at(s, i + 1) == "*" then
        step, i = { op = "all" }, i + 2
      else
        local name
        name, i = parse_name(s, i + 1, "a name or '*' after '.'")
        step = { op = "name", names = { name } }
      end
    else
      return steps, i
    end
    steps[#steps + 1] = step
  end
end

local KEYWORDS = { ["true"] = true, ["false"] = false, ["null"] = null }

-- A path from '@' or '$', or a literal.
local function parse_operand(s, i)
  i = skip_ws(s, i)
  local c = char_at(s, i)
  if c == "@" or c == "$" then
    local steps
    steps, i = parse_steps(s, i + 1)
    return { kind = "path", root = c, steps = steps }, i
  elseif c == "'" or c == '"' then
    local str
    str, i = parse_string(s, i)
    return { kind = "lit", value = str }, i
  end
  local num = match(s, "^%-?%d+%.?%d*[eE][%+%-]?%d+", i)
    or match(s, "^%-?%d+%.?%d*", i) or match(s, "^%-?%.%d+", i)
  if num then
    return { kind = "lit", value = tonumber(num) }, i + #num
  end
  local word = match(s, "^%a+", i)
  if word and KEYWORDS[word] ~= nil then
    return { kind = "lit", value = KEYWORDS[word] }, i + #word
  end
  fail(i, "expected '@', '$' or a literal, found " .. seen(s, i))
end

local COMPARE = { ["=="] = true, ["!="] = true, ["<"] = true, ["<="] = true,
                  [">"] = true, [">="] = true }

local function parse_unary(s, i)
  i = skip_ws(s, i)
  local c = char_at(s, i)
  if c == "!" then
    local inner
    inner, i = parse_unary(s, i + 1)
    return { op = "not", inner }, i
  elseif c == "(" then
    local inner
    inner, i = parse_or(s, i + 1)
    return inner, expect(s, i, ")")
  end
  local left
  left, i = parse_operand(s, i)
  i = skip_ws(s, i)
  local op = match(s, "^[=!<>~]+", i)
  if not op then
    local word = match(s, "^%a+", i)
    if word then fail(i, "operator '" .. word .. "' is not supported") end
    if left.kind == "path" then return { op = "exists", left }, i end
    return { op = "truth", left }, i
  end
  if op == "=~" then fail(i, "regex match '=~' is not supported") end
  if not COMPARE[op] then fail(i, "unknown operator '" .. op .. "'") end
  local right
  right, i = parse_operand(s, i + #op)
  return { op = "cmp", cmp = op, left, right }, i
end

-- A chain of terms joined by token ("&&" or "||") becomes one node.
local function parse_chain(s, i, token, op, parse_term)
  local node
  node, i = parse_term(s, i)
  i = skip_ws(s, i)
  if sub(s, i, i + 1) ~= token then return node, i end
  node = { op = op, node }
  while sub(s, i, i + 1) == token do
    node[#node + 1], i = parse_term(s, i + 2)
    i = skip_ws(s, i)
  end
  return node, i
end

local function parse_and(s, i) return parse_chain(s, i, "&&", "and", parse_unary) end

function parse_or(s, i) return parse_chain(s, i, "||", "or", parse_and) end

local function parse_path(s)
  if char_at(s, 1) ~= "$" then fail(1, "a path must start with '$'") end
  local steps, i = parse_steps(s, 2)
  if i <= #s then fail(i, "unexpected " .. seen(s, i)) end
  return steps
end

------------------------------------------------------------------------
-- Evaluation. Each step maps one node to zero or more nodes, appended to
-- out; a query is the steps applied in turn to the list { doc }.
------------------------------------------------------------------------

local apply, test

local function run(steps, start, root)
  local nodes = { start }
  for s = 1, #steps do
    local step, found = steps[s], {}
    for k = 1, #nodes do apply(step, nodes[k], found, root) end
    nodes = found
  end
  return nodes
end

local function deep_equal(a, b)
  if a == b then return true end
  if type(a) ~= "table" or type(b) ~= "table" then return false end
  for k, v in pairs(a) do
    if not deep_equal(v, b[k]) then return false end
  end
  for k in pairs(b) do
    if a[k] == nil then return false end
  end
  return true
end

local function compare(op, a, b)
  if op == "==" or op == "!=" then
    local equal = a ~= UNDEF and b ~= UNDEF and type(a) == type(b) and deep_equal(a, b)
    if op == "==" then return equal end
    return not equal
  end
  local ta = type(a)
  if ta ~= type(b) or (ta ~= "number" and ta ~= "string") then return false end
  if op == "<" then return a < b
  elseif op == "<=" then return a <= b
  elseif op == ">" then return a > b
  end
  return a >= b
end

local function value_of(operand, cur, root)
  if operand.kind == "lit" then return operand.value end
  local found = run(operand.steps, operand.root == "@" and cur or root, root)
  if found[1] == nil then return UNDEF end
  return found[1]
end

function test(expr, cur, root)
  local op = expr.op
  if op == "cmp" then
    return compare(expr.cmp, value_of(expr[1], cur, root), value_of(expr[2], cur, root))
  elseif op == "exists" then
    local operand = expr[1]
    return run(operand.steps, operand.root == "@" and cur or root, root)[1] ~= nil
  elseif op == "and" then
    for k = 1, #expr do
      if not test(expr[k], cur, root) then return false end
    end
    return true
  elseif op == "or" then
    for k = 1, #expr do
      if test(expr[k], cur, root) then return true end
    end
    return false
  elseif op == "not" then
    return not test(expr[1], cur, root)
  end
  return expr[1].value == true
end

-- Calls fn(child) for every element of an array or value of an object.
local function each_child(node, fn)
  if is_array(node) then
    for k = 1, #node do fn(node[k]) end
  else
    for _, v in pairs(node) do fn(v) end
  end
end

-- Recursive descent: the inner step at node and at every table below it.
-- A filter instead tests every value below node, so that an element of an
-- array is not reported once as an element and again as itself.
local function scan(step, node, out, root)
  if step.op == "filter" then
    local expr = step.expr
    each_child(node, function(child)
      if test(expr, child, root) then out[#out + 1] = child end
      if type(child) == "table" then scan(step, child, out, root) end
    end)
    return
  end
  apply(step, node, out, root)
  each_child(node, function(child)
    if type(child) == "table" then scan(step, child, out, root) end
  end)
end

function apply(step, node, out, root)
  if type(node) ~= "table" then return end
  local op = step.op
  if op == "name" then
    local names = step.names
    for k = 1, #names do
      local v = node[names[k]]
      if v ~= nil then out[#out + 1] = v end
    end
  elseif op == "index" then
    if not is_array(node) then return end
    local n, list = #node, step.list
    for k = 1, #list do
      local idx = list[k]
      if idx < 0 then idx = n + idx end
      if idx >= 0 and idx < n then out[#out + 1] = node[idx + 1] end
    end
  elseif op == "slice" then
    if not is_array(node) then return end
    local n = #node
    local from, to = step.from or 0, step.to or n
    if from < 0 then from = from + n end
    if to < 0 then to = to + n end
    if from < 0 then from = 0 end
    if to > n then to = n end
    for idx = from, to - 1 do out[#out + 1] = node[idx + 1] end
  elseif op == "all" then
    each_child(node, function(child) out[#out + 1] = child end)
  elseif op == "filter" then
    local expr = step.expr
    if is_array(node) then
      for k = 1, #node do
        if test(expr, node[k], root) then out[#out + 1] = node[k] end
      end
    elseif test(expr, node, root) then
      -- Jayway applies a filter on an object to the object itself.
      out[#out + 1] = node
    end
  else
    scan(step.step, node, out, root)
  end
end

------------------------------------------------------------------------
-- Public API.
------------------------------------------------------------------------

--- Compiles a path; compiled paths are cached by their text.
-- @tparam string path the JSONPath, starting with `$`
-- @return a compiled path, or `nil, err` on a syntax error; err names the
-- 1-based position, as in "invalid JSONPath '$.a[': unclosed '[' at
-- position 4"
-- @usage local p = assert(jsonpath.compile("$.pets[*].type"))
function jsonpath.compile(path)
  if type(path) ~= "string" then error("path must be a string", 2) end
  local hit = cache[path]
  if hit then return hit end
  local ok, steps = pcall(parse_path, path)
  if not ok then
    if type(steps) ~= "table" then error(steps, 0) end
    return nil, format("invalid JSONPath '%s': %s at position %d", path, steps[2], steps[1])
  end
  if cache_n >= CACHE_MAX then cache, cache_n = {}, 0 end
  local compiled = setmetatable({ path = path, steps = steps }, Compiled)
  cache[path] = compiled
  cache_n = cache_n + 1
  return compiled
end

--- Every value in doc that a path matches.
-- @param doc a decoded JSON value (tables, strings, numbers, booleans,
-- `json.null`)
-- @param path a path string (compiled and cached) or a compiled path
-- @treturn table an array of the matched values, possibly empty, in
-- document order (object members in `pairs` order); or `nil, err` when the
-- path does not compile
-- @usage local ages = jsonpath.query(json.decode(body), "$..age")
function jsonpath.query(doc, path)
  local compiled = path
  if type(path) == "string" then
    local err
    compiled, err = jsonpath.compile(path)
    if not compiled then return nil, err end
  elseif getmetatable(path) ~= Compiled then
    error("path must be a string or a compiled path", 2)
  end
  return run(compiled.steps, doc, doc)
end

return jsonpath
