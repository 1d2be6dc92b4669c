--- Files for the mock library (server/lua/ffi/fs.c): directory listings,
-- names confined to a root, and the system's error messages.
-- @module moonport.core.fs

local ffi = require("ffi")
require("moonport.core.base")

ffi.cdef[[
int mp_dir_list(const char *path, const char **out, size_t *len);
int mp_dir_make(const char *path);
int mp_file_confine(const char *root, const char *name, size_t nlen,
                    char *out, size_t cap, double *size);
char *strerror(int errnum);
]]

local C = ffi.C
local mp_dir_list = C.mp_dir_list
local mp_file_confine = C.mp_file_confine
local strerror = C.strerror

local MP_DECLINED = C.MP_DECLINED
local MP_NOT_FOUND = C.MP_NOT_FOUND

local tonumber = tonumber
local ffi_string = ffi.string
local sort = table.sort

local out = ffi.new("const char *[1]")
local len_out = ffi.new("size_t[1]")
local path_buf = ffi.new("char[4096]")
local size_out = ffi.new("double[1]")
local DIR = ("d"):byte()

local fs = {}

--- The system's message for an errno value.
-- @usage core.strerror(2) -- "No such file or directory"
function fs.strerror(errnum)
  return ffi_string(strerror(errnum))
end

--- The entries of a directory: a list of {name = ..., dir = true|false},
-- sorted by name, or nil and an error message.
-- @usage for _, e in ipairs(core.dir_list("mappings")) do ... end
function fs.dir_list(path)
  local n = mp_dir_list(path, out, len_out)
  if n < 0 then return nil, path .. ": " .. fs.strerror(-n) end
  local list, p, off, size = {}, out[0], 0, tonumber(len_out[0])
  while off < size do
    local kind = p[off]
    local name = ffi_string(p + off + 1)
    list[#list + 1] = { name = name, dir = kind == DIR }
    off = off + #name + 2
  end
  sort(list, function(a, b) return a.name < b.name end)
  return list
end

--- Makes the directory path (its parent must exist): true, also when it
-- is already there, or nil and an error message.
-- @usage assert(core.dir_make(dir .. "/mappings"))
function fs.dir_make(path)
  local rc = C.mp_dir_make(path)
  if rc < 0 then return nil, path .. ": " .. fs.strerror(-rc) end
  return true
end

--- Finds the file name (a path relative to root, a directory) stands
-- for, following ".." and symbolic links, and refuses any that does not
-- end inside root (server/lua/ffi.h's mp_file_confine). Returns its
-- resolved path and size; or nil and "outside" (it leads out of root),
-- "not found" (no such regular file) or "invalid" (a NUL byte, too long).
-- @usage local path, size = core.confine(dir .. "/__files", name)
function fs.confine(root, name)
  local n = mp_file_confine(root, name, #name, path_buf, 4096, size_out)
  if n >= 0 then return ffi_string(path_buf, n), size_out[0] end
  if n == MP_DECLINED then return nil, "outside" end
  if n == MP_NOT_FOUND then return nil, "not found" end
  return nil, "invalid"
end

return fs
