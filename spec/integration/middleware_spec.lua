-- Middleware and hooks over real sockets (spec/fixtures/middleware.lua):
-- declaration order and req.ctx, a middleware that answers ending the
-- chain, a middleware that waits, prefixes (literal, and decided per
-- request where a route's parameter makes it so), after hooks on success
-- and failure, the error and not-found hooks, 404 versus 405 beside splat
-- routes, a group and a mounted app with middleware and hooks of their
-- own; and an app with a not-found hook only.
local helpers = require("spec.helpers")
local support = require("spec.support.server")

local function get(port, path, headers)
  return helpers.request(port, "GET", path, headers)
end

-- The first log line from `from` on that holds text, or nil.
local function logged(server, text)
  return helpers.eventually(function()
    return server:stderr():find(text, 1, true) ~= nil
  end)
end

describe("middleware", function()
  local server = support.serve("spec/fixtures/middleware.lua")

  it("runs in declaration order before the handler, passing values in req.ctx", function()
    local status, _, body = get(server.port, "/trail")
    assert.equal(200, status)
    -- "z" was declared after the routes: middleware applies to every route.
    assert.equal("abz", body)
    status, _, body = helpers.request(server.port, "POST", "/items", nil, "")
    assert.equal("posted abz", body)
  end)

  it("ends the chain when one answers: later middleware and the handler do not run", function()
    local status, _, body = get(server.port, "/trail", { ["X-Stop"] = "1" })
    assert.equal(418, status)
    assert.equal("stopped at a", body)
    -- Had the handler run, its res:send would have failed.
    assert.truthy(logged(server, "after: GET /trail 418\n"), server:stderr())
    assert.falsy(server:stderr():find("GET /trail: handler failed", 1, true), server:stderr())
  end)

  it("may wait, as a handler does", function()
    local status, _, body = get(server.port, "/trail", { ["X-Sleep"] = "1" })
    assert.equal(200, status)
    assert.equal("abz", body)
  end)

  it("with a prefix, runs for the prefix and the paths under it only", function()
    local _, h, body = get(server.port, "/api/items")
    assert.equal("abpz", body)
    assert.equal("1", h["x-api"])
    _, h, body = get(server.port, "/apix")
    assert.equal("abz", body)
    assert.is_nil(h["x-api"])
    -- "/:section/info": the path decides, per request.
    assert.equal("abpz", select(3, get(server.port, "/api/info")))
    assert.equal("abz", select(3, get(server.port, "/other/info")))
  end)

  it("runs for paths no route serves, the prefix's included", function()
    local status, h, body = get(server.port, "/api/unknown")
    assert.equal(404, status)
    assert.equal("1", h["x-api"])
    assert.same({ missing = "/api/unknown", method = "GET", trail = "abpz" }, helpers.json(body))
  end)
end)

describe("hooks", function()
  local server = support.serve("spec/fixtures/middleware.lua")

  it("after hooks run once the handler has returned, and one failing is logged", function()
    assert.equal(200, (get(server.port, "/api/items")))
    assert.truthy(logged(server, "after: GET /api/items 200\n"), server:stderr())
    assert.truthy(logged(server, "GET /api/items: after hook failed: "), server:stderr())
    assert.truthy(logged(server, "after hook breaks"), server:stderr())
  end)

  it("the error hook answers for a failed handler; the traceback goes to the log, the after hooks still run", function()
    local status, h, body = get(server.port, "/boom")
    assert.equal(503, status)
    assert.equal("application/json", h["content-type"])
    assert.same({ error = "sorry", detail = "kaboom" }, helpers.json(body))
    assert.truthy(logged(server, "GET /boom: handler failed: "), server:stderr())
    assert.truthy(server:stderr():find("kaboom\nstack traceback:", 1, true), server:stderr())
    assert.truthy(logged(server, "after: GET /boom 503 failed"), server:stderr())
  end)

  it("cannot answer once the response has begun: the connection is cut, as without it", function()
    local conn = helpers.connect(server.port)
    conn:send(helpers.build_request("GET", "/boom-late"))
    local ok = pcall(conn.read_response, conn)
    conn:close()
    assert.is_false(ok)
    assert.truthy(logged(server, "GET /boom-late: handler failed: "), server:stderr())
    assert.truthy(logged(server, "after: GET /boom-late 200 failed"), server:stderr())
  end)

  it("the not-found hook answers for any method, after the middleware", function()
    for _, method in ipairs({ "GET", "DELETE", "PURGE" }) do
      local status, _, body = helpers.request(server.port, method, "/nothing")
      assert.equal(404, status, method)
      assert.same({ missing = "/nothing", method = method, trail = "abz" }, helpers.json(body))
    end
  end)

  it("a path only splat routes of other methods cover is not found; a route without a splat makes a 405", function()
    local status, _, body = helpers.request(server.port, "POST", "/files/a.txt", nil, "")
    assert.equal(404, status)
    assert.equal("/files/a.txt", helpers.json(body).missing)
    local h
    status, h, body = helpers.request(server.port, "DELETE", "/items")
    assert.equal(405, status)
    assert.equal("POST", h["allow"])
    assert.same({ error = "method not allowed" }, helpers.json(body))
    assert.truthy(logged(server, "after: DELETE /items 405"), server:stderr())
  end)
end)

describe("groups and mounts", function()
  local server = support.serve("spec/fixtures/middleware.lua")

  it("a group's routes answer under its prefix, its middleware after the app's", function()
    local status, _, body = get(server.port, "/v1")
    assert.equal(200, status)
    assert.equal("v1 root abzg", body)
    assert.equal("thing 7 abzg", select(3, get(server.port, "/v1/things/7")))
    -- The group's middleware is the group's: not for other paths.
    assert.equal("abz", select(3, get(server.port, "/trail")))
  end)

  it("a group's error hook serves its routes; its paths fall back to the app's not-found hook", function()
    local status, _, body = get(server.port, "/v1/fail")
    assert.equal(502, status)
    assert.equal("group error", body)
    status, _, body = get(server.port, "/v1/nothing")
    assert.equal(404, status)
    assert.equal("abzg", helpers.json(body).trail)
  end)

  it("a mounted app keeps its middleware, not-found and after hooks, under its prefix", function()
    local status, _, body = get(server.port, "/admin/stats")
    assert.equal(401, status)
    assert.same({ error = "login" }, helpers.json(body))
    local auth = { Authorization = "Bearer admin" }
    status, _, body = get(server.port, "/admin/stats", auth)
    assert.equal(200, status)
    assert.equal("admin stats abz", body)
    assert.truthy(logged(server, "admin after: /admin/stats 200"), server:stderr())
    status, _, body = get(server.port, "/admin/zzz", auth)
    assert.equal(404, status)
    assert.equal("no admin page /admin/zzz", body)
    assert.equal(401, (get(server.port, "/admin/zzz")))
  end)
end)

describe("an app with a not-found hook only", function()
  local server = support.serve("spec/fixtures/middleware_plain.lua")

  it("answers with it where a catch-all GET would have made POST a 405", function()
    local status, _, body = helpers.request(server.port, "POST", "/nothing", nil, "")
    assert.equal(404, status)
    assert.equal("nothing for POST /nothing", body)
    assert.equal("page x/y", select(3, get(server.port, "/x/y")))
  end)

  it("leaves the core's 405 where a route without a splat serves the path", function()
    local status, h, body = helpers.request(server.port, "DELETE", "/doc")
    assert.equal(405, status)
    assert.equal("GET, HEAD, PUT", h["allow"])
    assert.same({ error = "method not allowed" }, helpers.json(body))
  end)
end)
