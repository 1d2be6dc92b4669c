-- Per-request allocation: exact Lua and C byte counts per route, held to a
-- budget; the memory limit that stops one request and not the server; the
-- access log, the stats endpoint and X-Moonport-Alloc that report them.
local helpers = require("spec.helpers")
local support = require("spec.support.server")

-- The budget, in mean bytes per request (also in README.md). C bytes are
-- 0 for every route: the core takes request memory from its pools.
local BUDGET = {
  ["GET /hello"] = 0,
  ["GET /health"] = 256,
  ["GET /users/:id"] = 512,
  ["GET /search"] = 512,
  ["POST /add"] = 1024,
}

local REQUESTS = {
  ["GET /hello"] = helpers.build_request("GET", "/hello"),
  ["GET /health"] = helpers.build_request("GET", "/health"),
  ["GET /users/:id"] = helpers.build_request("GET", "/users/42"),
  ["GET /search"] = helpers.build_request("GET", "/search?q=a+b+c%C3%A9"),
  ["POST /add"] = helpers.build_request("POST", "/add",
    { ["Content-Type"] = "application/json" }, '{"a":1,"b":2}'),
}

-- The stats document, and its routes by "METHOD pattern".
local function stats(port)
  local doc = helpers.stats(port)
  local routes = {}
  for _, r in ipairs(doc.routes) do routes[r.method .. " " .. r.pattern] = r end
  return doc, routes
end

-- Sends n copies of a request on one connection, 100 pipelined at a time,
-- and checks every answer is a 200.
local function blast(port, request, n)
  local conn = helpers.connect(port)
  for _ = 1, n / 100 do
    conn:send(request:rep(100))
    for _ = 1, 100 do
      local resp = conn:read_response()
      assert.equal(200, resp.status)
    end
  end
  conn:close()
end

-- One route's mean Lua and C bytes per request over 10,000 requests on
-- one connection, after 1,000 to warm up, held to its budgets; with
-- max_mallocs, the worker's malloc calls meanwhile too (the stats
-- requests' own included). A buffer the worker keeps may still grow to a
-- new size once when a loaded machine interleaves the client and the
-- upstream differently (a malloc or two, not one per request): the
-- mallocs are counted again over a second run of 10,000, and the smaller
-- count is held to max_mallocs, so a malloc per request still fails by
-- thousands.
local function within_budget(port, target, route, lua_budget, c_budget, max_mallocs)
  local request = helpers.build_request("GET", target)
  blast(port, request, 1000)
  local before_doc, before = stats(port)
  blast(port, request, 10000)
  local after_doc, after = stats(port)
  local n = after[route].count - before[route].count
  assert.equal(10000, n)
  local lua = (after[route].lua_bytes.total - before[route].lua_bytes.total) / n
  local c = (after[route].c_bytes.total - before[route].c_bytes.total) / n
  assert(lua <= lua_budget, ("%s: %.1f Lua bytes per request, budget %d"):format(route, lua, lua_budget))
  assert(c <= c_budget, ("%s: %.1f C bytes per request, budget %d"):format(route, c, c_budget))
  if max_mallocs then
    local mallocs = after_doc.worker.mallocs - before_doc.worker.mallocs
    if mallocs > max_mallocs then
      blast(port, request, 10000)
      local again = stats(port)
      mallocs = math.min(mallocs, again.worker.mallocs - after_doc.worker.mallocs)
    end
    assert(mallocs <= max_mallocs, ("%d mallocs during 10,000 requests, twice"):format(mallocs))
  end
end

describe("the allocation budget", function()
  for _, app in ipairs({ "scripts/hello.lua", "scripts/api.lua" }) do
    describe(app, function()
      local server = support.serve(app, { "--stats" })

      it("keeps every route within its budget over 10,000 requests", function()
        local _, routes = stats(server.port)
        local names = {}
        for name in pairs(routes) do
          if BUDGET[name] then names[#names + 1] = name end
        end
        table.sort(names)
        assert.is_true(#names > 0)
        -- Warm up: the first requests fill pools and compile traces.
        for _, name in ipairs(names) do blast(server.port, REQUESTS[name], 1000) end
        stats(server.port)
        local before_doc, before = stats(server.port)
        for _, name in ipairs(names) do blast(server.port, REQUESTS[name], 10000) end
        local after_doc, after = stats(server.port)

        for _, name in ipairs(names) do
          local n = after[name].count - before[name].count
          assert.equal(10000, n, name)
          local lua = (after[name].lua_bytes.total - before[name].lua_bytes.total) / n
          local c = (after[name].c_bytes.total - before[name].c_bytes.total) / n
          assert(lua <= BUDGET[name], ("%s: %.1f Lua bytes per request, budget %d"):format(name, lua, BUDGET[name]))
          assert(c == 0, ("%s: %.1f C bytes per request, budget 0"):format(name, c))
        end
        -- No malloc in the core per request once it is warm: the only
        -- calls are the stats requests' own.
        local mallocs = after_doc.worker.mallocs - before_doc.worker.mallocs
        assert(mallocs <= 2, ("%d mallocs during %d requests"):format(mallocs, 10000 * #names))
      end)
    end)
  end
end)

-- One middleware in front of the hello handler (app:use): the chain is
-- composed when the app loads, so a request pays for the calls, not for
-- memory. The budget is what the issue allows a middleware: 64 bytes per
-- request above the hello route's 0.
local MIDDLEWARE_LUA_BUDGET = 64

describe("the allocation budget of a route behind one middleware", function()
  local server = support.serve("spec/fixtures/middleware_alloc.lua", { "--stats" })

  it("keeps GET /hello within its budget over 10,000 requests, with no malloc", function()
    local status, headers, body = helpers.request(server.port, "GET", "/hello")
    assert.equal(200, status)
    assert.equal("Hello, World!", body)
    assert.equal("1", headers["x-checked"])
    within_budget(server.port, "/hello", "GET /hello", MIDDLEWARE_LUA_BUDGET, 0, 2)
  end)
end)

-- The Redis handler of bench/redis/app.lua (lua-resty-redis from Debian's
-- lua-nginx-redis, unmodified, through moonport.ngx): one GET per request
-- on a pooled connection to a real redis-server. Mean bytes per request
-- over 10,000 requests after a warm-up; the C figure is 0 because the
-- connection's read buffer comes from a pool once the worker is warm.
local REDIS_LUA_BUDGET = 1024

describe("the allocation budget of a Redis GET through lua-resty-redis", function()
  local stdlib = require("posix.stdlib")
  local process = require("spec.support.process")
  local socket = require("socket")
  local redis_port

  support.program(function()
    redis_port = process.free_port()
    -- The app reads it when the server below starts.
    stdlib.setenv("REDIS_PORT", tostring(redis_port))
    return { "redis-server", "--port", tostring(redis_port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no" }
  end, function(p) process.wait_port(redis_port, 10, p) end)

  local server = support.serve("bench/redis/app.lua", { "--stats" })

  it("keeps GET /get within its budget over 10,000 requests, with no malloc", function()
    local c = assert(socket.connect("127.0.0.1", redis_port))
    c:settimeout(5)
    assert(c:send('SET user:1 "{\\"id\\":1,\\"name\\":\\"user-1\\"}"\r\n'))
    assert.equal("+OK", c:receive("*l"))
    c:close()
    local status, _, body = helpers.request(server.port, "GET", "/get")
    assert.equal(200, status)
    assert.equal('{"id":1,"name":"user-1"}', body)
    within_budget(server.port, "/get", "GET /get", REDIS_LUA_BUDGET, 0, 2)
  end)
end)

-- A mock stub, journal on: the request's facts, its journal entry (the
-- request as it came, stored raw) and, for a templated stub, the view of
-- the request the template reads and the output. Mean bytes per request
-- over 10,000 requests after a warm-up.
local MOCK_LUA_BUDGET = { literal = 640, templated = 1280 }

describe("the allocation budget of mock stubs", function()
  local server = support.serve("spec/fixtures/mock_alloc.lua", { "--stats" })

  it("keeps a literal stub and a templated one within their budgets, with no malloc", function()
    local status, _, body = helpers.request(server.port, "GET", "/items/1")
    assert.equal(200, status)
    assert.equal("item 1", body)
    status, _, body = helpers.request(server.port, "GET", "/users/42")
    assert.equal(200, status)
    assert.equal('{"id": "42", "m": "GET"}', body)
    within_budget(server.port, "/items/1", "GET /*path", MOCK_LUA_BUDGET.literal, 0, 2)
    within_budget(server.port, "/users/42", "GET /*path", MOCK_LUA_BUDGET.templated, 0, 2)
  end)
end)

-- A route behind openapi.validate (requests checked against the Petstore
-- document): the middleware itself allocates nothing (req.method and
-- req.path are strings Lua already holds); what a valid request costs is
-- moonport.openapi.doc's routing, which makes the table of path
-- parameters (none for a path without templates, 112 bytes with petId),
-- and the request check's reading of a query parameter (88 bytes for
-- ?limit=10). Measured in a Release build: at most 72, 152 and 112 bytes
-- per request; a sanitizer build, whose Lua state runs on the C
-- library's allocator, measures up to 190 for /pets/12.
local OPENAPI_LUA_BUDGET = { ["/pets"] = 96, ["/pets?limit=10"] = 192, ["/pets/12"] = 224 }

describe("the allocation budget of a route with OpenAPI request validation", function()
  local server = support.serve("spec/fixtures/openapi_alloc.lua", { "--stats" })

  it("keeps GET /pets and GET /pets/:petId within their budgets, with no malloc", function()
    local status, _, body = helpers.request(server.port, "GET", "/pets?limit=10")
    assert.equal(200, status)
    assert.equal('[{"id":1,"name":"Rex"}]', body)
    assert.equal(422, (helpers.request(server.port, "GET", "/pets?limit=x")))
    within_budget(server.port, "/pets", "GET /pets", OPENAPI_LUA_BUDGET["/pets"], 0, 2)
    within_budget(server.port, "/pets?limit=10", "GET /pets", OPENAPI_LUA_BUDGET["/pets?limit=10"], 0, 2)
    within_budget(server.port, "/pets/12", "GET /pets/:petId", OPENAPI_LUA_BUDGET["/pets/12"], 0, 2)
  end)
end)

describe("the request memory limit", function()
  local server = support.serve("spec/fixtures/memory.lua", { "--stats" })

  for _, route in ipairs({ "/big-table", "/concat", "/catch-and-retry" }) do
    it("stops " .. route .. " with a 500 and serves the next request on the same worker and connection", function()
      local doc = stats(server.port)
      local heap_before = doc.worker.lua_heap_bytes
      local conn = helpers.connect(server.port)
      local resp = conn:request("GET", route, nil, nil, { timeout = 30 })
      assert.equal(500, resp.status)
      helpers.json_error(resp)
      resp = conn:request("GET", "/small")
      assert.equal(200, resp.status)
      assert.equal('{"ok":true}', resp.body)
      conn:close()

      local logged = helpers.eventually(function()
        local err = server:stderr()
        local at = err:find("GET " .. route .. ": handler failed: request memory limit exceeded", 1, true)
        return at and err:sub(at):match("^[^\n]*")
      end)
      assert.truthy(logged, "no log line naming the route: " .. server:stderr())
      -- The allocation that failed, and a total past the limit.
      local size, held = logged:match("an allocation of (%d+) bytes would have made it hold (%d+) "
        .. "bytes, past %-%-request%-memory%-limit %(8388608%)")
      assert.truthy(size, logged)
      assert(tonumber(size) > 0 and tonumber(held) > 8388608, logged)
      local after = stats(server.port)
      assert.equal(doc.pid or after.worker.pid, after.worker.pid)
      -- The garbage went back: the heap is near where it was, not 8 MiB up.
      assert(after.worker.lua_heap_bytes < heap_before + 1024 * 1024,
        ("heap grew from %d to %d"):format(heap_before, after.worker.lua_heap_bytes))
    end)
  end

  it("counts each stopped request", function()
    local doc = stats(server.port)
    assert.equal(3, doc.worker.memory_limit_hits)
  end)
end)

-- Memory the core mallocs on a request's behalf is charged to it: a
-- response, response headers or a body that outgrow the blocks and
-- buffers the core keeps. The figures are checked in X-Moonport-Alloc,
-- the access log and the stats endpoint; an ordinary request on a warm
-- server costs nothing.
describe("C bytes", function()
  local APP = "spec/fixtures/memory.lua"
  local log_path = os.tmpname()
  local server = support.serve(APP, { "--stats", "--debug", "--access-log", log_path })
  teardown(function() os.remove(log_path) end)

  -- The C bytes X-Moonport-Alloc reports: what was charged before the
  -- response head was written.
  local function header_c_bytes(resp)
    local c = (resp.headers["x-moonport-alloc"] or ""):match("^%d+ (%d+)$")
    assert.truthy(c, "X-Moonport-Alloc missing or malformed")
    return tonumber(c)
  end

  -- The C bytes of the access-log lines for `request_line`, in order,
  -- once there are `n` of them.
  local function logged_c_bytes(request_line, n)
    local pat = '"' .. request_line:gsub("%p", "%%%0") .. '" %d+ %d+ [%d.]+ %d+ (%d+) %d+\n'
    local found
    helpers.eventually(function()
      local f = io.open(log_path)
      local text = f and f:read("*a") or ""
      if f then f:close() end
      found = {}
      for c in text:gmatch(pat) do found[#found + 1] = tonumber(c) end
      return #found >= n
    end)
    assert.equal(n, #found, "access-log lines for " .. request_line)
    return found
  end

  it("charges a response that outgrows the pooled output block: at least its size, at most twice", function()
    local N = 300000
    local conn = helpers.connect(server.port)
    support.defer(function() conn:close() end)
    for _ = 1, 3 do assert.equal(N, #conn:request("GET", "/send/" .. N).body) end
    for i, c in ipairs(logged_c_bytes("GET /send/" .. N .. " HTTP/1.1", 3)) do
      assert(c >= N and c <= 2 * N, ("request %d: %d C bytes for a %d-byte response"):format(i, c, N))
    end
    local _, routes = stats(server.port)
    local route = routes["GET /send/:n"]
    assert.equal(3, route.count)
    assert(route.c_bytes.total >= 3 * N and route.c_bytes.total <= 6 * N,
      ("%d C bytes on the stats endpoint for 3 responses of %d bytes"):format(route.c_bytes.total, N))
  end)

  it("charges a response header that outgrows the kept buffer, every time", function()
    local conn = helpers.connect(server.port)
    support.defer(function() conn:close() end)
    local seen = {}
    for i = 1, 3 do
      local resp = conn:request("GET", "/header/20000")
      assert.equal(20000, #resp.headers["x-big"])
      seen[i] = header_c_bytes(resp)
      assert(seen[i] >= 20000 and seen[i] <= 65536,
        ("request %d: %d C bytes for a 20000-byte header"):format(i, seen[i]))
    end
    -- The whole request's figure has the response head's block too.
    for i, c in ipairs(logged_c_bytes("GET /header/20000 HTTP/1.1", 3)) do
      assert(c >= seen[i] + 20000, ("request %d: %d C bytes logged, %d before its head")
        :format(i, c, seen[i]))
    end
  end)

  it("charges the body buffer the first large body needs", function()
    local fresh = support.start(APP, { "--debug" })
    local conn = helpers.connect(fresh.port)
    support.defer(function() conn:close() end)
    local resp = conn:request("POST", "/length", nil, ("b"):rep(200000))
    assert.equal("200000", resp.body)
    -- The buffer holds what the handler has not read yet: its first 4 KiB
    -- at least, at most 64 KiB and a read's worth, doubled. (How far it
    -- grows, and so what a later body adds to what the request before it
    -- left, depends on how the reads and the handler interleave.)
    local c = header_c_bytes(resp)
    assert(c >= 4096 and c <= 256 * 1024, ("%d C bytes for the first 200000-byte body"):format(c))
  end)

  it("charges nothing to an ordinary request once the pools are warm", function()
    local conn = helpers.connect(server.port)
    support.defer(function() conn:close() end)
    -- The first requests may take back buffers a big request gave up.
    for _ = 1, 3 do assert.equal(200, conn:request("GET", "/small").status) end
    local _, before = stats(server.port)
    for _ = 1, 10 do
      local resp = conn:request("GET", "/small")
      assert.equal(200, resp.status)
      assert.equal(0, header_c_bytes(resp))
    end
    local _, after = stats(server.port)
    assert.equal(10, after["GET /small"].count - before["GET /small"].count)
    assert.equal(0, after["GET /small"].c_bytes.total - before["GET /small"].c_bytes.total)
    local logged = logged_c_bytes("GET /small HTTP/1.1", 13)
    for i = 4, 13 do assert.equal(0, logged[i], "access-log line " .. i) end
  end)
end)

describe("reporting", function()
  local log_path = os.tmpname()
  local server = support.serve("scripts/api.lua", { "--stats", "--debug", "--access-log", log_path })
  teardown(function() os.remove(log_path) end)

  it("writes one Common Log Format line per request, with seconds, bytes and worker", function()
    helpers.request(server.port, "GET", "/users/7")
    helpers.request(server.port, "GET", "/nowhere")
    local lines = helpers.eventually(function()
      local f = io.open(log_path)
      local text = f:read("*a")
      f:close()
      return text:find("/nowhere", 1, true) and text
    end)
    assert.truthy(lines, "access log stayed empty")
    local pat = '^127%.0%.0%.1 %- %- %[%d%d/%a%a%a/%d%d%d%d:%d%d:%d%d:%d%d %+0000%] "GET /users/7 HTTP/1%.1" 200 (%d+) ([%d%.]+) (%d+) (%d+) 1$'
    local found
    for line in lines:gmatch("[^\n]+") do
      local bytes, secs, lua, c = line:match(pat)
      if bytes then
        found = true
        assert.equal(24, tonumber(bytes))
        assert.is_true(tonumber(secs) >= 0 and tonumber(secs) < 5)
        assert.is_true(tonumber(lua) > 0)
        assert.truthy(tonumber(c))
      end
    end
    assert.truthy(found, "no CLF line for GET /users/7 in:\n" .. lines)
    assert.truthy(lines:find('"GET /nowhere HTTP/1.1" 404 ', 1, true))
  end)

  it("puts X-Moonport-Alloc on responses under --debug", function()
    local status, headers = helpers.request(server.port, "GET", "/users/7")
    assert.equal(200, status)
    local lua, c = (headers["x-moonport-alloc"] or ""):match("^(%d+) (%d+)$")
    assert.truthy(lua, "X-Moonport-Alloc missing or malformed")
  end)

  it("serves per-route figures on the stats endpoint", function()
    for _ = 1, 5 do helpers.request(server.port, "GET", "/health") end
    local doc, routes = stats(server.port)
    assert.truthy(doc.worker.pid)
    assert.truthy(doc.worker.lua_heap_bytes > 0)
    assert.truthy(doc.worker.connections.open >= 1)
    local health = routes["GET /health"]
    assert.is_true(health.count >= 5)
    assert.truthy(health.lua_bytes.mean and health.lua_bytes.max)
    assert.truthy(health.c_bytes.mean)
    assert.is_true(health.handler_ms.p50 > 0 and health.handler_ms.p99 >= health.handler_ms.p50)
  end)

  it("has no stats endpoint without --stats", function()
    local other = support.start("scripts/api.lua")
    assert.equal(404, (helpers.request(other.port, "GET", "/__moonport/stats")))
  end)
end)

-- One row by primary key through moonport.pg (spec/fixtures/pg_app.lua's
-- /world/:id, TechEmpower's single query) against a real PostgreSQL.
-- Lua: the row's table and strings, the query's parameter; C: the
-- result's memory as libpq reports it (PQresultMemorySize: its first
-- block of about 2 KiB and the rest), charged to the request.
local PG_LUA_BUDGET, PG_C_BUDGET = 1024, 4096

describe("the allocation budget of a PostgreSQL query by primary key", function()
  local pgsupport = require("spec.support.pg")
  local cluster = pgsupport.cluster({ fixtures = { pgsupport.TFB, pgsupport.SCHEMA } })
  local app
  setup(function()
    app = require("spec.support.process").start("spec/fixtures/pg_app.lua",
      { "--stats", "--pg", cluster.conninfo })
  end)
  teardown(function() if app then app:stop() end end)

  it("keeps GET /world/:id within its budget over 10,000 requests", function()
    within_budget(app.port, "/world/42", "GET /world/:id", PG_LUA_BUDGET, PG_C_BUDGET)
  end)
end)

-- One GET through moonport.http on a pooled connection
-- (spec/fixtures/http_client.lua's /relay, to a second moonport). Lua: the
-- URL, the request head, the exchange's records, the response and its
-- header table (parsed URLs, read buffers and parsers are kept from
-- request to request); C: nothing per request (socket records and read
-- buffers come from the worker's pools).
local HTTP_LUA_BUDGET, HTTP_C_BUDGET = 2560, 256

describe("the allocation budget of an outbound HTTP GET", function()
  local process = require("spec.support.process")
  local upstream, app
  setup(function()
    upstream = process.start("spec/fixtures/http_upstream.lua")
    app = process.start("spec/fixtures/http_client.lua", { "--stats" },
      { env = { UPSTREAM = "http://127.0.0.1:" .. upstream.port } })
  end)
  teardown(function()
    if app then app:stop() end
    if upstream then upstream:stop() end
  end)

  it("keeps GET /relay within its budget over 10,000 requests", function()
    within_budget(app.port, "/relay", "GET /relay", HTTP_LUA_BUDGET, HTTP_C_BUDGET)
  end)
end)
