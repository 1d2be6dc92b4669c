--- The FFI contract as the sources write it: server/lua/ffi.h's
-- declarations and constant names, the ffi.cdef blocks of
-- lua/moonport/core/, and the values C's headers give the constants. Used
-- by spec/unit/ffi_cdef_spec.lua and spec/integration/contract_spec.lua.
local dirent = require("posix.dirent")

local contract = {}

local root = os.getenv("MOONPORT_ROOT") or "."

local function read(path)
  local f = assert(io.open(root .. "/" .. path, "rb"))
  local text = f:read("*a")
  f:close()
  return text
end
contract.read = read

-- C text without comments and preprocessor lines (continuations joined).
local function strip_c(text)
  text = text:gsub("/%*.-%*/", " "):gsub("//[^\n]*", " ")
  text = text:gsub("\\\n", " ")
  return (text:gsub("\n%s*#[^\n]*", "\n"):gsub("^%s*#[^\n]*", ""))
end

-- One spelling for a type or a declaration: single spaces, a space on each
-- side of every '*' and none inside parentheses' edges or before commas.
local function normal(s)
  s = s:gsub("%*", " * "):gsub("%s+", " ")
  s = s:gsub("%( ", "("):gsub(" %)", ")"):gsub(" ,", ","):gsub("^ ", ""):gsub(" $", "")
  return s
end

-- A parameter's type: the declaration without its name.
local function param_type(p)
  if p == "void" then return p end
  return normal(p:gsub("[%w_]+%s*$", ""))
end

--- The top-level declarations of C text: functions named mp_ (not mp__),
-- as { ret = type, params = {types}, text = the declaration }, and
-- typedefs, as their text, by name.
function contract.declarations(text)
  local functions, typedefs = {}, {}
  for stmt in (strip_c(text) .. ";"):gmatch("([^;{}]*%b{}[^;]*);") do
    stmt = normal(stmt)
    local name = stmt:match("^typedef .- ([%w_]+)$")
    if name then typedefs[name] = stmt end
  end
  for stmt in strip_c(text):gsub("%b{}", "{}"):gmatch("([^;]+);") do
    stmt = normal(stmt)
    local ret, fname, params = stmt:match("^(.-)%f[%w_](mp_[%w_]+)(%b())$")
    if fname and not fname:find("^mp__") then
      local types = {}
      for p in params:sub(2, -2):gmatch("[^,]+") do types[#types + 1] = param_type(p) end
      functions[fname] = { ret = normal(ret), params = types, text = stmt }
    end
  end
  return functions, typedefs
end

--- The Lua modules of moonport.core: { path, cdef = the text of its
-- ffi.cdef[[ ]] block, code = the rest }.
function contract.lua_modules()
  local modules = {}
  local paths = { "lua/moonport/core.lua" }
  local names = dirent.dir(root .. "/lua/moonport/core")
  table.sort(names)
  for _, name in ipairs(names) do
    if name:match("%.lua$") then paths[#paths + 1] = "lua/moonport/core/" .. name end
  end
  for _, path in ipairs(paths) do
    local text = read(path)
    local cdef = text:match("ffi%.cdef%[%[(.-)%]%]") or ""
    modules[#modules + 1] = {
      path = path, cdef = cdef,
      code = text:gsub("ffi%.cdef%[%[.-%]%]", ""),
    }
  end
  return modules
end

-- The text of every file below dir (a path from the root) whose name
-- ends in suffix, by path.
local function files_below(dir, suffix, files)
  files = files or {}
  for _, name in ipairs(dirent.dir(root .. "/" .. dir)) do
    local path = dir .. "/" .. name
    if name:sub(-#suffix) == suffix then
      files[path] = read(path)
    elseif not name:match("^%.") and pcall(dirent.dir, root .. "/" .. path) then
      files_below(path, suffix, files)
    end
  end
  return files
end

--- Every Lua file of lua/moonport/, by path, with its text.
function contract.lua_files()
  return files_below("lua/moonport", ".lua")
end

--- The names of the contract's constants: errors.h's return codes and
-- ffi.h's MP_FFI_CONSTANTS, as a set.
function contract.constant_names()
  local names = {}
  local errors = read("server/base/errors.h"):match("#define MP_ERRNO_MAP%(XX%)(.-)\n\n")
  for name in errors:gmatch("XX%((%u[%u_]*),") do names["MP_" .. name] = true end
  local list = read("server/lua/ffi.h"):match("#define MP_FFI_CONSTANTS%(XX%)(.-)\n\n")
  for name in list:gmatch("XX%((MP_[%u%d_]+)%)") do names[name] = true end
  return names
end

-- An integer literal's value, or nil.
local function integer(s)
  s = s:gsub("^%((.*)%)$", "%1"):gsub("[uUlL]+$", "")
  return tonumber(s)
end

--- The value of every MP_ constant the headers under server/ define with
-- an integer: errors.h's return codes, enumerators (counted on from the
-- last value where none is written) and #defines.
function contract.constant_values()
  local values = {}
  for _, text in pairs(files_below("server", ".h")) do
    for name, code in text:gmatch("XX%((%u[%u_]*),%s*(%-?%d+),") do
      values["MP_" .. name] = tonumber(code)
    end
    for name, value in text:gmatch("#define%s+(MP_[%u%d_]+)%s+(%S+)") do
      values[name] = integer(value) or values[name]
    end
    for body in strip_c(text):gmatch("enum%s*[%w_]*%s*(%b{})") do
      local next_value = 0
      for item in body:sub(2, -2):gmatch("[^,]+") do
        local name, value = item:match("^%s*([%w_]+)%s*=?%s*(.-)%s*$")
        local v = name and (value ~= "" and integer(value) or next_value)
        if v then
          values[name] = v
          next_value = v + 1
        end
      end
    end
  end
  return values
end

--- The keys of a table, sorted.
function contract.sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  return keys
end

return contract
