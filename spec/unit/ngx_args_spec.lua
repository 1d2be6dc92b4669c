-- URI escaping and query strings (lua/moonport/ngx/args.lua) as
-- OpenResty's ngx.escape_uri, ngx.unescape_uri, ngx.encode_args and
-- ngx.decode_args have them, with the examples of its documentation.
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
local args = require("moonport.ngx.args")

describe("moonport.ngx.args", function()
  describe("escape_uri", function()
    it("escapes all but ALPHA, DIGIT, '-', '.', '_' and '~' as a URI component", function()
      assert.equal("a%20b%26c%3Dd%2Fe%3Ff%23g", args.escape_uri("a b&c=d/e?f#g"))
      assert.equal("AZaz09-._~", args.escape_uri("AZaz09-._~"))
      assert.equal("%21%27%28%29%2A%2B%2C%3B%3A%40%5B%5D%24", args.escape_uri("!'()*+,;:@[]$"))
      assert.equal("%C3%A9%00%7F", args.escape_uri("é\0\127"))
    end)

    it("escapes space, '#', '%', '?', controls and bytes past 0x7e as a URI with type 0", function()
      assert.equal("/a%20b/c%3Fd%23e%25f&g=h+i", args.escape_uri("/a b/c?d#e%f&g=h+i", 0))
      assert.equal("%0A%7F%FF", args.escape_uri("\n\127\255", 0))
      assert.has_error(function() args.escape_uri("x", 1) end)
    end)

    it("takes nil as '' and numbers as their text", function()
      assert.equal("", args.escape_uri(nil))
      assert.equal("12", args.escape_uri(12))
    end)
  end)

  describe("unescape_uri", function()
    it("decodes %XX and '+' as a space, and leaves bad escapes as they are", function()
      assert.equal("b r56 7", args.unescape_uri("b%20r56+7"))
      assert.equal("try %search% %again%", args.unescape_uri("try %search%%20%again%"))
      assert.equal("a+b", args.unescape_uri("a%2Bb"))
      assert.equal("%2", args.unescape_uri("%2"))
      assert.equal("\0\255", args.unescape_uri("%00%ff"))
    end)

    it("reverses escape_uri", function()
      local all = {}
      for b = 0, 255 do all[#all + 1] = string.char(b) end
      all = table.concat(all)
      assert.equal(all, args.unescape_uri(args.escape_uri(all)))
    end)
  end)

  describe("encode_args", function()
    it("writes key=value pairs escaped as URI components, keys sorted", function()
      assert.equal("b%20r=hello%20world&foo=3", args.encode_args({ foo = 3, ["b r"] = "hello world" }))
    end)

    it("writes true as the key alone, leaves false out and repeats the key for an array", function()
      assert.equal("a&c=1&c=2&c", args.encode_args({ a = true, b = false, c = { "1", 2, true, false } }))
      assert.equal("", args.encode_args({}))
    end)

    it("raises for values and keys it cannot write", function()
      assert.has_error(function() args.encode_args({ a = function() end }) end)
      assert.has_error(function() args.encode_args({ [true] = 1 }) end)
      assert.has_error(function() args.encode_args("a=1") end)
    end)
  end)

  describe("decode_args", function()
    it("reads pairs, keys without '=' as true, repeated keys as arrays", function()
      assert.same({ a = { "bar", "baz" }, b = true, c = "" }, args.decode_args("a=bar&b&a=baz&c="))
      assert.same({ ["b r"] = "hello world", foo = "3" }, args.decode_args("foo=3&b%20r=hello+world"))
    end)

    it("skips empty keys and empty pieces", function()
      assert.same({ a = "1" }, args.decode_args("&&=x&a=1&"))
      assert.same({}, args.decode_args(""))
    end)

    it("reads at most max_args pairs (100 by default, 0 for all) and says it stopped", function()
      local many = {}
      for i = 1, 150 do many[i] = "k" .. i .. "=" .. i end
      local t, err = args.decode_args(table.concat(many, "&"))
      local n = 0
      for _ in pairs(t) do n = n + 1 end
      assert.equal(100, n)
      assert.equal("truncated", err)
      t = args.decode_args(table.concat(many, "&"), 0)
      assert.equal("150", t.k150)
      t, err = args.decode_args("a=1&b=2&c=3", 2)
      assert.same({ a = "1", b = "2" }, t)
      assert.equal("truncated", err)
    end)

    it("reverses encode_args", function()
      local t = { ["a b"] = "c&d=e", list = { "1", "2" }, flag = true }
      assert.same(t, args.decode_args(args.encode_args(t)))
    end)
  end)

  it("quotes SQL strings as ngx.quote_sql_str", function()
    assert.equal([['it\'s \"x\"\n\\ \0']], args.quote_sql_str("it's \"x\"\n\\ \0"))
  end)
end)
