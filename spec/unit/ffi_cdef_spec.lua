-- The FFI declarations in lua/moonport/core.lua must say what
-- server/lua/ffi.h says: a mismatch would pass the wrong types to C
-- without any error.
local root = os.getenv("MOONPORT_ROOT") or "."

local function read(path)
  local f = assert(io.open(root .. "/" .. path, "rb"))
  local text = f:read("*a")
  f:close()
  return text
end

-- Every "int mp_...(...);", "void mp_...(...);" and "void *mp_...(...);"
-- declaration, comments dropped, spaces folded.
local function declarations(text)
  text = text:gsub("/%*.-%*/", " ")
  local found = {}
  for _, ret in ipairs({ "int%s+", "void%s+", "void%s*%*%s*" }) do
    for decl in text:gmatch("%f[%w]" .. ret .. "mp_[%w_]+%s*%b()%s*;") do
      local name = decl:match("mp_[%w_]+")
      found[name] = decl:gsub("%s+", " "):gsub("%( ", "("):gsub(" %)", ")")
    end
  end
  return found
end

describe("the FFI door", function()
  it("declares in core.lua exactly the functions of server/lua/ffi.h", function()
    local header = declarations(read("server/lua/ffi.h"))
    local cdef = declarations(read("lua/moonport/core.lua"):match("ffi%.cdef%[%[(.-)%]%]"))
    assert.is_true(next(header) ~= nil)
    assert.same(header, cdef)
  end)
end)
