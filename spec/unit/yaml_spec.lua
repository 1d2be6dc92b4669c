-- moonport.yaml (server/lua/yaml_module.c), loaded from the test build's
-- lua/moonport/yaml.so: the same source the server preloads.
if not os.getenv("LUA_CPATH") then package.cpath = "build/lua/?.so;" .. package.cpath end
local yaml = require("moonport.yaml")
local json = require("moonport.json")

local decode = yaml.decode

describe("moonport.yaml", function()
  it("reads mappings, sequences and scalars as moonport.json's values", function()
    local v = assert(decode("a: 1\nb: [x, {c: null}]\nempty: []\n"))
    assert.are.equal(1, v.a)
    assert.are.equal("x", v.b[1])
    assert.are.equal(json.null, v.b[2].c)
    assert.are.equal(json.array_mt, getmetatable(v.b))
    assert.are.equal("[]", json.encode(v.empty))
    assert.are.equal('{"c":null}', json.encode(v.b[2]))
  end)

  it("types plain scalars by YAML 1.2's core schema", function()
    local v = assert(decode([[
n1: ~
n2:
n3: null
t: true
f: FALSE
yes: yes
off: off
i: -12
o: 0o17
h: 0x1F
fl: 1.5e3
dot: .5
inf: -.inf
ver: 1.2.3
date: 2024-01-02
]]))
    assert.are.equal(json.null, v.n1)
    assert.are.equal(json.null, v.n2)
    assert.are.equal(json.null, v.n3)
    assert.is_true(v.t)
    assert.is_false(v.f)
    assert.are.equal("yes", v.yes)
    assert.are.equal("off", v.off)
    assert.are.equal(-12, v.i)
    assert.are.equal(15, v.o)
    assert.are.equal(31, v.h)
    assert.are.equal(1500, v.fl)
    assert.are.equal(0.5, v.dot)
    assert.are.equal(-math.huge, v.inf)
    assert.are.equal("1.2.3", v.ver)
    assert.are.equal("2024-01-02", v.date)
  end)

  it("keeps quoted and block scalars, and !!str, as strings; keys are always strings", function()
    local v = assert(decode("a: '1'\nb: \"true\"\nc: !!str 12\nd: |\n  x\n  y\n200: {description: ok}\ntrue: 1\n"))
    assert.are.equal("1", v.a)
    assert.are.equal("true", v.b)
    assert.are.equal("12", v.c)
    assert.are.equal("x\ny\n", v.d)
    assert.are.equal("ok", v["200"].description)
    assert.are.equal(1, v["true"])
  end)

  it("makes an alias the anchored value itself, and merges <<", function()
    local v = assert(decode("base: &b {x: 1, y: 2}\nsame: *b\nd:\n  y: 0\n  <<: *b\n  z: 3\n"))
    assert.are.equal(v.base, v.same)
    assert.are.same({ x = 1, y = 0, z = 3 }, v.d)
    local m = assert(decode("a: &a {x: 1}\nb: &b {x: 2, y: 2}\nc: {<<: [*a, *b], z: 3}\n"))
    assert.are.same({ x = 1, y = 2, z = 3 }, m.c)
    -- After << anything but a mapping or a sequence of them, << is a key.
    local plain = assert(decode("s: &s [2, 3]\nd: {<<: *s}\ne: {<<: 1}\n"))
    assert.are.same({ 2, 3 }, plain.d["<<"])
    assert.are.equal(1, plain.e["<<"])
    local cycle = assert(decode("- &a [*a]"))
    assert.are.equal(cycle[1], cycle[1][1])
  end)

  it("gives each mapping's keys in the text's order when asked", function()
    local v, order = decode("z: 1\na: {c: 1, b: 2, c: 3}\nm: &m {q: 1, p: 2}\nn:\n  y: 1\n  <<: *m\n  p: 5\n", { key_order = true })
    assert.are.same({ "z", "a", "m", "n" }, order[v])
    assert.are.same({ "c", "b" }, order[v.a])
    assert.are.same({ "y", "q", "p" }, order[v.n])
    assert.are.equal(5, v.n.p)
    local e = assert(decode("e: &e {}\nf: {<<: *e, a: 1}\n", { key_order = true }))
    assert.are.same({ a = 1 }, e.f)
    assert.are.equal(2, select("#", decode("a: 1", { key_order = true })))
    assert.are.equal(1, select("#", decode("a: 1")))
  end)

  it("reads only the first document", function()
    assert.are.same({ a = 1 }, decode("a: 1\n---\nb: 2\n"))
  end)

  it("returns nil and the line, column and reason for text that is not YAML", function()
    local v, err = decode("a: [1\n")
    assert.is_nil(v)
    assert.matches("^line 2 column 1: did not find expected ',' or ']'", err)
    v, err = decode("a: 1\n  b: 2\n")
    assert.is_nil(v)
    assert.matches("^line 2 column 4: mapping values are not allowed", err)
    assert.are.equal("line 1 column 1: the text holds no YAML document", select(2, decode("")))
    assert.are.equal("line 1 column 1: the alias *x names no anchor before it", select(2, decode("*x")))
    assert.are.equal("line 1 column 3: a key must be a scalar", select(2, decode("? [a]\n: 1")))
    assert.matches("abc does not fit its tag", select(2, decode("x: !!int abc")))
  end)

  it("refuses nesting deeper than 1000", function()
    assert.is_table(decode(("["):rep(1000) .. ("]"):rep(1000)))
    local v, err = decode(("["):rep(1001) .. ("]"):rep(1001))
    assert.is_nil(v)
    assert.matches("nested too deep", err)
  end)

end)
