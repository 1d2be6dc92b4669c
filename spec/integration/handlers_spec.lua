-- Handler behaviour through spec/fixtures/handlers.lua: errors become 500s
-- with the traceback in the log, moonport.sleep yields to other requests,
-- req/res outlive their request only as dead objects, 405 lists methods.
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local signal = require("posix.signal")

describe("handlers", function()
  local server = support.serve("spec/fixtures/handlers.lua")

  local conn
  after_each(function()
    if conn then conn:close() end
    conn = nil
  end)

  describe("a handler that raises", function()
    it("gets a 500 with a JSON error and no traceback in the body", function()
      conn = helpers.connect(server.port)
      local resp = conn:request("GET", "/boom")
      assert.equal(500, resp.status)
      helpers.json_error(resp)
      assert.is_nil(resp.body:lower():find("traceback", 1, true), "traceback in body: " .. resp.body)
      assert.is_nil(resp.body:find("handlers.lua", 1, true), "source path in body: " .. resp.body)
    end)

    it("logs the error and its traceback to stderr", function()
      helpers.request(server.port, "GET", "/boom")
      local logged = helpers.eventually(function()
        local err = server:stderr()
        return err:find("boom: deliberate failure in fixture", 1, true)
           and err:lower():find("traceback", 1, true)
           and err
      end, 5)
      assert.truthy(logged, "stderr lacks the error and traceback:\n" .. server:stderr())
      assert.truthy(logged:find("handlers.lua", 1, true), "traceback does not name the fixture")
    end)

    it("logs a traceback that starts at the frame that failed", function()
      helpers.request(server.port, "GET", "/boom-deep")
      local logged = helpers.eventually(function()
        local err = server:stderr()
        local at = err:find("GET /boom-deep: handler failed:", 1, true)
        return at and err:sub(at)
      end, 5)
      assert.truthy(logged, server:stderr())
      local trace = logged:match("stack traceback:\n(.-)\n%d%d%d%d%-") or logged:match("stack traceback:\n(.*)$")
      local first = trace:match("^%s*([^\n]+)")
      assert.matches("handlers%.lua:%d+: in function 'lookup'", first)
      assert.truthy(trace:find("handlers%.lua:%d+: in function <"), trace)
      assert.is_nil(trace:find("moonport/core", 1, true), "moonport's own frames in the trace: " .. trace)
    end)

    it("says so when a req or res method is called with '.', naming the handler's line", function()
      for which, method in pairs({ json = "res:json", header = "req:header", status = "res:status" }) do
        assert.equal(500, (helpers.request(server.port, "GET", "/dot/" .. which)))
        local want = "handlers%.lua:%d+: " .. method:gsub("%p", "%%%0") .. ": called with '%.' instead of ':'"
        assert.truthy(helpers.eventually(function() return server:stderr():find(want) end, 5),
          "no line for " .. method .. " in:\n" .. server:stderr())
      end
    end)

    it("leaves the connection serving the next request", function()
      conn = helpers.connect(server.port)
      assert.equal(500, conn:request("GET", "/boom").status)
      local resp = conn:request("GET", "/ok")
      assert.equal(200, resp.status)
      assert.equal("ok", resp.body)
    end)

    it("answers pipelined requests around a failing one in order", function()
      conn = helpers.connect(server.port)
      conn:send(helpers.build_request("GET", "/ok") .. helpers.build_request("GET", "/boom") ..
                helpers.build_request("GET", "/ok"))
      assert.equal("ok", conn:read_response().body)
      assert.equal(500, conn:read_response().status)
      assert.equal("ok", conn:read_response().body)
    end)

    it("gets a 500 when it raises a table", function()
      conn = helpers.connect(server.port)
      local resp = conn:request("GET", "/boom-table")
      assert.equal(500, resp.status)
      helpers.json_error(resp)
      assert.equal("ok", conn:request("GET", "/ok").body)
    end)
  end)

  describe("a handler that raises after streaming began", function()
    it("ends the connection without a last chunk, or answers a whole 500", function()
      conn = helpers.connect(server.port)
      conn:send(helpers.build_request("GET", "/boom-after-write"))
      local deadline = helpers.now() + 5
      while not conn.eof and helpers.now() < deadline do conn:fill(deadline) end
      assert.is_true(conn.eof, "connection still open 5s after the handler failed: " ..
        helpers.shorten(conn.buf))
      local raw = conn.buf
      if raw:match("^HTTP/1%.1 500 ") then
        -- Nothing had gone out yet: a complete 500 is right.
        local resp = helpers.parse_response(raw, true)
        helpers.json_error(resp)
      else
        assert.matches("^HTTP/1%.1 200 ", raw)
        assert.matches("partial ", raw, 1, true)
        -- A last chunk would make the truncated body look complete.
        assert.is_nil(raw:find("\r\n0\r\n\r\n$"), "truncated response ends with a last chunk: " ..
          helpers.shorten(raw))
        assert.is_nil(raw:find("HTTP/1.1 500", 1, true), "a 500 was written into the body: " ..
          helpers.shorten(raw))
      end
    end)

    it("leaves the server serving", function()
      assert.equal("ok", select(3, helpers.request(server.port, "GET", "/ok")))
    end)
  end)

  describe("moonport.sleep", function()
    it("delays the response by about the time asked", function()
      local t0 = helpers.now()
      local status, _, body = helpers.request(server.port, "GET", "/nap")
      local elapsed = helpers.now() - t0
      assert.equal(200, status)
      assert.equal("rested", body)
      assert.is_true(elapsed >= 0.19, ("answered after %.3fs, before 200 ms"):format(elapsed))
    end)

    it("lets 50 sleeping requests run at once", function()
      -- Each handler sleeps until all 50 are asleep: a server that ran
      -- them one after another would answer "alone" after 10 s.
      local conns = {}
      support.defer(function() for _, c in ipairs(conns) do c:close() end end)
      for i = 1, 50 do
        conns[i] = helpers.connect(server.port)
        conns[i]:send(helpers.build_request("GET", "/together/fifty/50"))
      end
      for i, c in ipairs(conns) do
        local resp = c:read_response({ timeout = 20 })
        assert.truthy(resp, ("connection %d closed before its response"):format(i))
        assert.equal(200, resp.status)
        assert.equal("together", resp.body, ("request %d slept alone"):format(i))
      end
    end)

    it("keeps pipelined responses in order when the first handler sleeps", function()
      conn = helpers.connect(server.port)
      conn:send(helpers.build_request("GET", "/nap") .. helpers.build_request("GET", "/ok") ..
                helpers.build_request("GET", "/nap") .. helpers.build_request("GET", "/ok"))
      assert.equal("rested", conn:read_response().body)
      assert.equal("ok", conn:read_response().body)
      assert.equal("rested", conn:read_response().body)
      assert.equal("ok", conn:read_response().body)
    end)

    it("survives a client that leaves while its handler sleeps", function()
      for _ = 1, 5 do
        local c = helpers.connect(server.port)
        c:send(helpers.build_request("GET", "/nap"))
        c:close()
      end
      -- Wait past the naps: their responses go to closed connections.
      local t0 = helpers.now()
      local deadline = t0 + 0.4
      while helpers.now() < deadline do helpers.nap(0.05) end
      assert.equal("ok", select(3, helpers.request(server.port, "GET", "/ok")))
      assert.equal("rested", select(3, helpers.request(server.port, "GET", "/nap")))
    end)
  end)

  describe("req and res after their request ended", function()
    it("req raises 'request already finished'", function()
      assert.equal("stored", select(3, helpers.request(server.port, "GET", "/store")))
      local status, _, body = helpers.request(server.port, "GET", "/use-req")
      assert.equal(200, status)
      local v = helpers.json(body)
      assert.is_false(v.ok)
      assert.matches("request already finished", v.err, 1, true)
    end)

    it("req:body raises 'request already finished'", function()
      helpers.request(server.port, "GET", "/store")
      local v = helpers.json(select(3, helpers.request(server.port, "GET", "/use-req-field")))
      assert.is_false(v.ok)
      assert.matches("request already finished", v.err, 1, true)
    end)

    it("res raises 'request already finished' and writes nothing", function()
      helpers.request(server.port, "GET", "/store")
      local status, _, body = helpers.request(server.port, "GET", "/use-res")
      assert.equal(200, status)
      local v = helpers.json(body)
      assert.is_false(v.ok)
      assert.matches("request already finished", v.err, 1, true)
    end)

    it("a stale req does not see a later request on the same connection", function()
      -- A server that reuses request objects must not let the old handle
      -- reach the new request.
      conn = helpers.connect(server.port)
      assert.equal("stored", conn:request("GET", "/store", { { "Host", "first.example" } }).body)
      local resp = conn:request("GET", "/use-req", { { "Host", "second.example" } })
      local v = helpers.json(resp.body)
      assert.is_false(v.ok, "stale req answered " .. tostring(v.err))
      assert.matches("request already finished", v.err, 1, true)
    end)

    it("a stale res does not write into a later response", function()
      conn = helpers.connect(server.port)
      conn:request("GET", "/store")
      local resp = conn:request("GET", "/use-res")
      assert.is_false(helpers.json(resp.body).ok)
      -- Nothing extra may follow on the connection.
      assert.equal("ok", conn:request("GET", "/ok").body)
    end)
  end)

  describe("405", function()
    it("lists every method of the path in Allow, with a JSON body", function()
      local status, headers, _, resp = helpers.request(server.port, "PUT", "/both", nil, "")
      assert.equal(405, status)
      local methods = {}
      for m in (headers["allow"] or ""):gmatch("[^,%s]+") do methods[m] = true end
      assert.truthy(methods.GET, "Allow: " .. tostring(headers["allow"]))
      assert.truthy(methods.POST, "Allow: " .. tostring(headers["allow"]))
      assert.falsy(methods.PUT, "Allow: " .. tostring(headers["allow"]))
      helpers.json_error(resp)
    end)

    it("serves both declared methods", function()
      assert.equal("get both", select(3, helpers.request(server.port, "GET", "/both")))
      assert.equal("post both", select(3, helpers.request(server.port, "POST", "/both", nil, "")))
    end)
  end)
end)

describe("handlers with --debug", function()
  local server = support.serve("spec/fixtures/handlers.lua", { "--debug" })

  it("puts the handler's error in the 500 body", function()
    local status, _, _, resp = helpers.request(server.port, "GET", "/boom")
    assert.equal(500, status)
    local msg = helpers.json_error(resp)
    assert.matches("boom: deliberate failure in fixture", msg, 1, true)
  end)
end)

describe("stopping with requests in flight", function()
  it("finishes a sleeping handler's response before exiting on SIGTERM", function()
    local server = support.start("spec/fixtures/handlers.lua")
    local conn = helpers.connect(server.port)
    support.defer(function() conn:close() end)
    conn:send(helpers.build_request("GET", "/long-nap"))
    -- The handler is asleep before the signal.
    assert.truthy(helpers.eventually(function()
      return select(3, helpers.request(server.port, "GET", "/long-naps")) == "1"
    end), "the handler never began")
    signal.kill(server.pid, signal.SIGTERM)
    local resp = conn:read_response()
    assert.truthy(resp, "connection closed before the in-flight response")
    assert.equal(200, resp.status)
    assert.equal("rested", resp.body)
    -- The test sent the signal: wait for the exit without a second one.
    server:wait(10)
  end)
end)
