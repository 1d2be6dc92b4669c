-- moonport.json (server/lua/json.c), loaded from the test build's
-- lua/moonport/json.so: the same source the server preloads. CTest puts
-- its build's lua/ on LUA_CPATH; without it, build/lua/ is tried first.
if not os.getenv("LUA_CPATH") then package.cpath = "build/lua/?.so;" .. package.cpath end
local json = require("moonport.json")
local json_object_text = require("spec.helpers").json_object_text

local encode, decode = json.encode, json.decode

-- The message of the error fn raises, position and all.
local function raised(fn, ...)
  local ok, err = pcall(fn, ...)
  assert(not ok, "expected an error")
  return tostring(err)
end

local function nested(depth, leaf)
  local t = leaf
  for _ = 1, depth do t = { t } end
  return t
end

describe("moonport.json", function()
  describe("encode", function()
    it("writes scalars", function()
      assert.equal("true", encode(true))
      assert.equal("false", encode(false))
      assert.equal("null", encode(nil))
      assert.equal("null", encode(json.null))
      assert.equal('"abc"', encode("abc"))
      assert.equal("42", encode(42))
    end)

    it("escapes what JSON requires, and leaves / and UTF-8 as they are", function()
      assert.equal([["q\"b\\s/n\nr\rt\tb\bf\f"]], encode('q"b\\s/n\nr\rt\tb\bf\f'))
      assert.equal([["\u0000\u0001\u001f\u000b"]], encode("\0\1\31\11"))
      assert.equal('"é😀\127"', encode("é😀\127"))
      local long = ("x"):rep(5000) .. "\n" .. ("y"):rep(5000)
      assert.equal('"' .. ("x"):rep(5000) .. "\\n" .. ("y"):rep(5000) .. '"', encode(long))
    end)

    it("writes integers exactly up to 2^53", function()
      assert.equal("9007199254740992", encode(2 ^ 53))
      assert.equal("-9007199254740992", encode(-2 ^ 53))
      assert.equal("123456789012345", encode(123456789012345))
      assert.equal("0", encode(0))
      assert.equal("-0", encode(-0.0))
    end)

    it("writes other doubles in the shortest form that reads back the same", function()
      local cases = {
        [0.1] = "0.1", [1 / 3] = "0.3333333333333333", [1234567890.12] = "1234567890.12",
        [8.95] = "8.95", [2.5e-7] = "2.5e-07", [1e300] = "1e+300", [5e-324] = "4.94065645841247e-324",
        [2 ^ 53 + 2] = "9007199254740994", [1e21] = "1e+21", [-1.5] = "-1.5",
        [0.1 + 0.2] = "0.30000000000000004",
        -- An exact tie at 16 digits goes to the even digit, as printf does.
        [87039080554206.125] = "87039080554206.12", [87039080554206.375] = "87039080554206.38",
      }
      for n, text in pairs(cases) do
        assert.equal(text, encode(n))
        assert.equal(n, decode(text))
      end
    end)

    it("writes 200,000 doubles in as few digits as %.15g/%.16g/%.17g, each reading back", function()
      -- The shortest of those that reads back, by string.format (LuaJIT's
      -- own formatter, which may round an exact tie the other way: the
      -- digit count is what must agree).
      local function shortest(x)
        if x % 1 == 0 and math.abs(x) <= 2 ^ 53 then return ("%d"):format(x) end
        for p = 15, 17 do
          local s = ("%." .. p .. "g"):format(x)
          if p == 17 or tonumber(s) == x then return s end
        end
      end
      math.randomseed(42)
      local function check(x)
        local text = encode(x)
        if tonumber(text) ~= x or #text ~= #shortest(x) then
          error(("%.17g written as %s, want %s"):format(x, text, shortest(x)))
        end
      end
      for i = 1, 20000 do
        check(i / 7); check(i * 0.01); check(i + 0.95); check(math.random())
        check(-math.random() * 1e14); check(math.random() * 10 ^ math.random(-4, 14))
        check(math.random() * 10 ^ math.random(-300, 300)); check(2 ^ -(i % 60) * 3)
        check(1 - 2 ^ -(i % 53)); check((2 ^ (i % 60)) * (1 + 2 ^ -52))
      end
    end)

    it("raises on NaN and infinities, naming where they are", function()
      assert.matches("json.encode: cannot encode NaN at value.a.b%[1%]$",
        raised(encode, { a = { b = { 0 / 0 } } }))
      assert.matches("json.encode: cannot encode inf$", raised(encode, 1 / 0))
      assert.matches("json.encode: cannot encode %-inf at value%[2%]$", raised(encode, { 1, -1 / 0 }))
    end)

    it("raises on functions, threads, userdata and cdata", function()
      assert.matches("cannot encode a function at value.f$", raised(encode, { f = print }))
      assert.matches("cannot encode a thread$", raised(encode, coroutine.create(print)))
      assert.matches("cannot encode a userdata at value%[\"a key\"%]$",
        raised(encode, { ["a key"] = io.stdout }))
      assert.matches("cannot encode a cdata", raised(encode, { require("ffi").new("int", 1) }))
    end)

    it("blames the calling line", function()
      local err = raised(function()
        local text = encode(print)
        return text
      end)
      assert.matches("json_spec.lua:%d+: json.encode: cannot encode a function$", err)
    end)

    it("writes an empty table as {} and a table of 1..n as an array", function()
      assert.equal("{}", encode({}))
      assert.equal("[1,2,3]", encode({ 1, 2, 3 }))
      assert.equal('{"a":{}}', encode({ a = {} }))
      assert.equal('[[1],{"b":[2]}]', encode({ { 1 }, { b = { 2 } } }))
    end)

    it("writes json.empty_array, json.array() and json.array({}) as []", function()
      assert.equal("[]", encode(json.empty_array))
      assert.equal("[]", encode(json.array()))
      assert.equal("[]", encode(json.array({})))
      assert.equal('{"results":[]}', encode({ results = json.empty_array }))
    end)

    it("keeps markers at any depth", function()
      assert.equal('{"a":[[],{},[[]]]}',
        encode({ a = json.array({ json.array(), {}, json.array({ json.empty_array }) }) }))
    end)

    it("writes holes as null unless they outnumber the items", function()
      assert.equal("[1,null,3]", encode({ 1, nil, 3 }))
      assert.equal("[null,null,3]", encode({ [3] = 3 }))
      assert.equal("[1,null,null]", encode(json.array({ 1, [3] = json.null })))
      assert.matches("an excessively sparse array %(highest index 1000, 1 items%) at value.a$",
        raised(encode, { a = { [1000] = 1 } }))
    end)

    it("writes a table with other keys as an object, integer keys as strings", function()
      assert.is_true(json_object_text({ '"1":"a"', '"x":1' }, encode({ "a", x = 1 })))
      assert.is_true(json_object_text({ '"-3":true', '"0":false' }, encode({ [0] = false, [-3] = true })))
    end)

    it("raises on keys that are neither strings nor integers", function()
      assert.matches("cannot encode the number key 1.5$", raised(encode, { [1.5] = 1 }))
      assert.matches("cannot encode a key of type boolean %(keys are strings or integers%)$",
        raised(encode, { [true] = 1 }))
      assert.matches("cannot encode a key of type table", raised(encode, { [{}] = 1 }))
    end)

    it("raises on a marked array with keys that are not indexes", function()
      assert.matches('an array %(json.array%) with the key "n" at value.list$',
        raised(encode, { list = json.array({ 1, n = 1 }) }))
    end)

    it("raises on a table that contains itself, and allows one table twice", function()
      local t = { a = {} }
      t.a.back = t
      assert.matches("json.encode: a table that contains itself at value.a.back$", raised(encode, t))
      local list = json.array()
      list[1] = list
      assert.matches("a table that contains itself at value%[1%]$", raised(encode, list))
      local shared = { 1 }
      assert.equal("[[1],[1]]", encode({ shared, shared }))
    end)

    it("encodes 1000 levels of nesting and refuses 1001", function()
      assert.equal(("["):rep(1000) .. "1" .. ("]"):rep(1000), encode(nested(1000, 1)))
      assert.matches("json.encode: tables nested more than 1000 deep at value%[1%]%[1%]",
        raised(encode, nested(1001, 1)))
    end)

    it("reads tables raw: metamethods do not run", function()
      local t = setmetatable({ a = 1 }, { __index = function() error("ran") end,
                                          __pairs = function() error("ran") end })
      assert.equal('{"a":1}', encode(t))
    end)
  end)

  describe("decode", function()
    it("reads scalars at the top", function()
      assert.equal(1, decode("1"))
      assert.equal("x", decode('"x"'))
      assert.equal(true, decode(" true "))
      assert.equal(false, decode("false"))
      assert.equal(json.null, decode("null"))
    end)

    it("gives json.null, a light userdata equal to lua-cjson's null", function()
      assert.equal("userdata", type(json.null))
      assert.equal(require("cjson").null, json.null)
      assert.same({ json.null }, decode("[null]"))
    end)

    it("marks arrays, so an empty one, or one emptied, stays []", function()
      local v = decode('{"a":[],"b":{},"c":[1,2]}')
      assert.equal(json.array_mt, getmetatable(v.a))
      assert.is_nil(getmetatable(v.b))
      assert.equal(json.array_mt, getmetatable(v.c))
      assert.equal("[]", encode(v.a))
      assert.equal("{}", encode(v.b))
      v.c[1], v.c[2] = nil, nil
      assert.equal("[]", encode(v.c))
      assert.is_true(json_object_text({ '"a":[]', '"b":{}', '"c":[]' }, encode(v)))
    end)

    it("gives an object emptied of its keys back as {}", function()
      local v = decode('{"x":{"k":1}}')
      v.x.k = nil
      assert.equal('{"x":{}}', encode(v))
    end)

    it("round-trips nested empty arrays and objects", function()
      for _, text in ipairs({ "[]", "{}", "[[]]", "[{}]", '{"a":[]}', '{"a":{"b":[[],{}]}}',
                              '[[],[[]],{"x":[{}]}]' }) do
        assert.equal(text, encode(decode(text)))
      end
    end)

    it("reads numbers", function()
      assert.same({ 0, -0.0, 12, -7, 1.5, 100, 0.01, 1e-7, 2 ^ 53 },
        decode("[0,-0,12,-7,1.5,1e2,1E-2,1e-7,9007199254740992]"))
      assert.equal("-0", encode(decode("-0")))
      assert.equal(2 ^ 53, decode("9007199254740993")) -- past 2^53, the nearest double
      assert.equal(123456789012345678, decode("123456789012345678"))
    end)

    it("keeps numbers as written with literals = true", function()
      local text = '[2.0,1234567890.12,1e2,-0,0.10,1E+2,12345678901234567890,7]'
      local v = decode(text, { literals = true })
      assert.equal(json.literal_mt, getmetatable(v[1]))
      assert.equal("2.0", tostring(v[1]))
      assert.equal(text, encode(v))
      assert.equal('{"price":2.0}', encode(decode('{"price":2.0}', { literals = true })))
      assert.equal("[2,1234567890.12,100]", encode(decode("[2.0,1234567890.12,1e2]")))
    end)

    it("makes literals with json.literal", function()
      assert.equal('{"price":2.50}', encode({ price = json.literal("2.50") }))
      assert.matches("not a JSON number", raised(json.literal, "2."))
      assert.matches("not a JSON number", raised(json.literal, "0x10"))
    end)

    it("reads escapes, surrogate pairs included, as UTF-8", function()
      assert.equal('"\\/\b\f\n\r\t', decode([["\"\\\/\b\f\n\r\t"]]))
      assert.equal("é", decode([["\u00e9"]]))
      assert.equal("é", decode([["\u00E9"]]))
      assert.equal("€", decode([["\u20ac"]]))
      assert.equal("😀", decode([["\ud83d\ude00"]]))
      assert.equal("a\0b", decode([["a\u0000b"]]))
      assert.equal("x😀y€", decode([["x\uD83D\uDE00y\u20AC"]]))
      assert.equal("plain é 😀", decode('"plain é 😀"'))
    end)

    -- text, the message decode gives
    local invalid = {
      { "", "expected a value at byte 0, found the end of the text" },
      { "   ", "expected a value at byte 3, found the end of the text" },
      { "[1,]", "expected a value at byte 3, found ']'" },
      { '{"a":1,}', "expected a string key at byte 7, found '}'" },
      { "{a:1}", "expected a string key at byte 1, found 'a'" },
      { '{"a" 1}', "expected ':' after the key at byte 5, found '1'" },
      { "[1 2]", "expected ',' or ']' at byte 3, found '2'" },
      { '{"a":1 "b":2}', "expected ',' or '}' at byte 7, found '\"'" },
      { "[1", "expected ',' or ']' at byte 2, found the end of the text" },
      { "[1]x", "expected the end of the text after the value at byte 3, found 'x'" },
      { "1 2", "expected the end of the text after the value at byte 2, found '2'" },
      { "// c\n1", "expected a value at byte 0, found '/'" },
      { "/* c */ 1", "expected a value at byte 0, found '/'" },
      { "'a'", "expected a value at byte 0, found '''" },
      { "tru", "expected a value at byte 0, found 't'" },
      { "nul", "expected a value at byte 0, found 'n'" },
      { "NaN", "expected a value at byte 0, found 'N'" },
      { "Infinity", "expected a value at byte 0, found 'I'" },
      { "\239\187\1911", "expected a value at byte 0, found byte 0xef" },
      { "01", "invalid number (a leading zero) at byte 0" },
      { "[-]", "invalid number at byte 1" },
      { "1.", "invalid number at byte 0" },
      { ".5", "expected a value at byte 0, found '.'" },
      { "+1", "expected a value at byte 0, found '+'" },
      { "1e", "invalid number at byte 0" },
      { "[1e400]", "number out of range at byte 1" },
      { '"abc', "unterminated string at byte 0" },
      { '["a\\n', "unterminated string at byte 1" },
      { '"a\nb"', "control character in a string (it must be escaped) at byte 2" },
      { '"a\\x"', "invalid escape at byte 2" },
      { '"\\u12G4"', "invalid \\u escape (it takes four hex digits) at byte 1" },
      { '"\\u12"', "invalid \\u escape (it takes four hex digits) at byte 1" },
      { '"\\ud83d"', "invalid \\u escape (a high surrogate without a low one) at byte 1" },
      { '"\\ud83d\\u0041"', "invalid \\u escape (a high surrogate without a low one) at byte 1" },
      { '"x\\ude00"', "invalid \\u escape (a low surrogate without a high one) at byte 2" },
      { '"a\255"', "invalid UTF-8 in a string at byte 2" },
      { '"\192\175"', "invalid UTF-8 in a string at byte 1" },
      { '"\237\160\128"', "invalid UTF-8 in a string at byte 1" },
      { '"\244\144\128\128"', "invalid UTF-8 in a string at byte 1" },
      { '"ab\226\130"', "invalid UTF-8 in a string at byte 3" },
      { '"\\n\255"', "invalid UTF-8 in a string at byte 3" },
    }
    for _, case in ipairs(invalid) do
      it(("refuses %q: %s"):format(case[1], case[2]), function()
        local v, err = decode(case[1])
        assert.is_nil(v)
        assert.equal(case[2], err)
      end)
    end

    it("reads 1000 levels of nesting and refuses 1001", function()
      local ok = ("["):rep(1000) .. ("]"):rep(1000)
      assert.equal(ok, encode(decode(ok)))
      local v, err = decode(("["):rep(1001) .. ("]"):rep(1001))
      assert.is_nil(v)
      assert.equal("nested more than 1000 deep at byte 1000", err)
      v, err = decode(('{"a":'):rep(1001) .. "1" .. ("}"):rep(1001))
      assert.is_nil(v)
      assert.equal("nested more than 1000 deep at byte 5000", err)
    end)

    it("keeps the last of duplicate keys", function()
      assert.same({ a = 2 }, decode('{"a":1,"a":2}'))
    end)

    it("raises on misuse: text that is not a string, options that are not a table", function()
      assert.matches("string expected", raised(decode, 5))
      assert.matches("table expected", raised(decode, "1", 5))
    end)
  end)

  describe("json.array and json.empty_array", function()
    it("returns the table it marks", function()
      local t = { 1 }
      assert.equal(t, json.array(t))
      assert.equal(json.array_mt, getmetatable(t))
      assert.equal(json.empty_array, json.array(json.empty_array))
    end)

    it("refuses a table with a metatable of its own", function()
      assert.matches("already has a metatable of its own",
        raised(json.array, setmetatable({}, {})))
    end)

    it("keeps json.empty_array read-only", function()
      assert.matches("json.empty_array is read%-only",
        raised(function() json.empty_array[1] = 1 end))
      assert.equal("[]", encode(json.empty_array))
    end)
  end)

  describe("a 10 KB document", function()
    it("round-trips", function()
      local doc = { users = json.array() }
      for i = 1, 120 do
        doc.users[i] = { id = i, name = "user-" .. i, score = i / 7, tags = json.array({ "a", "b\n" }),
                         friends = json.array(), meta = {} }
      end
      local text = encode(doc)
      assert.is_true(#text > 10000)
      assert.same(doc, decode(text))
      -- Keys may come out in another order: the same bytes, not the same text.
      local again = encode(decode(text))
      assert.equal(#text, #again)
      assert.same(doc, decode(again))
    end)
  end)

  describe("a finalizer that encodes or decodes in the middle of a call", function()
    -- The garbage collector runs finalizers while a call allocates; one
    -- that calls the module must not write over the text the call built.
    local function churn(fn)
      collectgarbage("setpause", 50)
      collectgarbage("setstepmul", 1000)
      local ran = 0
      local ok, err = pcall(function()
        for _ = 1, 3000 do
          local p = newproxy(true)
          getmetatable(p).__gc = function()
            ran = ran + 1
            json.encode({ "clobber", "clobber", "clobber" })
            json.decode('["\\nclobber\\n"]')
          end
          fn()
        end
      end)
      collectgarbage("setpause", 200)
      collectgarbage("setstepmul", 200)
      if not ok then error(err, 0) end
      return ran
    end

    it("leaves an encode's text whole", function()
      local list = {}
      for i = 1, 300 do list[i] = "item " .. i end
      local want = encode(list)
      assert.is_true(churn(function() assert.equal(want, encode(list)) end) > 0)
    end)

    it("leaves a decode's strings whole", function()
      local text = '["\\nab\\tcd\\u00e9", "x\\"y"]'
      assert.is_true(churn(function()
        local v = decode(text)
        assert.equal("\nab\tcd\195\169", v[1])
        assert.equal('x"y', v[2])
      end) > 0)
    end)
  end)
end)
