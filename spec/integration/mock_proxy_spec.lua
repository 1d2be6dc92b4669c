-- The mock's proxying (WireMock's proxyBaseUrl) to a real upstream, a
-- second moonport (spec/fixtures/http_upstream.lua, which answers what it
-- was sent): the request passed on with its header changes and the URL
-- prefix removed, the target's answer passed back, a catch-all proxy under
-- specific stubs, the journal, and a target that does not answer.
local helpers = require("spec.helpers")
local process = require("spec.support.process")
local cjson = require("cjson")

local function write(path, value)
  local f = assert(io.open(path, "wb"))
  f:write(type(value) == "string" and value or cjson.encode(value))
  f:close()
end

describe("mock proxying", function()
  local upstream, mock, dir
  setup(function()
    upstream = process.start("spec/fixtures/http_upstream.lua")
    local base = "http://127.0.0.1:" .. upstream.port
    dir = helpers.scratch_dir()
    assert(os.execute("mkdir -p " .. dir .. "/mappings " .. dir .. "/__files"))
    write(dir .. "/mappings/api.json", {
      priority = 1,
      request = { method = "ANY", urlPathPattern = "/api/.*" },
      response = {
        proxyBaseUrl = base, proxyUrlPrefixToRemove = "/api",
        additionalProxyRequestHeaders = { ["X-Added"] = "yes" },
        removeProxyRequestHeaders = { "X-Secret" },
      },
    })
    write(dir .. "/mappings/override.json", {
      priority = 1, request = { method = "GET", url = "/echo?stubbed=1" },
      response = { status = 200, body = "from the stub" },
    })
    write(dir .. "/mappings/catch-all.json", {
      priority = 10, request = { method = "ANY", urlPattern = ".*" },
      response = { proxyBaseUrl = base },
    })
    write(dir .. "/mappings/nowhere.json", {
      priority = 1, request = { url = "/nowhere" },
      response = { proxyBaseUrl = "http://127.0.0.1:" .. process.free_port() },
    })
    mock = process.start(dir, nil, { mock = true })
  end)
  teardown(function()
    if mock then mock:stop() end
    if upstream then upstream:stop() end
    if dir then helpers.remove_dir(dir) end
  end)

  it("passes the request on with its header changes and the prefix removed", function()
    local status, headers, body = helpers.request(mock.port, "POST", "/api/echo?x=1",
      { ["X-Secret"] = "s", ["X-Kept"] = "k", ["Content-Type"] = "text/plain" }, "payload")
    assert.equal(200, status, body)
    assert.equal("application/json", headers["content-type"])
    local e = helpers.json(body)
    assert.equal("POST", e.method)
    assert.equal("/echo", e.path)
    assert.equal("x=1", e.query)
    assert.equal("payload", e.body)
    assert.equal("yes", e.headers["x-added"])
    assert.equal("k", e.headers["x-kept"])
    assert.is_nil(e.headers["x-secret"])
  end)

  it("passes the target's status back", function()
    local status = helpers.request(mock.port, "GET", "/api/status/418")
    assert.equal(418, status)
  end)

  it("sends what no specific stub matches to the target, and lets stubs override it", function()
    local status, _, body = helpers.request(mock.port, "GET", "/echo?stubbed=1")
    assert.equal(200, status)
    assert.equal("from the stub", body)
    local _, _, proxied = helpers.request(mock.port, "GET", "/echo?other=1")
    assert.equal("/echo", helpers.json(proxied).path)
  end)

  it("journals proxied requests like others", function()
    helpers.request(mock.port, "GET", "/api/echo?journaled=1")
    local _, _, body = helpers.request(mock.port, "GET", "/__admin/requests")
    assert.is_truthy(body:find("journaled=1", 1, true), body)
  end)

  it("answers 502 with the reason when the target does not answer", function()
    local status, _, body = helpers.request(mock.port, "GET", "/nowhere")
    assert.equal(502, status)
    assert.is_truthy(body:find("connection refused", 1, true), body)
  end)

  it("forwards what no stub matches with --proxy-all, under every stub", function()
    local only = helpers.scratch_dir()
    assert(os.execute("mkdir -p " .. only .. "/mappings " .. only .. "/__files"))
    write(only .. "/mappings/override.json", {
      request = { method = "GET", url = "/echo?stubbed=1" },
      response = { status = 200, body = "from the stub" },
    })
    local all = process.start(only, { "--proxy-all", "http://127.0.0.1:" .. upstream.port },
      { mock = true })
    local ok, err = pcall(function()
      local _, _, body = helpers.request(all.port, "GET", "/echo?stubbed=1")
      assert.equal("from the stub", body)
      local status, _, proxied = helpers.request(all.port, "PUT", "/echo?via=all", nil, "b")
      assert.equal(200, status)
      local e = helpers.json(proxied)
      assert.equal("PUT", e.method)
      assert.equal("via=all", e.query)
    end)
    all:stop()
    helpers.remove_dir(only)
    if not ok then error(err, 0) end
  end)
end)
