-- moonport.cors over real sockets: preflights answered before any other
-- middleware (an authentication middleware declared first included) on
-- paths with and without OPTIONS routes, routed or not; the headers of
-- other responses (credentials with the origin echoed, never "*", Vary,
-- exposed headers); origins not allowed; "*" without credentials; and
-- the mock's CORS, which is the same middleware.
local helpers = require("spec.helpers")
local support = require("spec.support.server")

local APP = "http://app.test"

local function preflight(port, path, origin, method, headers)
  return helpers.request(port, "OPTIONS", path, {
    Origin = origin, ["Access-Control-Request-Method"] = method or "POST",
    ["Access-Control-Request-Headers"] = headers,
  })
end

describe("moonport.cors with a listed origin and credentials", function()
  local server = support.serve("spec/fixtures/cors.lua")

  it("answers preflights before the authentication middleware declared ahead of it", function()
    -- /items has GET and POST routes, /own an OPTIONS route, /nowhere none.
    for _, path in ipairs({ "/items", "/own", "/nowhere", "/" }) do
      local status, h, body = preflight(server.port, path, APP, "DELETE", "Authorization, Content-Type")
      assert.equal(204, status, path)
      assert.equal("", body, path)
      assert.equal(APP, h["access-control-allow-origin"], path)
      assert.equal("true", h["access-control-allow-credentials"], path)
      assert.equal("GET, POST, DELETE", h["access-control-allow-methods"], path)
      assert.equal("Authorization, Content-Type", h["access-control-allow-headers"], path)
      assert.equal("600", h["access-control-max-age"], path)
      assert.truthy(h["vary"]:find("Origin", 1, true), path)
    end
  end)

  it("leaves other OPTIONS requests to the app", function()
    assert.equal(401, (helpers.request(server.port, "OPTIONS", "/own", { Origin = APP })))
    local status, _, body = helpers.request(server.port, "OPTIONS", "/own",
      { Origin = APP, Authorization = "Bearer ok" })
    assert.equal(200, status)
    assert.equal("own options", body)
  end)

  it("echoes an allowed origin with credentials, Vary and the exposed headers", function()
    local status, h = helpers.request(server.port, "POST", "/items",
      { Origin = APP, Authorization = "Bearer ok" }, "{}")
    assert.equal(201, status)
    assert.equal(APP, h["access-control-allow-origin"])
    assert.equal("true", h["access-control-allow-credentials"])
    assert.equal("Origin", h["vary"])
    assert.equal("Location, X-Total-Count", h["access-control-expose-headers"])
    assert.equal("/items/3", h["location"])
    local _, h2 = helpers.request(server.port, "GET", "/items",
      { Origin = "http://other.test:8080", Authorization = "Bearer ok" })
    assert.equal("http://other.test:8080", h2["access-control-allow-origin"])
  end)

  it("puts the headers on the authentication middleware's 401 and on a 404", function()
    local status, h = helpers.request(server.port, "GET", "/items", { Origin = APP })
    assert.equal(401, status)
    assert.equal(APP, h["access-control-allow-origin"])
    status, h = helpers.request(server.port, "GET", "/nowhere", { Origin = APP, Authorization = "Bearer ok" })
    assert.equal(404, status)
    assert.equal(APP, h["access-control-allow-origin"])
    status, h = helpers.request(server.port, "PUT", "/items", { Origin = APP, Authorization = "Bearer ok" })
    assert.equal(405, status)
    assert.equal("GET, HEAD, POST", h["allow"])
    assert.equal(APP, h["access-control-allow-origin"])
  end)

  it("gives an origin not listed no CORS header, its preflight included", function()
    local status, h = preflight(server.port, "/items", "http://evil.test")
    assert.equal(204, status)
    assert.is_nil(h["access-control-allow-origin"])
    assert.is_nil(h["access-control-allow-methods"])
    assert.equal("Origin", h["vary"])
    status, h = helpers.request(server.port, "GET", "/items",
      { Origin = "http://evil.test", Authorization = "Bearer ok" })
    assert.equal(200, status)
    assert.is_nil(h["access-control-allow-origin"])
    assert.is_nil(h["access-control-allow-credentials"])
    -- Near misses are not the origin: another port, a trailing slash.
    for _, origin in ipairs({ "http://app.test:81", "http://app.test/", "https://app.test" }) do
      local _, hh = preflight(server.port, "/items", origin)
      assert.is_nil(hh["access-control-allow-origin"], origin)
    end
  end)

  it("answers a request without Origin without CORS headers", function()
    local status, h = helpers.request(server.port, "GET", "/items", { Authorization = "Bearer ok" })
    assert.equal(200, status)
    assert.is_nil(h["access-control-allow-origin"])
    -- OPTIONS without Access-Control-Request-Method is no preflight.
    assert.equal(401, (helpers.request(server.port, "OPTIONS", "/items", { Origin = APP })))
  end)
end)

describe("moonport.cors for any origin", function()
  local server = support.serve("spec/fixtures/cors_open.lua")

  it("answers '*' without credentials, and the headers it was given", function()
    local status, h = preflight(server.port, "/open", APP, "PUT", "X-Other")
    assert.equal(204, status)
    assert.equal("*", h["access-control-allow-origin"])
    assert.is_nil(h["access-control-allow-credentials"])
    assert.equal("Content-Type, X-Token", h["access-control-allow-headers"])
    assert.equal("GET, HEAD, PUT, PATCH, POST, DELETE", h["access-control-allow-methods"])
    assert.is_nil(h["access-control-max-age"])
    local _, h2 = helpers.request(server.port, "GET", "/open", { Origin = APP })
    assert.equal("*", h2["access-control-allow-origin"])
    assert.is_nil(h2["vary"])
  end)

  it("keeps its fields on the core's 500, so a page can read the error", function()
    local status, h = helpers.request(server.port, "GET", "/broken", { Origin = APP })
    assert.equal(500, status)
    assert.equal("*", h["access-control-allow-origin"])
  end)
end)

describe("the mock's CORS", function()
  local server = support.serve("spec/fixtures/mock.lua")

  it("exposes Location and a stub's own headers to the page", function()
    local status, h = helpers.request(server.port, "GET", "/with-headers", { Origin = APP })
    assert.equal(200, status)
    assert.equal(APP, h["access-control-allow-origin"])
    assert.equal("true", h["access-control-allow-credentials"])
    local exposed = h["access-control-expose-headers"]
    assert.truthy(exposed and exposed:find("Location", 1, true), exposed)
    assert.truthy(exposed:find("X-Custom", 1, true), exposed)
  end)

  it("answers a preflight with its methods and a day's Max-Age", function()
    local status, h = preflight(server.port, "/anything", APP, "PATCH", "X-Custom")
    assert.equal(204, status)
    assert.equal(APP, h["access-control-allow-origin"])
    assert.equal("GET, POST, PUT, PATCH, DELETE, OPTIONS, HEAD", h["access-control-allow-methods"])
    assert.equal("X-Custom", h["access-control-allow-headers"])
    assert.equal("86400", h["access-control-max-age"])
  end)
end)
