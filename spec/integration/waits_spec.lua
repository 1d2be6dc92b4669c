-- Waits (moonport.sleep, req:read, res:write) from inside coroutines a
-- handler made, and what a handler sees when its client leaves: the wait
-- in progress ends with "closed" after the on_abort functions ran, the
-- connection is released at once, and a handler that does not stop is
-- stopped --shutdown-timeout later.
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local socket = require("socket")

local FIXTURE = "spec/fixtures/waits.lua"

local function value(port, key)
  local _, _, body = helpers.request(port, "GET", "/value/" .. key)
  return helpers.json(body).value
end

local function eventually_value(port, key, want, timeout)
  return helpers.eventually(function()
    local v = value(port, key)
    return v == want and v
  end, timeout)
end

-- Ends the connection with a TCP reset instead of an orderly close.
local function reset(conn)
  conn.sock:setoption("linger", { on = true, timeout = 0 })
  conn:close()
end

describe("waits inside coroutines the handler made", function()
  local server = support.serve(FIXTURE, { "--write-high-water", "64k" })

  it("suspends the request from coroutine.wrap and resumes it where it stopped", function()
    local status, _, body = helpers.request(server.port, "GET", "/co/wrap")
    assert.equal(200, status)
    assert.same({ a = 2, slept = true, b = 42 }, helpers.json(body))
  end)

  it("suspends the request from three coroutines deep", function()
    local status, _, body = helpers.request(server.port, "GET", "/co/nested")
    assert.equal(200, status)
    assert.same({ ok = true, value = "deep!", status = "dead", outer = "dead" }, helpers.json(body))
  end)

  it("reads a body that arrives in pieces from inside a coroutine", function()
    local conn = helpers.connect(server.port)
    local resp = conn:post_in_pieces("/co/read", "abcde", 3, "/co/read/progress")
    conn:close()
    assert.equal(200, resp.status)
    local doc = helpers.json(resp.body)
    assert.equal(15, doc.bytes)
    assert(doc.pieces >= 2, "the body came in one piece: " .. resp.body)
  end)

  it("waits at the high-water mark from inside a coroutine", function()
    local conn = helpers.connect(server.port)
    conn:send("GET /co/write HTTP/1.1\r\nHost: x\r\n\r\n")
    socket.select(nil, nil, 0.3) -- the client lags; the writer must wait
    local resp = conn:read_response({ timeout = 20 })
    conn:close()
    assert.equal(200, resp.status)
    assert.equal(64 * 65536, #resp.body)
  end)

  it("leaves a coroutine's own yields and errors to plain Lua", function()
    local status, _, body = helpers.request(server.port, "GET", "/co/plain")
    assert.equal(200, status)
    assert.same({ got = { 1, 4, 9 }, ok = false, err = "inside", wrapped_ok = false,
                  wrapped_err = "wrapped" }, helpers.json(body))
  end)
end)

describe("moonport.sleep", function()
  local server = support.serve(FIXTURE)

  it("refuses NaN and negative times, naming the handler's line", function()
    for _, what in ipairs({ "nan", "negative" }) do
      local _, _, body = helpers.request(server.port, "GET", "/sleep/bad/" .. what)
      assert.matches("waits%.lua:%d+: moonport%.sleep: ms must be a non%-negative number", body)
    end
  end)

  it("returns true after sleeping 0 ms", function()
    local _, _, body = helpers.request(server.port, "GET", "/sleep/zero")
    assert.same({ slept = true }, helpers.json(body))
  end)

  it("sleeps on math.huge until the client leaves, then ends the wait with closed", function()
    local conn = helpers.connect(server.port)
    conn:send("GET /sleep/huge HTTP/1.1\r\nHost: x\r\n\r\n")
    assert.is_false(conn:fill(helpers.now() + 0.5), "math.huge did not sleep: " .. conn.buf)
    conn:close()
    assert.equal(1, eventually_value(server.port, "aborted:huge", 1))
    assert.equal(1, eventually_value(server.port, "closed:huge", 1))
    assert.is_false(value(server.port, "ok:huge"))
  end)
end)

-- "At once" here is well before --body-timeout (30 s): each wait below is
-- bounded at 10 s, which a loaded machine does not reach.
describe("a client that leaves", function()
  local log_path = os.tmpname()
  local server = support.serve(FIXTURE, { "--stats", "--body-timeout", "30", "--shutdown-timeout", "1",
                                          "--max-connections", "10", "--access-log", log_path })
  teardown(function() os.remove(log_path) end)

  local function open_connections()
    return helpers.stats(server.port).worker.connections.open
  end

  local function upload_head(conn)
    conn:send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" .. ("u"):rep(1000))
  end

  it("ends req:read with closed at once when it closes mid-body, after on_abort", function()
    local conn = helpers.connect(server.port)
    upload_head(conn)
    -- The handler is reading before the client leaves.
    assert.equal(1, eventually_value(server.port, "started:upload", 1, 10))
    conn.sock:shutdown("send")
    assert.truthy(conn:wait_eof(10), "the connection stayed open after the client's FIN mid-body")
    conn:close()
    assert.equal(1, eventually_value(server.port, "closed:upload", 1, 10))
    assert.equal(1, value(server.port, "aborted:upload"))
  end)

  it("ends req:read with closed when it resets the connection mid-body", function()
    local conn = helpers.connect(server.port)
    upload_head(conn)
    assert.equal(2, eventually_value(server.port, "started:upload", 2, 10))
    reset(conn)
    assert.equal(2, eventually_value(server.port, "closed:upload", 2, 10))
    assert.equal(2, value(server.port, "aborted:upload"))
  end)

  it("makes req:body raise a clear error", function()
    local conn = helpers.connect(server.port)
    conn:send("POST /body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n")
    assert.equal(1, eventually_value(server.port, "started:body", 1, 10))
    conn:close()
    local err = helpers.eventually(function() return value(server.port, "body_error") end, 10)
    assert.matches("req:body: the client closed the connection before sending the whole body", err, 1, true)
  end)

  it("releases its connection, so that clients promising bodies cannot lock others out", function()
    for _ = 1, 3 do
      local conns = {}
      for i = 1, 8 do
        conns[i] = helpers.connect(server.port)
        upload_head(conns[i])
      end
      socket.select(nil, nil, 0.1)
      for _, c in ipairs(conns) do c:close() end
      -- Well before --body-timeout, every one of them is gone.
      assert.truthy(helpers.eventually(function() return open_connections() == 1 end, 10),
        "connections still open: " .. open_connections())
    end
    local status, _, body = helpers.request(server.port, "GET", "/ok")
    assert.equal(200, status)
    assert.equal("ok", body)
  end)

  it("makes res:write return nil, closed so that a stream cleans up", function()
    local conn = helpers.connect(server.port)
    conn:send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
    assert.truthy(conn:fill(helpers.now() + 10))
    assert.equal(1, value(server.port, "online"))
    conn:close()
    assert.equal(0, eventually_value(server.port, "online", 0, 10))
    assert.equal("closed, told", value(server.port, "stream_end"))
  end)

  it("stops a handler that goes on regardless, --shutdown-timeout after its client left", function()
    local conn = helpers.connect(server.port)
    conn:send("GET /careless HTTP/1.1\r\nHost: x\r\n\r\n")
    assert.truthy(conn:fill(helpers.now() + 10))
    conn:close()
    local logged = helpers.eventually(function()
      return server:stderr():find("GET /careless: handler stopped [%d.]+ s after its client left")
    end, 10)
    assert.truthy(logged, server:stderr())
    assert.equal(200, (helpers.request(server.port, "GET", "/ok")))
  end)

  it("lets work after a complete response go on", function()
    local conn = helpers.connect(server.port)
    local resp = conn:request("GET", "/after")
    assert.equal("done", resp.body)
    conn:close()
    assert.equal("finished", eventually_value(server.port, "after", "finished", 10))
  end)

  it("is logged with status 499", function()
    local lines = helpers.eventually(function()
      local f = io.open(log_path)
      local text = f and f:read("*a") or ""
      if f then f:close() end
      return text:find('"POST /upload HTTP/1.1" 499 ', 1, true)
    end, 10)
    assert.truthy(lines, "no 499 line for an aborted upload")
  end)
end)
