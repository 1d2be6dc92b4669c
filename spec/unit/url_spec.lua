-- moonport.url (lua/moonport/url.lua): percent-decoding through the
-- core's decoder (server/lua/ffi/url.c), encoding, and query strings.
require("spec.support.ffi_unit")
local url = require("moonport.url")

describe("moonport.url", function()
  it("decodes %XX, keeps malformed escapes, and turns '+' into a space only when asked", function()
    assert.equal("café au+lait", url.decode("caf%C3%A9%20au+lait"))
    assert.equal("café au lait", url.decode("caf%C3%A9%20au+lait", true))
    assert.equal("%zz%4%", url.decode("%zz%4%"))
    assert.equal("%\0/", url.decode("%25%00%2f"))
    assert.equal("plain", url.decode("plain"))
    assert.equal("", url.decode(""))
    assert.equal("12", url.decode(12))
  end)

  it("decodes a text longer than its kept buffer", function()
    local big = ("%41b+"):rep(30000)
    assert.equal(("Ab "):rep(30000), url.decode(big, true))
  end)

  it("encodes all but the unreserved characters", function()
    assert.equal("a%20b%26c%3Dd%2F%C3%A9-._~", url.encode("a b&c=d/é-._~"))
    assert.equal("a+b%2B", url.encode("a b+", true))
    assert.equal("%00%0D%0A", url.encode("\0\r\n"))
    for b = 0, 255 do
      local c = string.char(b)
      assert.equal(c, url.decode(url.encode(c)))
      assert.equal(c, url.decode(url.encode(c, true), true))
    end
  end)

  it("parses a query string, repeated names as lists, '+' and %XX decoded", function()
    assert.same({ a = { "1", "2", "3" }, b = "x y!", flag = "", ["k y"] = "€" },
      url.parse_query("a=1&b=x+y%21&a=2&flag&k+y=%E2%82%AC&&=skipped&a=3"))
    assert.same({ e = "a=b" }, url.parse_query("e=a=b"))
    assert.same({}, url.parse_query(""))
  end)

  it("builds a query string that parses back", function()
    local t = { q = "x y&z", tag = { "a", "b" }, n = 2, on = true, off = false }
    local qs = url.build_query(t)
    assert.equal("n=2&on&q=x%20y%26z&tag=a&tag=b", qs)
    assert.same({ q = "x y&z", tag = { "a", "b" }, n = "2", on = "" }, url.parse_query(qs))
    assert.has_error(function() url.build_query({ f = function() end }) end,
      "moonport.url.build_query: a value must be a string, number, boolean or list of them, not function")
    assert.has_error(function() url.build_query("x") end, "moonport.url.build_query: t must be a table")
  end)
end)
