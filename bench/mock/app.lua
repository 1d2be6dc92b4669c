-- bench/mock/run's app: times stub matching inside the server, where
-- moonport.mock's matcher runs.
--
-- GET /match?stubs=N&iters=M: builds N stubs (as a WireMock user writes
-- them: mostly literal paths, some with query or header matchers, a few
-- regular-expression and template paths), then finds the stub for a
-- request M times; answers "ns_per_match=X found=ID".
local moonport = require("moonport")
local match = require("moonport.mock.match")
local model = require("moonport.mock.model")

local app = moonport.app()

local function build(n)
  local stubs = {}
  for i = 1, n do
    local req
    if i % 50 == 0 then
      req = { method = "GET", url_path_pattern = "/re/" .. i .. "/[0-9]+" }
    elseif i % 25 == 0 then
      req = { method = "GET", url_path_template = "/tpl/" .. i .. "/{id}" }
    elseif i % 10 == 0 then
      req = { method = "GET", url_path = "/api/item/" .. i, headers = { Accept = { contains = "json" } } }
    else
      req = { method = i % 3 == 0 and "POST" or "GET", url_path = "/api/item/" .. i,
              query_parameters = i % 7 == 0 and { v = { equal_to = "1" } } or nil }
    end
    local stub = assert(model.normalize({ request = req, response = { body = "x" } }))
    stub.compiled = assert(match.compile(stub.request))
    stub.seq, stub.id = i, i
    stubs[i] = stub
  end
  table.sort(stubs, match.before)
  return match.index(stubs)
end

local cache = {}

-- The timing loop, a chunk of its own for each count: one loop for every
-- index would have the JIT's traces serve all of them, specialized for
-- whichever came first, where a server has one index.
local LOOP = [[
local find, idx, facts = ...
return function(iters)
  local found
  for _ = 1, iters do found = find(idx, facts) end
  return found
end
]]
local loops = {}

app:get("/match", function(req, res)
  local n = tonumber(req:query("stubs")) or 10
  local iters = tonumber(req:query("iters")) or 100000
  cache[n] = cache[n] or build(n)
  local idx = cache[n]
  -- A request for a literal stub in the middle of the list.
  local target = math.floor(n / 2) + 1
  while target % 3 == 0 or target % 10 == 0 or target % 25 == 0 or target % 7 == 0 do target = target + 1 end
  local path = "/api/item/" .. target
  local facts = setmetatable({ method = "GET", path = path, url = path, query = {} }, { __index = {
    header = function() return nil end, cookies = function() return {} end,
    body = function() return "" end } })
  loops[n] = loops[n] or assert(load(LOOP, "=match loop " .. n))(match.find, idx, facts)
  local t0 = os.clock()
  local found = loops[n](iters)
  local ns = (os.clock() - t0) / iters * 1e9
  res:send(("ns_per_match=%.1f found=%s\n"):format(ns, tostring(found and found.id)))
end)

return app
