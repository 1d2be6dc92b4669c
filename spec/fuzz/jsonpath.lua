-- fuzz_jsonpath (spec/fuzz/fuzz_lua.c): the mock's JSONPath
-- (lua/moonport/mock/jsonpath.lua). The input's first line is the path;
-- the rest, when it is JSON, the document (a fixed one otherwise).
-- Returns the function each input is given to; an error out of it is a
-- failed invariant.
--
-- - compile never raises on a string: a compiled path (the same one again
--   from the cache), or nil and "invalid JSONPath '<path>': <what> at
--   position N" with N within the path or just past it;
-- - query with a path that does not compile answers nil and that message;
-- - query with a compiled path never raises and gives an array without
--   holes, the same as with the path's text.
-- Running out of the state's memory or instruction budget is a normal
-- outcome (the server's request limits).
local json = require("moonport.json")
local jsonpath = require("moonport.mock.jsonpath")

local DOC = json.decode([==[
{"store": {"book": [
  {"category": "reference", "author": "Nigel Rees", "title": "Sayings", "price": 8.95},
  {"category": "fiction", "author": "Evelyn Waugh", "title": "Sword", "price": 12.99, "tags": []},
  {"category": "fiction", "isbn": "0-553-21311-3", "price": 8.99, "ok": true, "none": null}],
  "bicycle": {"color": "red", "price": 19.95, "sizes": [1, 2.5, -3, "4"]}},
 "expensive": 10, "": {"a b": [[1, [2]], {"c": {}}]}}
]==])

local function limit(err)
  err = tostring(err)
  return err:find("not enough memory", 1, true) or err:find("fuzz: instruction budget", 1, true)
end

local function check_array(r, what)
  assert(type(r) == "table", what .. " did not give a table")
  local n = 0
  for _ in pairs(r) do n = n + 1 end
  assert(n == #r, what .. " gave an array with holes")
end

return function(input)
  local nl = input:find("\n", 1, true)
  local path, doc = input, DOC
  if nl then
    path = input:sub(1, nl - 1)
    local ok, d = pcall(json.decode, input:sub(nl + 1))
    if ok and d ~= nil then doc = d end
  end
  local ok, c, err = pcall(jsonpath.compile, path)
  if not ok then
    if limit(c) then return end
    error("compile raised: " .. tostring(c))
  end
  if not c then
    if limit(err) then return end
    assert(type(err) == "string", "compile failed without a message")
    assert(err:sub(1, #"invalid JSONPath '" + #path + 2) == "invalid JSONPath '" .. path .. "':",
      "the message does not name the path: " .. err)
    local pos = tonumber(err:match(" at position (%d+)$"))
    assert(pos and pos >= 1 and pos <= #path + 1, "no position within the path: " .. err)
    local r, qerr = jsonpath.query(doc, path)
    assert(r == nil and qerr == err, "query does not refuse the path as compile does")
    return
  end
  assert(jsonpath.compile(path) == c, "the compiled path is not cached")
  local qok, r = pcall(jsonpath.query, doc, c)
  if not qok then
    if limit(r) then return end
    error("query raised on a compiled path: " .. tostring(r))
  end
  check_array(r, "query")
  local r2 = jsonpath.query(doc, path)
  check_array(r2, "query by text")
  assert(#r2 == #r, "query by text and compiled differ")
end
