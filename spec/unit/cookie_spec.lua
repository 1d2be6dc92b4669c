-- moonport.cookie (lua/moonport/cookie.lua): reading Cookie headers,
-- writing Set-Cookie values, and signed values (HMAC-SHA256 through
-- lua/moonport/core/crypto.lua).
require("spec.support.ffi_unit")
local cookie = require("moonport.cookie")
local crypto = require("moonport.core.crypto")

describe("moonport.cookie", function()
  describe("parse", function()
    it("splits on ';', trims, keeps the first of a repeated name", function()
      assert.same({ a = "1", b = "2", c = "x=y" }, cookie.parse("a=1;b=2 ;  a=3; c=x=y"))
      assert.same({ a = "1" }, cookie.parse(" \ta = 1\t "))
    end)

    it("drops the quotes of a quoted value and percent-decodes ('+' stays)", function()
      assert.same({ q = "a b", r = "\"", p = "1+1" },
        cookie.parse('q="a%20b"; r="; p=1+1'))
    end)

    it("takes a pair without '=' as an empty value, and skips empty names", function()
      assert.same({ flag = "" }, cookie.parse("flag; =x; ;;"))
      assert.same({}, cookie.parse(nil))
      assert.same({}, cookie.parse(""))
    end)
  end)

  describe("serialize", function()
    it("writes the attributes in RFC 6265's syntax", function()
      assert.equal("id=v; Domain=example.com; Path=/app; Expires=Fri, 01 Jan 2100 00:00:00 GMT; "
        .. "Max-Age=3600; Secure; HttpOnly; SameSite=Strict",
        cookie.serialize("id", "v", { domain = "example.com", path = "/app", expires = 4102444800,
          max_age = 3600, secure = true, http_only = true, same_site = "strict" }))
      assert.equal("a=", cookie.serialize("a", ""))
      assert.equal("n=12", cookie.serialize("n", 12))
      assert.equal("gone=; Max-Age=0", cookie.serialize("gone", "", { max_age = 0 }))
    end)

    it("writes Expires as an IMF-fixdate", function()
      assert.equal("Thu, 01 Jan 1970 00:00:00 GMT", cookie.http_date(0))
      assert.equal("Sun, 06 Nov 1994 08:49:37 GMT", cookie.http_date(784111777))
      assert.equal("Tue, 29 Feb 2028 23:59:59 GMT", cookie.http_date(1835481599.9))
    end)

    it("encodes every byte that is no cookie-octet, and parse gives it back", function()
      local all = {}
      for b = 0, 255 do all[#all + 1] = string.char(b) end
      all = table.concat(all)
      local text = cookie.serialize("all", all)
      local value = text:match("^all=(.*)$")
      assert.is_nil(value:find("[^\33\35-\43\45-\58\60-\91\93-\126]"))
      assert.equal("a%20b%3Bc%2Cd%22e%5Cf%25g", cookie.encode('a b;c,d"e\\f%g'))
      assert.same({ all = all }, cookie.parse(text))
    end)

    it("refuses names that are no token, attributes that could end the field, unknown options", function()
      for _, name in ipairs({ "", "a b", "a;b", "a=b", "a\r\nb", "é", "a,b" }) do
        assert.has_error(function() cookie.serialize(name, "1") end,
          "moonport.cookie.serialize: name must be a token (letters, digits and !#$%&'*+-.^_`|~)")
      end
      assert.has_error(function() cookie.serialize("a", "1", { path = "/\r\nX-Evil: 1" }) end,
        "moonport.cookie.serialize: path must be a string without ';' or control bytes")
      assert.has_error(function() cookie.serialize("a", "1", { domain = "x.com; Secure" }) end,
        "moonport.cookie.serialize: domain must be a string without ';' or control bytes")
      assert.has_error(function() cookie.serialize("a", "1", { httponly = true }) end,
        "moonport.cookie.serialize: unknown option 'httponly'")
      assert.has_error(function() cookie.serialize("a", "1", { max_age = 1.5 }) end,
        "moonport.cookie.serialize: max_age must be an integer number of seconds")
      assert.has_error(function() cookie.serialize("a", "1", { expires = "tomorrow" }) end,
        "moonport.cookie.serialize: expires must be seconds since the epoch, before the year 10000")
      assert.has_error(function() cookie.serialize("a", "1", { same_site = "sometimes" }) end,
        "moonport.cookie.serialize: same_site must be 'Strict', 'Lax' or 'None'")
      assert.has_error(function() cookie.serialize("a", "1", { same_site = "None" }) end,
        "moonport.cookie.serialize: same_site = 'None' needs secure = true (browsers drop it otherwise)")
      assert.has_error(function() cookie.serialize("a", {}) end,
        "moonport.cookie.serialize: value must be a string")
    end)
  end)

  describe("sign and verify", function()
    local secret = "s3cret"

    it("appends HMAC-SHA256 in base64url, as RFC 4231 computes it", function()
      local signed = cookie.sign("user=42", secret)
      local mac = crypto.base64_encode(crypto.hmac("sha256", secret, "user=42"), true, true)
      assert.equal("user=42." .. mac, signed)
      assert.equal(43, #mac)
      -- RFC 4231 test case 2, through the same HMAC.
      assert.equal("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
        crypto.hex(crypto.hmac("sha256", "Jefe", "what do ya want for nothing?")))
    end)

    it("gives the value back for its signature, nil for a tampered one", function()
      local signed = cookie.sign("a.b.c", secret)
      assert.equal("a.b.c", cookie.verify(signed, secret))
      assert.is_nil(cookie.verify(signed, "other secret"))
      assert.is_nil(cookie.verify("a.b.d" .. signed:sub(6), secret))
      local last = signed:sub(-1)
      assert.is_nil(cookie.verify(signed:sub(1, -2) .. (last == "A" and "B" or "A"), secret))
      assert.is_nil(cookie.verify("unsigned", secret))
      assert.is_nil(cookie.verify(signed .. "x", secret))
      assert.is_nil(cookie.verify(nil, secret))
      assert.equal("", cookie.verify(cookie.sign("", secret), secret))
    end)

    it("verifies with any of a list of secrets", function()
      local old = cookie.sign("v", "old")
      assert.equal("v", cookie.verify(old, { "new", "old" }))
      assert.is_nil(cookie.verify(old, { "new" }))
    end)

    it("refuses an empty secret", function()
      assert.has_error(function() cookie.sign("v", "") end,
        "moonport.cookie.sign: secret must be a non-empty string")
      assert.has_error(function() cookie.verify("v", nil) end,
        "moonport.cookie.verify: secret must be a non-empty string")
    end)
  end)
end)
