-- HTTP/1.1 connection handling over raw sockets, against scripts/api.lua:
-- keep-alive, pipelining, partial writes, close semantics, HEAD, request
-- bodies, malformed requests, idle timeout and a slow reader.
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local socket = require("socket")

local req = helpers.build_request

describe("protocol", function()
  local server = support.serve("scripts/api.lua")

  local conn
  after_each(function()
    if conn then conn:close() end
    conn = nil
  end)

  local function expect_health(resp)
    assert.truthy(resp, "connection closed instead of a response")
    assert.equal(200, resp.status)
    assert.equal('{"ok":true}', resp.body)
  end

  local function expect_user(resp, id)
    assert.truthy(resp, "connection closed instead of a response")
    assert.equal(200, resp.status)
    assert.same({ id = id, name = "user-" .. id }, helpers.json(resp.body))
  end

  describe("keep-alive", function()
    it("serves several requests on one HTTP/1.1 connection", function()
      conn = helpers.connect(server.port)
      for i = 1, 5 do
        expect_health(conn:request("GET", "/health"))
        expect_user(conn:request("GET", "/users/" .. i), i)
      end
      local resp = conn:request("POST", "/add", nil, '{"a":20,"b":22}')
      assert.equal(200, resp.status)
      assert.same({ sum = 42 }, helpers.json(resp.body))
    end)

    for _, n in ipairs({ 1048454, 1048577, 2097152, 4194304 }) do
      it(("serves the next request after a %d-byte body"):format(n), function()
        conn = helpers.connect(server.port)
        local big = conn:request("GET", "/blob/" .. n, nil, nil, { timeout = 10 })
        assert.equal(200, big.status)
        assert.equal(n, #big.body)
        expect_health(conn:request("GET", "/health"))
      end)
    end

    it("does not announce Connection: close on a keep-alive response", function()
      conn = helpers.connect(server.port)
      local resp = conn:request("GET", "/health")
      assert.is_not.equal("close", (resp.headers["connection"] or ""):lower())
    end)
  end)

  describe("pipelining", function()
    it("answers 100 requests sent in one write, in order", function()
      local parts, expect = {}, {}
      for i = 1, 100 do
        if i % 3 == 0 then
          parts[#parts + 1] = req("GET", "/health")
          expect[i] = false
        else
          parts[#parts + 1] = req("GET", "/users/" .. i)
          expect[i] = i
        end
      end
      conn = helpers.connect(server.port)
      conn:send(table.concat(parts))
      for i = 1, 100 do
        local resp = conn:read_response()
        assert.truthy(resp, ("connection closed after %d responses"):format(i - 1))
        if expect[i] then expect_user(resp, expect[i]) else expect_health(resp) end
      end
    end)

    it("answers pipelined requests with bodies and HEAD in order", function()
      conn = helpers.connect(server.port)
      conn:send(
        req("POST", "/add", nil, '{"a":1,"b":1}') ..
        req("HEAD", "/health") ..
        req("POST", "/add", { { "Transfer-Encoding", "chunked" } },
            helpers.chunked('{"a":2,"b":2}', 4)) ..
        req("GET", "/users/7") ..
        req("POST", "/add", nil, '{"a":3,"b":3}'))
      assert.same({ sum = 2 }, helpers.json(conn:read_response().body))
      local head = conn:read_response({ head = true })
      assert.equal(200, head.status)
      assert.same({ sum = 4 }, helpers.json(conn:read_response().body))
      expect_user(conn:read_response(), 7)
      assert.same({ sum = 6 }, helpers.json(conn:read_response().body))
    end)

    it("answers a pipelined large response and the small one behind it", function()
      conn = helpers.connect(server.port)
      conn:send(req("GET", "/blob/1048577") .. req("GET", "/health") .. req("GET", "/blob/10"))
      local big = conn:read_response({ timeout = 10 })
      assert.equal(200, big.status)
      assert.is_nil(helpers.first_difference(big.body, helpers.blob(1048577)))
      expect_health(conn:read_response())
      assert.equal("abcdefghij", conn:read_response().body)
    end)
  end)

  describe("request targets", function()
    it("routes an absolute-form target by its path", function()
      -- RFC 9112 section 3.2.2: a server MUST accept the absolute-form.
      conn = helpers.connect(server.port)
      conn:send("GET http://127.0.0.1/users/12 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
      expect_user(conn:read_response(), 12)
    end)

    it("ignores the query string when routing", function()
      conn = helpers.connect(server.port)
      expect_health(conn:request("GET", "/health?verbose=1"))
    end)
  end)

  describe("partial writes", function()
    it("answers a request sent one byte per write", function()
      conn = helpers.connect(server.port):nodelay()
      conn:send_bytewise(req("GET", "/users/5", { { "X-Padding", "some value" } }))
      expect_user(conn:read_response(), 5)
      -- And a body, byte by byte, on the same connection.
      conn:send_bytewise(req("POST", "/add", nil, '{"a":4,"b":5}'))
      assert.same({ sum = 9 }, helpers.json(conn:read_response().body))
    end)

    it("answers a chunked body sent one byte per write", function()
      conn = helpers.connect(server.port):nodelay()
      conn:send_bytewise(req("POST", "/add", { { "Transfer-Encoding", "chunked" } },
        helpers.chunked('{"a":10,"b":5}', 3)))
      assert.same({ sum = 15 }, helpers.json(conn:read_response().body))
    end)

    it("answers a whole request at once when the next one has only begun", function()
      conn = helpers.connect(server.port):nodelay()
      local second = req("GET", "/users/77", { { "X-Extra", "x" } })
      for _, split in ipairs({ 1, 4, 12, 25, #second - 2, #second - 1 }) do
        conn:send(req("GET", "/health") .. second:sub(1, split))
        -- The first response must come before the rest of the second request.
        expect_health(conn:read_response())
        conn:send(second:sub(split + 1))
        expect_user(conn:read_response(), 77)
      end
    end)

    it("answers when a body arrives after its head in a later write", function()
      conn = helpers.connect(server.port):nodelay()
      local full = req("POST", "/add", nil, '{"a":100,"b":1}')
      local head_end = full:find("\r\n\r\n", 1, true) + 3
      conn:send(full:sub(1, head_end))
      conn:send(full:sub(head_end + 1, head_end + 5))
      conn:send(full:sub(head_end + 6))
      assert.same({ sum = 101 }, helpers.json(conn:read_response().body))
    end)
  end)

  describe("connection close", function()
    it("closes after the response when the request says Connection: close", function()
      conn = helpers.connect(server.port)
      local resp = conn:request("GET", "/health", { { "Connection", "close" } })
      expect_health(resp)
      assert.is_true(conn:wait_eof(5))
    end)

    it("does not answer requests pipelined behind Connection: close", function()
      conn = helpers.connect(server.port)
      conn:send(req("GET", "/health", { { "Connection", "close" } }) .. req("GET", "/users/1"))
      expect_health(conn:read_response())
      assert.is_true(conn:wait_eof(5))
    end)

    it("answers a request whose client half-closed after sending it", function()
      conn = helpers.connect(server.port)
      conn:send(req("GET", "/health"))
      assert(conn.sock:shutdown("send"))
      expect_health(conn:read_response())
      assert.is_true(conn:wait_eof(5))
    end)

    it("closes after the response to HTTP/1.0 without keep-alive", function()
      conn = helpers.connect(server.port)
      conn:send("GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
      local resp = conn:read_response()
      expect_health(resp)
      assert.is_true(conn:wait_eof(5))
    end)

    it("closes after the response to HTTP/1.0 without a Host header", function()
      conn = helpers.connect(server.port)
      conn:send("GET /health HTTP/1.0\r\n\r\n")
      expect_health(conn:read_response())
      assert.is_true(conn:wait_eof(5))
    end)

    it("keeps an HTTP/1.0 connection with Connection: keep-alive open", function()
      conn = helpers.connect(server.port)
      conn:send("GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n")
      local resp = conn:read_response()
      expect_health(resp)
      -- An HTTP/1.0 client only reuses the connection if told it may.
      assert.equal("keep-alive", (resp.headers["connection"] or ""):lower())
      conn:send("GET /users/3 HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n")
      expect_user(conn:read_response(), 3)
    end)
  end)

  describe("HEAD", function()
    it("sends GET's headers with no body, so the next response parses", function()
      conn = helpers.connect(server.port)
      local get = conn:request("GET", "/health")
      local head = conn:request("HEAD", "/health")
      assert.equal(200, head.status)
      assert.equal(tostring(#get.body), head.headers["content-length"])
      assert.equal(get.headers["content-type"], head.headers["content-type"])
      assert.equal("", head.body)
      -- Had the HEAD response carried a body, these bytes would start with it.
      expect_user(conn:request("GET", "/users/9"), 9)
    end)

    it("sends no body for HEAD of an unknown path or a wrong method", function()
      conn = helpers.connect(server.port)
      conn:send(req("HEAD", "/no/such/path") .. req("HEAD", "/add") .. req("GET", "/users/4"))
      local missing = conn:read_response({ head = true })
      assert.equal(404, missing.status)
      local wrong = conn:read_response({ head = true })
      assert.equal(405, wrong.status)
      assert.matches("POST", wrong.headers["allow"] or "", 1, true)
      -- Body bytes after either HEAD response would break this one.
      expect_user(conn:read_response(), 4)
    end)

    it("sends no body for HEAD of a large resource", function()
      conn = helpers.connect(server.port)
      conn:send(req("HEAD", "/blob/100000") .. req("GET", "/blob/11"))
      local head = conn:read_response({ head = true })
      assert.equal(200, head.status)
      assert.equal("100000", head.headers["content-length"])
      local resp = conn:read_response()
      assert.equal(200, resp.status)
      assert.equal("abcdefghija", resp.body)
    end)
  end)

  describe("request bodies", function()
    it("reads a body framed by Content-Length", function()
      local status, _, body = helpers.request(server.port, "POST", "/add",
        { { "Content-Length", "13" } }, '{"a":1,"b":2}')
      assert.equal(200, status)
      assert.same({ sum = 3 }, helpers.json(body))
    end)

    it("reads a chunked body", function()
      conn = helpers.connect(server.port)
      local resp = conn:request("POST", "/add", { { "Transfer-Encoding", "chunked" } },
        helpers.chunked('{"a":30,"b":12}', 5))
      assert.equal(200, resp.status)
      assert.same({ sum = 42 }, helpers.json(resp.body))
      -- The connection stays usable after the last chunk and trailer.
      expect_health(conn:request("GET", "/health"))
    end)

    it("reads a chunked body with chunk extensions and a trailer", function()
      conn = helpers.connect(server.port)
      local body = "5;ext=1\r\n{\"a\":\r\n9\r\n2,\"b\":40}\r\n0\r\nX-Trailer: t\r\n\r\n"
      local resp = conn:request("POST", "/add", { { "Transfer-Encoding", "chunked" } }, body)
      assert.equal(200, resp.status)
      assert.same({ sum = 42 }, helpers.json(resp.body))
      expect_health(conn:request("GET", "/health"))
    end)

    it("sends 100 Continue before reading a body the client holds back", function()
      conn = helpers.connect(server.port)
      local body = '{"a":2,"b":3}'
      conn:send(req("POST", "/add", { { "Content-Length", tostring(#body) },
                                      { "Expect", "100-continue" } }))
      local interim = conn:read_response({ interim = true })
      assert.equal(100, interim.status)
      conn:send(body)
      local resp = conn:read_response()
      assert.equal(200, resp.status)
      assert.same({ sum = 5 }, helpers.json(resp.body))
    end)

    it("answers an unknown expectation with 417", function()
      local status = helpers.request(server.port, "POST", "/add",
        { { "Expect", "something-else" } }, '{"a":2,"b":3}')
      assert.equal(417, status)
    end)
  end)

  describe("malformed requests", function()
    local function expect_400_then_close(bytes)
      conn = helpers.connect(server.port)
      conn:send(bytes)
      local resp = conn:read_response()
      assert.truthy(resp, "connection closed without a 400 response")
      assert.equal(400, resp.status)
      helpers.json_error(resp)
      assert.is_true(conn:wait_eof(5))
    end

    it("answers a header line without a colon with 400 and closes", function()
      expect_400_then_close("GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n")
    end)

    it("answers garbage bytes with 400 and closes", function()
      expect_400_then_close("\1\2\3 this is not http \255\254\r\n\r\n")
    end)

    it("answers a request line with no version with 400 and closes", function()
      expect_400_then_close("GET /health\r\nHost: x\r\n\r\n")
    end)

    it("answers pipelined good requests first, then 400, then closes", function()
      conn = helpers.connect(server.port)
      conn:send(req("GET", "/health") .. req("GET", "/users/2") ..
        "GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n" .. req("GET", "/health"))
      expect_health(conn:read_response())
      expect_user(conn:read_response(), 2)
      local resp = conn:read_response()
      assert.truthy(resp, "connection closed without a 400 response")
      assert.equal(400, resp.status)
      helpers.json_error(resp)
      assert.is_true(conn:wait_eof(5))
    end)

    it("answers a bad chunk size with 400 and closes", function()
      expect_400_then_close(req("POST", "/add", { { "Transfer-Encoding", "chunked" } },
        "zz\r\nabc\r\n0\r\n\r\n"))
    end)

    it("keeps serving other connections after a malformed request", function()
      expect_400_then_close("\0\0\0\0\r\n\r\n")
      conn:close()
      conn = helpers.connect(server.port)
      expect_health(conn:request("GET", "/health"))
    end)
  end)

  -- DESIGN.md section 6: shapes that llhttp 8.1.0 or a lax core would let
  -- through, and that let a proxy and this server disagree on framing.
  describe("request smuggling shapes", function()
    local function expect_status_then_close(bytes, want)
      conn = helpers.connect(server.port)
      conn:send(bytes)
      local resp = conn:read_response()
      assert.truthy(resp, "connection closed without a response")
      assert.equal(want, resp.status)
      helpers.json_error(resp)
      if want == 400 then
        assert.is_true(conn:wait_eof(5))
      end
    end

    it("rejects Content-Length together with Transfer-Encoding", function()
      expect_status_then_close("POST /add HTTP/1.1\r\nHost: x\r\nContent-Length: 13\r\n" ..
        "Transfer-Encoding: chunked\r\n\r\nd\r\n{\"a\":1,\"b\":2}\r\n0\r\n\r\n", 400)
    end)

    it("rejects two differing Content-Length headers", function()
      expect_status_then_close("POST /add HTTP/1.1\r\nHost: x\r\nContent-Length: 13\r\n" ..
        "Content-Length: 5\r\n\r\n{\"a\":1,\"b\":2}", 400)
    end)

    it("rejects a Transfer-Encoding that does not end in chunked", function()
      expect_status_then_close("POST /add HTTP/1.1\r\nHost: x\r\n" ..
        "Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n", 400)
    end)

    it("rejects an HTTP/1.1 request without Host", function()
      expect_status_then_close("GET /health HTTP/1.1\r\n\r\n", 400)
    end)

    it("rejects an HTTP/1.1 request with two Host headers", function()
      expect_status_then_close("GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400)
    end)

    it("rejects obs-fold header continuation lines", function()
      expect_status_then_close("GET /health HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n folded\r\n\r\n", 400)
    end)

    it("rejects a bare CR inside a header value", function()
      expect_status_then_close("GET /health HTTP/1.1\r\nHost: x\r\nX-A: 1\r2\r\n\r\n", 400)
    end)

    it("rejects \\r\\n\\rX as the end of a head", function()
      expect_status_then_close("GET /health HTTP/1.1\r\nHost: x\r\n\rX", 400)
    end)

    it("rejects a bare CR in a chunk size line", function()
      expect_status_then_close("POST /add HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" ..
        "d\rX\r\n{\"a\":1,\"b\":2}\r\n0\r\n\r\n", 400)
    end)

    it("rejects a NUL byte in a header value", function()
      expect_status_then_close("GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n", 400)
    end)

    it("answers an unknown transfer coding with 501", function()
      expect_status_then_close("POST /add HTTP/1.1\r\nHost: x\r\n" ..
        "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501)
    end)

    it("answers HTTP/2.0 on the request line with 505", function()
      expect_status_then_close("GET /health HTTP/2.0\r\nHost: x\r\n\r\n", 505)
    end)
  end)

  describe("a slow reader", function()
    it("does not delay other connections", function()
      local hog = helpers.connect(server.port)
      support.defer(function() hog:close() end)
      hog:send(req("GET", "/blob/67108864"))
      -- Wait until the response has begun (the handler's own work is
      -- over and the server is writing), without reading any of it.
      local readable = socket.select({ hog.sock }, nil, 10)
      assert.truthy(readable and #readable == 1, "no response bytes for GET /blob/67108864 in 10s")
      local settle = helpers.now() + 0.2
      while helpers.now() < settle do helpers.nap(0.02) end
      -- Never read from hog. Another connection is served all the same: a
      -- server that waited for hog to take its 64 MiB would never answer.
      conn = helpers.connect(server.port)
      expect_health(conn:request("GET", "/health", nil, nil, { timeout = 10 }))
      hog:close()
      -- The server survives the slow reader going away mid-response.
      conn:close()
      conn = helpers.connect(server.port)
      expect_health(conn:request("GET", "/health"))
    end)
  end)
end)

-- A timeout of 2 s: a client a busy machine holds up for a moment still
-- keeps its connection in the test that says it must.
describe("idle timeout", function()
  local server = support.serve("scripts/api.lua", { "--idle-timeout", "2" })

  it("closes an idle keep-alive connection", function()
    local conn = helpers.connect(server.port)
    support.defer(function() conn:close() end)
    local resp = conn:request("GET", "/health")
    assert.equal(200, resp.status)
    local t0 = helpers.now()
    assert.is_true(conn:wait_eof(15))
    local elapsed = helpers.now() - t0
    assert.is_true(elapsed >= 1.0, ("closed after %.2fs, before the 2s timeout"):format(elapsed))
  end)

  it("closes a connection that never sends a byte", function()
    local conn = helpers.connect(server.port)
    support.defer(function() conn:close() end)
    local deadline = helpers.now() + 15
    while not conn.eof and helpers.now() < deadline do conn:fill(deadline) end
    assert.is_true(conn.eof, "silent connection still open after 15s")
    -- A server may say 408 first; anything else is wrong.
    if #conn.buf > 0 then
      local resp = helpers.parse_response(conn.buf, true)
      assert.equal(408, resp.status)
    end
  end)

  it("does not close a connection that keeps working", function()
    local conn = helpers.connect(server.port)
    support.defer(function() conn:close() end)
    -- Six requests 0.5s apart span 3s, longer than the timeout.
    for i = 1, 6 do
      local resp = conn:request("GET", "/users/" .. i)
      assert.equal(200, resp.status)
      local deadline = helpers.now() + 0.5
      while helpers.now() < deadline do conn:fill(deadline) end
      assert.is_false(conn.eof, "server closed a connection idle for only 0.5s")
    end
  end)
end)
