-- The example apps scripts/hello.lua and scripts/api.lua, over real sockets.
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local cjson = require("cjson")

describe("scripts/hello.lua", function()
  local server = support.serve("scripts/hello.lua")

  it("GET /hello answers 200 'Hello, World!' as UTF-8 plain text", function()
    local status, headers, body = helpers.request(server.port, "GET", "/hello")
    assert.equal(200, status)
    assert.equal("Hello, World!", body)
    assert.equal("text/plain; charset=utf-8", headers["content-type"])
    assert.equal("13", headers["content-length"])
  end)

  it("answers an unknown path with 404 and a JSON error", function()
    local status, _, _, resp = helpers.request(server.port, "GET", "/nope")
    assert.equal(404, status)
    helpers.json_error(resp)
  end)
end)

describe("scripts/api.lua", function()
  local server = support.serve("scripts/api.lua")

  local function get_json(target)
    local status, headers, body, resp = helpers.request(server.port, "GET", target)
    return status, helpers.json(body), headers, resp
  end

  local function post_add(body)
    local status, headers, rbody, resp = helpers.request(server.port, "POST", "/add",
      { { "Content-Type", "application/json" } }, body)
    return status, rbody, resp, headers
  end

  describe("GET /health", function()
    it("answers 200 {\"ok\":true} as application/json", function()
      local status, headers, body = helpers.request(server.port, "GET", "/health")
      assert.equal(200, status)
      assert.equal('{"ok":true}', body)
      assert.matches("^application/json", headers["content-type"])
      assert.equal(tostring(#body), headers["content-length"])
    end)
  end)

  describe("GET /users/:id", function()
    it("answers the user for a numeric id", function()
      local status, v, headers = get_json("/users/42")
      assert.equal(200, status)
      assert.matches("^application/json", headers["content-type"])
      assert.same({ id = 42, name = "user-42" }, v)
    end)

    it("accepts id 0", function()
      local status, v = get_json("/users/0")
      assert.equal(200, status)
      assert.same({ id = 0, name = "user-0" }, v)
    end)

    it("writes ids up to 2^53 - 1 exactly", function()
      local _, _, body = helpers.request(server.port, "GET", "/users/9007199254740991")
      assert.is_true(helpers.json_object_text(
        { '"id":9007199254740991', '"name":"user-9007199254740991"' }, body))
    end)

    for _, bad in ipairs({ "abc", "-1", "1.5", "4x", "9007199254740992" }) do
      it("answers 400 with a JSON error for id " .. bad, function()
        local status, _, _, resp = helpers.request(server.port, "GET", "/users/" .. bad)
        assert.equal(400, status)
        helpers.json_error(resp)
      end)
    end
  end)

  describe("POST /add", function()
    it("adds two integers", function()
      local status, body, resp = post_add('{"a":1,"b":2}')
      assert.equal(200, status)
      assert.matches("^application/json", resp.headers["content-type"])
      assert.same({ sum = 3 }, helpers.json(body))
    end)

    it("adds negative integers", function()
      local status, body = post_add('{"a":-5,"b":2}')
      assert.equal(200, status)
      assert.same({ sum = -3 }, helpers.json(body))
    end)

    for _, bad in ipairs({ '{"a":1}', '{"b":2}', '{"a":"1","b":2}', '{"a":1.5,"b":2}',
                           '{"a":1,"b":true}', '{"a":1,"b":null}' }) do
      it("answers 422 with a JSON error for " .. bad, function()
        local status, _, resp = post_add(bad)
        assert.equal(422, status)
        helpers.json_error(resp)
      end)
    end

    for _, bad in ipairs({ "not json", '{"a":1,', "" }) do
      it(("answers 400 naming JSON for the body %q"):format(bad), function()
        local status, _, resp = post_add(bad)
        assert.equal(400, status)
        local msg = helpers.json_error(resp)
        assert.matches("json", msg:lower(), 1, true)
      end)
    end

    it("answers GET with 405 and Allow: POST", function()
      local status, headers, _, resp = helpers.request(server.port, "GET", "/add")
      assert.equal(405, status)
      assert.truthy(headers["allow"], "405 without an Allow header")
      local methods = {}
      for m in headers["allow"]:gmatch("[^,%s]+") do methods[m] = true end
      assert.truthy(methods.POST, "Allow is " .. headers["allow"])
      assert.falsy(methods.GET, "Allow lists GET: " .. headers["allow"])
      helpers.json_error(resp)
    end)
  end)

  describe("GET /search", function()
    it("decodes + as a space", function()
      local status, v = get_json("/search?q=a+b")
      assert.equal(200, status)
      assert.same({ q = "a b", length = 3 }, v)
    end)

    it("decodes %20 as a space", function()
      local status, v = get_json("/search?q=a%20b")
      assert.equal(200, status)
      assert.same({ q = "a b", length = 3 }, v)
    end)

    it("counts the length in bytes after decoding UTF-8 escapes", function()
      local status, v = get_json("/search?q=a+b+c%C3%A9")
      assert.equal(200, status)
      assert.same({ q = "a b c\195\169", length = 7 }, v)
    end)
  end)

  describe("GET /blob/:n", function()
    for _, n in ipairs({ 0, 1, 9, 10, 11, 1000, 1048577 }) do
      it(("answers %d bytes of abcdefghij repeating"):format(n), function()
        local status, headers, body = helpers.request(server.port, "GET", "/blob/" .. n, nil, nil,
          { timeout = 10 })
        assert.equal(200, status)
        assert.equal(tostring(n), headers["content-length"])
        assert.is_nil(headers["transfer-encoding"])
        assert.equal(n, #body)
        local diff = helpers.first_difference(body, helpers.blob(n))
        assert.is_nil(diff, ("body differs at byte %s"):format(tostring(diff)))
      end)
    end
  end)

  describe("errors", function()
    it("answers an unknown path with 404 and a JSON error", function()
      local status, _, _, resp = helpers.request(server.port, "GET", "/no/such/path")
      assert.equal(404, status)
      helpers.json_error(resp)
    end)

    it("answers POST /health with 405, Allow naming GET, and a JSON error", function()
      local status, headers, _, resp = helpers.request(server.port, "POST", "/health", nil, "")
      assert.equal(405, status)
      assert.matches("GET", headers["allow"] or "", 1, true)
      helpers.json_error(resp)
    end)

    it("keeps JSON errors decodable by cjson", function()
      local _, _, body = helpers.request(server.port, "GET", "/users/abc")
      local v = cjson.decode(body)
      assert.equal("string", type(v.error))
    end)
  end)
end)
