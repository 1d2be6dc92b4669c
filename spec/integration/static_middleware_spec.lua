-- Middleware declared before app:static runs for the mount's requests
-- (a login check on assets); a mount declared before any middleware is
-- served by the core without entering Lua.
local helpers = require("spec.helpers")
local support = require("spec.support.server")

describe("app:static after app:use", function()
  local server = support.serve("spec/fixtures/static_mw.lua")
  local auth = { Authorization = "Bearer ok" }

  local function runs()
    return tonumber((select(3, helpers.request(server.port, "GET", "/runs", auth))))
  end

  it("runs the middleware declared before the mount", function()
    local status, _, body = helpers.request(server.port, "GET", "/private/b.txt")
    assert.equal(401, status)
    assert.equal("log in\n", body)
    local headers
    status, headers, body = helpers.request(server.port, "GET", "/private/b.txt", auth)
    assert.equal(200, status)
    assert.equal("private file\n", body)
    assert.equal("private", headers["cache-control"])
    assert.truthy(headers.etag)
    status = helpers.request(server.port, "GET", "/private/b.txt",
      { Authorization = "Bearer ok", ["If-None-Match"] = headers.etag })
    assert.equal(304, status)
    assert.equal(404, (helpers.request(server.port, "GET", "/private/none.txt", auth)))
  end)

  it("leaves a mount declared before any middleware to the core", function()
    local before = runs()
    local status, _, body = helpers.request(server.port, "GET", "/public/a.txt")
    assert.equal(200, status)
    assert.equal("public file\n", body)
    -- Only the two /runs requests went through the middleware.
    assert.equal(before + 1, runs())
  end)
end)
