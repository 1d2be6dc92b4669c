-- Writes the seed corpus of spec/fuzz/corpus/ from the specs: the raw
-- requests of the conformance spec (every row and pipeline: fuzz_http1,
-- and the chunked bodies among them: fuzz_chunked), the texts the JSON
-- spec decodes (fuzz_json), the paths the JSONPath spec compiles
-- (fuzz_jsonpath) and the templates the template spec renders
-- (fuzz_template). Each spec runs with a stand-in for busted and for the
-- network that only records what it is given. Run from the repository
-- root after a build, when those specs change:
--
--   LUA_CPATH='build/lua/?.so;;' luajit spec/fuzz/seeds.lua
--
-- Files are named by target, spec and a hash of their bytes, so running it
-- again adds only what is new. Crash inputs (crash-*) are added by hand.
package.path = "lua/?.lua;lua/?/init.lua;./?.lua;" .. package.path

local OUT = "spec/fuzz/corpus/"

local function fnv(s)
  local h = 2166136261
  for i = 1, #s do
    h = bit.bxor(h, s:byte(i))
    h = bit.tobit(h * 16777619 % 2 ^ 32)
  end
  return bit.tohex(h)
end

local written = 0
local function save(target, spec, bytes)
  if type(bytes) ~= "string" or #bytes == 0 or #bytes > 4096 then return end
  local path = ("%s%s/%s-%s"):format(OUT, target, spec, fnv(bytes))
  local f = io.open(path, "rb")
  if f then f:close() return end
  f = assert(io.open(path, "wb"))
  f:write(bytes)
  f:close()
  written = written + 1
end

-- Anything: callable and indexable, answering itself (busted's assert,
-- spies, a connection that never answers).
local anything = setmetatable({}, {})
getmetatable(anything).__index = function() return anything end
getmetatable(anything).__call = function(_, v, ...) return v, ... end

-- Runs a spec file with busted's globals standing in: every block and
-- test body runs once, errors ignored.
local function run_spec(path)
  local env = setmetatable({}, { __index = _G })
  local function block(_, fn) if type(fn) == "function" then pcall(fn) end end
  for _, name in ipairs({ "describe", "it", "context", "pending", "insulate", "expose" }) do
    env[name] = block
  end
  for _, name in ipairs({ "before_each", "after_each", "setup", "teardown", "lazy_setup",
                          "lazy_teardown", "strict_setup", "strict_teardown", "finally" }) do
    env[name] = function(fn) if name == "before_each" or name == "setup" or name == "lazy_setup" then pcall(fn) end end
  end
  env.assert = anything
  env.spy, env.stub, env.mock = anything, anything, anything
  local chunk = assert(loadfile(path))
  setfenv(chunk, env)
  local ok, err = pcall(chunk)
  if not ok then io.stderr:write(path, ": ", tostring(err), "\n") end
end

-- Conformance: the raw bytes every test sends.
do
  local sent = {}
  local conn = setmetatable({
    try_send = function(_, data) sent[#sent + 1] = data end,
    send = function(_, data) sent[#sent + 1] = data end,
  }, { __index = function() return function() end end })
  package.loaded["spec.helpers"] = setmetatable({ connect = function() return conn end },
    { __index = function() return anything end })
  package.loaded["spec.support.server"] = { serve = function() return { port = 0 } end }
  run_spec("spec/integration/conformance_spec.lua")
  package.loaded["spec.helpers"], package.loaded["spec.support.server"] = nil, nil
  for _, raw in ipairs(sent) do
    save("http1", "conformance", raw)
    -- A chunked request's body, as fuzz_chunked takes it.
    local head, body = raw:match("^(.-\r\n\r\n)(.*)$")
    if head and head:lower():find("transfer%-encoding:%s*chunked\r\n") then
      save("chunked", "conformance", body)
    end
  end
end

-- JSON, JSONPath and templates: what the specs give the modules.
local function record(modname, fname, target, spec)
  local m = require(modname)
  local real = m[fname]
  m[fname] = function(text, ...)
    save(target, spec, text)
    return real(text, ...)
  end
  return function() m[fname] = real end
end

local undo = record("moonport.json", "decode", "json", "json")
run_spec("spec/unit/json_spec.lua")
undo()
undo = record("moonport.mock.jsonpath", "compile", "jsonpath", "jsonpath")
run_spec("spec/unit/mock_jsonpath_spec.lua")
undo()
undo = record("moonport.mock.template", "compile", "template", "template")
run_spec("spec/unit/mock_template_spec.lua")
undo()

print(("%d new seeds"):format(written))
