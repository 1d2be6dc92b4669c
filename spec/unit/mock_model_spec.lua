-- The stub model: WireMock JSON in, the same JSON out, user names untouched.
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
require("spec.support.ffi_unit") -- base64 is the server's (moonport.core.crypto)
local model = require("moonport.mock.model")
local cjson = require("cjson")

describe("moonport.mock.model", function()
  local mapping = {
    id = "8c5db8b0-2db4-4ad7-a99f-38c9b00da3f7",
    priority = 2,
    scenarioName = "flow", requiredScenarioState = "Started", newScenarioState = "next",
    request = {
      method = "POST", urlPathTemplate = "/users/{userId}",
      pathParameters = { userId = { matches = "[0-9]+" } },
      queryParameters = { sort_order = { equalTo = "asc", caseInsensitive = true } },
      headers = { ["X-Request_Id"] = { doesNotMatch = "bad.*" } },
      cookies = { session_id = { absent = false } },
      basicAuthCredentials = { username = "u", password = "p" },
      bodyPatterns = {
        { equalToJson = { someKey = { nestedKey = 1 } }, ignoreArrayOrder = true },
        { matchesJsonPath = { expression = "$.someKey", contains = "x" } },
      },
    },
    response = {
      status = 201, statusMessage = "Made",
      headers = { ["Content-Type"] = "application/json", ["Set-Cookie"] = { "a=1", "b=2" } },
      jsonBody = { camelCase = true, snake_case = true },
      fixedDelayMilliseconds = 10,
      delayDistribution = { type = "lognormal", median = 80, sigma = 0.4 },
      chunkedDribbleDelay = { numberOfChunks = 5, totalDuration = 100 },
      transformers = { "response-template" },
    },
  }

  it("reads WireMock's camelCase into snake_case, leaving user names alone", function()
    local stub = model.from_wiremock(mapping)
    assert.equal("/users/{userId}", stub.request.url_path_template)
    assert.same({ matches = "[0-9]+" }, stub.request.path_parameters.userId)
    assert.same({ equal_to = "asc", case_insensitive = true }, stub.request.query_parameters.sort_order)
    assert.same({ does_not_match = "bad.*" }, stub.request.headers["X-Request_Id"])
    assert.same({ username = "u", password = "p" }, stub.request.basic_auth)
    assert.same({ someKey = { nestedKey = 1 } }, stub.request.body_patterns[1].equal_to_json)
    assert.is_true(stub.request.body_patterns[1].ignore_array_order)
    assert.same({ expression = "$.someKey", contains = "x" }, stub.request.body_patterns[2].matches_json_path)
    assert.same({ camelCase = true, snake_case = true }, stub.response.json_body)
    assert.same({ number_of_chunks = 5, total_duration = 100 }, stub.response.chunked_dribble_delay)
    assert.equal("Made", stub.response.status_message)
    assert.equal("next", stub.new_scenario_state)
  end)

  it("writes the same mapping back", function()
    local back = model.to_wiremock(model.from_wiremock(mapping))
    local want = cjson.decode(cjson.encode(mapping))
    want.uuid = want.id
    assert.same(want, cjson.decode(cjson.encode(back)))
  end)

  it("completes a Lua stub: scenario, plain-string matchers, method and priority", function()
    local stub = assert(model.normalize{
      request = { url_path = "/x", headers = { Accept = "text/plain" } },
      response = { body = "x" },
      scenario = { name = "s", required_state = "Started", new_state = "done" },
    })
    assert.equal("ANY", stub.request.method)
    assert.equal(5, stub.priority)
    assert.same({ equal_to = "text/plain" }, stub.request.headers.Accept)
    assert.equal("s", stub.scenario_name)
    assert.equal("Started", stub.required_scenario_state)
    assert.equal("done", stub.new_scenario_state)
    assert.is_nil(model.normalize{ request = "nope" })
    local back = model.to_wiremock(stub)
    assert.equal("/x", back.request.urlPath)
    assert.same({ equalTo = "text/plain" }, back.request.headers.Accept)
    assert.equal("s", back.scenarioName)
  end)

  it("lists a stub as WireMock does: a priority only when given, the status 200 when not", function()
    local stub = assert(model.normalize(model.from_wiremock({ request = { url = "/d" }, response = { body = "d" } })))
    assert.equal(5, stub.priority)
    local back = model.to_wiremock(stub)
    assert.is_nil(back.priority)
    assert.equal(200, back.response.status)
    stub = assert(model.normalize(model.from_wiremock({ priority = 5, request = { url = "/d" },
      response = { status = 404 } })))
    back = model.to_wiremock(stub)
    assert.equal(5, back.priority)
    assert.equal(404, back.response.status)
  end)

  it("encodes and decodes base64, padding and all", function()
    for _, s in ipairs({ "", "a", "ab", "abc", "user:pass", "\0\255\128binary" }) do
      assert.equal(s, model.base64_decode(model.base64_encode(s)))
    end
    assert.equal("dXNlcjpwYXNz", model.base64_encode("user:pass"))
    assert.equal("hello base64", model.base64_decode("aGVsbG8gYmFzZTY0"))
    assert.is_nil(model.base64_decode("not*base64"))
  end)

  it("makes version 4 UUIDs", function()
    local id = model.uuid()
    assert.truthy(id:match("^%x%x%x%x%x%x%x%x%-%x%x%x%x%-4%x%x%x%-[89ab]%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$"), id)
    assert.not_equal(id, model.uuid())
  end)

  it("tells UTF-8 text from other bytes, as JSON text must be", function()
    for _, s in ipairs({ "", "plain", "caf\195\169", "\226\130\172", "\240\159\152\128" }) do
      assert.is_true(model.is_utf8(s), s)
    end
    -- a lone byte past 0x7f, a cut sequence, an overlong form, a
    -- surrogate, past U+10FFFF
    for _, s in ipairs({ "\255", "caf\195", "\192\175", "\224\128\175", "\237\160\128", "\244\144\128\128" }) do
      assert.is_false(model.is_utf8(s), s)
    end
    local t = {}
    model.put_body(t, "\0\255")
    assert.is_nil(t.body)
    assert.equal("\0\255", model.logged_body(t))
  end)
end)
