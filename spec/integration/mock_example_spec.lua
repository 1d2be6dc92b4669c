-- scripts/mock.lua, the example mock API, as a front end would use it.
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local cjson = require("cjson.safe")

describe("scripts/mock.lua", function()
  local server = support.serve("scripts/mock.lua", { "--workers", "2" })

  local function call(method, target, body)
    local status, headers, b = helpers.request(server.port, method, target,
      body and { ["Content-Type"] = "application/json" }, body)
    return status, cjson.decode(b), headers
  end

  it("creates, lists, changes and deletes users, every worker seeing them", function()
    local status, list = call("GET", "/api/users")
    assert.equal(200, status)
    assert.equal(2, #list)
    local created, headers
    status, created, headers = call("POST", "/api/users", '{"name":"Grace","email":"grace@example.com"}')
    assert.equal(201, status)
    assert.equal(3, created.id)
    assert.equal("/api/users/3", headers.location)
    for _ = 1, 6 do
      local st, user = call("GET", "/api/users/3")
      assert.equal(200, st)
      assert.equal("Grace", user.name)
    end
    status = call("PUT", "/api/users/3", '{"name":"Grace Hopper"}')
    assert.equal(200, status)
    assert.equal("Grace Hopper", select(2, call("GET", "/api/users/3")).name)
    assert.equal(422, (call("POST", "/api/users", '{"email":"x"}')))
    assert.equal(204, (call("DELETE", "/api/users/3")))
    assert.equal(404, (call("GET", "/api/users/3")))
    assert.equal(2, #select(2, call("GET", "/api/users")))
  end)

  it("has a slow endpoint that does not hold up the others", function()
    local slow = helpers.connect(server.port)
    support.defer(function() slow:close() end)
    local t0 = helpers.now()
    slow:send(helpers.build_request("GET", "/api/reports/monthly"))
    assert.equal(200, (call("GET", "/api/users")))
    -- Answered while the slow one (800 ms) still waits.
    slow:read_available()
    assert.equal("", slow.buf, "the other request was answered only after the slow one")
    local resp = slow:read_response()
    assert.is_true(helpers.now() - t0 >= 0.8)
    assert.equal(12345, cjson.decode(resp.body).visits)
  end)

  it("has a flaky endpoint failing every third call", function()
    local statuses = {}
    for i = 1, 6 do statuses[i] = (call("GET", "/api/flaky")) end
    local failures = 0
    for _, s in ipairs(statuses) do if s == 503 then failures = failures + 1 end end
    assert.equal(2, failures)
  end)

  it("walks the checkout scenario and starts over on reset", function()
    helpers.request(server.port, "POST", "/__admin/scenarios/reset")
    assert.same({ items = {} }, select(2, call("GET", "/api/cart")))
    local status, added = call("POST", "/api/cart/items", '{"sku":"book-42"}')
    assert.equal(201, status)
    assert.equal("book-42", added.items[1].sku)
    assert.equal("book-42", select(2, call("GET", "/api/cart")).items[1].sku)
    assert.equal(201, (call("POST", "/api/checkout")))
    assert.equal("placed", select(2, call("GET", "/api/orders/latest")).status)
    helpers.request(server.port, "POST", "/__admin/scenarios/reset")
    assert.equal(404, (call("GET", "/api/orders/latest")))
  end)
end)
