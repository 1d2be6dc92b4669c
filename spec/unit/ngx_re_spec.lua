-- ngx.re (lua/moonport/ngx/re.lua) on PCRE2, against what OpenResty's
-- documentation of ngx.re.match, find, gmatch, sub and gsub shows, and
-- lua-nginx-module's own tests of the same calls.
require("spec.support.ffi_unit")
local re = require("moonport.ngx.re")

describe("ngx.re", function()
  describe("match", function()
    it("returns the whole match at [0] and the groups after it", function()
      local m = re.match("hello, 1234", "[0-9]+")
      assert.equal("1234", m[0])
      m = re.match("hello, 1234", "([0-9])[0-9]+")
      assert.same({ [0] = "1234", "1" }, m)
      assert.is_nil(re.match("hello, world", "[0-9]+"))
    end)

    it("gives named groups under their names too", function()
      local m = re.match("hello, 1234", "([0-9])(?<remaining>[0-9]+)")
      assert.same({ [0] = "1234", "1", "234", remaining = "234" }, m)
    end)

    it("gives false for groups that took no part, named or not", function()
      local m = re.match("hello, world", "(world)|(hello)|(?<named>howdy)")
      assert.equal("hello", m[0])
      assert.is_false(m[1])
      assert.equal("hello", m[2])
      assert.is_false(m[3])
      assert.is_false(m.named)
    end)

    it("gives a duplicated name the array of its matches with D", function()
      local m = re.match("hello, world", "(?<named>\\w+), (?<named>\\w+)", "D")
      assert.same({ "hello", "world" }, m.named)
    end)

    it("honours i, x, s, m and a", function()
      assert.equal("HELLO", re.match("HELLO", "hello", "i")[0])
      assert.is_nil(re.match("HELLO", "hello"))
      assert.equal("1234", re.match("hello, 1234", "[0-9] + # digits", "x")[0])
      assert.equal("a\nb", re.match("a\nb", "a.b", "s")[0])
      assert.is_nil(re.match("a\nb", "a.b"))
      assert.equal("b", re.match("a\nb", "^b", "m")[0])
      assert.is_nil(re.match("a\nb", "^b"))
      assert.is_nil(re.match("hello, 1234", "[0-9]+", "a"))
      assert.equal("hello", re.match("hello, 1234", "[a-z]+", "a")[0])
    end)

    it("matches characters rather than bytes with u", function()
      assert.equal("é", re.match("é", "^.$", "u")[0])
      assert.is_nil(re.match("é", "^.$"))
      local m, err = re.match("\255", ".", "u")
      assert.is_nil(m)
      assert.matches("UTF%-8", err)
    end)

    it("takes the longest match with d, without groups", function()
      local m = re.match("hello", "(h|he|hel)", "d")
      assert.same({ [0] = "hel" }, m)
      assert.equal("h", re.match("hello", "(h|he|hel)")[0])
    end)

    it("starts at ctx.pos and leaves it past the match", function()
      local ctx = {}
      local m = re.match("1234, hello", "[0-9]+", "", ctx)
      assert.equal("1234", m[0])
      assert.equal(5, ctx.pos)
      ctx = { pos = 2 }
      m = re.match("1234, hello", "[0-9]+", "", ctx)
      assert.equal("234", m[0])
      assert.equal(5, ctx.pos)
      assert.is_nil(re.match("1234, hello", "[0-9]+", "", { pos = 5 }))
      assert.is_nil(re.match("ab", "a", "", { pos = 10 }))
    end)

    it("fills res_table, emptied first", function()
      local res = { stale = true, [5] = "x" }
      local m = re.match("hello, 1234", "([0-9])[0-9]+", "", nil, res)
      assert.equal(res, m)
      assert.same({ [0] = "1234", "1" }, res)
    end)

    it("caches patterns compiled with o and compiles the others every time", function()
      for _ = 1, 3 do
        assert.equal("12", re.match("x12", "\\d+", "jo")[0])
        assert.equal("12", re.match("x12", "\\d+")[0])
      end
    end)

    it("returns nil and the compiler's message for a bad pattern, and raises for a bad option", function()
      local m, err = re.match("hello", "(abc")
      assert.is_nil(m)
      assert.matches('^pcre2_compile%(%) failed: missing closing parenthesis in "%(abc"', err)
      assert.has_error(function() re.match("hello", "h", "q") end, 'unknown flag "q"')
    end)

    it("returns nil and a message when a match is given up at PCRE2's limits", function()
      local m, err = re.match(("a"):rep(30) .. "!", "(a+)+[bc]")
      assert.is_nil(m)
      assert.matches("limit", err)
    end)
  end)

  describe("find", function()
    it("returns where the match is, 1-based and inclusive", function()
      assert.same({ 8, 11 }, { re.find("hello, 1234", "([0-9])([0-9]+)", "jo") })
      assert.same({ 9, 11 }, { re.find("hello, 1234", "([0-9])([0-9]+)", "jo", nil, 2) })
      assert.is_nil(re.find("hello, world", "[0-9]+"))
    end)

    it("gives an empty match as to == from - 1", function()
      assert.same({ 1, 0 }, { re.find("hello", "x*") })
    end)

    it("returns nil for a group that took no part and an error for one past the last", function()
      assert.same({ nil, nil }, { re.find("hello", "(x)?hello", "", nil, 1) })
      assert.same({ nil, nil, "nth out of bound" }, { re.find("hello", "(h)ello", "", nil, 2) })
    end)

    it("honours ctx.pos", function()
      local ctx = { pos = 3 }
      assert.same({ 4, 4 }, { re.find("a1b2", "[0-9]", "", ctx) })
      assert.equal(5, ctx.pos)
    end)
  end)

  describe("gmatch", function()
    it("iterates over the matches, then returns nil", function()
      local it = re.gmatch("hello, world", "([a-z]+)", "i")
      assert.same({ [0] = "hello", "hello" }, it())
      assert.same({ [0] = "world", "world" }, it())
      assert.is_nil(it())
      assert.is_nil(it())
    end)

    it("moves one character on after an empty match", function()
      local seen = {}
      for m in re.gmatch("ab", "x*") do seen[#seen + 1] = m[0] end
      assert.same({ "", "", "" }, seen)
      seen = {}
      for m in re.gmatch("é!", "", "u") do seen[#seen + 1] = m[0] end
      assert.equal(3, #seen)
    end)

    it("returns nil and the message for a bad pattern", function()
      local it, err = re.gmatch("x", "[")
      assert.is_nil(it)
      assert.matches("pcre2_compile", err)
    end)
  end)

  describe("sub and gsub", function()
    it("replace the first match, or all, and count them", function()
      assert.same({ "hello, [12][1]34", 1 }, { re.sub("hello, 1234", "([0-9])[0-9]", "[$0][$1]") })
      assert.same({ "[hello,h], [world,w]", 2 }, { re.gsub("hello, world", "([a-z])[a-z]+", "[$0,$1]") })
      assert.same({ "hello, x234", 1 }, { re.sub("hello, 1234", "[0-9]", "x") })
      assert.same({ "hello, world", 0 }, { re.gsub("hello, world", "[0-9]", "x") })
    end)

    it("read ${n}, $$ and names in templates, and leave missing groups empty", function()
      assert.same({ "[b c] [b] [c] [] d", 1 }, { re.sub("b c d", "(b) (c)", "[$0] [$1] [${2}] [$3]") })
      assert.same({ "ho$wdy, world", 1 }, { re.sub("hello, world", "[a-z]+", "ho$$wdy") })
      assert.same({ "<1234>", 1 }, { re.sub("1234", "(?<num>\\d+)", "<${num}>") })
      assert.same({ "a1", 1 }, { re.sub("a", "(a)", "${1}1") })
      assert.same({ "", 1 }, { re.sub("a", "(a)", "$11") })
    end)

    it("refuse a template that is not one", function()
      for _, bad in ipairs({ "[$0] [${134", "[$0] [${", "[$0] [$", "$ x" }) do
        assert.same({ nil, nil, "failed to compile the replacement template" },
          { re.sub("b c d", "(b) (c)", bad) }, bad)
      end
    end)

    it("call a function with the captures table and use what it returns", function()
      local s, n = re.gsub("hello, world", "([a-z])[a-z]+", function(m) return "[" .. m[0] .. "," .. m[1] .. "]" end)
      assert.equal("[hello,h], [world,w]", s)
      assert.equal(2, n)
      assert.same({ "x:1 x:2", 2 }, { re.gsub("1 2", "\\d", function(m) return "x:" .. m[0] end, "o") })
    end)

    it("replace empty matches between characters, as Perl", function()
      assert.same({ "-h-e-l-l-o-", 6 }, { re.gsub("hello", "", "-") })
      assert.same({ "-a--c-", 4 }, { re.gsub("abc", "b*", "-") })
    end)

    it("return nil, nil and the message for a bad pattern", function()
      local s, n, err = re.gsub("x", "(", "y")
      assert.is_nil(s)
      assert.is_nil(n)
      assert.matches("pcre2_compile", err)
    end)
  end)
end)
