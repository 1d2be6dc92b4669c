-- The mock's XML, date and JSON Schema matchers where the WireMock
-- comparison (spec/compat/wiremock_cases_matchers.lua) does not reach: a
-- stub using one that is malformed is refused when it is added, with a
-- message naming what is wrong, and near misses rank requests by how far
-- they are from such a stub.
local helpers = require("spec.helpers")
local process = require("spec.support.process")
local cjson = require("cjson")

local function call(port, method, path, value)
  local body = value
  if type(value) == "table" then body = cjson.encode(value) end
  local status, _, text = helpers.request(port, method, path,
    body and { ["Content-Type"] = "application/json" } or nil, body)
  return status, text
end

local function body_stub(pattern, id)
  return { id = id, request = { method = "POST", urlPath = "/m", bodyPatterns = { pattern } },
           response = { status = 200 } }
end

describe("mock XML, date and JSON Schema matchers", function()
  local dir, mock
  setup(function()
    dir = helpers.scratch_dir()
    mock = process.start(dir, nil, { mock = true })
  end)
  teardown(function()
    if mock then mock:stop() end
    if dir then helpers.remove_dir(dir) end
  end)
  before_each(function()
    assert.equal(200, (call(mock.port, "POST", "/__admin/reset")))
  end)

  it("refuses a stub whose matcher is malformed, saying what is wrong", function()
    local bad = {
      { { equalToXml = "<a><b></a>" }, "equalToXml: not XML" },
      { { matchesXPath = "/a/[[" }, "is not an XPath expression" },
      { { matchesXPath = { expression = "/a", equalTo = "x", matches = "((" } }, "bad regular expression" },
      { { equalToXml = "<a/>", enablePlaceholders = true, placeholderOpeningDelimiterRegex = "((" },
        "bad placeholder delimiter" },
      { { before = "now +3 fortnights" }, "is not a unit" },
      { { after = "yesterday-ish" }, "is not a date-time" },
      { { equalToDateTime = "now", truncateExpected = "first day of week" }, "is not a truncation" },
      { { before = "now", actualFormat = "yyyy-MM-dd'T" }, "unterminated quote" },
      { { matchesJsonSchema = { type = "strin" } }, "strin is not a JSON Schema type" },
      { { matchesJsonSchema = "{not json" }, "the schema is not JSON" },
      { { matchesJsonSchema = { type = "object" }, schemaVersion = "V3" }, "schemaVersion V3" },
      { { matchesJsonSchema = { properties = { a = { ["$ref"] = "#/$defs/missing" } } } }, "names nothing" },
      { { matchesJsonSchema = { type = "string", pattern = "([" } }, "bad regular expression" },
      { { matchesJsonSchema = { minLength = -1 } }, "minLength: is not a non-negative integer" },
    }
    for _, case in ipairs(bad) do
      local status, text = call(mock.port, "POST", "/__admin/mappings", body_stub(case[1]))
      assert.equal(422, status, cjson.encode(case[1]) .. " was taken: " .. text)
      assert.is_truthy(text:find(case[2], 1, true), case[2] .. " not in: " .. text)
    end
    -- None of them was kept.
    local _, list = call(mock.port, "GET", "/__admin/mappings")
    assert.equal(0, helpers.json(list).meta.total)
  end)

  it("ranks near misses of an equalToXml stub by how much of the document differs", function()
    local id = "cccccccc-0000-4000-8000-000000000001"
    assert.equal(201, (call(mock.port, "POST", "/__admin/mappings",
      body_stub({ equalToXml = "<a><b>1</b><c>2</c><d>3</d></a>" }, id))))
    local function distance(body)
      local status, text = call(mock.port, "POST", "/__admin/near-misses/request",
        { url = "/m", method = "POST", body = body })
      assert.equal(200, status, text)
      local miss = helpers.json(text).nearMisses[1]
      assert.equal(id, miss.stubMapping.id)
      return miss.matchResult.distance
    end
    local same = distance("<a>\n <d>3</d><c>2</c><b>1</b>\n</a>")
    local one = distance("<a><b>1</b><c>2</c><d>4</d></a>")
    local two = distance("<a><b>9</b><c>2</c><d>4</d></a>")
    local other = distance("not XML at all")
    assert.equal(0, same)
    assert.is_true(0 < one and one < two and two < other and other < 1,
      ("%s %s %s"):format(one, two, other))
  end)

  it("ranks near misses of date and schema stubs below ones that cannot be read", function()
    local date_id = "cccccccc-0000-4000-8000-000000000002"
    assert.equal(201, (call(mock.port, "POST", "/__admin/mappings", { id = date_id,
      request = { urlPath = "/when", headers = { ["X-When"] = { before = "2020-01-01T00:00:00Z" } } },
      response = { status = 200 } })))
    local function distance(req)
      local status, text = call(mock.port, "POST", "/__admin/near-misses/request", req)
      assert.equal(200, status, text)
      return helpers.json(text).nearMisses[1].matchResult.distance
    end
    local near = distance({ url = "/when", method = "GET", headers = { ["X-When"] = "2021-01-01T00:00:00Z" } })
    local far = distance({ url = "/when", method = "GET", headers = { ["X-When"] = "2090-01-01T00:00:00Z" } })
    local unreadable = distance({ url = "/when", method = "GET", headers = { ["X-When"] = "soon" } })
    assert.is_true(0 < near and near < far and far < unreadable, ("%s %s %s"):format(near, far, unreadable))

    assert.equal(200, (call(mock.port, "POST", "/__admin/reset")))
    assert.equal(201, (call(mock.port, "POST", "/__admin/mappings",
      body_stub({ matchesJsonSchema = { type = "object", required = { "id" } } }))))
    local wrong = distance({ url = "/m", method = "POST", body = '{"name": "x"}' })
    local right = distance({ url = "/m", method = "POST", body = '{"id": 1}' })
    assert.equal(0, right)
    assert.is_true(wrong > 0 and wrong < 1, tostring(wrong))
  end)
end)
