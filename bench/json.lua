-- moonport.json beside lua-cjson: encode and decode of a small object and
-- of a 10 KB document, in the test build's moonport/json.so (the source
-- the server preloads). Not a test; run it from the repository root after
-- a build:
--
--   LUA_CPATH='build/lua/?.so;;' luajit bench/json.lua
--
-- Each figure is the best of 5 rounds of CPU time (os.clock), per call.
local json = require("moonport.json")
local ok, cjson = pcall(require, "cjson")

local function best_ns(n, fn, arg)
  local best = math.huge
  for _ = 1, 5 do
    local t0 = os.clock()
    for _ = 1, n do fn(arg) end
    best = math.min(best, (os.clock() - t0) / n)
  end
  return best * 1e9
end

local small = { id = 42, name = "user-42" }
local doc = { users = json.array() }
for i = 1, 100 do
  doc.users[i] = { id = i, name = "user-" .. i, email = ("user%d@example.com"):format(i),
                   score = i / 7, active = i % 2 == 0, tags = json.array({ "a", "b" }) }
end
local doc_text = json.encode(doc)
local small_text = json.encode(small)

local cases = {
  { "encode {id=42,name=\"user-42\"}", 1e6, "encode", small },
  { ("encode %.1f KB document"):format(#doc_text / 1024), 2e4, "encode", doc },
  { "decode " .. small_text, 1e6, "decode", small_text },
  { ("decode %.1f KB document"):format(#doc_text / 1024), 2e4, "decode", doc_text },
}

print(("%-36s %14s %14s %8s"):format("", "moonport.json", "lua-cjson", "ratio"))
for _, c in ipairs(cases) do
  local name, n, op, arg = c[1], c[2], c[3], c[4]
  local ours = best_ns(n, json[op], arg)
  local theirs = ok and best_ns(n, cjson[op], arg) or 0 / 0
  print(("%-36s %11.0f ns %11.0f ns %7.2fx"):format(name, ours, theirs, theirs / ours))
end
