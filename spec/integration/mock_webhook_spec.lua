-- Webhooks of mock stubs (WireMock's serveEventListeners and
-- postServeActions) sent to a real second moonport, a mock whose journal
-- records what it received: the request templated from the one the stub
-- answered, sent after the answer and after its delay; a webhook that
-- fails leaves the answer alone and is logged and listed; a webhook that
-- cannot be sent as written is refused with its mapping.
local helpers = require("spec.helpers")
local process = require("spec.support.process")
local cjson = require("cjson")

local function write(path, value)
  local f = assert(io.open(path, "wb"))
  f:write(type(value) == "string" and value or cjson.encode(value))
  f:close()
end

-- The requests the target received under path, oldest first, once there
-- are n of them (nil after 5 s).
local function received(port, path, n)
  return helpers.eventually(function()
    local status, _, body = helpers.request(port, "POST", "/__admin/requests/find",
      { ["Content-Type"] = "application/json" }, cjson.encode({ urlPath = path }))
    assert.equal(200, status, body)
    local list = cjson.decode(body).requests
    return #list >= n and list or nil
  end)
end

-- The source's serve event for url, once its webhooks left n sub-events.
local function serve_event(port, url, n)
  return helpers.eventually(function()
    local _, _, body = helpers.request(port, "GET", "/__admin/requests")
    for _, e in ipairs(cjson.decode(body).requests) do
      if e.request.url == url and #(e.subEvents or {}) >= n then return e end
    end
  end)
end

describe("mock webhooks", function()
  local target, source, tdir, sdir
  setup(function()
    tdir, sdir = helpers.scratch_dir(), helpers.scratch_dir()
    assert(os.execute("mkdir -p " .. tdir .. "/mappings " .. sdir .. "/mappings"))
    write(tdir .. "/mappings/sink.json", {
      request = { method = "ANY", urlPathPattern = "/sink/.*" },
      response = { status = 202, body = "received" },
    })
    target = process.start(tdir, nil, { mock = true })
    local base = "http://127.0.0.1:" .. target.port
    write(sdir .. "/mappings/order.json", {
      request = { method = "POST", urlPath = "/orders" },
      response = { status = 201, jsonBody = { created = true } },
      serveEventListeners = { { name = "webhook", parameters = {
        method = "PUT",
        url = base .. "/sink/orders/{{jsonPath originalRequest.body '$.id'}}?via={{originalRequest.method}}",
        headers = { ["Content-Type"] = "application/json", ["X-Origin"] = "{{originalRequest.headers.X-Shop}}" },
        body = '{"order": "{{jsonPath originalRequest.body \'$.id\'}}", "path": "{{originalRequest.path}}"}',
      } } },
    })
    write(sdir .. "/mappings/slow.json", {
      request = { urlPath = "/slow" }, response = { body = "now" },
      postServeActions = { webhook = { method = "POST", url = base .. "/sink/slow", body = "later",
                                       delay = { type = "fixed", milliseconds = 400 } } },
    })
    write(sdir .. "/mappings/broken.json", {
      request = { urlPath = "/broken" }, response = { status = 200, body = "answered anyway" },
      serveEventListeners = { { name = "webhook", parameters = {
        url = "http://127.0.0.1:" .. process.free_port() .. "/nobody" } } },
    })
    -- A stub in Lua, parameters in snake_case.
    write(sdir .. "/hooks.lua", ([[
      return { { request = { url_path = "/lua" }, response = { body = "lua" },
                 serve_event_listeners = { { name = "webhook", parameters = {
                   method = "POST", url = "%s/sink/lua", base64_body = "AAEC" } } } } }
    ]]):format(base))
    source = process.start(sdir, nil, { mock = true })
  end)
  teardown(function()
    if source then source:stop() end
    if target then target:stop() end
    for _, d in ipairs({ tdir, sdir }) do if d then helpers.remove_dir(d) end end
  end)

  it("sends the webhook after the answer, templated from the request answered", function()
    local status, _, body = helpers.request(source.port, "POST", "/orders",
      { ["Content-Type"] = "application/json", ["X-Shop"] = "north" }, '{"id": "A7"}')
    assert.equal(201, status)
    assert.same({ created = true }, cjson.decode(body))
    local got = assert(received(target.port, "/sink/orders/A7", 1), "the target received nothing")
    local r = got[1]
    assert.equal("PUT", r.method)
    assert.equal("/sink/orders/A7?via=POST", r.url)
    assert.equal("application/json", r.headers["Content-Type"])
    assert.equal("north", r.headers["X-Origin"])
    assert.same({ order = "A7", path = "/orders" }, cjson.decode(r.body))
  end)

  it("lists what was sent and what came back in the serve event", function()
    helpers.request(source.port, "POST", "/orders", { ["Content-Type"] = "application/json" }, '{"id": "B1"}')
    local e = assert(serve_event(source.port, "/orders", 2), "no sub-events")
    assert.equal("WEBHOOK_REQUEST", e.subEvents[1].type)
    assert.equal("PUT", e.subEvents[1].data.method)
    assert.equal("WEBHOOK_RESPONSE", e.subEvents[2].type)
    assert.equal(202, e.subEvents[2].data.status)
    assert.equal("received", e.subEvents[2].data.body)
  end)

  it("waits for the webhook's delay (postServeActions, WireMock 2's form)", function()
    local status, _, body = helpers.request(source.port, "GET", "/slow")
    assert.equal(200, status)
    assert.equal("now", body)
    local got = assert(received(target.port, "/sink/slow", 1), "the target received nothing")
    local e = assert(serve_event(source.port, "/slow", 2))
    local waited = got[1].loggedDate - e.request.loggedDate
    assert.is_true(waited >= 390, ("sent %d ms after the request"):format(waited))
    assert.equal("later", got[1].body)
    -- Listed as WireMock 3 lists it.
    local _, _, list = helpers.request(source.port, "GET", "/__admin/mappings")
    local found
    for _, m in ipairs(cjson.decode(list).mappings) do
      if m.request.urlPath == "/slow" then found = m end
    end
    assert.equal("webhook", found.postServeActions[1].name)
    assert.equal("later", found.postServeActions[1].parameters.body)
  end)

  it("keeps the answer when the webhook fails, logs it and lists it", function()
    local status, _, body = helpers.request(source.port, "GET", "/broken")
    assert.equal(200, status)
    assert.equal("answered anyway", body)
    local e = assert(serve_event(source.port, "/broken", 2), "no sub-events")
    assert.equal("ERROR", e.subEvents[2].type)
    assert.truthy(e.subEvents[2].data.message:find("^Failed to fire webhook GET http://127.0.0.1:%d+/nobody: "))
    assert.truthy(helpers.eventually(function()
      return source:stderr():find("mock: Failed to fire webhook GET", 1, true)
    end), source:stderr())
  end)

  it("sends a Lua stub's webhook, with base64_body's bytes", function()
    assert.equal(200, (helpers.request(source.port, "GET", "/lua")))
    local got = assert(received(target.port, "/sink/lua", 1), "the target received nothing")
    assert.equal("AAEC", got[1].bodyAsBase64)
  end)

  it("refuses a mapping whose webhook cannot be sent as written", function()
    for _, params in ipairs({ { method = "POST" }, { url = "http://x/{{#if}}" },
                              { url = "http://x/", delay = { type = "sometimes" } } }) do
      local status, _, body = helpers.request(source.port, "POST", "/__admin/mappings",
        { ["Content-Type"] = "application/json" }, cjson.encode({
          request = { urlPath = "/bad" }, response = {},
          serveEventListeners = { { name = "webhook", parameters = params } } }))
      assert.equal(422, status, body)
      assert.truthy(body:find("webhook", 1, true), body)
    end
    local status, _, body = helpers.request(source.port, "POST", "/__admin/mappings",
      { ["Content-Type"] = "application/json" }, cjson.encode({
        request = { urlPath = "/bad" }, response = {},
        serveEventListeners = { { name = "some-extension" } } }))
    assert.equal(422, status, body)
  end)

  -- Last: it leaves a thousand webhooks waiting in the source's worker.
  it("holds at most 1,000 webhooks waiting in a worker, and drops and logs the rest", function()
    local status, _, body = helpers.request(source.port, "POST", "/__admin/mappings",
      { ["Content-Type"] = "application/json" }, cjson.encode({
        request = { urlPath = "/flood" }, response = { body = "flood" },
        serveEventListeners = { { name = "webhook", parameters = {
          url = "http://127.0.0.1:" .. target.port .. "/sink/flood",
          delay = { type = "fixed", milliseconds = 3600000 } } } } }))
    assert.equal(201, status, body)
    -- One connection: one worker answers every request.
    local c = helpers.connect(source.port)
    for i = 1, 1001 do
      c:send(helpers.build_request("GET", "/flood?n=" .. i, {}, ""))
      local resp = c:read_response()
      assert.equal(200, resp.status)
      assert.equal("flood", resp.body)
    end
    c:close()
    assert.truthy(helpers.eventually(function()
      return source:stderr():find("not sent: 1000 webhooks already pending in this worker",
        1, true)
    end), source:stderr())
    local _, count = source:stderr():gsub("webhooks already pending", "")
    assert.equal(1, count)
  end)
end)
