-- The layout of WireMock's 404 page (moonport.mock.diff): its wrapping and
-- its JSON pretty printing, as WireMock's own tests pin them. The whole
-- page is compared with the real WireMock's in spec/compat/.
require("spec.support.ffi_unit")
local diff = require("moonport.mock.diff")

describe("moonport.mock.diff", function()
  it("wraps as WireMock does: long words cut, line breaks counted as characters", function()
    assert.equal("a\nb\nc", diff.wrap("abc", 1))
    assert.equal("ab\nc", diff.wrap("abc", 2))
    assert.equal("abc", diff.wrap("abc", 3))
    assert.equal("abc\nab\ncd\nabc\nd", diff.wrap("abc\nabcd\nabcd", 3))
  end)

  it("wraps on the last space that fits, and leaves short text alone", function()
    assert.equal("aaa bbb\nccc", diff.wrap("aaa bbb ccc", 7))
    assert.equal("aaa\nbbb", diff.wrap("aaa bbb", 5))
    assert.equal("short\ntext", diff.wrap("short\ntext", 10))
  end)

  it("pretty prints JSON as Jackson does, keeping the text's key order", function()
    assert.equal('{\n  "b" : 1,\n  "a" : [ 1, 2 ]\n}', diff.pretty_json('{"b":1,"a":[1,2]}'))
    assert.equal('{\n  "o" : {\n    "e" : [ ],\n    "f" : { },\n    "p" : [ {\n      "q" : 1\n    }, { } ]\n  }\n}',
      diff.pretty_json('{"o":{"e":[],"f":{},"p":[{"q":1},{}]}}'))
    assert.equal("[ ]", diff.pretty_json("[]"))
    assert.is_nil(diff.pretty_json("not json"))
  end)
end)
