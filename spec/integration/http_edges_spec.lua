-- HTTP edges the running server decides, over real sockets: "/" reaching a
-- catch-all splat (in an app and in the mock), the Server field and
-- --server-header, response heads a handler builds (one Content-Type,
-- no control bytes), 100-continue ignored in HTTP/1.0, the access log's
-- escaping of the request line, and --listen with a host name.
local helpers = require("spec.helpers")
local support = require("spec.support.server")

local APP = "spec/fixtures/http_edges.lua"

-- The line of the fixture that holds `text`.
local function fixture_line(text)
  local n = 0
  for line in io.lines(helpers.resolve(APP)) do
    n = n + 1
    if line:find(text, 1, true) then return n end
  end
  error("no line with " .. text .. " in " .. APP)
end

describe("http edges", function()
  local server = support.serve(APP)

  local conn
  after_each(function()
    if conn then conn:close() end
    conn = nil
  end)

  describe("a splat right after the root", function()
    it("matches / with an empty value, as /a/b with a/b", function()
      local status, _, body = helpers.request(server.port, "GET", "/")
      assert.equal(200, status)
      assert.equal("path=", body)
      assert.equal("path=a/b", select(3, helpers.request(server.port, "GET", "/a/b")))
    end)

    it("serves HEAD / from the GET route", function()
      conn = helpers.connect(server.port)
      local resp = conn:request("HEAD", "/")
      assert.equal(200, resp.status)
      assert.equal("5", resp.headers["content-length"])
    end)

    it("answers another method on / with 404, as on any path it alone covers", function()
      for _, path in ipairs({ "/", "/x" }) do
        local status, headers = helpers.request(server.port, "DELETE", path)
        assert.equal(404, status)
        assert.is_nil(headers["allow"])
      end
    end)

    it("adds its methods to the Allow of a 405 that a route without a splat makes", function()
      local status, headers = helpers.request(server.port, "DELETE", "/read")
      assert.equal(405, status)
      assert.equal("GET, HEAD, POST", headers["allow"])
    end)
  end)

  describe("the Server field", function()
    it("is on every response, the core's errors included, once", function()
      conn = helpers.connect(server.port)
      local ok = conn:request("GET", "/")
      assert.same({ "moonport" }, helpers.header_values(ok, "server"))
      local wrong = conn:request("DELETE", "/read")
      assert.equal(405, wrong.status)
      assert.same({ "moonport" }, helpers.header_values(wrong, "server"))
      conn:send("GET / HTTP/1.1\r\n\r\n") -- no Host: the parser's 400
      local bad = conn:read_response()
      assert.equal(400, bad.status)
      assert.same({ "moonport" }, helpers.header_values(bad, "server"))
    end)

    it("is the handler's own when it sets one", function()
      local _, _, _, resp = helpers.request(server.port, "GET", "/server/own")
      assert.same({ "mine/1.0" }, helpers.header_values(resp, "server"))
    end)

    it("is left out with --server-header off, and named with --server-header NAME", function()
      for _, case in ipairs({ { "off", {} }, { "edge/2.0 (lab)", { "edge/2.0 (lab)" } } }) do
        local other = support.start(APP, { "--server-header", case[1] })
        local c = helpers.connect(other.port)
        local resp = c:request("GET", "/")
        assert.same(case[2], helpers.header_values(resp, "server"))
        c:send("GET / HTTP/1.1\r\nHost: a b\r\n\r\n")
        local bad = c:read_response()
        c:close()
        assert.equal(400, bad.status)
        assert.same(case[2], helpers.header_values(bad, "server"))
      end
    end)

    it("refuses a --server-header that is not a field value, with exit 2", function()
      for _, bad in ipairs({ "", "a\1b", "a\r\nX: y", ("n"):rep(129) }) do
        local code, _, err = helpers.run({ "--listen", "127.0.0.1:0", "--server-header", bad, APP })
        assert.equal(2, code)
        assert.matches("server-header", err, 1, true)
      end
    end)
  end)

  describe("response heads a handler builds", function()
    it("carry one Content-Type: the last one set", function()
      local _, _, body, resp = helpers.request(server.port, "GET", "/type/twice")
      assert.equal("<x/>", body)
      assert.same({ "application/xml" }, helpers.header_values(resp, "content-type"))
    end)

    it("refuse a control byte other than HTAB in a value, raising at the handler's line", function()
      local where = ("http_edges.lua:%d: res:header: invalid header 'X-Byte': a name is a token, " ..
        "a value has no control byte but HTAB"):format(
        fixture_line("the line the error must name"))
      for _, byte in ipairs({ 0, 1, 8, 10, 11, 13, 27, 31, 127 }) do
        local status, _, body = helpers.request(server.port, "GET", "/header/" .. byte)
        assert.equal(500, status, "byte " .. byte)
        assert.matches(where, body, 1, true)
      end
      local status, headers, body = helpers.request(server.port, "GET", "/header/9")
      assert.equal(200, status)
      assert.equal("accepted", body)
      assert.equal("a\tb", headers["x-byte"])
    end)
  end)

  describe("Expect: 100-continue", function()
    -- RFC 9110 section 10.1.1: a server MUST ignore it in HTTP/1.0.
    it("gets no 100 Continue in an HTTP/1.0 request", function()
      conn = helpers.connect(server.port)
      conn:send("POST /read HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
      -- The handler waits for the body now; a 100 would come at once.
      conn:fill(helpers.now() + 0.5)
      assert.equal("", conn.buf, "bytes before the body was sent")
      conn:send("hello")
      local resp = conn:read_response({ interim = true })
      assert.equal(200, resp.status)
      assert.equal("5", resp.body)
    end)

    it("gets 100 Continue in an HTTP/1.1 request", function()
      conn = helpers.connect(server.port)
      conn:send("POST /read HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
      assert.equal(100, conn:read_response({ interim = true }).status)
      conn:send("hello")
      assert.equal("5", conn:read_response().body)
    end)
  end)
end)

describe("the mock and /", function()
  local server = support.serve("spec/fixtures/mock_root", nil, { mock = true })

  it("matches a stub whose url is /", function()
    local status, _, body = helpers.request(server.port, "POST", "/", nil, "")
    assert.equal(201, status)
    assert.equal("posted to the root", body)
  end)

  it("serves __files/index.html for GET /", function()
    local status, _, body = helpers.request(server.port, "GET", "/")
    assert.equal(200, status)
    assert.equal("<h1>index</h1>\n", body)
  end)

  it("answers a CORS preflight for /", function()
    local status, headers = helpers.request(server.port, "OPTIONS", "/", {
      Origin = "http://app.test", ["Access-Control-Request-Method"] = "POST" })
    assert.equal(204, status)
    assert.equal("http://app.test", headers["access-control-allow-origin"])
  end)

  it("journals requests for /", function()
    helpers.request(server.port, "GET", "/")
    local status, _, body = helpers.request(server.port, "GET", "/__admin/requests")
    assert.equal(200, status)
    local found
    for _, r in ipairs(helpers.json(body).requests) do
      if r.request.url == "/" then found = true end
    end
    assert.truthy(found, "no journal entry for /: " .. helpers.shorten(body))
  end)
end)

describe("the access log", function()
  it("escapes quotes, backslashes and bytes outside printable ASCII in the request line", function()
    local log_path = os.tmpname()
    support.defer(function() os.remove(log_path) end)
    local server = support.start(APP, { "--access-log", log_path })
    assert.equal(200, (helpers.request(server.port, "GET", '/q"x\\y')))
    local text = helpers.eventually(function()
      local f = io.open(log_path)
      local s = f:read("*a")
      f:close()
      return s:find("\n", 1, true) and s
    end)
    assert.truthy(text, "access log stayed empty")
    assert.matches('"GET /q\\x22x\\x5Cy HTTP/1.1" 200 ', text, 1, true)
    local _, quotes = text:gsub('"', "")
    assert.equal(2, quotes, "the request field is not one quoted string: " .. text)
  end)
end)

describe("--listen with a host name", function()
  it("resolves localhost once and every worker binds its IPv4 loopback address", function()
    local server = support.start(APP, { "--listen", "localhost:0", "--workers", "2" })
    assert.equal("127.0.0.1", server.host)
    for i = 1, 4 do
      assert.equal("path=" .. i, select(3, helpers.request(server.port, "GET", "/" .. i)))
    end
  end)
end)
