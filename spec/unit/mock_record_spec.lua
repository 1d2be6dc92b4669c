-- The recorder's pieces that need no server: sizes as WireMock writes them,
-- safe names, record specs (the target URL is checked by the integration
-- spec, as it needs the server), and mappings (scenarios for repeats) from
-- journal entries.
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
require("spec.support.ffi_unit")
local record = require("moonport.mock.record")

describe("moonport.mock.record", function()
  it("reads sizes as WireMock writes them", function()
    assert.equal(255, record.size("255"))
    assert.equal(56 * 1024, record.size("56 kb"))
    assert.equal(10 * 1024 * 1024, record.size("10 Mb"))
    assert.equal(math.floor(18.2 * 1024 ^ 3), record.size("18.2 GB"))
    assert.equal(2048, record.size(2048))
    assert.is_nil(record.size("ten"))
    assert.is_nil(record.size("5 parsecs"))
  end)

  it("names files as WireMock does", function()
    assert.equal("api_users_1", record.safe_name("/api/Users/1"))
    assert.equal("a-b_c20", record.safe_name("/a b/c%20/"))
    assert.equal("", record.safe_name("/"))
  end)

  it("refuses a record spec it cannot follow, with the reason", function()
    for body, want in pairs({
      [{ outputFormat = "XML" }] = "outputFormat",
      [{ persist = "yes" }] = "persist",
      [{ requestBodyPattern = { matcher = "regex" } }] = "requestBodyPattern.matcher",
      [{ extractBodyCriteria = { textSizeThreshold = "big" } }] = "extractBodyCriteria",
      [{ transformers = { "t" } }] = "transformers",
    }) do
      local spec, err = record.spec(body)
      assert.is_nil(spec)
      assert.truthy(err:find(want, 1, true), err)
    end
  end)

  it("makes a scenario of a repeated request, or records it once", function()
    local function entry(url, body)
      return { request = { method = "GET", url = url, headers = {} },
               response = { status = 200, headers = { ["Content-Type"] = "text/plain" }, body = body } }
    end
    local entries = { entry("/n", "1"), entry("/other", "x"), entry("/n", "2"), entry("/n", "3") }
    local list = record.mappings(entries, assert(record.spec({})))
    assert.equal(4, #list)
    local n = {}
    for _, m in ipairs(list) do
      if m.request.url == "/n" then n[#n + 1] = m end
    end
    assert.same({ "1", "2", "3" }, { n[1].response.body, n[2].response.body, n[3].response.body })
    assert.same({ "Started", "scenario-1-n-2", "scenario-1-n-3" },
      { n[1].requiredScenarioState, n[2].requiredScenarioState, n[3].requiredScenarioState })
    assert.same({ "scenario-1-n-2", "scenario-1-n-3" }, { n[1].newScenarioState, n[2].newScenarioState })
    assert.is_nil(n[3].newScenarioState)
    list = record.mappings(entries, assert(record.spec({ repeatsAsScenarios = false })))
    assert.equal(2, #list)
    assert.equal("1", list[1].response.body)
    assert.is_nil(list[1].scenarioName)
  end)
end)
