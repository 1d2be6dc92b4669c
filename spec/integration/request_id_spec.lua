-- Request ids (--request-id, req.id) and the access log's formats
-- (--access-log-format), over real sockets: the client's X-Request-Id
-- kept or one made, the response field, the access log lines and the
-- request's error log lines.
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local cjson = require("cjson")

local APP = "spec/fixtures/request_id.lua"

local function read_lines(path, n)
  return helpers.eventually(function()
    local f = io.open(path)
    local s = f and f:read("*a") or ""
    if f then f:close() end
    local lines = {}
    for line in s:gmatch("[^\n]+") do lines[#lines + 1] = line end
    return #lines >= n and lines
  end)
end

describe("--request-id", function()
  local log_path = os.tmpname()
  local server = support.serve(APP, { "--request-id", "--access-log", log_path,
                                      "--access-log-format", "json" })
  teardown(function() os.remove(log_path) end)

  it("keeps the client's X-Request-Id, in req.id, the answer and the access log", function()
    local status, headers, body = helpers.request(server.port, "GET", "/id",
      { ["X-Request-Id"] = "abc-123.x:y_z", ["User-Agent"] = "spec/1", Referer = "http://r/" })
    assert.equal(200, status)
    assert.equal("abc-123.x:y_z,abc-123.x:y_z", body)
    assert.equal("abc-123.x:y_z", headers["x-request-id"])
    local lines = assert(read_lines(log_path, 1), "no access log line")
    local entry = cjson.decode(lines[#lines])
    assert.equal("abc-123.x:y_z", entry.request_id)
    assert.equal("GET", entry.method)
    assert.equal("/id", entry.path)
    assert.equal(200, entry.status)
    assert.equal("spec/1", entry.user_agent)
    assert.equal("http://r/", entry.referer)
    assert.is_number(entry.duration)
    assert.is_number(entry.lua_bytes)
  end)

  it("sends it back on the core's own answers too: a 404, a failed handler's 500", function()
    local status, headers = helpers.request(server.port, "GET", "/nothing", { ["X-Request-Id"] = "miss-1" })
    assert.equal(404, status)
    assert.equal("miss-1", headers["x-request-id"])
    status, headers = helpers.request(server.port, "GET", "/fail", { ["X-Request-Id"] = "fail-0" })
    assert.equal(500, status)
    assert.equal("fail-0", headers["x-request-id"])
  end)

  it("makes one when the client sent none or one that is not a short token", function()
    local ids = {}
    for _, given in ipairs({ false, "has space", ("x"):rep(65) }) do
      local _, headers, body = helpers.request(server.port, "GET", "/id",
        given and { ["X-Request-Id"] = given } or nil)
      local id = headers["x-request-id"]
      assert.truthy(id and id:match("^%x+$") and #id == 32, tostring(id))
      assert.equal(id .. "," .. id, body)
      assert.is_nil(ids[id], "an id made twice")
      ids[id] = true
    end
  end)

  it("ends each error log line of the request with its id, after a wait too", function()
    helpers.request(server.port, "GET", "/log", { ["X-Request-Id"] = "log-1" })
    local status = helpers.request(server.port, "GET", "/fail", { ["X-Request-Id"] = "fail-1" })
    assert.equal(500, status)
    local text = helpers.eventually(function()
      local s = server:stderr()
      return s:find("handler failed", 1, true) and s
    end)
    assert.truthy(text, server:stderr())
    assert.matches("worker 1 request=log-1: logged from the handler\n", text, 1, true)
    assert.matches("worker 1 request=log-1: logged after a wait\n", text, 1, true)
    assert.matches("worker 1 request=fail-1: GET /fail: handler failed: ", text, 1, true)
  end)
end)

describe("without --request-id", function()
  local log_path = os.tmpname()
  local server = support.serve(APP, { "--access-log", log_path, "--access-log-format", "combined" })
  teardown(function() os.remove(log_path) end)

  it("adds no X-Request-Id field, and req.id still answers", function()
    local status, headers, body = helpers.request(server.port, "GET", "/id",
      { ["X-Request-Id"] = "given-1", ["User-Agent"] = 'say "hi"' })
    assert.equal(200, status)
    assert.is_nil(headers["x-request-id"])
    assert.equal("given-1,given-1", body)
    local lines = assert(read_lines(log_path, 1), "no access log line")
    assert.truthy(lines[1]:match('^127%.0%.0%.1 %- %- %[[^%]]+%] "GET /id HTTP/1%.1" 200 15 "%-" "say \\x22hi\\x22"$'),
      lines[1])
  end)
end)
