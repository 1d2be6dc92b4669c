-- scripts/webapp.lua, the example web app, over real sockets: the static
-- front end, the login form and its signed session cookie, /api behind the
-- login, the TODO list, an upload from curl -F, the live events a change
-- sends, compression and request ids.
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local process = require("spec.support.process")
local cjson = require("cjson")

describe("scripts/webapp.lua", function()
  local server = support.serve("scripts/webapp.lua", { "--request-id" })
  local session

  local function api(method, path, body)
    local status, headers, text = helpers.request(server.port, method, "/api" .. path,
      { Cookie = session, ["Content-Type"] = body and "application/json" or nil },
      body and cjson.encode(body) or nil)
    return status, text ~= "" and cjson.decode(text) or nil, headers
  end

  it("serves the front end", function()
    local status, headers, body = helpers.request(server.port, "GET", "/")
    assert.equal(200, status)
    assert.truthy(headers["content-type"]:find("text/html", 1, true))
    assert.truthy(body:find('<script src="/app.js">', 1, true))
    status, headers = helpers.request(server.port, "GET", "/app.js")
    assert.equal(200, status)
    assert.truthy(headers["content-type"]:find("javascript", 1, true), headers["content-type"])
  end)

  it("keeps /api behind the login form's signed cookie", function()
    assert.equal(401, (api("GET", "/me")))
    local status, headers = helpers.request(server.port, "POST", "/login",
      { ["Content-Type"] = "application/x-www-form-urlencoded" }, "user=ada&password=wrong")
    assert.equal(303, status)
    assert.equal("/?error=login", headers.location)
    status, headers = helpers.request(server.port, "POST", "/login",
      { ["Content-Type"] = "application/x-www-form-urlencoded" }, "user=ada&password=moonport")
    assert.equal(303, status)
    local set = headers["set-cookie"]
    assert.truthy(set:find("HttpOnly", 1, true), set)
    session = set:match("^(session=[^;]+)")
    local me
    status, me, headers = api("GET", "/me")
    assert.equal(200, status)
    assert.equal("ada", me.user)
    assert.equal(headers["x-request-id"], me.request)
    -- A cookie signed with another secret, or altered, is refused.
    local forged = session:gsub("ada", "eve")
    assert.equal(401, (helpers.request(server.port, "GET", "/api/me", { Cookie = forged })))
  end)

  it("keeps a TODO list, and tells the live stream of each change", function()
    local events = helpers.connect(server.port)
    events:send("GET /api/events HTTP/1.1\r\nHost: x\r\nCookie: " .. session .. "\r\n\r\n")
    assert.truthy(helpers.eventually(function()
      events:fill(helpers.now() + 0.1)
      return table.concat(events.parts):find("event: hello", 1, true)
    end), "no hello event")
    local status, todo, headers = api("POST", "/todos", { title = "write docs" })
    assert.equal(201, status)
    assert.equal("/api/todos/" .. todo.id, headers.location)
    assert.equal("ada", todo.by)
    assert.truthy(helpers.eventually(function()
      events:fill(helpers.now() + 0.1)
      return table.concat(events.parts):find("event: changed", 1, true)
    end), "no changed event")
    events:close()
    status, todo = api("PATCH", "/todos/" .. todo.id, { done = true })
    assert.equal(200, status)
    assert.is_true(todo.done)
    local list
    status, list = api("GET", "/todos")
    assert.equal(200, status)
    assert.equal("write docs", list[#list].title)
    assert.equal(422, (api("POST", "/todos", { title = "" })))
    assert.equal(204, (api("DELETE", "/todos/" .. todo.id)))
    assert.equal(404, (api("DELETE", "/todos/" .. todo.id)))
  end)

  it("counts an upload's bytes as they stream in", function()
    local file = os.tmpname()
    local f = assert(io.open(file, "wb"))
    f:write(("0123456789"):rep(30000))
    f:close()
    local code, out = process.command({ "curl", "-s", "-b", session, "-F", "file=@" .. file .. ";filename=notes.txt",
      "http://127.0.0.1:" .. server.port .. "/api/uploads" })
    os.remove(file)
    assert.equal(0, code)
    local files = cjson.decode(out)
    assert.equal(1, #files)
    assert.equal("notes.txt", files[1].filename)
    assert.equal(300000, files[1].bytes)
  end)

  it("compresses the list for clients that take gzip", function()
    for i = 1, 40 do api("POST", "/todos", { title = "item number " .. i }) end
    local _, headers = helpers.request(server.port, "GET", "/api/todos",
      { Cookie = session, ["Accept-Encoding"] = "gzip" })
    assert.equal("gzip", headers["content-encoding"])
  end)
end)
