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
