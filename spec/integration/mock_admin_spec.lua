-- The mock's admin API beyond mappings and the journal, as WireMock 3 has
-- it: global delay settings, setting a scenario's state, importing
-- mappings, persistent mappings and /__admin/mappings/save (files a
-- restarted mock serves), near misses, removing journal entries and
-- listing the body files. Each mock runs with two workers, so what one
-- worker is told the other one serves.
local helpers = require("spec.helpers")
local process = require("spec.support.process")
local cjson = require("cjson")

local function call(port, method, path, value)
  local body = value
  if type(value) == "table" then body = cjson.encode(value) end
  local status, headers, text = helpers.request(port, method, path,
    body and { ["Content-Type"] = "application/json" } or nil, body)
  return status, text, headers
end

local function files(dir)
  local list = {}
  local p = io.popen("ls -A " .. dir .. " 2>/dev/null")
  for name in p:lines() do list[#list + 1] = name end
  p:close()
  table.sort(list)
  return list
end

-- Seconds a GET of path takes, and its status and body.
local function timed(port, path)
  local t0 = helpers.now()
  local status, body = call(port, "GET", path)
  return helpers.now() - t0, status, body
end

describe("mock admin API", function()
  local dirs, mocks = {}, {}
  local function new_mock(dir)
    if dir == nil then
      dir = helpers.scratch_dir()
      dirs[#dirs + 1] = dir
    end
    local m = process.start(dir, { "--workers", "2" }, { mock = true })
    mocks[#mocks + 1] = m
    return m, dir
  end
  after_each(function()
    for _, m in ipairs(mocks) do m:stop() end
    for _, d in ipairs(dirs) do helpers.remove_dir(d) end
    mocks, dirs = {}, {}
  end)

  describe("settings", function()
    it("a global fixedDelay and delayDistribution delay every stub as WireMock's do", function()
      local m = new_mock()
      local port = m.port
      local status, body = call(port, "GET", "/__admin/settings")
      assert.equal(200, status)
      assert.same({ settings = { proxyPassThrough = true } }, helpers.json(body))
      assert.equal(201, (call(port, "POST", "/__admin/mappings",
        { request = { url = "/plain" }, response = { body = "plain" } })))
      assert.equal(201, (call(port, "POST", "/__admin/mappings",
        { request = { url = "/own" }, response = { body = "own", fixedDelayMilliseconds = 0 } })))
      local took = timed(port, "/plain")
      assert.is_true(took < 0.3, took)

      status, body = call(port, "POST", "/__admin/settings", { fixedDelay = 400 })
      assert.equal(200, status, body)
      assert.same({ settings = { fixedDelay = 400, proxyPassThrough = false } },
        helpers.json(select(2, call(port, "GET", "/__admin/settings"))))
      -- Every worker delays: new connections land on either.
      for _ = 1, 4 do
        local t, s, b = timed(port, "/plain")
        assert.equal(200, s)
        assert.equal("plain", b)
        assert.is_true(t >= 0.39, t)
      end
      -- A stub's own fixed delay stands in for the global one.
      took = timed(port, "/own")
      assert.is_true(took < 0.3, took)
      -- An unmatched request is not delayed.
      local t, s = timed(port, "/none")
      assert.equal(404, s)
      assert.is_true(t < 0.3, t)

      -- A new POST replaces the settings whole: the distribution alone
      -- now, which applies on top of a stub's own fixed delay.
      assert.equal(200, (call(port, "PUT", "/__admin/settings",
        { delayDistribution = { type = "uniform", lower = 300, upper = 310 } })))
      took = timed(port, "/own")
      assert.is_true(took >= 0.29, took)

      -- Refused settings change nothing.
      status, body = call(port, "POST", "/__admin/settings", { fixedDelay = -1 })
      assert.equal(422, status)
      assert.matches("fixedDelay", body)
      status = call(port, "POST", "/__admin/settings", { delayDistribution = { type = "gaussian" } })
      assert.equal(422, status)
      assert.equal(422, (call(port, "POST", "/__admin/settings", "not json")))
      assert.equal(300, helpers.json(select(2, call(port, "GET", "/__admin/settings")))
        .settings.delayDistribution.lower)

      assert.equal(200, (call(port, "POST", "/__admin/settings", {})))
      took = timed(port, "/plain")
      assert.is_true(took < 0.3, took)
    end)
  end)

  describe("scenarios", function()
    it("PUT /__admin/scenarios/{name}/state moves a scenario; 404 unknown, 422 a state it has not", function()
      local m = new_mock()
      local port = m.port
      assert.equal(201, (call(port, "POST", "/__admin/mappings", { scenarioName = "order flow",
        requiredScenarioState = "Started", newScenarioState = "paid",
        request = { url = "/order" }, response = { body = "new" } })))
      assert.equal(201, (call(port, "POST", "/__admin/mappings", { scenarioName = "order flow",
        requiredScenarioState = "paid", request = { url = "/order" }, response = { body = "paid" } })))

      local status, body = call(port, "PUT", "/__admin/scenarios/order%20flow/state", { state = "paid" })
      assert.equal(200, status, body)
      assert.same({}, helpers.json(body))
      -- Both workers see it.
      for _ = 1, 4 do assert.equal("paid", select(2, call(port, "GET", "/order"))) end
      local list = helpers.json(select(2, call(port, "GET", "/__admin/scenarios"))).scenarios
      assert.equal("paid", list[1].state)

      status, body = call(port, "PUT", "/__admin/scenarios/nope/state", { state = "paid" })
      assert.equal(404, status)
      assert.same({ errors = { { code = 404, title = "Scenario nope does not exist" } } }, helpers.json(body))
      status, body = call(port, "PUT", "/__admin/scenarios/order%20flow/state", { state = "shipped" })
      assert.equal(422, status)
      assert.same({ errors = { { code = 11, title = "Scenario order flow does not support state shipped" } } },
        helpers.json(body))
      assert.equal("paid", select(2, call(port, "GET", "/order")))

      -- No body: back to Started.
      assert.equal(200, (call(port, "PUT", "/__admin/scenarios/order%20flow/state")))
      assert.equal("new", select(2, call(port, "GET", "/order")))
    end)
  end)

  describe("import", function()
    it("POST /__admin/mappings/import adds a list, with duplicatePolicy and deleteAllNotInImport", function()
      local m = new_mock()
      local port = m.port
      local A = "11111111-1111-4111-8111-111111111111"
      assert.equal(201, (call(port, "POST", "/__admin/mappings",
        { id = A, request = { url = "/a" }, response = { body = "a-old" } })))
      assert.equal(201, (call(port, "POST", "/__admin/mappings",
        { request = { url = "/b" }, response = { body = "b" } })))

      local status, body = call(port, "POST", "/__admin/mappings/import", {
        mappings = { { id = A, request = { url = "/a" }, response = { body = "a-new" } },
                     { request = { url = "/c" }, response = { body = "c" } } },
        importOptions = { duplicatePolicy = "IGNORE", deleteAllNotInImport = false } })
      assert.equal(200, status, body)
      assert.equal("a-old", select(2, call(port, "GET", "/a")))
      assert.equal("c", select(2, call(port, "GET", "/c")))

      -- OVERWRITE is the default.
      assert.equal(200, (call(port, "POST", "/__admin/mappings/import",
        { mappings = { { id = A, request = { url = "/a" }, response = { body = "a-new" } } } })))
      assert.equal("a-new", select(2, call(port, "GET", "/a")))

      -- The first of the list wins among equals, as in WireMock.
      assert.equal(200, (call(port, "POST", "/__admin/mappings/import", { mappings = {
        { request = { url = "/o" }, response = { body = "first" } },
        { request = { url = "/o" }, response = { body = "second" } } } })))
      assert.equal("first", select(2, call(port, "GET", "/o")))

      -- One mapping that cannot be used: nothing is imported.
      status, body = call(port, "POST", "/__admin/mappings/import", { mappings = {
        { request = { url = "/y" }, response = { body = "y" } },
        { request = { urlPattern = "((" }, response = { body = "z" } } } })
      assert.equal(422, status)
      assert.matches("mappings%[1%]", body)
      assert.equal(404, (call(port, "GET", "/y")))
      assert.equal(422, (call(port, "POST", "/__admin/mappings/import",
        { mappings = {}, importOptions = { duplicatePolicy = "SOMETIMES" } })))

      assert.equal(200, (call(port, "POST", "/__admin/mappings/import", {
        mappings = { { id = A, request = { url = "/a" }, response = { body = "a-3" } } },
        importOptions = { duplicatePolicy = "IGNORE", deleteAllNotInImport = true } })))
      local list = helpers.json(select(2, call(port, "GET", "/__admin/mappings"))).mappings
      assert.equal(1, #list)
      assert.equal(A, list[1].id)
      assert.equal("a-new", select(2, call(port, "GET", "/a")))
      assert.equal(404, (call(port, "GET", "/b")))
    end)
  end)

  describe("persistence", function()
    it("persistent mappings and mappings/save are written as WireMock names them, and served after a restart", function()
      local m, dir = new_mock()
      local port = m.port
      local P = "aaaaaaaa-0000-4000-8000-000000000001"
      local status, body = call(port, "POST", "/__admin/mappings", { id = P, name = "Get User 1",
        persistent = true, request = { method = "GET", url = "/users/1" }, response = { body = "ada" } })
      assert.equal(201, status, body)
      assert.same({ "get-user-1-" .. P .. ".json" }, files(dir .. "/mappings"))
      local saved = helpers.json(io.open(dir .. "/mappings/get-user-1-" .. P .. ".json"):read("*a"))
      assert.equal(P, saved.id)
      assert.is_true(saved.persistent)

      local Q = "aaaaaaaa-0000-4000-8000-000000000002"
      assert.equal(201, (call(port, "POST", "/__admin/mappings",
        { id = Q, request = { method = "POST", urlPath = "/api/Orders" }, response = { status = 201 } })))
      assert.equal(2, #helpers.json(select(2, call(port, "GET", "/__admin/mappings"))).mappings)
      assert.same({ "get-user-1-" .. P .. ".json" }, files(dir .. "/mappings"))
      status = call(port, "POST", "/__admin/mappings/save")
      assert.equal(200, status)
      assert.same({ "get-user-1-" .. P .. ".json", "post-apiorders-" .. Q .. ".json" }, files(dir .. "/mappings"))
      assert.is_true(helpers.json(select(2, call(port, "GET", "/__admin/mappings/" .. Q))).persistent)

      -- An id goes into the file's name: one that could lead elsewhere is
      -- refused, and mappings/save writes nothing while one is there.
      status, body = call(port, "POST", "/__admin/mappings", { id = "../../evil", persistent = true,
        request = { url = "/evil" }, response = { body = "no" } })
      assert.equal(422, status)
      assert.matches("persistent mapping's id", body)
      assert.equal(201, (call(port, "POST", "/__admin/mappings",
        { id = "../x", request = { url = "/x" }, response = { body = "x" } })))
      status, body = call(port, "POST", "/__admin/mappings/save")
      assert.equal(422, status)
      assert.matches("nothing was written", body)
      assert.same({ "mappings" }, files(dir))
      assert.equal(200, (call(port, "DELETE", "/__admin/mappings/..%2Fx")))

      m:stop()
      mocks = {}
      m = new_mock(dir)
      port = m.port
      assert.equal("ada", select(2, call(port, "GET", "/users/1")))
      assert.equal(201, (call(port, "POST", "/api/Orders")))

      -- Removing a persistent mapping removes its file.
      assert.equal(200, (call(port, "DELETE", "/__admin/mappings/" .. P)))
      assert.same({ "post-apiorders-" .. Q .. ".json" }, files(dir .. "/mappings"))
      assert.equal(404, (call(port, "GET", "/users/1")))
      assert.equal(200, (call(port, "DELETE", "/__admin/mappings")))
      assert.same({}, files(dir .. "/mappings"))
    end)
  end)

  describe("near misses", function()
    local U1 = "bbbbbbbb-0000-4000-8000-000000000001"
    local ORD = "bbbbbbbb-0000-4000-8000-000000000002"
    local function stubs(port)
      assert.equal(201, (call(port, "POST", "/__admin/mappings", { id = U1,
        request = { method = "GET", url = "/users/1", headers = { Accept = { equalTo = "application/json" } } },
        response = { status = 200 } })))
      assert.equal(201, (call(port, "POST", "/__admin/mappings", { id = ORD,
        request = { method = "POST", urlPath = "/orders" }, response = { status = 201 } })))
    end

    it("GET /__admin/requests/unmatched/near-misses ranks the stubs for each unmatched request", function()
      local m = new_mock()
      local port = m.port
      stubs(port)
      assert.same({ nearMisses = {} },
        helpers.json(select(2, call(port, "GET", "/__admin/requests/unmatched/near-misses"))))
      assert.equal(404, (helpers.request(port, "GET", "/users/2", { Accept = "text/html" })))
      assert.equal(200, (helpers.request(port, "GET", "/users/1", { Accept = "application/json" })))
      local status, body = call(port, "GET", "/__admin/requests/unmatched/near-misses")
      assert.equal(200, status)
      local misses = helpers.json(body).nearMisses
      assert.equal(2, #misses)
      assert.equal(U1, misses[1].stubMapping.id)
      assert.equal(ORD, misses[2].stubMapping.id)
      assert.equal("/users/2", misses[1].request.url)
      assert.equal("GET", misses[1].request.method)
      local d1, d2 = misses[1].matchResult.distance, misses[2].matchResult.distance
      assert.is_true(0 < d1 and d1 < d2 and d2 < 1, d1 .. " " .. d2)
      -- Where only the URL and the method differ, WireMock's figure.
      assert.near(0.23717948717948717, d2, 1e-12)
    end)

    it("POST /__admin/near-misses/request ranks the stubs for a request given", function()
      local m = new_mock()
      local port = m.port
      stubs(port)
      local status, body = call(port, "POST", "/__admin/near-misses/request",
        { url = "/orders", method = "GET" })
      assert.equal(200, status, body)
      local misses = helpers.json(body).nearMisses
      assert.equal(2, #misses)
      assert.equal(ORD, misses[1].stubMapping.id)
      assert.same({ url = "/orders", method = "GET" }, misses[1].request)
      assert.near(3 / 39, misses[1].matchResult.distance, 1e-12)
      assert.is_true(misses[2].matchResult.distance > misses[1].matchResult.distance)
      -- A request a stub matches is at distance 0 from it.
      body = select(2, call(port, "POST", "/__admin/near-misses/request",
        { url = "/orders", method = "POST" }))
      misses = helpers.json(body).nearMisses
      assert.equal(ORD, misses[1].stubMapping.id)
      assert.equal(0, misses[1].matchResult.distance)
      assert.equal(422, (call(port, "POST", "/__admin/near-misses/request", "[")))
    end)

    it("POST /__admin/near-misses/request-pattern ranks the journal's requests, the nearest three", function()
      local m = new_mock()
      local port = m.port
      for _, path in ipairs({ "/users/22", "/users/3", "/orders/9", "/users/30" }) do
        assert.equal(404, (call(port, "GET", path)))
      end
      local pattern = { method = "GET", url = "/users/2" }
      local status, body = call(port, "POST", "/__admin/near-misses/request-pattern", pattern)
      assert.equal(200, status, body)
      local misses = helpers.json(body).nearMisses
      assert.equal(3, #misses)
      local urls = {}
      for i, n in ipairs(misses) do
        urls[i] = n.request.url
        assert.same(pattern, n.requestPattern)
        assert.is_nil(n.stubMapping)
        assert.is_true(n.matchResult.distance > 0 and n.matchResult.distance < 1)
        if i > 1 then assert.is_true(n.matchResult.distance >= misses[i - 1].matchResult.distance) end
      end
      assert.same({ "/users/22", "/users/3", "/users/30" }, urls)
      assert.equal(422, (call(port, "POST", "/__admin/near-misses/request-pattern", { urlPattern = "((" })))
    end)
  end)

  describe("journal and files", function()
    it("DELETE /__admin/requests/{id} and POST /__admin/requests/remove take entries out", function()
      local m = new_mock()
      local port = m.port
      for _, path in ipairs({ "/keep", "/drop/1", "/drop/2", "/last" }) do call(port, "GET", path) end
      local list = helpers.json(select(2, call(port, "GET", "/__admin/requests"))).requests
      assert.equal(4, #list)
      assert.equal("/last", list[1].request.url)
      local status, body = call(port, "DELETE", "/__admin/requests/" .. list[1].id)
      assert.equal(200, status)
      assert.same({}, helpers.json(body))
      -- An id the journal has not: nothing to do; not an id at all: 400.
      assert.equal(200, (call(port, "DELETE", "/__admin/requests/" .. list[1].id)))
      status, body = call(port, "DELETE", "/__admin/requests/nope")
      assert.equal(400, status)
      assert.same({ errors = { { code = 10, title = "nope is not a valid UUID" } } }, helpers.json(body))

      status, body = call(port, "POST", "/__admin/requests/remove", { urlPattern = "/drop/.*" })
      assert.equal(200, status, body)
      local removed = helpers.json(body).serveEvents
      assert.equal(2, #removed)
      assert.equal("/drop/2", removed[1].request.url)
      assert.is_not_nil(removed[1].id)
      list = helpers.json(select(2, call(port, "GET", "/__admin/requests"))).requests
      assert.equal(1, #list)
      assert.equal("/keep", list[1].request.url)
      assert.equal(422, (call(port, "POST", "/__admin/requests/remove", "{")))
    end)

    it("GET /__admin/files lists the names under __files", function()
      local dir = helpers.scratch_dir()
      dirs[#dirs + 1] = dir
      local m = new_mock(dir)
      assert.same({}, helpers.json(select(2, call(m.port, "GET", "/__admin/files"))))
      os.execute(("mkdir -p %s/__files/sub && echo hi > %s/__files/a.txt && echo x > %s/__files/sub/b.json")
        :format(dir, dir, dir))
      assert.same({ "a.txt", "sub/b.json" }, helpers.json(select(2, call(m.port, "GET", "/__admin/files"))))
    end)
  end)
end)
