-- WireMock's 404 page for a request no stub matched, chosen by
-- `mock.app{ wiremock_404 = true }` in Lua or --wiremock-404 on the
-- command line; moonport's own report stays the default. The page itself
-- is checked against the real WireMock in spec/compat/.
local helpers = require("spec.helpers")
local process = require("spec.support.process")

describe("the mock's page for an unmatched request", function()
  local lua_app, flag, plain, dir
  setup(function()
    dir = helpers.scratch_dir()
    assert(os.execute("mkdir -p " .. dir .. "/mappings"))
    helpers.write_file(dir .. "/mappings/ping.json",
      '{"request": {"method": "GET", "urlPath": "/ping"}, "response": {"body": "pong"}}')
    lua_app = process.start("spec/fixtures/mock_wiremock_404.lua")
    flag = process.start(dir, { "--wiremock-404" }, { mock = true })
    plain = process.start(dir, nil, { mock = true })
  end)
  teardown(function()
    for _, s in ipairs({ lua_app, flag, plain }) do if s then s:stop() end end
    if dir then helpers.remove_dir(dir) end
  end)

  it("is WireMock's diff with mock.app{ wiremock_404 = true }", function()
    local status, headers, body = helpers.request(lua_app.port, "GET", "/pong")
    assert.equal(404, status)
    assert.equal("text/plain; charset=utf-8", headers["content-type"])
    assert.truthy(body:find("^\n +Request was not matched\n +=+\n"), body)
    assert.truthy(body:find("\nping +|\n", 1, false), body)
    assert.truthy(body:find("%[path%] /ping +| /pong +<<<<< URL does not match\n"), body)
    assert.equal(200, (helpers.request(lua_app.port, "GET", "/ping")))
  end)

  it("is WireMock's diff with --wiremock-404, as wide as X-WireMock-Console-Width asks", function()
    local _, _, body = helpers.request(flag.port, "POST", "/ping")
    assert.truthy(body:find("GET +| POST +<<<<< HTTP method does not match\n"), body)
    assert.equal("\n" .. ("-"):rep(119) .. "\n", body:sub(-121))
    _, _, body = helpers.request(flag.port, "POST", "/ping", { ["X-WireMock-Console-Width"] = "80" })
    assert.equal("\n" .. ("-"):rep(80) .. "\n", body:sub(-82))
  end)

  it("is moonport's report by default", function()
    local status, _, body = helpers.request(plain.port, "GET", "/pong")
    assert.equal(404, status)
    assert.truthy(body:find("^No stub matched GET /pong\n"), body)
  end)

  it("is listed in --help", function()
    local _, out = process.run({ "--help" })
    assert.truthy(out:find("--wiremock-404", 1, true), out)
  end)
end)
