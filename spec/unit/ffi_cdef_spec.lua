-- The FFI contract (server/lua/ffi.h) against the ffi.cdef blocks of
-- lua/moonport/core/: a declaration that differs passes the wrong types to
-- C without any error, and a constant written in Lua can drift from C's.
package.path = "./?.lua;" .. package.path
local contract = require("spec.support.ffi_contract")

local header_functions, header_typedefs =
  contract.declarations(contract.read("server/lua/ffi.h"))
local modules = contract.lua_modules()

local sorted_keys = contract.sorted_keys

describe("the FFI contract", function()
  it("is read from server/lua/ffi.h", function()
    assert.is_true(#sorted_keys(header_functions) >= 30)
    assert.truthy(header_functions.mp_clock_wall)
    assert.same({ "uint64_t", "int", "const char * *" }, header_functions.mp_req_target.params)
    assert.equal("double", header_functions.mp_clock_wall.ret)
    assert.truthy(header_typedefs.mp_mock_config)
  end)

  it("declares every function of the header in exactly one module, with the same return and parameter types", function()
    local declared_in = {}
    for _, m in ipairs(modules) do
      local functions = contract.declarations(m.cdef)
      for name, decl in pairs(functions) do
        local header = header_functions[name]
        assert(header, m.path .. " declares " .. name .. ", which server/lua/ffi.h does not")
        assert(declared_in[name] == nil,
          name .. " is declared in " .. tostring(declared_in[name]) .. " and " .. m.path)
        declared_in[name] = m.path
        assert.equal(header.ret, decl.ret, m.path .. ": the return type of " .. name)
        assert.same(header.params, decl.params, m.path .. ": the parameter types of " .. name)
        assert.equal(header.text, decl.text, m.path .. ": the declaration of " .. name)
      end
    end
    for _, name in ipairs(sorted_keys(header_functions)) do
      assert(declared_in[name], name .. " is in server/lua/ffi.h but in no ffi.cdef of lua/moonport/core/")
    end
  end)

  it("declares the header's structures field for field", function()
    for _, m in ipairs(modules) do
      local _, typedefs = contract.declarations(m.cdef)
      for name, text in pairs(typedefs) do
        assert.equal(header_typedefs[name], text, m.path .. ": " .. name)
      end
    end
  end)

  it("has each module declare the functions it calls, and only those", function()
    for _, m in ipairs(modules) do
      local declared = contract.declarations(m.cdef)
      for name in pairs(declared) do
        assert(m.code:find("C%." .. name .. "%f[^%w_]"),
          m.path .. " declares " .. name .. " and does not call it")
      end
      for name in m.code:gmatch("C%.(mp_[%w_]+)") do
        assert(declared[name], m.path .. " calls " .. name .. " without declaring it")
      end
    end
  end)

  it("gives Lua every constant from C, and Lua writes none of their values", function()
    local names = contract.constant_names()
    local values = contract.constant_values()
    for name in pairs(names) do
      assert(values[name], name .. " has no integer value in server/'s headers")
    end
    for path, text in pairs(contract.lua_files()) do
      for name in text:gmatch("C%.(MP_[%u%d_]+)") do
        assert(names[name], path .. " reads " .. name .. ", which the contract does not give")
      end
      local line = text:match("[^\n]*MP_[%u%d_]+%s*=%s*%-?%d[^\n]*")
      assert(line == nil, path .. " writes a constant's value: " .. tostring(line))
    end
  end)
end)
