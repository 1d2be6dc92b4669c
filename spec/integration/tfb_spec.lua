-- scripts/tfb.lua, TechEmpower's six test types, checked by
-- bench/tfb/verify (TechEmpower's verification rules, query counts from
-- pg_stat_statements included) against a real PostgreSQL holding
-- TechEmpower's tables (bench/tfb/tfb.sql).
local helpers = require("spec.helpers")
local pgsupport = require("spec.support.pg")
local process = require("spec.support.process")

describe("scripts/tfb.lua", function()
  local cluster = pgsupport.cluster({ fixtures = { pgsupport.TFB, pgsupport.SCHEMA } })
  local app
  setup(function()
    app = process.start("scripts/tfb.lua", nil, { env = { DATABASE_URL = cluster.url } })
  end)
  teardown(function() if app then app:stop() end end)

  it("passes TechEmpower's verification of all six test types", function()
    local code, out, err = process.command({
      "/usr/bin/python3", "bench/tfb/verify", "http://127.0.0.1:" .. app.port,
      "--db", cluster.conninfo,
    }, { timeout = 300 })
    assert.equal(0, code, out .. err)
    assert.is_nil(("\n" .. out):find("\nFAIL", 1, true), out)
    assert.is_truthy(out:find("0 FAIL", 1, true), out)
    -- Every test type was checked.
    for _, test in ipairs({ "json", "db", "queries", "fortunes", "updates", "plaintext" }) do
      assert.is_truthy(out:lower():find(test, 1, true), test .. " not checked:\n" .. out)
    end
  end)

  it("escapes the fortunes and sorts them by message", function()
    local status, headers, body = helpers.request(app.port, "GET", "/fortunes")
    assert.equal(200, status)
    assert.equal("text/html; charset=utf-8", headers["content-type"])
    assert.is_truthy(body:find("<tr><td>11</td><td>&lt;script&gt;alert(&quot;This should not be "
      .. "displayed in a browser alert box.&quot;);&lt;/script&gt;</td></tr>", 1, true), body)
    assert.is_truthy(body:find("<tr><td>0</td><td>Additional fortune added at request time.</td></tr>",
      1, true), body)
    local ids = {}
    for id in body:gmatch("<tr><td>(%d+)</td>") do ids[#ids + 1] = tonumber(id) end
    assert.same({ 11, 4, 5, 2, 8, 0, 3, 7, 10, 6, 9, 1, 12 }, ids)
  end)

  it("writes the updated rows back", function()
    local _, _, body = helpers.request(app.port, "GET", "/updates?queries=5")
    local rows = helpers.json(body)
    assert.equal(5, #rows)
    for _, row in ipairs(rows) do
      assert.equal(tostring(row.randomNumber),
        cluster:psql("SELECT randomnumber FROM world WHERE id = " .. row.id))
    end
  end)
end)
