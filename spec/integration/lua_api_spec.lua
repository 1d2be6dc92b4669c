-- The public Lua API (DESIGN.md section 4) through spec/fixtures/lua_api.lua.
local helpers = require("spec.helpers")
local support = require("spec.support.server")

describe("Lua API", function()
  local server = support.serve("spec/fixtures/lua_api.lua")

  local function get(target, headers)
    local status, hdrs, body, resp = helpers.request(server.port, "GET", target, headers)
    return status, body, hdrs, resp
  end

  local function get_json(target, headers)
    local status, body, hdrs = get(target, headers)
    assert.equal(200, status, "body: " .. helpers.shorten(body))
    return helpers.json(body), hdrs
  end

  describe("declaring routes", function()
    for _, m in ipairs({ "GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS" }) do
      it(("app:%s serves %s"):format(m:lower(), m), function()
        local body = m ~= "GET" and m ~= "OPTIONS" and "" or nil
        local status, _, rbody = helpers.request(server.port, m, "/method", nil, body)
        assert.equal(200, status)
        assert.equal(m:lower() .. " " .. m, rbody)
      end)
    end

    it("app:route declares a route for a named method", function()
      local status, _, body = helpers.request(server.port, "GET", "/routed")
      assert.equal(200, status)
      assert.equal("route GET", body)
      status, _, body = helpers.request(server.port, "PUT", "/routed", nil, "")
      assert.equal(200, status)
      assert.equal("route PUT", body)
    end)

    it("answers a method with no route on a routed path with 405 and Allow", function()
      local status, headers, _, resp = helpers.request(server.port, "POST", "/routed", nil, "")
      assert.equal(405, status)
      local allow = headers["allow"] or ""
      assert.matches("GET", allow, 1, true)
      assert.matches("PUT", allow, 1, true)
      helpers.json_error(resp)
    end)

    it("serves HEAD from GET without a body", function()
      local conn = helpers.connect(server.port)
      local ok, err = pcall(function()
        local get = conn:request("GET", "/json-out")
        local head = conn:request("HEAD", "/json-out")
        assert.equal(200, head.status)
        assert.equal(tostring(#get.body), head.headers["content-length"])
        assert.equal("", head.body)
        -- Body bytes after the HEAD response would break this one.
        assert.equal("x", conn:request("GET", "/chain").body)
      end)
      conn:close()
      if not ok then error(err, 0) end
    end)
  end)

  describe("patterns", function()
    it("prefers a literal segment to a parameter and a splat", function()
      assert.same({ kind = "literal" }, get_json("/files/special"))
    end)

    it("prefers a parameter to a splat", function()
      assert.same({ kind = "param", name = "report" }, get_json("/files/report"))
    end)

    it("matches a splat across several segments", function()
      assert.same({ kind = "splat", rest = "a/b/c.txt" }, get_json("/files/a/b/c.txt"))
    end)

    it("does not let a literal match a longer segment", function()
      assert.same({ kind = "param", name = "specialist" }, get_json("/files/specialist"))
    end)

    it("matches a splat under a literal-looking prefix", function()
      assert.same({ kind = "splat", rest = "special/x" }, get_json("/files/special/x"))
    end)

    it("percent-decodes path parameters", function()
      assert.same({ kind = "param", name = "hello world" }, get_json("/files/hello%20world"))
    end)

    it("fills req.params for several parameters", function()
      assert.same({ uid = "7", pid = "99" }, get_json("/users/7/posts/99"))
    end)

    it("answers a path matching no pattern with 404 and a JSON error", function()
      local status, _, _, resp = get("/users/7/posts")
      assert.equal(404, status)
      helpers.json_error(resp)
    end)
  end)

  describe("req", function()
    it("has method, path, query_string and remote_addr", function()
      local v = get_json("/inspect?a=1&b=two")
      assert.equal("GET", v.method)
      assert.equal("/inspect", v.path)
      assert.equal("a=1&b=two", v.query_string)
      assert.equal("127.0.0.1", v.remote_addr)
    end)

    it("req:query decodes percent escapes and + as space", function()
      local v = get_json("/query?name=a+b%2Bc&x=%41%c3%a9")
      assert.equal("/query", v.path)
      assert.equal("name=a+b%2Bc&x=%41%c3%a9", v.query_string)
      assert.equal("a b+c", v.name)
      assert.equal("A\195\169", v.x)
      assert.is_true(v.missing_is_nil)
    end)

    it("req:header is case-insensitive and nil for an absent header", function()
      local v = get_json("/header", { { "X-Mixed-Case", "value-1" } })
      assert.equal("value-1", v.lower)
      assert.equal("value-1", v.upper)
      assert.equal("value-1", v.exact)
      assert.is_true(v.absent_is_nil)
    end)

    it("req:header leaves out whitespace around the value", function()
      -- RFC 9110 section 5.5: leading and trailing OWS are not part of it.
      local v = get_json("/header", { { "X-Mixed-Case", " \t spaced value \t " } })
      assert.equal("spaced value", v.lower)
    end)

    it("req:headers returns the request headers", function()
      local v = get_json("/headers", { { "X-One", "1" }, { "X-Two", "two" } })
      assert.equal("table", v.kind)
      assert.equal("1", v.one)
      assert.equal("two", v.two)
    end)

    it("req:body returns the body", function()
      local body = "line one\r\nline two\0with nul"
      local status, _, rbody = helpers.request(server.port, "POST", "/body", nil, body)
      assert.equal(200, status)
      assert.same({ length = #body, body = body }, helpers.json(rbody))
    end)

    it("req:body returns a chunked body joined", function()
      local body = ("0123456789"):rep(50)
      local status, _, rbody = helpers.request(server.port, "POST", "/body",
        { { "Transfer-Encoding", "chunked" } }, helpers.chunked(body, 7))
      assert.equal(200, status)
      assert.same({ length = #body, body = body }, helpers.json(rbody))
    end)

    it("req:body returns an empty string for no body", function()
      local status, _, rbody = helpers.request(server.port, "POST", "/body", nil, "")
      assert.equal(200, status)
      assert.same({ length = 0, body = "" }, helpers.json(rbody))
    end)

    it("req:json decodes a JSON body", function()
      local status, _, body = helpers.request(server.port, "POST", "/json", nil, '{"k":[1,2],"s":"x"}')
      assert.equal(200, status)
      assert.same({ value = { k = { 1, 2 }, s = "x" } }, helpers.json(body))
    end)

    it("req:json returns nil and an error string for bad JSON", function()
      local status, _, body = helpers.request(server.port, "POST", "/json", nil, "{not json")
      assert.equal(400, status)
      local v = helpers.json(body)
      assert.is_true(v.returned_nil)
      assert.equal("string", v.err_type)
      assert.is_true(#v.err > 0)
    end)
  end)

  describe("res", function()
    it("chains status, header and send", function()
      local status, body, headers = get("/chain")
      assert.equal(201, status)
      assert.equal("1", headers["x-a"])
      assert.equal("x", body)
      assert.equal("1", headers["content-length"])
    end)

    it("keeps repeated Set-Cookie headers as separate lines", function()
      local status, body, _, resp = get("/cookies")
      assert.equal(200, status)
      assert.equal("cookies", body)
      assert.same({ "a=1; Path=/", "b=2; Path=/" }, helpers.header_values(resp, "Set-Cookie"))
    end)

    it("res:json sends JSON with an application/json Content-Type", function()
      local v, headers = get_json("/json-out")
      assert.matches("^application/json", headers["content-type"])
      assert.same({ list = { 1, 2, 3 }, nested = { k = "v" } }, v)
    end)

    it("res:write without a declared length uses chunked framing", function()
      local status, body, headers, resp = get("/stream")
      assert.equal(200, status)
      assert.equal("chunked", headers["transfer-encoding"])
      assert.is_nil(headers["content-length"])
      assert.is_true(resp.chunked)
      assert.equal("hello, streamed world", body)
    end)

    for _, n in ipairs({ 65537, 4194304 }) do
      it(("streams %d bytes with res:write and keeps the connection"):format(n), function()
        local conn = helpers.connect(server.port)
        local ok, err = pcall(function()
          local resp = conn:request("GET", "/stream-big/" .. n, nil, nil, { timeout = 10 })
          assert.equal(200, resp.status)
          assert.equal("chunked", resp.headers["transfer-encoding"])
          assert.equal(n, #resp.body)
          local diff = helpers.first_difference(resp.body, helpers.blob(n))
          assert.is_nil(diff, ("body differs at byte %s"):format(tostring(diff)))
          assert.equal("x", conn:request("GET", "/chain").body)
        end)
        conn:close()
        if not ok then error(err, 0) end
      end)
    end

    it("keeps a connection usable after a chunked response", function()
      local conn = helpers.connect(server.port)
      local ok, err = pcall(function()
        assert.equal("hello, streamed world", conn:request("GET", "/stream").body)
        assert.equal("x", conn:request("GET", "/chain").body)
      end)
      conn:close()
      if not ok then error(err, 0) end
    end)

    it("HEAD of a streamed route sends no body", function()
      local conn = helpers.connect(server.port)
      local ok, err = pcall(function()
        local head = conn:request("HEAD", "/stream")
        assert.equal(200, head.status)
        assert.equal("x", conn:request("GET", "/chain").body)
      end)
      conn:close()
      if not ok then error(err, 0) end
    end)

    it("res:write after a Content-Length header sends the raw body", function()
      local status, body, headers, resp = get("/stream-length")
      assert.equal(200, status)
      assert.equal("11", headers["content-length"])
      assert.is_nil(headers["transfer-encoding"])
      assert.is_nil(resp.chunked)
      assert.equal("hello world", body)
    end)

    it("res:finish ends a response with no body", function()
      local conn = helpers.connect(server.port)
      local ok, err = pcall(function()
        local resp = conn:request("GET", "/finish")
        assert.equal(202, resp.status)
        assert.equal("", resp.body)
        assert.is_nil(resp.until_close, "body was delimited by closing the connection")
        assert.equal("x", conn:request("GET", "/chain").body)
      end)
      conn:close()
      if not ok then error(err, 0) end
    end)
  end)

  it("seeds math.random anew in every Lua state", function()
    local _, first = get("/drawn-at-load")
    local again = require("spec.support.process").start("spec/fixtures/lua_api.lua")
    local ok, err = pcall(function()
      local _, _, second = helpers.request(again.port, "GET", "/drawn-at-load")
      assert.is_truthy(tonumber(first))
      assert.are_not.equal(first, second)
    end)
    again:stop()
    if not ok then error(err, 0) end
  end)
end)
