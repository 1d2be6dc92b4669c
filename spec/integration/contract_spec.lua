-- The FFI contract (server/lua/ffi.h) in the built server: Lua sees every
-- constant with the value C's headers give it. Fixture:
-- spec/fixtures/contract.lua.
local helpers = require("spec.helpers")
local contract = require("spec.support.ffi_contract")

local function sorted(set)
  local list = {}
  for k in pairs(set) do list[#list + 1] = k end
  table.sort(list)
  return list
end

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
end)
