-- `moonport --openapi FILE` (and openapi.mock in a script) over real
-- sockets: Prism's answers for the Petstore document (scripts/petstore/)
-- and spec/fixtures/openapi/things.yaml (3.1, security, named examples,
-- $refs into things_common.yaml, a callback): routing, validation, Prefer,
-- content negotiation, --dynamic with --seed, the document below --mock's
-- stubs with the journal, admin API and CORS, hot reload of the document
-- and of a file it $refs (a broken edit keeps the old one serving), load
-- warnings logged once, and --check --openapi.
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local cjson = require("cjson.safe")

local PETSTORE = "scripts/petstore/openapi.yaml"
local THINGS = "spec/fixtures/openapi/things.yaml"
local PRISM = "https://stoplight.io/prism/errors#"

local function req(port, method, target, headers, body)
  local status, h, b = helpers.request(port, method, target, headers, body)
  return status, h, b, cjson.decode(b or "")
end

local function json_post(port, target, body, headers)
  local h = { ["Content-Type"] = "application/json" }
  for k, v in pairs(headers or {}) do h[k] = v end
  return req(port, "POST", target, h, body)
end

-- A copy of the fixture documents in a scratch directory, for edits.
local function scratch_copy(files)
  local dir = helpers.scratch_dir()
  support.defer(function() helpers.remove_dir(dir) end)
  for name, from in pairs(files) do helpers.write_file(dir .. "/" .. name, helpers.read_file(from)) end
  return dir
end

describe("moonport --openapi (Petstore)", function()
  local server = support.serve(PETSTORE, { "--openapi" })
  local port
  before_each(function() port = server.port end)

  it("names the document in its listening line", function()
    assert.equal("--openapi " .. PETSTORE, server.from)
  end)

  it("answers a valid GET with json-schema-sampler's value and the document's headers", function()
    local status, h, _, doc = req(port, "GET", "/pets")
    assert.equal(200, status)
    assert.equal("application/json", h["content-type"])
    assert.equal("string", h["x-next"])
    assert.same({ { id = -9007199254740991, name = "string", tag = "string" } }, doc)
    local _, _, _, pet = req(port, "GET", "/pets/12")
    assert.same({ id = -9007199254740991, name = "string", tag = "string" }, pet)
  end)

  it("serves under the servers' base path too", function()
    assert.equal(200, (req(port, "GET", "/v1/pets")))
  end)

  it("answers 201 with no body for a valid POST", function()
    local status, _, b = json_post(port, "/pets", '{"id":1,"name":"Rex"}')
    assert.equal(201, status)
    assert.equal("", b)
  end)

  it("answers an invalid request with the document's default response and sl-violations", function()
    local status, h, _, doc = req(port, "GET", "/pets?limit=abc")
    assert.equal(422, status)
    assert.same({ code = -2147483648, message = "string" }, doc)
    assert.same({ { location = { "request", "query", "limit" }, severity = "Error", code = "type",
                    message = "Request query parameter limit must be integer" } },
                cjson.decode(h["sl-violations"]))
    status, h = json_post(port, "/pets", '{"id":1}')
    assert.equal(422, status)
    assert.equal("Request body must have required property 'name'",
                 cjson.decode(h["sl-violations"])[1].message)
  end)

  it("answers 415 for a body of another type, 400 for JSON that does not parse", function()
    local status, h = req(port, "POST", "/pets", { ["Content-Type"] = "text/plain" }, "x")
    assert.equal(415, status)
    assert.equal(415, cjson.decode(h["sl-violations"])[1].code)
    local _, _, _, doc
    status, h, _, doc = json_post(port, "/pets", "{bad")
    assert.equal(400, status)
    assert.same({ error = { code = "invalid_json", message = "Invalid JSON" } }, doc)
  end)

  it("answers 404 and 405 problems for what the document does not route", function()
    local status, h, _, doc = req(port, "GET", "/nope")
    assert.equal(404, status)
    assert.equal("application/problem+json", h["content-type"])
    assert.same({ type = PRISM .. "NO_PATH_MATCHED_ERROR", title = "Route not resolved, no path matched",
                  status = 404, detail = "The route /nope hasn't been found in the specification file" }, doc)
    status, _, _, doc = req(port, "DELETE", "/pets")
    assert.equal(405, status)
    assert.equal(PRISM .. "NO_METHOD_MATCHED_ERROR", doc.type)
    assert.equal('The route /pets has been matched, but it does not have "delete" method defined', doc.detail)
  end)

  it("answers 406 when Accept takes none of the operation's media types", function()
    local status, _, _, doc = req(port, "GET", "/pets", { Accept = "text/xml" })
    assert.equal(406, status)
    assert.equal(PRISM .. "NOT_ACCEPTABLE", doc.type)
    assert.equal("Unable to find content for text/xml", doc.detail)
  end)

  it("answers CORS as mock mode does", function()
    local _, h = req(port, "GET", "/pets", { Origin = "http://front.test" })
    assert.equal("http://front.test", h["access-control-allow-origin"])
    local status = req(port, "OPTIONS", "/pets", { Origin = "http://front.test",
                                                   ["Access-Control-Request-Method"] = "POST" })
    assert.equal(204, status)
  end)

  it("journals what the document answered, with its status", function()
    req(port, "GET", "/pets/77")
    local _, _, _, doc = req(port, "GET", "/__admin/requests?limit=1")
    local e = doc.requests[1]
    assert.equal("/pets/77", e.request.url)
    assert.equal(200, e.responseDefinition.status)
    assert.is_true(e.wasMatched)
  end)
end)

describe("moonport --openapi (a 3.1 document)", function()
  local server = support.serve(THINGS, { "--workers", "2", "--openapi" })
  local port
  before_each(function() port = server.port end)
  local ok_headers = { ["X-API-Key"] = "k", ["X-Trace"] = "ab" }

  it("answers the first named example, and another on Prefer: example=", function()
    local status, _, _, doc = req(port, "GET", "/items/1", ok_headers)
    assert.equal(200, status)
    assert.same({ id = 1, name = "first" }, doc)
    local h = { ["Prefer"] = "example=two" }
    for k, v in pairs(ok_headers) do h[k] = v end
    assert.same({ id = 2, name = "second" }, select(4, req(port, "GET", "/items/1", h)))
  end)

  it("answers Prefer: code= with that response, or Prism's 404 problem", function()
    local h = { ["Prefer"] = "code=404" }
    for k, v in pairs(ok_headers) do h[k] = v end
    local status, _, _, doc = req(port, "GET", "/items/1", h)
    assert.equal(404, status)
    assert.same({ type = PRISM .. "NOT_FOUND", title = "The server cannot find the requested content",
                  status = 404, detail = "Requested status code 404 is not defined in the document." }, doc)
  end)

  it("lists every violation in a 422 problem when the document has no answer for it", function()
    local status, h, _, doc = req(port, "GET", "/items/0", { ["X-API-Key"] = "k" })
    assert.equal(422, status)
    assert.equal("application/problem+json", h["content-type"])
    assert.equal(PRISM .. "UNPROCESSABLE_ENTITY", doc.type)
    assert.same({
      { location = { "header" }, severity = "Error", code = "required",
        message = "Request header must have required property 'x-trace'" },
      { location = { "path", "id" }, severity = "Error", code = "minimum",
        message = "Request path parameter id must be >= 1" },
    }, doc.validation)
  end)

  it("answers 401 when security is not met, with WWW-Authenticate for http schemes", function()
    local status, h, _, doc = req(port, "GET", "/items/1", { ["X-Trace"] = "ab" })
    assert.equal(401, status)
    assert.equal(PRISM .. "UNAUTHORIZED", doc.type)
    assert.is_nil(h["www-authenticate"])
    status, h, _, doc = json_post(port, "/things", '{"name":"ab"}')
    assert.equal(401, status)
    assert.equal('Bearer,Basic realm="*"', h["www-authenticate"])
    assert.same({ ["WWW-Authenticate"] = 'Bearer,Basic realm="*"' }, doc.headers)
    assert.equal(201, (json_post(port, "/things", '{"name":"ab"}', { Authorization = "Bearer t" })))
  end)

  it("validates bodies with oneOf and additionalProperties as AJV does", function()
    local status, _, _, doc = json_post(port, "/things", '{"name":"a","zz":1}', { Authorization = "Bearer t" })
    assert.equal(422, status)
    assert.same({
      { location = { "body" }, severity = "Error", code = "additionalProperties",
        message = "Request body must NOT have additional properties; found 'zz'" },
      { location = { "body", "name" }, severity = "Error", code = "minLength",
        message = "Request body property name must NOT have fewer than 2 characters" },
    }, doc.validation)
  end)

  it("builds a static value from the schema, and a random valid one on Prefer: dynamic=true", function()
    local _, _, _, doc = req(port, "GET", "/random")
    assert.same({ n = 10, word = "alpha", when = "2019-08-24T14:15:22Z", tags = { "string" } }, doc)
    for _ = 1, 5 do
      local _, _, _, d = req(port, "GET", "/random", { Prefer = "dynamic=true" })
      assert.truthy(d.n >= 10 and d.n <= 20 and d.n % 1 == 0, cjson.encode(d))
      assert.truthy(({ alpha = true, beta = true, gamma = true })[d.word], cjson.encode(d))
      assert.truthy(d.when:find("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d"), d.when)
      assert.truthy(#d.tags >= 1 and #d.tags <= 3, cjson.encode(d))
    end
  end)

  it("logs the document's warnings once, not once per worker", function()
    assert.truthy(helpers.eventually(function()
      return server:stderr():find("callbacks are not supported", 1, true)
    end), server:stderr())
    local _, n = server:stderr():gsub("callbacks are not supported", "")
    assert.equal(1, n)
  end)
end)

describe("moonport --openapi --dynamic --seed", function()
  it("answers the same random values for the same seed, run after run", function()
    local bodies = {}
    for run = 1, 2 do
      local server = support.start(THINGS, { "--dynamic", "--seed", "42", "--openapi" })
      -- JSON compared as JSON: key order is each process's own.
      local a = select(4, req(server.port, "GET", "/random"))
      local b = select(4, req(server.port, "GET", "/random"))
      assert.same(a, b)
      bodies[run] = a
      assert.truthy(a.n >= 10 and a.n <= 20, cjson.encode(a))
      server:stop()
    end
    assert.same(bodies[1], bodies[2])
    local other = support.start(THINGS, { "--dynamic", "--seed", "7", "--openapi" })
    assert.are_not.same(bodies[1], select(4, req(other.port, "GET", "/random")))
  end)

  it("exits 2 for --dynamic or --seed without --openapi, and for a seed that is no number", function()
    local code, _, err = helpers.run({ "--dynamic", "scripts/hello.lua" })
    assert.equal(2, code)
    assert.truthy(err:find("--dynamic and --seed go with --openapi", 1, true), err)
    code, _, err = helpers.run({ "--openapi", THINGS, "--seed", "x" })
    assert.equal(2, code)
    assert.truthy(err:find("--seed: invalid value 'x'", 1, true), err)
    code, _, err = helpers.run({ "--openapi", THINGS, "scripts/hello.lua" })
    assert.equal(2, code)
    assert.truthy(err:find("openapi.mock", 1, true), err)
  end)
end)

describe("moonport --mock DIR --openapi FILE", function()
  local server = support.serve("scripts/petstore/mock", { "--openapi", PETSTORE }, { mock = true })
  local port
  before_each(function() port = server.port end)

  it("lets mappings and Lua stubs answer first, and the document the rest", function()
    -- A Lua stub.
    assert.same({ id = 1, name = "Rex", tag = "dog" }, select(4, req(port, "GET", "/pets/1")))
    -- A mapping.
    assert.equal("[]", select(3, req(port, "GET", "/pets?limit=0")))
    -- A function stub.
    local status, _, _, doc = json_post(port, "/pets", '{"id":3,"name":"boom"}')
    assert.equal(500, status)
    assert.equal("the store is on fire", doc.message)
    -- The document.
    assert.same({ id = -9007199254740991, name = "string", tag = "string" }, select(4, req(port, "GET", "/pets/2")))
    assert.equal(422, (req(port, "GET", "/pets?limit=abc")))
    assert.equal(404, (req(port, "GET", "/elsewhere")))
  end)

  it("takes mappings added through the admin API before the document", function()
    local status = json_post(port, "/__admin/mappings",
      '{"request":{"method":"GET","url":"/pets/5"},"response":{"status":200,"jsonBody":{"id":5,"name":"Admin"}}}')
    assert.equal(201, status)
    assert.same({ id = 5, name = "Admin" }, select(4, req(port, "GET", "/pets/5")))
    assert.equal(200, (json_post(port, "/__admin/mappings/reset", "")))
    assert.equal("string", select(4, req(port, "GET", "/pets/5")).name)
  end)
end)

describe("moonport --openapi hot reload", function()
  it("reloads on an edit of the document or of a file it $refs, and keeps serving through a broken one", function()
    local dir = scratch_copy({ ["things.yaml"] = THINGS, ["things_common.yaml"] = "spec/fixtures/openapi/things_common.yaml" })
    local server = support.start(dir .. "/things.yaml", { "--openapi" })
    local port = server.port
    local h = { ["X-API-Key"] = "k", ["X-Trace"] = "ab" }
    assert.same({ id = 1, name = "first" }, select(4, req(port, "GET", "/items/1", h)))
    -- The document itself.
    local text = helpers.read_file(dir .. "/things.yaml")
    helpers.write_by_rename(dir .. "/things.yaml", (text:gsub("name: first", "name: edited")))
    assert.truthy(helpers.eventually(function()
      local d = select(4, req(port, "GET", "/items/1", h))
      return d and d.name == "edited"
    end), server:stderr())
    -- A file it $refs: Random's n now starts at 15.
    local common = helpers.read_file(dir .. "/things_common.yaml")
    helpers.write_by_rename(dir .. "/things_common.yaml", (common:gsub("minimum: 10", "minimum: 15")))
    assert.truthy(helpers.eventually(function()
      local d = select(4, req(port, "GET", "/random"))
      return d and d.n == 15
    end), server:stderr())
    -- A broken edit: the old document goes on serving, the log names the
    -- file and line.
    helpers.write_by_rename(dir .. "/things.yaml", text:gsub("name: first", "name: edited") .. "\n  bad: [unclosed\n")
    assert.truthy(helpers.eventually(function()
      return server:stderr():find("things%.yaml:%d+")
    end), server:stderr())
    assert.same({ id = 1, name = "edited" }, select(4, req(port, "GET", "/items/1", h)))
    -- Fixed, it serves the new text.
    helpers.write_by_rename(dir .. "/things.yaml", (text:gsub("name: first", "name: fixed")))
    assert.truthy(helpers.eventually(function()
      local d = select(4, req(port, "GET", "/items/1", h))
      return d and d.name == "fixed"
    end), server:stderr())
  end)

  it("will not start on a broken document, naming the file and line", function()
    local dir = scratch_copy({})
    helpers.write_file(dir .. "/bad.yaml", "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths:\n  /a: [unclosed\n")
    local code, _, err = helpers.run({ "--listen", "127.0.0.1:0", "--openapi", dir .. "/bad.yaml" })
    assert.equal(1, code)
    assert.truthy(err:find("bad%.yaml:%d+"), err)
  end)
end)

describe("openapi.mock in a script", function()
  it("serves the document below a mock app's stubs and routes", function()
    local dir = helpers.scratch_dir()
    support.defer(function() helpers.remove_dir(dir) end)
    helpers.write_file(dir .. "/app.lua", ([[
      local mock = require("moonport.mock")
      local openapi = require("moonport").openapi
      local app = mock.app()
      app:get("/pets/route", function(req, res) res:json({ from = "route" }) end)
      app:stub{ request = { method = "GET", url_path = "/pets/stub" },
                response = { status = 200, json_body = { from = "stub" } } }
      openapi.mock(app, %q)
      return app
    ]]):format(helpers.resolve(PETSTORE)))
    local server = support.start(dir .. "/app.lua")
    assert.same({ from = "route" }, select(4, req(server.port, "GET", "/pets/route")))
    assert.same({ from = "stub" }, select(4, req(server.port, "GET", "/pets/stub")))
    assert.equal("string", select(4, req(server.port, "GET", "/pets/other")).name)
  end)
end)

describe("moonport --check --openapi", function()
  it("checks the document alone", function()
    local code, out = helpers.run({ "--check", "--openapi", PETSTORE })
    assert.equal(0, code)
    assert.truthy(out:find("^%-%-openapi " .. PETSTORE:gsub("%p", "%%%0") .. ": ok"), out)
  end)

  it("exits 0 when the app routes every operation and the document describes every route", function()
    local code, out, err = helpers.run({ "--check", "--openapi", PETSTORE, "scripts/petstore/app.lua" })
    assert.equal(0, code, err)
    assert.truthy(out:find("ok, 3 operations", 1, true), out)
  end)

  it("exits 3 and lists the operations not routed and the routes not described", function()
    local code, out = helpers.run({ "--check", "--openapi", PETSTORE, "spec/fixtures/openapi/app_petstore_partial.lua" })
    assert.equal(3, code)
    assert.truthy(out:find("not routed: POST /pets (createPets)", 1, true), out)
    assert.truthy(out:find("not described: GET /health", 1, true), out)
    assert.falsy(out:find("not routed: GET", 1, true), out)
  end)

  it("exits 1 when the document does not load", function()
    local dir = scratch_copy({})
    helpers.write_file(dir .. "/bad.yaml", "openapi: 3.0.0\npaths: [\n")
    local code, _, err = helpers.run({ "--check", "--openapi", dir .. "/bad.yaml", "scripts/petstore/app.lua" })
    assert.equal(1, code)
    assert.truthy(err:find("bad%.yaml:%d+"), err)
  end)
end)
