-- Size and count limits: --max-body-size (413), --max-header-size (431 for
-- the head, 414 for the request line) and --max-headers (431).
local helpers = require("spec.helpers")
local support = require("spec.support.server")

local req = helpers.build_request

-- A POST /add body of exactly `size` bytes: {"a":1,"b":2} padded with spaces.
local function add_body(size)
  local json = '{"a":1,"b":2}'
  return json:sub(1, -2) .. (" "):rep(size - #json) .. "}"
end

local function headers_with(n)
  local list = {}
  for i = 1, n do list[#list + 1] = { "X-Field-" .. i, "v" .. i } end
  return list
end

-- Sends `bytes` on a new connection and returns the response (or raises).
local function exchange(port, bytes, opts)
  local conn = helpers.connect(port)
  local ok, resp = pcall(function()
    conn:send(bytes)
    local r = conn:read_response(opts)
    assert.truthy(r, "connection closed without a response")
    return r
  end)
  conn:close()
  if not ok then error(resp, 0) end
  return resp
end

describe("limits with defaults", function()
  local server = support.serve("scripts/api.lua")

  it("accepts a 1 MiB body (the default limit)", function()
    local resp = exchange(server.port, req("POST", "/add", nil, add_body(1048576)), { timeout = 10 })
    assert.equal(200, resp.status)
    assert.same({ sum = 3 }, helpers.json(resp.body))
  end)

  it("answers a declared body one byte over 1 MiB with 413", function()
    local resp = exchange(server.port, req("POST", "/add", { { "Content-Length", "1048577" } }))
    assert.equal(413, resp.status)
    helpers.json_error(resp)
  end)

  it("accepts a head of 8 KiB", function()
    local resp = exchange(server.port, req("GET", "/health", { { "X-Big", ("b"):rep(8192) } }))
    assert.equal(200, resp.status)
  end)

  it("answers a head over 16384 bytes with 431", function()
    local resp = exchange(server.port, req("GET", "/health", { { "X-Big", ("b"):rep(17000) } }))
    assert.equal(431, resp.status)
    helpers.json_error(resp)
  end)

  it("answers a head over the limit spread over many headers with 431", function()
    local list = {}
    for i = 1, 40 do list[#list + 1] = { "X-Part-" .. i, ("p"):rep(500) } end
    local resp = exchange(server.port, req("GET", "/health", list))
    assert.equal(431, resp.status)
    helpers.json_error(resp)
  end)

  it("accepts 100 header fields", function()
    -- Host plus 99 more.
    local resp = exchange(server.port, req("GET", "/health", headers_with(99)))
    assert.equal(200, resp.status)
  end)

  it("answers 101 header fields with 431", function()
    local resp = exchange(server.port, req("GET", "/health", headers_with(100)))
    assert.equal(431, resp.status)
    helpers.json_error(resp)
  end)

  it("accepts a long query string under the limit", function()
    local q = ("q"):rep(4000)
    local resp = exchange(server.port, req("GET", "/search?q=" .. q))
    assert.equal(200, resp.status)
    assert.equal(4000, helpers.json(resp.body).length)
  end)

  it("answers a request line over the limit with 414", function()
    local resp = exchange(server.port, req("GET", "/search?q=" .. ("q"):rep(20000)))
    assert.equal(414, resp.status)
    helpers.json_error(resp)
  end)

  it("answers a long request line sent one piece at a time with 414", function()
    local conn = helpers.connect(server.port):nodelay()
    local ok, err = pcall(function()
      conn:send("GET /search?q=")
      for _ = 1, 20 do conn:send(("q"):rep(1000)) end
      conn:send(" HTTP/1.1\r\nHost: x\r\n\r\n")
      local resp = conn:read_response()
      assert.truthy(resp, "connection closed without a response")
      assert.equal(414, resp.status)
    end)
    conn:close()
    if not ok then error(err, 0) end
  end)
end)

describe("limits from options", function()
  local server = support.serve("scripts/api.lua", {
    "--max-body-size", "1024",
    "--max-header-size", "2048",
    "--max-headers", "10",
  })

  describe("--max-body-size 1024", function()
    it("accepts a body of exactly 1024 bytes", function()
      local resp = exchange(server.port, req("POST", "/add", nil, add_body(1024)))
      assert.equal(200, resp.status)
      assert.same({ sum = 3 }, helpers.json(resp.body))
    end)

    it("accepts a chunked body of exactly 1024 bytes", function()
      local resp = exchange(server.port, req("POST", "/add", { { "Transfer-Encoding", "chunked" } },
        helpers.chunked(add_body(1024), 300)))
      assert.equal(200, resp.status)
      assert.same({ sum = 3 }, helpers.json(resp.body))
    end)

    it("answers a declared Content-Length over the limit with 413 before the body", function()
      -- The body is never sent: only a server that checks the declared
      -- length can answer.
      local resp = exchange(server.port, req("POST", "/add", { { "Content-Length", "2048" } }))
      assert.equal(413, resp.status)
      helpers.json_error(resp)
    end)

    it("answers a body of 1025 bytes with 413", function()
      local resp = exchange(server.port, req("POST", "/add", nil, add_body(1025)))
      assert.equal(413, resp.status)
      helpers.json_error(resp)
    end)

    it("answers a chunked body that grows over the limit with 413", function()
      -- Each chunk is under the limit; together they are over it.
      local resp = exchange(server.port, req("POST", "/add", { { "Transfer-Encoding", "chunked" } },
        helpers.chunked(add_body(2000), 600)))
      assert.equal(413, resp.status)
      helpers.json_error(resp)
    end)

    it("answers a chunked body over the limit sent in pieces with 413", function()
      local conn = helpers.connect(server.port):nodelay()
      local ok, err = pcall(function()
        conn:send(req("POST", "/add", { { "Transfer-Encoding", "chunked" } }))
        local resp
        for _ = 1, 10 do
          local sent = conn:try_send(("200\r\n%s\r\n"):format(("x"):rep(512)))
          if not sent then break end
          conn:read_available()
          resp = conn:take_response()
          if resp then break end
        end
        resp = resp or conn:read_response()
        assert.truthy(resp, "connection closed without a response")
        assert.equal(413, resp.status)
      end)
      conn:close()
      if not ok then error(err, 0) end
    end)
  end)

  describe("--max-header-size 2048", function()
    it("accepts a head under the limit", function()
      local resp = exchange(server.port, req("GET", "/health", { { "X-Big", ("b"):rep(1000) } }))
      assert.equal(200, resp.status)
    end)

    it("answers a head over the limit with 431", function()
      local resp = exchange(server.port, req("GET", "/health", { { "X-Big", ("b"):rep(3000) } }))
      assert.equal(431, resp.status)
      helpers.json_error(resp)
    end)

    it("answers a request line over the limit with 414", function()
      local resp = exchange(server.port, req("GET", "/search?q=" .. ("q"):rep(3000)))
      assert.equal(414, resp.status)
      helpers.json_error(resp)
    end)
  end)

  describe("--max-headers 10", function()
    it("accepts 10 header fields", function()
      local resp = exchange(server.port, req("GET", "/health", headers_with(9)))
      assert.equal(200, resp.status)
    end)

    it("answers 11 header fields with 431", function()
      local resp = exchange(server.port, req("GET", "/health", headers_with(10)))
      assert.equal(431, resp.status)
      helpers.json_error(resp)
    end)
  end)
end)
