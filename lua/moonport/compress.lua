--- Response compression for apps: a middleware (or a function a handler
-- calls) that gzips the response's body where the client accepts it.
--
--     local compress = require("moonport.compress")
--     app:use(compress{ types = { "text/", "application/json" }, min_length = 512 })
--
-- The body is compressed by the core (zlib) as it goes out: a whole body
-- (res:send, res:json) once it reaches min_length, a streamed one
-- (res:write) piece by piece, each piece flushed. Only the listed types
-- ("type/" matches every subtype), never a response that already has a
-- Content-Encoding, a 204, 304 or 206, or a streamed body with a declared
-- Content-Length. An answer whose type matches says Vary: Accept-Encoding.
-- @module moonport.compress

local core_compress = require("moonport.core.compress")

local type, concat, tostring, error = type, table.concat, tostring, error

--- A function(req, res) that puts the response under these options:
-- `types` (a list of types or "type/" prefixes, default text/*, JSON,
-- JavaScript, XML and SVG), `min_length` (bytes, default 1024) and
-- `level` (1 to 9, default 6). Made once, when the app loads; each use
-- costs nothing more. Raises for a bad option.
-- @usage app:use(require("moonport.compress"){ min_length = 256 })
local function compress(opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("moonport.compress: takes a table of options", 2) end
  local types = opts.types
  if type(types) == "table" then types = concat(types, ",") end
  if types ~= nil and type(types) ~= "string" then
    error("moonport.compress: types must be a list of strings", 2)
  end
  local min_length = opts.min_length or 1024
  local level = opts.level or 6
  if type(min_length) ~= "number" or type(level) ~= "number" then
    error("moonport.compress: min_length and level are numbers", 2)
  end
  local rule, err = core_compress.rule(types, min_length, level)
  if not rule then error("moonport.compress: " .. tostring(err) .. " (level 1 to 9)", 2) end
  local apply = core_compress.apply
  return function(req, res) apply(res, rule) end
end

return compress
