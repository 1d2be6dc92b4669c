-- Time and admission limits, and request shapes the core must take apart
-- safely: header, body and write timeouts, --max-connections, trailers and
-- chunk extensions, a client that shuts down its sending side.
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local support = require("spec.support.server")
local socket = require("socket")

local function serve(args)
  return support.serve("spec/fixtures/hardening.lua", args)
end

-- Waits up to `timeout` s for the server to answer and close; returns the
-- response (or nil) and whether the stream ended.
local function answer_then_eof(conn, timeout)
  local resp = conn:read_response({ timeout = timeout })
  return resp, conn:wait_eof(timeout)
end

-- The timeouts are 1 s; each answer is waited for 8 s, less than the
-- defaults (10 s and more) that a server ignoring the options would use.
describe("timeouts", function()
  local server = serve({ "--header-timeout", "1", "--body-timeout", "1", "--write-timeout", "1",
                         "--stats" })

  it("answers a head not complete within --header-timeout with 408, then closes", function()
    local conn = helpers.connect(server.port)
    conn:send("GET /ok HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    local resp, ended = answer_then_eof(conn, 8)
    conn:close()
    assert.truthy(resp, "no 408 before the connection closed")
    assert.equal(408, resp.status)
    helpers.json_error(resp)
    assert.truthy(ended)
  end)

  it("answers a body that stalls past --body-timeout with 408, then closes", function()
    local conn = helpers.connect(server.port)
    conn:send("POST /echo/x HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
    local resp, ended = answer_then_eof(conn, 8)
    conn:close()
    assert.truthy(resp, "no 408 before the connection closed")
    assert.equal(408, resp.status)
    assert.truthy(ended)
  end)

  it("keeps a slow but steady head alive: the timeout counts from its first byte", function()
    local conn = helpers.connect(server.port):nodelay()
    conn:send("GET /ok HTTP/1.1\r\n")
    conn:send("Host: x\r\n\r\n")
    local resp = conn:read_response()
    conn:close()
    assert.equal(200, resp.status)
  end)

  it("drops a client that stops reading for --write-timeout", function()
    local conn = helpers.connect(server.port)
    conn:send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
    -- Read nothing until the server has dropped the connection (its open
    -- connections are down to the stats request's own), then drain: far
    -- fewer than the 32 MiB arrive before the stream ends.
    assert.truthy(helpers.eventually(function()
      return helpers.stats(server.port).worker.connections.open == 1
    end, 8), "the connection of a client that reads nothing is still open")
    local total, stop = 0, helpers.now() + 10
    conn.sock:settimeout(2)
    while helpers.now() < stop do
      local data, err, partial = conn.sock:receive(65536)
      local got = data or partial or ""
      total = total + #got
      if err == "closed" or err == "timeout" then break end
    end
    conn:close()
    assert(total < 32 * 1024 * 1024, ("all %d bytes arrived: the server never gave up"):format(total))
  end)
end)

describe("write backpressure", function()
  local server = serve({ "--write-high-water", "262144", "--stats" })

  local function unsent()
    return helpers.stats(server.port).worker.connections.unsent_bytes
  end

  it("holds a streaming handler at the high-water mark while its client lags", function()
    local conn = helpers.connect(server.port)
    local ok, err = pcall(function()
      conn:send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
      -- The client reads nothing for a while: the 32 MiB must not pile up
      -- in the server, whose queue stays near the mark.
      local deadline = helpers.now() + 1
      while helpers.now() < deadline do socket.select(nil, nil, 0.1) end
      local queued = unsent()
      assert(queued <= 262144 + 65536 + 1024,
        ("%d bytes queued in the server while the client lagged"):format(queued))
      -- Meanwhile another client is served.
      assert.equal(200, (helpers.request(server.port, "GET", "/ok")))
      -- And the whole body arrives once the client reads.
      local resp = conn:read_response({ timeout = 30 })
      assert.equal(200, resp.status)
      assert.equal(32 * 1024 * 1024, #resp.body)
    end)
    conn:close()
    assert(ok, err)
  end)
end)

describe("request bodies in pieces", function()
  local server = serve({ "--max-body-size", "8m" })

  it("hands the body to req:read piece by piece as it arrives", function()
    local conn = helpers.connect(server.port)
    local resp = conn:post_in_pieces("/count", "abcd", 3, "/count/progress")
    conn:close()
    assert.equal(200, resp.status)
    local doc = helpers.json(resp.body)
    assert.equal(12, doc.bytes)
    assert.is_true(doc.pieces >= 2, "the body came in one piece: it was not streamed")
  end)

  it("sends 100 Continue when the handler first reads, then the answer", function()
    local conn = helpers.connect(server.port)
    conn:send("POST /count HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
    local interim = conn:read_response({ interim = true })
    assert.equal(100, interim.status)
    conn:send("hello")
    local resp = conn:read_response()
    assert.equal(200, resp.status)
    assert.equal(5, helpers.json(resp.body).bytes)
    -- The connection goes on.
    assert.equal(200, conn:request("GET", "/ok").status)
    conn:close()
  end)

  it("answers without 100 Continue when the handler never reads, then closes", function()
    local conn = helpers.connect(server.port)
    conn:send("POST /ignore HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
    local resp = conn:read_response({ interim = true })
    assert.equal(200, resp.status)
    assert.equal("ignored", resp.body)
    assert.equal("close", resp.headers["connection"])
    assert.truthy(conn:wait_eof(5))
    conn:close()
  end)

  it("drops a body the handler did not read and serves the next request", function()
    local conn = helpers.connect(server.port):nodelay()
    local body = ("x"):rep(300000)
    conn:send("POST /ignore HTTP/1.1\r\nHost: x\r\nContent-Length: " .. #body .. "\r\n\r\n")
    local resp = conn:read_response()
    assert.equal("ignored", resp.body)
    conn:send(body)
    assert.equal(200, conn:request("GET", "/ok").status)
    conn:close()
  end)
end)

describe("--max-connections", function()
  local server = serve({ "--max-connections", "2" })

  it("accepts and closes at once past the ceiling, and goes on serving the others", function()
    local a, b = helpers.connect(server.port), helpers.connect(server.port)
    assert.equal(200, a:request("GET", "/ok").status)
    assert.equal(200, b:request("GET", "/ok").status)
    local c = helpers.connect(server.port)
    assert.truthy(c:wait_eof(5), "the third connection stayed open")
    c:close()
    assert.equal(200, a:request("GET", "/ok").status)
    assert.equal(200, b:request("GET", "/ok").status)
    a:close()
    b:close()
    -- Room again once the others have gone.
    assert.truthy(helpers.eventually(function()
      local ok, status = pcall(helpers.request, server.port, "GET", "/ok")
      return ok and status == 200
    end, 10))
  end)
end)

describe("request shapes", function()
  local server = serve({ "--max-header-size", "1024" })

  it("never merges trailer fields into the headers", function()
    local conn = helpers.connect(server.port)
    conn:send("POST /echo/x-trailer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      .. "5;ext=1\r\nhello\r\n0\r\nX-Trailer: sneaky\r\n\r\n")
    local resp = conn:read_response()
    assert.equal(200, resp.status)
    assert.same({ header = "nil", body = "hello" }, helpers.json(resp.body))
    -- The connection is still good for the next request.
    assert.equal(200, conn:request("GET", "/ok").status)
    conn:close()
  end)

  it("takes an absolute-form target's authority as its Host", function()
    local conn = helpers.connect(server.port)
    conn:send("POST http://example.test:8080/echo/host HTTP/1.1\r\nHost: other\r\nContent-Length: 0\r\n\r\n")
    local resp = conn:read_response()
    conn:close()
    assert.equal(200, resp.status)
    assert.equal("example.test:8080", helpers.json(resp.body).header)
  end)

  it("hands trailers to req:trailers(), without the fields that must not be trailers", function()
    local conn = helpers.connect(server.port)
    conn:send("POST /trailers HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      .. "5\r\nhello\r\n0\r\nX-Sum: 42 \r\nContent-Length: 99\r\nHost: evil\r\nX-Empty:\r\n\r\n")
    local resp = conn:read_response()
    conn:close()
    assert.equal(200, resp.status)
    local doc = helpers.json(resp.body)
    assert.equal("hello", doc.body)
    assert.same({ ["x-sum"] = "42", ["x-empty"] = "" }, doc.trailers)
    assert.equal("nil", doc.header)
  end)

  it("refuses chunk extensions past the head limit with 431", function()
    local conn = helpers.connect(server.port)
    conn:send("POST /echo/x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      .. "1;" .. ("e"):rep(2000) .. "\r\nx\r\n0\r\n\r\n")
    local resp = conn:read_response()
    conn:close()
    assert.equal(431, resp.status)
  end)

  it("does not let one connection's long pipeline starve another", function()
    -- 2,000 requests of about 1 ms of CPU each pipelined on one
    -- connection, and one request on another, both sent while a third
    -- holds the worker: once it is free, both are waiting. The one
    -- request must be served long before the pipeline is done. Counted
    -- in requests served, not in seconds, so that a loaded machine does
    -- not change the verdict.
    local before = tonumber((select(3, helpers.request(server.port, "GET", "/spun"))))
    local hold, busy, other = helpers.connect(server.port), helpers.connect(server.port),
      helpers.connect(server.port)
    support.defer(function()
      hold:close()
      busy:close()
      other:close()
    end)
    hold:send(helpers.build_request("GET", "/hold/1000"))
    busy:try_send(("GET /spin HTTP/1.1\r\nHost: x\r\n\r\n"):rep(2000), 5)
    other:send(helpers.build_request("GET", "/spun"))
    assert.equal("held", hold:read_response({ timeout = 10 }).body)
    local resp = other:read_response({ timeout = 30 })
    assert.equal(200, resp.status)
    local spun = tonumber(resp.body) - before
    assert(spun < 1000, ("%d of the 2000 pipelined requests were served before the other "
      .. "connection's one"):format(spun))
  end)

  it("answers every complete request of a client that has shut down its sending side", function()
    local conn = helpers.connect(server.port)
    conn:send(("GET /ok HTTP/1.1\r\nHost: x\r\n\r\n"):rep(3))
    conn.sock:shutdown("send")
    for _ = 1, 3 do
      local resp = conn:read_response()
      assert.truthy(resp, "the connection ended before every answer")
      assert.equal(200, resp.status)
    end
    assert.truthy(conn:wait_eof(5))
    conn:close()
  end)
end)
