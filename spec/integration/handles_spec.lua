-- Request handles behave like Lua values: a number that is not a handle
-- cannot be indexed, req.params is one table per request, and req.ctx is a
-- table of the request's own, dropped with it (server/req/request.h's
-- handle layout, lua/moonport/core/handle.lua). Fixture:
-- spec/fixtures/handles.lua.
local helpers = require("spec.helpers")

describe("request handles", function()
  local server, port
  setup(function()
    server = helpers.start("spec/fixtures/handles.lua", { "--shutdown-timeout", "0.2" })
    port = server.port
  end)
  teardown(function()
    if server then server:stop() end
  end)

  local function get_json(target, headers, conn)
    local resp
    if conn then
      resp = conn:request("GET", target, headers)
    else
      local status, _, body = helpers.request(port, "GET", target, headers)
      resp = { status = status, body = body }
    end
    assert.equal(200, resp.status, resp.body)
    return helpers.json(resp.body)
  end

  it("makes indexing an ordinary number raise, as in plain Lua", function()
    local v = get_json("/index/small")
    assert.is_false(v.ok)
    assert.matches("handles.lua:%d+: attempt to index a number value", v.err)
  end)

  for _, which in ipairs({ "ms", "us", "max" }) do
    it("does not take a number like " .. which .. " for a request", function()
      local v = get_json("/index/" .. which)
      assert.is_false(v.index.ok)
      assert.matches("attempt to index a number value", v.index.err, 1, true)
      assert.is_false(v.call.ok)
      assert.matches("attempt to index a number value", v.call.err, 1, true)
    end)
  end

  it("says where a request's own values go when a field is assigned to req", function()
    local v = get_json("/assign")
    assert.is_false(v.ok)
    assert.matches("handles.lua:%d+: req.user: a request handle takes no fields of its own; "
      .. "keep values in req.ctx", v.err)
  end)

  it("gives the same req.params table every time within a request", function()
    local v = get_json("/params/42")
    assert.same({ same = true, id = "42", seen = "yes" }, v)
  end)

  it("shares req.ctx between the functions of a request, fresh for the next request on the connection", function()
    local conn = helpers.connect(port)
    local first = get_json("/ctx", { { "X-User", "alice" } }, conn)
    assert.same({ before = "none", greeting = "hello alice", same = true }, first)
    local second = get_json("/ctx", { { "X-User", "bob" } }, conn)
    assert.same({ before = "none", greeting = "hello bob", same = true }, second)
    conn:close()
  end)

  for _, field in ipairs({ "ctx", "params" }) do
    it("raises 'request already finished' for req." .. field .. " of a request that is over", function()
      local conn = helpers.connect(port)
      assert.equal("stored", conn:request("GET", "/store").body)
      local v = get_json("/stale/" .. field, nil, conn)
      conn:close()
      assert.is_false(v.ok)
      assert.matches("handles.lua:%d+: request already finished", v.err)
    end)

    it("raises 'request already finished' for req." .. field .. " once the handler has returned, the body still arriving", function()
      local uploading = helpers.connect(port)
      uploading:send("POST /store HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" .. ("u"):rep(1000))
      local resp = uploading:read_response()
      assert.equal("stored", resp.body)
      local v = get_json("/stale/" .. field)
      uploading:close()
      assert.is_false(v.ok, "a value made for a request whose handler is over")
      assert.matches("handles.lua:%d+: request already finished", v.err)
    end)
  end

  it("drops req.ctx and req.params with a request whose handler was stopped", function()
    local conn = helpers.connect(port)
    conn:send(helpers.build_request("GET", "/hold/x"))
    assert.truthy(conn:fill(helpers.now() + 2), "the handler did not start")
    conn:close()
    assert.truthy(helpers.eventually(function()
      return server:stderr():find("GET /hold/:name: handler stopped", 1, true)
    end, 5), server:stderr())
    local v = helpers.eventually(function()
      local counts = get_json("/collect")
      return counts.ctx == 1 and counts.params == 1 and counts
    end, 3)
    assert.truthy(v, "req.ctx and req.params outlived their stopped handler: "
      .. helpers.shorten((select(3, helpers.request(port, "GET", "/collect")))))
  end)
end)
