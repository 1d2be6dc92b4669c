-- Content negotiation (lua/moonport/accept.lua), which req:accepts uses.
package.path = "lua/?.lua;" .. package.path
local accept = require("moonport.accept")
local best = accept.best

describe("moonport.accept", function()
  it("picks the offer with the highest q", function()
    assert.equal("json", best("text/html;q=0.5, application/json", { "html", "json" }))
    assert.equal("html", best("text/html, application/json;q=0.9", { "json", "html" }))
  end)

  it("gives the first offer when there is no Accept header", function()
    assert.equal("json", best(nil, { "json", "html" }))
    assert.equal("html", best("  ", { "html", "json" }))
    assert.is_nil(best("text/html", {}))
  end)

  it("matches type/* and */*, the most specific range setting an offer's q", function()
    assert.equal("png", best("image/*", { "json", "png" }))
    assert.is_nil(best("image/*", { "json", "html" }))
    assert.equal("html", best("*/*;q=0.1, text/*", { "json", "html" }))
    -- text/html;q=0 refuses html although text/* accepts it.
    assert.equal("text", best("text/*, text/html;q=0", { "html", "text" }))
    assert.equal("text", best("text/html;q=0, text/*", { "html", "text" }))
    assert.equal("json", best("application/json;q=0.2, */*;q=0.9", { "json" }) and "json")
    assert.equal("html", best("application/json;q=0.2, */*;q=0.9", { "json", "html" }))
    assert.is_nil(best("application/json;q=0", { "json" }))
  end)

  it("breaks ties by specificity, then by the order of the ranges, then of the offers", function()
    assert.equal("json", best("*/*, application/json", { "html", "json" }))
    assert.equal("html", best("text/html, application/json", { "json", "html" }))
    assert.equal("json", best("*/*", { "json", "html" }))
  end)

  it("takes full types and is case-insensitive", function()
    assert.equal("application/vnd.api+json",
      best("Application/Vnd.API+JSON", { "html", "application/vnd.api+json" }))
    assert.equal("json", best("APPLICATION/JSON", { "json" }))
  end)

  it("drops malformed ranges and q values", function()
    assert.is_nil(best("text/html;q=2", { "html" }))
    assert.is_nil(best("text/html;q=05", { "html" }))
    assert.is_nil(best("*/html", { "html" }))
    assert.equal("json", best("garbage, application/json;q=0.001", { "html", "json" }))
    assert.equal("html", best("text/html;level=1;q=1.000", { "html" }))
  end)

  it("refuses offers that are no type", function()
    assert.has_error(function() best("*/*", { "nonsense" }) end, "req:accepts: unknown type 'nonsense'")
  end)
end)
