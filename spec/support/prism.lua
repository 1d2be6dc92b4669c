--- The real Prism and `moonport --openapi` side by side, for
-- spec/compat/prism_diff_spec.lua and spec/support/prism_record.lua:
-- starting both on a document of spec/compat/prism/ (statically, or with
-- --dynamic --seed), sending a case's request, the response schema of an
-- answer (from the document itself, $refs across files resolved) and a
-- validator for it built with moonport's JSON Schema module.
--
-- Prism CLI 5.14.2 is installed by spec/support/fetch_prism.sh (a CTest
-- fixture) into $MOONPORT_PRISM (default build/prism).
local helpers = require("spec.helpers")
local process = require("spec.support.process")
local cjson = require("cjson")

local M = {}

local install = os.getenv("MOONPORT_PRISM") or "build/prism"
if install:sub(1, 1) ~= "/" then install = process.root .. "/" .. install end
M.bin = install .. "/node_modules/@stoplight/prism-cli/dist/index.js"

--- The folder of the documents.
M.docs = process.root .. "/spec/compat/prism"

-- Seconds a server has to start listening (Prism takes a few).
local START_TIMEOUT = 60

--- Whether the moonport binary has the OpenAPI mode (`--openapi` in its
-- --help): until it has, the spec checks Prism's side alone.
function M.moonport_has_openapi()
  if M._has == nil then
    local ok, code, out, err = pcall(process.run, { "--help" }, 10)
    M._has = ok and code == 0 and ((out or "") .. (err or "")):find("--openapi", 1, true) ~= nil
  end
  return M._has
end

local function doc_path(file)
  return M.docs .. "/" .. file
end

--- Starts Prism on `file` (relative to M.docs); `opts.dynamic`, `opts.seed`.
-- Returns the process (a spec.support.process Program) with `.port`.
function M.start_prism(file, opts)
  opts = opts or {}
  local port = process.free_port()
  local argv = { "node", M.bin, "mock", "-h", "127.0.0.1", "-p", tostring(port) }
  if opts.dynamic then
    argv[#argv + 1] = "--dynamic"
    if opts.seed then
      argv[#argv + 1] = "--seed"
      argv[#argv + 1] = tostring(opts.seed)
    end
  end
  argv[#argv + 1] = doc_path(file)
  local p = process.spawn(argv)
  p.port = port
  process.wait_port(port, START_TIMEOUT, p)
  return p
end

--- Starts `moonport --openapi FILE --listen 127.0.0.1:PORT` (and
-- `--dynamic --seed N` with `opts.dynamic`, `opts.seed`). Returns the
-- process with `.port`.
function M.start_moonport(file, opts)
  opts = opts or {}
  local port = process.free_port()
  local argv = { process.bin, "--openapi", doc_path(file), "--listen", "127.0.0.1:" .. port }
  if opts.dynamic then
    argv[#argv + 1] = "--dynamic"
    if opts.seed then
      argv[#argv + 1] = "--seed"
      argv[#argv + 1] = tostring(opts.seed)
    end
  end
  local p = process.spawn(argv)
  p.port = port
  p.name = "moonport"
  process.wait_port(port, START_TIMEOUT, p)
  return p
end

-- JSON text of a Lua value with object members in byte order, so that a
-- case's body is the same bytes on every run (AJV lists some violations
-- in the body's member order). An empty table is an object.
local function encode_sorted(v)
  if type(v) ~= "table" or v == cjson.null then return cjson.encode(v) end
  local parts = {}
  if #v > 0 then
    for i, x in ipairs(v) do parts[i] = encode_sorted(x) end
    return "[" .. table.concat(parts, ",") .. "]"
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys)
  for i, k in ipairs(keys) do parts[i] = cjson.encode(k) .. ":" .. encode_sorted(v[k]) end
  return "{" .. table.concat(parts, ",") .. "}"
end
M.encode_sorted = encode_sorted

--- The request of case `c` as sent: method, target, header list, body.
function M.request_of(c)
  local headers = {}
  local has_type = false
  for k, v in pairs(c.headers or {}) do
    if type(k) == "number" then headers[#headers + 1] = { v[1], v[2] } else headers[#headers + 1] = { k, v } end
  end
  table.sort(headers, function(a, b) return a[1] < b[1] end)
  for _, h in ipairs(headers) do
    if h[1]:lower() == "content-type" then has_type = true end
  end
  local body = c.body
  if c.json ~= nil then
    body = type(c.json) == "string" and c.json or encode_sorted(c.json)
    if not has_type then headers[#headers + 1] = { "Content-Type", "application/json" } end
  end
  return c.method or "GET", c.path, headers, body
end

--- Sends case `c`'s request to 127.0.0.1:port. Returns the response
-- (spec.helpers' object: status, header_list, body).
function M.send(port, c)
  local method, target, headers, body = M.request_of(c)
  local _, _, _, resp = helpers.request(port, method, target, headers, body, { timeout = 10 })
  return resp
end

------------------------------------------------------------------------------
-- Response schemas, for the answers of dynamic cases
------------------------------------------------------------------------------

local yaml_cache = {}

-- A YAML or JSON file, decoded (lyaml: YAML 1.1 as Prism's loader reads
-- these documents); nulls as cjson.null.
local function load_file(path)
  if yaml_cache[path] then return yaml_cache[path] end
  local lyaml = require("lyaml")
  local text = assert(helpers.read_file(path), "cannot read " .. path)
  local doc = lyaml.load(text)
  local function fix(v)
    if v == lyaml.null then return cjson.null end
    if type(v) == "table" then
      for k, x in pairs(v) do v[k] = fix(x) end
    end
    return v
  end
  doc = fix(doc)
  yaml_cache[path] = doc
  return doc
end

-- The value at a JSON pointer ("/a/b", "" for the whole) in `doc`.
local function at_pointer(doc, pointer, where)
  local v = doc
  for part in pointer:gmatch("[^/]+") do
    part = part:gsub("~1", "/"):gsub("~0", "~")
    if type(v) ~= "table" then error("no " .. pointer .. " in " .. where) end
    local n = tonumber(part)
    if v[part] == nil and n and v[n + 1] ~= nil then v = v[n + 1] else v = v[part] end
  end
  if v == nil then error("no " .. pointer .. " in " .. where) end
  return v
end

-- `v` (from the file at `path`) with every $ref replaced by what it names,
-- a copy: refs to other files are resolved relative to the referring file.
-- The documents here have no cyclic schemas.
local function resolve(v, path, depth)
  depth = depth or 0
  assert(depth < 64, "$ref nesting too deep (a cycle?) in " .. path)
  if type(v) ~= "table" or v == cjson.null then return v end
  if type(v["$ref"]) == "string" then
    local file, pointer = v["$ref"]:match("^([^#]*)#?(.*)$")
    local target_path = path
    if file ~= "" then target_path = path:match("^(.*/)") .. file end
    local target = at_pointer(load_file(target_path), pointer, target_path)
    return resolve(target, target_path, depth + 1)
  end
  local out = {}
  for k, x in pairs(v) do out[k] = resolve(x, path, depth + 1) end
  return out
end

--- The response schema document `file` gives for `method` on the path
-- template `template`, status `status` (a number; else `default`) and
-- media type `media`, $refs resolved; nil when it gives none. Also the
-- document's OpenAPI version ("3.0" or "3.1").
function M.response_schema(file, template, method, status, media)
  local path = doc_path(file)
  local doc = load_file(path)
  local version = tostring(doc.openapi):match("^3%.1") and "3.1" or "3.0"
  local op = ((doc.paths or {})[template] or {})[method:lower()]
  assert(op, ("%s has no %s %s"):format(file, method, template))
  local responses = op.responses or {}
  local r = responses[tostring(status)] or responses.default
  if r == nil then return nil, version end
  r = resolve(r, path)
  local content = r.content or {}
  local m = content[media]
  if m == nil then return nil, version end
  return m.schema, version
end

-- moonport's JSON Schema module, loaded outside a server: the unit build's
-- C functions (spec/support/ffi_unit.lua) and moonport.core's regex.
local function jsonschema_module()
  require("spec.support.ffi_unit")
  local ok, js = pcall(require, "moonport.jsonschema")
  if ok then return js, "new" end
  if not package.loaded["moonport.core"] then
    package.loaded["moonport.core"] = { regex = require("moonport.core.regex").new }
  end
  return require("moonport.mock.jsonschema"), "old"
end

-- A value decoded by cjson, made into moonport.json's (arrays marked, null
-- as json.null), for moonport's validator.
local function to_moonport_json(text)
  require("spec.support.ffi_unit")
  local json = require("moonport.json")
  return json.decode(text)
end

-- A schema from YAML (Lua tables, cjson.null) made into moonport.json's
-- values: arrays marked with json.array_mt, null as json.null.
local function schema_to_moonport(s)
  local json = require("moonport.json")
  local function conv(v)
    if v == cjson.null then return json.null end
    if type(v) ~= "table" then return v end
    local out = {}
    for k, x in pairs(v) do out[k] = conv(x) end
    if #v > 0 then setmetatable(out, json.array_mt) end
    return out
  end
  return conv(s)
end

--- Whether `text` (a response body) is valid JSON against `schema` of an
-- OpenAPI `version` ("3.0": nullable; "3.1": draft 2020-12), formats
-- asserted. Returns true, or false and why.
function M.validate(schema, version, text)
  local js, api = jsonschema_module()
  local ok, value = pcall(to_moonport_json, text)
  if not ok or value == nil then return false, "not JSON: " .. helpers.shorten(text, 200) end
  local s = schema_to_moonport(schema)
  if api == "new" then
    local v, err = js.compile(s, { dialect = version == "3.1" and "oas3.1" or "oas3.0",
                                   formats = true, direction = "response" })
    if not v then return false, "the schema does not compile: " .. tostring(err) end
    if v.valid(value) then return true end
    local errs = v.errors(value)
    local parts = {}
    for i, e in ipairs(errs) do
      local p = {}
      for j, k in ipairs(e.path or {}) do p[j] = tostring(k) end
      parts[i] = "/" .. table.concat(p, "/") .. " " .. tostring(e.message)
    end
    return false, table.concat(parts, "; ")
  end
  -- The mock's module knows no `nullable`: the 3.0 documents' nullable
  -- schemas are widened to take null.
  if version ~= "3.1" then
    local json = require("moonport.json")
    local seen = {}
    local function widen(v)
      if type(v) ~= "table" or seen[v] then return end
      seen[v] = true
      for _, x in pairs(v) do widen(x) end
      if v.nullable == true and type(v.type) == "string" then
        v.type = setmetatable({ v.type, "null" }, json.array_mt)
        if v.enum then v.enum[#v.enum + 1] = json.null end
      end
    end
    widen(s)
  end
  local check, err = js.compile(s, "V202012")
  if not check then return false, "the schema does not compile: " .. tostring(err) end
  local valid, where, why = check(value)
  if valid then return true end
  return false, ("%s: %s"):format(where == "" and "/" or where, why)
end

return M
