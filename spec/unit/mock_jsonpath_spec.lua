-- The JSONPath subset of the mock server (lua/moonport/mock/jsonpath.lua):
-- Jayway JsonPath's syntax, as WireMock's matchesJsonPath and jsonPath
-- helper use it, over documents decoded by lua-cjson.
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path

local cjson = require("cjson")
local jsonpath = require("moonport.mock.jsonpath")

local PETS = [[{"name":"Bob","pets":[{"type":"dog","age":3},{"type":"cat","age":5}]}]]

local STORE = [[{
  "store": {
    "book": [
      {"category": "reference", "author": "Nigel Rees", "title": "Sayings", "price": 8.95},
      {"category": "fiction", "author": "Evelyn Waugh", "title": "Sword", "price": 12.99},
      {"category": "fiction", "author": "Herman Melville", "title": "Moby Dick",
       "isbn": "0-553-21311-3", "price": 8.99},
      {"category": "fiction", "author": "J. R. R. Tolkien", "title": "The Lord",
       "isbn": "0-395-19395-8", "price": 22.99}
    ],
    "bicycle": {"color": "red", "price": 19.95}
  },
  "expensive": 10
}]]

local function query(json, path)
  return jsonpath.query(cjson.decode(json), path)
end

-- Results whose order is unspecified (object members), as a sorted list
-- of their JSON texts.
local function sorted(list)
  local out = {}
  for i, v in ipairs(list) do out[i] = type(v) == "string" and v or cjson.encode(v) end
  table.sort(out)
  return out
end

describe("jsonpath", function()
  describe("on WireMock's documentation example", function()
    it("selects a member with $.name", function()
      assert.same({ "Bob" }, query(PETS, "$.name"))
    end)

    it("indexes arrays from 0", function()
      assert.same({ "dog" }, query(PETS, "$.pets[0].type"))
      assert.same({ "cat" }, query(PETS, "$.pets[1].type"))
    end)

    it("counts negative indexes from the end", function()
      assert.same({ "cat" }, query(PETS, "$.pets[-1].type"))
      assert.same({ "dog" }, query(PETS, "$.pets[-2].type"))
    end)

    it("maps [*] over an array in order", function()
      assert.same({ "dog", "cat" }, query(PETS, "$.pets[*].type"))
    end)

    it("filters elements with [?(@.type == 'cat')]", function()
      assert.same({ 5 }, query(PETS, "$.pets[?(@.type == 'cat')].age"))
    end)

    it("finds members at any depth with ..", function()
      local ages = query(PETS, "$..age")
      table.sort(ages)
      assert.same({ 3, 5 }, ages)
    end)

    it("slices with [0:1]", function()
      assert.same({ { type = "dog", age = 3 } }, query(PETS, "$.pets[0:1]"))
    end)
  end)

  describe("paths", function()
    it("returns the whole document for $", function()
      local doc = cjson.decode(PETS)
      local found = jsonpath.query(doc, "$")
      assert.equal(1, #found)
      assert.equal(doc, found[1])
    end)

    it("returns an empty list when nothing matches", function()
      assert.same({}, query(PETS, "$.missing"))
      assert.same({}, query(PETS, "$.pets[7]"))
      assert.same({}, query(PETS, "$.pets[-3]"))
      assert.same({}, query(PETS, "$.name.first"))
      assert.same({}, query(PETS, "$.name[0]"))
      assert.same({}, query(PETS, "$.pets.type"))
    end)

    it("does not index objects", function()
      assert.same({}, query([[{"a":{"0":"zero"}}]], "$.a[0]"))
      assert.same({ "zero" }, query([[{"a":{"0":"zero"}}]], "$.a['0']"))
    end)

    it("reads bracketed names with spaces, dots and escaped quotes", function()
      local doc = [[{"a b.c": 1, "it's": 2, "say \"x\"": 3, "plain": {"k": 4}}]]
      assert.same({ 1 }, query(doc, "$['a b.c']"))
      assert.same({ 1 }, query(doc, '$["a b.c"]'))
      assert.same({ 2 }, query(doc, "$['it\\'s']"))
      assert.same({ 2 }, query(doc, '$["it\'s"]'))
      assert.same({ 3 }, query(doc, '$["say \\"x\\""]'))
      assert.same({ 4 }, query(doc, "$['plain']['k']"))
      assert.same({ 4 }, query(doc, "$[ 'plain' ].k"))
    end)

    it("takes the union of several bracketed names", function()
      assert.same({ 1, 2 }, query([[{"a":1,"b":2,"c":3}]], "$['a','b']"))
    end)

    it("takes the union of several indexes, in the order given", function()
      assert.same({ 30, 10 }, query("[10,20,30]", "$[2,0]"))
      assert.same({ 30, 20 }, query("[10,20,30]", "$[-1, 1]"))
    end)

    it("slices like Jayway, either bound optional and negative allowed", function()
      local a = "[0,1,2,3,4]"
      assert.same({ 1, 2 }, query(a, "$[1:3]"))
      assert.same({ 2, 3, 4 }, query(a, "$[2:]"))
      assert.same({ 0, 1 }, query(a, "$[:2]"))
      assert.same({ 3, 4 }, query(a, "$[-2:]"))
      assert.same({ 0, 1, 2, 3 }, query(a, "$[:-1]"))
      assert.same({ 0, 1, 2, 3, 4 }, query(a, "$[0:100]"))
      assert.same({}, query(a, "$[3:1]"))
    end)

    it("maps .* and [*] over object values", function()
      assert.same({ "1", "2" }, sorted(query([[{"a":"1","b":"2"}]], "$.*")))
      assert.same({ "1", "2" }, sorted(query([[{"a":"1","b":"2"}]], "$[*]")))
      assert.same({ "dog", "cat" }, query(PETS, "$.pets.*.type"))
    end)

    it("yields nothing from an empty table, array or object", function()
      assert.same({}, query([[{"e":[]}]], "$.e[*]"))
      assert.same({}, query([[{"e":{}}]], "$.e.*"))
      assert.same({}, query([[{"e":{}}]], "$.e[0]"))
    end)

    it("treats only tables keyed exactly 1..n as arrays", function()
      local mixed = { "a", "b", extra = "x" }
      assert.same({}, jsonpath.query(mixed, "$[0]"))
      assert.same({ "x" }, jsonpath.query(mixed, "$.extra"))
      assert.same({ "a", "b", "x" }, sorted(jsonpath.query(mixed, "$[*]")))
      local holey = { "a", "b", "c", "d" }
      holey[2] = nil
      assert.same({}, jsonpath.query(holey, "$[0]"))
      assert.same({ "c" }, jsonpath.query({ "a", "b", "c" }, "$[2]"))
    end)

    it("treats an empty table as an empty array when filtering", function()
      assert.same({}, query([[{"e":[]}]], "$.e[?(!@.x)]"))
      assert.same({}, query([[{"e":{}}]], "$.e[?(!@.x)]"))
    end)

    it("returns JSON null as cjson.null", function()
      local found = query([[{"a":null}]], "$.a")
      assert.equal(1, #found)
      assert.equal(cjson.null, found[1])
    end)

    it("returns false values", function()
      assert.same({ false }, query([[{"a":false}]], "$.a"))
    end)

    it("accepts hyphens and digits in dotted names", function()
      assert.same({ 1 }, query([[{"x-id2":1}]], "$.x-id2"))
    end)
  end)

  describe("recursive descent", function()
    it("finds a member at every depth, the root included", function()
      assert.same({ "4", "5", "6" },
        sorted(query([[{"id":"4","a":{"id":"5","b":[{"id":"6"}]}}]], "$..id")))
    end)

    it("lists every value below the root with ..*", function()
      assert.same({ "1", "2", "[1,2]" }, sorted(query([[{"a":[1,2]}]], "$..*")))
    end)

    it("applies an index at every array with ..[0]", function()
      assert.same({ "1", "3" }, sorted(query([[{"a":[1,2],"b":{"c":[3]}}]], "$..[0]")))
    end)

    it("applies a bracketed name at every depth", function()
      local prices = query(STORE, "$..['price']")
      table.sort(prices)
      assert.same({ 8.95, 8.99, 12.99, 19.95, 22.99 }, prices)
    end)

    it("combines with a later filter, as in $..book[?(@.isbn)]", function()
      assert.same({ "Moby Dick", "The Lord" }, query(STORE, "$..book[?(@.isbn)].title"))
    end)

    it("reports each matching descendant once with ..[?()]", function()
      local titles = {}
      for i, b in ipairs(query(STORE, "$..[?(@.price > 10)]")) do
        titles[i] = b.title or b.color
      end
      table.sort(titles)
      assert.same({ "Sword", "The Lord", "red" }, titles)
    end)
  end)

  describe("filters", function()
    local function titles(path)
      local out = {}
      for i, b in ipairs(query(STORE, path)) do out[i] = b.title end
      return out
    end

    it("compares numbers with every relational operator", function()
      assert.same({ "Sword" }, titles("$.store.book[?(@.price == 12.99)]"))
      assert.same({ "Sayings", "Moby Dick", "The Lord" }, titles("$.store.book[?(@.price != 12.99)]"))
      assert.same({ "Sayings", "Moby Dick" }, titles("$.store.book[?(@.price < 10)]"))
      assert.same({ "Sayings", "Moby Dick" }, titles("$.store.book[?(@.price <= 8.99)]"))
      assert.same({ "The Lord" }, titles("$.store.book[?(@.price > 12.99)]"))
      assert.same({ "Sword", "The Lord" }, titles("$.store.book[?(@.price >= 12.99)]"))
    end)

    it("compares strings, single- or double-quoted", function()
      assert.same({ "Sayings" }, titles("$.store.book[?(@.category == 'reference')]"))
      assert.same({ "Sayings" }, titles('$.store.book[?(@.category == "reference")]'))
      assert.same({ "Sword", "Moby Dick" }, titles("$.store.book[?(@.author < 'I')]"))
    end)

    it("never coerces between strings and numbers", function()
      assert.same({}, query(PETS, "$.pets[?(@.age == '3')]"))
      assert.same({}, query(PETS, "$.pets[?(@.age < '9')]"))
      assert.same({}, query([[{"a":[{"v":"3"}]}]], "$.a[?(@.v == 3)]"))
      assert.same({ "dog", "cat" }, query(PETS, "$.pets[?(@.age != '3')].type"))
    end)

    it("compares booleans and null", function()
      local doc = [[{"a":[{"k":1,"on":true},{"k":2,"on":false},{"k":3,"on":null},{"k":4}]}]]
      assert.same({ 1 }, query(doc, "$.a[?(@.on == true)].k"))
      assert.same({ 2 }, query(doc, "$.a[?(@.on == false)].k"))
      assert.same({ 3 }, query(doc, "$.a[?(@.on == null)].k"))
      assert.same({}, query(doc, "$.a[?(@.on > false)].k"))
    end)

    it("tests existence with a bare path, null and false included", function()
      local doc = [[{"a":[{"k":1,"x":false},{"k":2},{"k":3,"x":null}]}]]
      assert.same({ 1, 3 }, query(doc, "$.a[?(@.x)].k"))
      assert.same({ 2 }, query(doc, "$.a[?(!@.x)].k"))
    end)

    it("treats a missing member as equal to nothing, so != holds for it", function()
      assert.same({}, titles("$.store.book[?(@.missing == null)]"))
      assert.same({ "Sayings", "Sword", "The Lord" },
        titles("$.store.book[?(@.isbn != '0-553-21311-3')]"))
    end)

    it("never finds two missing members equal", function()
      assert.same({}, query(PETS, "$.pets[?(@.x == @.y)]"))
    end)

    it("compares objects and arrays by their contents", function()
      local doc = [[{"ref":{"a":[1,2]},"items":[{"k":1,"v":{"a":[1,2]}},{"k":2,"v":{"a":[1,3]}},
        {"k":3,"v":{"a":[1,2],"b":0}},{"k":4,"v":{}}]}]]
      assert.same({ 1 }, query(doc, "$.items[?(@.v == $.ref)].k"))
      assert.same({ 2, 3, 4 }, query(doc, "$.items[?(@.v != $.ref)].k"))
    end)

    it("combines comparisons with && and ||, && binding tighter", function()
      assert.same({ "Moby Dick" },
        titles("$.store.book[?(@.category == 'fiction' && @.price < 10)]"))
      assert.same({ "Sayings", "The Lord" },
        titles("$.store.book[?(@.price < 8.96 || @.price > 20)]"))
      assert.same({ "Moby Dick" },
        titles("$.store.book[?(@.isbn && @.price < 10 && @.category == 'fiction')]"))
      assert.same({ "Sayings", "Moby Dick", "The Lord" },
        titles("$.store.book[?(@.category == 'reference' || @.isbn && @.price > 0)]"))
      assert.same({ "Moby Dick", "The Lord" },
        titles("$.store.book[?((@.category == 'reference' || @.isbn) && @.price > 8.96)]"))
    end)

    it("reads nested paths after @ and quoted names", function()
      local doc = [[{"a":[{"b":{"c":"x"}},{"b":{"c":"y"}}]}]]
      assert.same({ { b = { c = "y" } } }, query(doc, "$.a[?(@.b.c == 'y')]"))
      assert.same({ { b = { c = "y" } } }, query(doc, "$.a[?(@['b']['c'] == 'y')]"))
    end)

    it("compares the element itself with a bare @", function()
      assert.same({ 3, 4 }, query("[1,2,3,4]", "$[?(@ > 2)]"))
      assert.same({ "b" }, query('["a","b"]', "$[?(@ == 'b')]"))
    end)

    it("reads $ inside a filter as the document root", function()
      assert.same({ "Sword", "The Lord" }, titles("$.store.book[?(@.price > $.expensive)]"))
    end)

    it("reads negative and exponent numbers", function()
      local doc = "[-2,-1,0,150]"
      assert.same({ -2 }, query(doc, "$[?(@ < -1)]"))
      assert.same({ 150 }, query(doc, "$[?(@ > 1e2)]"))
    end)

    it("tests an object itself when applied to an object", function()
      assert.same({ "red" }, query(STORE, "$.store.bicycle[?(@.color == 'red')].color"))
      assert.same({}, query(STORE, "$.store.bicycle[?(@.color == 'blue')]"))
    end)

    it("tolerates whitespace around operands and operators", function()
      assert.same({ 5 }, query(PETS, "$.pets[ ?( @.type=='cat' ) ].age"))
      assert.same({ 5 }, query(PETS, "$.pets[?(@.type   ==   'cat')].age"))
    end)
  end)

  describe("compile", function()
    it("returns a compiled path that query accepts", function()
      local p = assert(jsonpath.compile("$.pets[*].age"))
      assert.same({ 3, 5 }, jsonpath.query(cjson.decode(PETS), p))
    end)

    it("caches compiled paths by their text", function()
      assert.equal(jsonpath.compile("$.cached.path"), jsonpath.compile("$.cached.path"))
    end)

    it("returns nil and an error naming the position for bad paths", function()
      local bad = {
        ["name"] = 1,
        [""] = 1,
        ["$."] = 3,
        ["$.a["] = 4,
        ["$.a[0"] = 6,
        ["$.a[0]]"] = 7,
        ["$['a]"] = 3,
        ["$.a[?(@.b == )]"] = 14,
        ["$.a[?(@.b == 'x']"] = 17,
        ["$.a[?(@.b =~ /x/)]"] = 11,
        ["$.a[?(@.b in ['x'])]"] = 11,
        ["$.a[?(@.b = 1)]"] = 11,
        ["$.."] = 4,
        ["$..."] = 4,
        ["$[1:2:3]"] = 6,
        ["$[x]"] = 3,
      }
      for path, pos in pairs(bad) do
        local compiled, err = jsonpath.compile(path)
        assert.is_nil(compiled, path)
        assert.is_string(err, path)
        assert.truthy(err:find("position " .. pos, 1, true), path .. " -> " .. err)
        local found, qerr = jsonpath.query({}, path)
        assert.is_nil(found, path)
        assert.equal(err, qerr)
      end
    end)

    it("says what it expected", function()
      local _, err = jsonpath.compile("$.a[0")
      assert.equal("invalid JSONPath '$.a[0': expected ',', ':' or ']', found end of path at position 6", err)
    end)

    it("raises for arguments of the wrong type", function()
      assert.has_error(function() jsonpath.compile(42) end, "path must be a string")
      assert.has_error(function() jsonpath.query({}, 42) end,
        "path must be a string or a compiled path")
    end)
  end)
end)
