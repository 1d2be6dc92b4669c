-- moonport.openapi.validate over real sockets: scripts/petstore/app.lua
-- (real handlers behind the Petstore document) for requests, and
-- spec/fixtures/openapi/validate_app.lua, whose handlers answer right or
-- wrong on demand, for responses checked with "log" and "enforce".
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local cjson = require("cjson.safe")

local PRISM = "https://stoplight.io/prism/errors#"
local VALIDATE_APP = "spec/fixtures/openapi/validate_app.lua"

local function req(port, method, target, headers, body)
  local status, h, b = helpers.request(port, method, target, headers, body)
  return status, h, b, cjson.decode(b or "")
end

local function post(port, target, body, ctype)
  return req(port, "POST", target, { ["Content-Type"] = ctype or "application/json" }, body)
end

describe("openapi.validate: requests (scripts/petstore/app.lua)", function()
  local server = support.serve("scripts/petstore/app.lua")
  local port
  before_each(function() port = server.port end)

  it("lets valid requests through to the handlers", function()
    assert.equal(201, (post(port, "/pets", '{"id":1,"name":"Rex","tag":"dog"}')))
    assert.equal(201, (post(port, "/pets", '{"id":2,"name":"Tom"}')))
    local status, h, _, doc = req(port, "GET", "/pets?limit=1")
    assert.equal(200, status)
    assert.same({ { id = 1, name = "Rex", tag = "dog" } }, doc)
    assert.equal("/pets?limit=1&after=1", h["x-next"])
    assert.same({ id = 2, name = "Tom" }, select(4, req(port, "GET", "/pets/2")))
    assert.equal(404, (req(port, "GET", "/pets/99")))
  end)

  it("answers Prism's 422 problem before the handler for a bad parameter or body", function()
    local status, h, _, doc = req(port, "GET", "/pets?limit=abc")
    assert.equal(422, status)
    assert.equal("application/problem+json", h["content-type"])
    assert.same({ type = PRISM .. "UNPROCESSABLE_ENTITY", title = "Invalid request", status = 422,
                  detail = "Your request is not valid and no HTTP validation response was found in the spec, "
                    .. "so Prism is generating this error for you.",
                  validation = { { location = { "query", "limit" }, severity = "Error", code = "type",
                                   message = "Request query parameter limit must be integer" } } }, doc)
    status, _, _, doc = req(port, "GET", "/pets?limit=101")
    assert.equal(422, status)
    assert.equal("maximum", doc.validation[1].code)
    status, _, _, doc = post(port, "/pets", '{"id":"x"}')
    assert.equal(422, status)
    local codes = {}
    for _, v in ipairs(doc.validation) do codes[#codes + 1] = v.code end
    table.sort(codes)
    assert.same({ "required", "type" }, codes)
  end)

  it("answers 415 for another content type and 400 for JSON that does not parse", function()
    local status, _, _, doc = post(port, "/pets", "id=1", "application/x-www-form-urlencoded")
    assert.equal(415, status)
    assert.equal(PRISM .. "INVALID_CONTENT_TYPE", doc.type)
    assert.equal("Supported content types: application/json", doc.detail)
    status, _, _, doc = post(port, "/pets", "{nope")
    assert.equal(400, status)
    assert.same({ error = { code = "invalid_json", message = "Invalid JSON" } }, doc)
  end)

  it("leaves paths the document does not describe to the app", function()
    local status = req(port, "GET", "/nowhere")
    assert.equal(404, status)
    local _, _, _, doc = req(port, "DELETE", "/pets")
    assert.falsy(doc and doc.type == PRISM .. "NO_METHOD_MATCHED_ERROR")
  end)

  it("is reachable as moonport.openapi and require('moonport.openapi')", function()
    local code, out, err = helpers.run({ "--check", "scripts/petstore/app.lua" })
    assert.equal(0, code, err)
    assert.truthy(out:find("ok, 3 routes", 1, true), out)
  end)
end)

describe("openapi.validate: responses = \"enforce\"", function()
  local server = support.serve(VALIDATE_APP, nil, { env = { MP_OA_RESPONSES = "enforce" } })
  local port
  before_each(function() port = server.port end)

  it("sends a response that matches the document as the handler made it", function()
    local status, h, _, doc = req(port, "GET", "/pets")
    assert.equal(200, status)
    assert.equal("application/json", h["content-type"])
    assert.same({ { id = 1, name = "Rex" } }, doc)
    assert.equal(201, (post(port, "/pets", '{"id":1,"name":"Rex"}')))
  end)

  it("turns a body that breaks the schema into a 500 problem listing why", function()
    local status, h, _, doc = req(port, "GET", "/pets", { mode = "bad_body" })
    assert.equal(500, status)
    assert.equal("application/problem+json", h["content-type"])
    assert.equal(PRISM .. "VIOLATIONS", doc.type)
    local messages = {}
    for _, v in ipairs(doc.validation) do messages[#messages + 1] = v.message end
    table.sort(messages)
    assert.same({ "Response body property 0.name must be string",
                  "Response body property 1 must have required property 'id'" }, messages)
    assert.truthy(helpers.eventually(function()
      return server:stderr():find("GET /pets %-> 200: the response does not match")
    end), server:stderr())
  end)

  it("checks the media type and the status's response (default here)", function()
    local status, _, _, doc = req(port, "GET", "/pets", { mode = "bad_type" })
    assert.equal(500, status)
    assert.truthy(doc.validation[1].message:find('The received media type "text/plain; charset=utf-8" does not match', 1, true),
                  cjson.encode(doc))
    status, _, _, doc = req(port, "GET", "/pets", { mode = "bad_error" })
    assert.equal(500, status)
    assert.equal("Response body must have required property 'code'", doc.validation[1].message)
  end)

  it("only logs a streamed response, whose head is out with its first piece", function()
    local status, _, b = req(port, "GET", "/pets", { mode = "streamed" })
    assert.equal(200, status)
    assert.equal('[{"id":1,"name":5}]', b)
  end)

  it("lets a handler that sends nothing answer its status", function()
    assert.equal(200, (req(port, "GET", "/pets", { mode = "nothing" })))
  end)
end)

describe("openapi.validate: responses = \"log\"", function()
  local server = support.serve(VALIDATE_APP, nil, { env = { MP_OA_RESPONSES = "log" } })

  it("sends a violating response as it is and logs why", function()
    local status, _, _, doc = req(server.port, "GET", "/pets", { mode = "bad_body" })
    assert.equal(200, status)
    assert.same({ { id = 1, name = 5 }, { name = "x" } }, doc)
    assert.truthy(helpers.eventually(function()
      return server:stderr():find("%[error%].-GET /pets %-> 200: the response does not match .-Response body")
    end), server:stderr())
  end)
end)

describe("openapi.validate: misuse", function()
  it("fails the load for a bad option or a document that does not load", function()
    local dir = helpers.scratch_dir()
    support.defer(function() helpers.remove_dir(dir) end)
    helpers.write_file(dir .. "/a.lua", [[
      local app = require("moonport").app()
      app:use(require("moonport.openapi").validate("scripts/petstore/openapi.yaml", { responses = "yes" }))
      return app
    ]])
    local code, _, err = helpers.run({ "--check", dir .. "/a.lua" })
    assert.equal(1, code)
    assert.truthy(err:find('opts.responses must be "log" or "enforce"', 1, true), err)
    helpers.write_file(dir .. "/b.lua", [[
      local app = require("moonport").app()
      app:use(require("moonport.openapi").validate("no/such.yaml"))
      return app
    ]])
    code, _, err = helpers.run({ "--check", dir .. "/b.lua" })
    assert.equal(1, code)
    assert.truthy(err:find("no/such.yaml", 1, true), err)
  end)
end)

describe("openapi.validate: a head already out", function()
  -- res:send_file sends its head itself: the check cannot see it, and
  -- must not judge the header lines it no longer has.
  local dir = helpers.scratch_dir()
  helpers.write_file(dir .. "/api.yaml", [[
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /file:
    get:
      responses:
        "200":
          description: ok
          headers:
            X-Req: {required: true, schema: {type: string}}
  /bad:
    get:
      responses:
        "200":
          description: ok
          headers:
            X-Req: {required: true, schema: {type: string}}
]])
  helpers.write_file(dir .. "/a.txt", "file body\n")
  helpers.write_file(dir .. "/app.lua", ([[
    local app = require("moonport").app()
    app:use(require("moonport.openapi").validate(%q, { responses = "log" }))
    app:get("/file", function(req, res) res:header("X-Req", "a"); return res:send_file(%q) end)
    app:get("/bad", function(req, res) res:send("no header") end)
    return app
  ]]):format(dir .. "/api.yaml", dir .. "/a.txt"))
  local server = support.serve(dir .. "/app.lua")
  teardown(function() helpers.remove_dir(dir) end)

  it("leaves res:send_file's answer unchecked", function()
    local status, _, b = req(server.port, "GET", "/file")
    assert.equal(200, status)
    assert.equal("file body\n", b)
    assert.equal(200, (req(server.port, "GET", "/bad")))
    assert.truthy(helpers.eventually(function()
      return server:stderr():find("GET /bad %-> 200: the response does not match")
    end), server:stderr())
    assert.falsy(server:stderr():find("GET /file", 1, true), server:stderr())
  end)
end)
