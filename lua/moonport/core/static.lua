--- res:send_file: a file as the response, sent by the core
-- (server/handlers/static.c through server/lua/ffi/static.c) with
-- sendfile, off the loop, with the same headers, conditionals and ranges
-- as app:static's files.
-- @module moonport.core.static

local ffi = require("ffi")
local base = require("moonport.core.base")
local runner = require("moonport.core.runner")

ffi.cdef[[
int mp_res_send_file(uint64_t ctx, const char *root, const char *name,
                     size_t nlen, const char *cache_control, int flags);
int mp_res_file_result(uint64_t ctx);
]]

local C = ffi.C
local mp_res_send_file = C.mp_res_send_file
local mp_res_file_result = C.mp_res_file_result

local MP_AGAIN = C.MP_AGAIN
local MP_DECLINED = C.MP_DECLINED
local MP_NOT_FOUND = C.MP_NOT_FOUND
local MP_CLOSED = C.MP_CLOSED
local MP_INVALID = C.MP_INVALID
local MP_FILE_INDEX = C.MP_FILE_INDEX
local MP_FILE_DOTFILES = C.MP_FILE_DOTFILES
local MP_FILE_PRECOMPRESSED = C.MP_FILE_PRECOMPRESSED

local type, error = type, error
local fail, check_self = base.fail, base.check_self
local suspend = runner.suspend

local static = {}

-- What a send that sent nothing says.
local why = {
  [MP_NOT_FOUND] = "not found",
  [MP_DECLINED] = "refused",
}

--- Sends the file at path as the response, from the core: its type by
-- extension (unless a Content-Type was set), its length, and with status
-- 200 its ETag and Last-Modified, 304 for a matching If-None-Match or
-- If-Modified-Since, and Range answers (206, multipart/byteranges, 416).
-- Headers set before are kept. The handler waits while the file goes
-- out. opts: `root` (path is then a URL path, percent-encoded, confined
-- to root as app:static's are), `index` (true: a directory's
-- "index.html"), `dotfiles`, `precompressed` (NAME.br/NAME.gz to clients
-- that take them), `cache_control`. Returns res; or nil, "not found" or
-- "refused" (nothing was sent), or nil, "closed" (the client left, or
-- the file could not be sent).
-- @usage return res:send_file("reports/q3.pdf")
function static.send_file(res, path, opts)
  check_self(res, "res:send_file")
  if type(path) ~= "string" then error("res:send_file: path must be a string", 2) end
  local root, cache_control, flags = nil, nil, 0
  if opts ~= nil then
    if type(opts) ~= "table" then error("res:send_file: opts must be a table", 2) end
    root, cache_control = opts.root, opts.cache_control
    if root ~= nil and type(root) ~= "string" then error("res:send_file: root must be a string", 2) end
    if cache_control ~= nil and type(cache_control) ~= "string" then
      error("res:send_file: cache_control must be a string", 2)
    end
    if opts.index then flags = flags + MP_FILE_INDEX end
    if opts.dotfiles then flags = flags + MP_FILE_DOTFILES end
    if opts.precompressed then flags = flags + MP_FILE_PRECOMPRESSED end
  end
  local rc = mp_res_send_file(res, root, path, #path, cache_control, flags)
  if rc == MP_DECLINED then return nil, "refused" end
  if rc == MP_INVALID then error("res:send_file: path or cache_control is too long or invalid", 2) end
  if rc ~= MP_AGAIN then fail(rc, "res:send_file") end
  if not suspend() then return nil, "closed" end
  rc = mp_res_file_result(res)
  if rc == 0 then return res end
  if rc == MP_CLOSED then return nil, "closed" end
  return nil, why[rc] or "refused"
end

return static
