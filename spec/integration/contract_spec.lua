-- The FFI contract (server/lua/ffi.h) in the built server: Lua sees every
-- constant with the value C's headers give it; the binary exports the
-- contract's functions and no other; an app can still load a Lua C module
-- that takes the Lua C API from the process (Debian's lua-cjson).
-- Fixture: spec/fixtures/contract.lua.
local helpers = require("spec.helpers")
local contract = require("spec.support.ffi_contract")

local sorted = contract.sorted_keys

describe("the FFI contract in the server", function()
  local server, port
  setup(function()
    server = helpers.start("spec/fixtures/contract.lua")
    port = server.port
  end)
  teardown(function()
    if server then server:stop() end
  end)

  it("gives Lua every constant with the value C's headers give it", function()
    local names = sorted(contract.constant_names())
    local expected = contract.constant_values()
    local status, _, body = helpers.request(port, "GET", "/constants?names=" .. table.concat(names, ","))
    assert.equal(200, status, body)
    local seen = helpers.json(body)
    for _, name in ipairs(names) do
      assert.equal(expected[name], seen[name], name)
    end
  end)

  it("exports the contract's functions and nothing else", function()
    local header = contract.declarations(contract.read("server/lua/ffi.h"))
    local p = assert(io.popen("nm -D --defined-only " .. helpers.bin))
    local exported, others = {}, {}
    for line in p:lines() do
      local kind, name = line:match("^%x*%s+(%a)%s+(%S+)$")
      if kind == "T" or kind == "W" or kind == "i" then
        if header[name] then exported[name] = true else others[#others + 1] = name end
      end
    end
    p:close()
    table.sort(others)
    assert.same({}, others)
    assert.same(sorted(header), sorted(exported))
  end)

  it("loads Debian's cjson.so in an app", function()
    local status, headers, body = helpers.request(port, "GET", "/cjson")
    assert.equal(200, status, body)
    assert.equal("application/json", headers["content-type"])
    assert.same({ from = "cjson", list = { 1, 2, 3 } }, helpers.json(body))
  end)
end)
