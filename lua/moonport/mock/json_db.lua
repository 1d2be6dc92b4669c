--- json-server mode: a REST API over one JSON file, as json-server 0.17
-- serves it (`moonport --json-db db.json`, or `mock.json_db(app, path)`
-- in a script, next to routes and stubs of its own).
--
--     local mock = require("moonport.mock")
--     local app = mock.app()
--     mock.json_db(app, "db.json")   -- GET /posts, POST /posts, GET /db, ...
--     return app
--
-- Every top-level array of the file is a plural resource
-- (`/{name}[/{id}]`, filters, sorting, slicing, `_embed`, `_expand`,
-- nested `/{name}/{id}/{child}`), every top-level object a singular one
-- (`/{name}`), and `GET /db` the whole document.
--
-- Where the data lives: the document is kept as one JSON text under one
-- key of the mock's state store (core.mock_state, which every worker sees
-- and nothing evicts), next to a version counter. A worker decodes the
-- text again only when the version moved since it last looked, so reads
-- cost a store lookup. A write takes the lock key with `add` (it exists
-- or not for every worker alike, and expires after LOCK_TTL seconds in
-- case its holder died), decodes the current text, changes it, stores it,
-- writes the file (a temporary file renamed over db.json, so a reader of
-- the file sees the old or the new document whole), moves the version and
-- lets the lock go, all without yielding: two writers in two workers run
-- one after the other, and no update is lost. The response goes out after
-- that. The file is read once, by the first request that finds no document
-- in the store; edits to it by hand are not seen while the server runs.
--
-- With the mock's state in Redis (--mock-store, moonport.mock.store) the
-- document, its version and the lock are Redis keys named after the
-- file's name (not its directory), so that instances each reading their
-- own copy of db.json share one document. Redis owns it: a file seeds it
-- only when Redis has none, every write (under the lock, which Redis
-- holds for all instances) goes to Redis and then to the writing
-- instance's own file; a hand edit of a file is not taken while Redis
-- holds a document.
--
-- @module moonport.mock.json_db

local moonport = require("moonport")
local core = require("moonport.core")
local json = require("moonport.json")
local url = require("moonport.url")
local worker = require("moonport.core.worker")
local crypto = require("moonport.core.crypto")

local json_encode, json_decode = json.encode, json.decode
local array_mt, null = json.array_mt, json.null
local type, pairs, ipairs, tostring, tonumber = type, pairs, ipairs, tostring, tonumber
local getmetatable, setmetatable, pcall, error = getmetatable, setmetatable, pcall, error
local concat, sort, insert = table.concat, table.sort, table.insert
local floor, huge, random = math.floor, math.huge, math.random
local find, sub, lower, format, gsub, rep = string.find, string.sub, string.lower, string.format, string.gsub, string.rep
local state = core.mock_state

local LOCK_TTL = 5          -- seconds a dead writer can hold the lock
local LOCK_WAIT_MS = 1      -- between tries for the lock
local LOCK_GIVE_UP = 10000  -- tries (about 10 s) before answering 503
local FOREIGN_KEY = "Id"    -- json-server's foreignKeySuffix
-- nanoid's url alphabet, whose 7-character ids json-server gives a new
-- item when the resource's greatest id is not a number.
local NANOID = "useandom-26T198340PX75pxJACKVERYMINDBUSHWOLF_GQZbfghjklqvwyzrict"

local M = {}

-- JavaScript's values in Lua terms ---------------------------------------

local function is_array(v) return type(v) == "table" and getmetatable(v) == array_mt end
local function is_object(v) return type(v) == "table" and getmetatable(v) ~= array_mt end
local function absent(v) return v == nil or v == null end

-- String(v) as JavaScript writes it, for the values JSON has.
local function js_string(v)
  local t = type(v)
  if t == "string" then return v end
  if t == "number" then
    if v == floor(v) and v > -1e21 and v < 1e21 then return format("%.0f", v) end
    return json_encode(v)
  end
  if t == "boolean" then return tostring(v) end
  if v == null or v == nil then return "" end
  if is_array(v) then
    local parts = {}
    for i, x in ipairs(v) do parts[i] = js_string(x) end
    return concat(parts, ",")
  end
  return "[object Object]"
end

-- Number(v) as JavaScript reads it (NaN as nil).
local function js_number(v)
  local t = type(v)
  if t == "number" then return v end
  if t == "boolean" then return v and 1 or 0 end
  if t == "string" then
    local s = v:match("^%s*(.-)%s*$")
    if s == "" then return 0 end
    return tonumber(s)
  end
  if v == null then return 0 end
  return nil
end

-- a < b as JavaScript compares two values (strings as strings, anything
-- else as numbers).
local function js_less(a, b)
  if type(a) == "string" and type(b) == "string" then return a < b end
  if is_object(a) or is_array(a) then a = js_string(a) end
  if is_object(b) or is_array(b) then b = js_string(b) end
  if type(a) == "string" and type(b) == "string" then return a < b end
  local x, y = js_number(a), js_number(b)
  if x == nil or y == nil then return false end
  return x < y
end

-- JavaScript's truthiness.
local function truthy(v)
  return not (v == nil or v == null or v == false or v == 0 or v == "" or v ~= v)
end

-- parseInt(s, 10), nil for NaN.
local function parse_int(s)
  if type(s) == "table" then s = s[1] end
  if type(s) ~= "string" then return nil end
  local n = s:match("^%s*([+-]?%d+)")
  return n and tonumber(n) or nil
end

-- A query value as json-server sees it: the first of a repeated one.
local function first(v)
  if type(v) == "table" then return v[1] end
  return v
end

-- lodash's _.get and _.has with a dotted path.
local function get_path(obj, path)
  local v = obj
  for part in (path .. "."):gmatch("([^.]*)%.") do
    if is_array(v) then
      local i = tonumber(part)
      v = i and v[i + 1] or nil
    elseif is_object(v) then
      v = v[part]
    else
      return nil
    end
    if v == nil then return nil end
  end
  return v
end

local function shallow_copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return setmetatable(c, getmetatable(t))
end

-- pluralize's rules for the names resources usually have: enough for
-- posts/post, comments/comment, categories/category, boxes/box.
local function singular(word)
  if word:find("ies$") then return word:sub(1, -4) .. "y" end
  if word:find("[sxz]es$") or word:find("[cs]hes$") then return word:sub(1, -3) end
  if word:find("ss$") then return word end
  if word:find("s$") then return word:sub(1, -2) end
  return word
end

local function plural(word)
  if word:find("[^aeiou]y$") then return word:sub(1, -2) .. "ies" end
  if word:find("[sxz]$") or word:find("[cs]h$") then return word .. "es" end
  return word .. "s"
end

-- lodash-id's getById: the item whose id, as a string, is id's.
local function find_by_id(list, id)
  local want = js_string(id)
  for i, item in ipairs(list) do
    if is_object(item) and not absent(item.id) and js_string(item.id) == want then
      return item, i
    end
  end
end

-- _.isEqual, for _.filter with an object (_.matches).
local function deep_equal(a, b)
  if a == b then return true end
  if type(a) ~= "table" or type(b) ~= "table" then return false end
  if is_array(a) ~= is_array(b) then return false end
  for k, v in pairs(a) do if not deep_equal(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

-- json-server's createId: 1 for an empty resource, the greatest id plus
-- one when that is a number, else a nanoid of 7 characters.
local function create_id(list)
  local max
  for _, item in ipairs(list) do
    local id = is_object(item) and item.id or nil
    if id ~= nil and id ~= null and (max == nil or js_less(max, id)) then max = id end
  end
  if #list == 0 then return 1 end
  if type(max) == "number" and max == max and max ~= huge and max ~= -huge then return max + 1 end
  local out = {}
  for i = 1, 7 do
    local k = random(1, #NANOID)
    out[i] = sub(NANOID, k, k)
  end
  return concat(out)
end

-- The document in the store --------------------------------------------------

-- JSON with two spaces of indentation, "id" first and the other keys in
-- byte order, so that the file stays readable and diffs stay small.
local function pretty(v, indent, out)
  if type(v) ~= "table" or getmetatable(v) == json.literal_mt then
    out[#out + 1] = json_encode(v)
    return
  end
  local pad = indent .. "  "
  if is_array(v) then
    if #v == 0 then out[#out + 1] = "[]" return end
    out[#out + 1] = "[\n"
    for i, x in ipairs(v) do
      out[#out + 1] = pad
      pretty(x, pad, out)
      out[#out + 1] = i < #v and ",\n" or "\n"
    end
    out[#out + 1] = indent .. "]"
    return
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = tostring(k) end
  if #keys == 0 then out[#out + 1] = "{}" return end
  sort(keys, function(a, b)
    if a == "id" or b == "id" then return a == "id" and b ~= "id" end
    return a < b
  end)
  out[#out + 1] = "{\n"
  for i, k in ipairs(keys) do
    out[#out + 1] = pad .. json_encode(k) .. ": "
    pretty(v[k], pad, out)
    out[#out + 1] = i < #keys and ",\n" or "\n"
  end
  out[#out + 1] = indent .. "}"
end

local function pretty_text(doc)
  local out = {}
  pretty(doc, "", out)
  out[#out + 1] = "\n"
  return concat(out)
end

local function read_file(path)
  local f, err = io.open(path, "rb")
  if f == nil then return nil, err end
  local text = f:read("*a")
  f:close()
  return text
end

-- Writes text to path whole: a temporary file beside it, renamed over it.
local function write_file(path, text)
  local tmp = path .. ".tmp-" .. tostring(worker.pid())
  local f, err = io.open(tmp, "wb")
  if f == nil then return nil, err end
  local ok, werr = f:write(text)
  local closed, cerr = f:close()
  if ok and closed then
    local renamed, rerr = os.rename(tmp, path)
    if renamed then return true end
    err = rerr
  else
    err = werr or cerr
  end
  os.remove(tmp)
  return nil, err
end

-- The document of a file: a JSON object whose values are arrays or objects.
local function decode_db(text, where)
  local doc, err = json_decode(text)
  if doc == nil then return nil, where .. ": not JSON: " .. tostring(err) end
  if not is_object(doc) then return nil, where .. ": not a JSON object" end
  for name, v in pairs(doc) do
    if type(v) ~= "table" then
      return nil, ("%s: type of %q (%s) is not supported; use objects or arrays of objects")
        :format(where, name, v == null and "null" or type(v))
    end
  end
  return doc
end

-- What tells the file's texts apart: the SHA-1 of the text, in hex.
local function digest(text) return crypto.hex(crypto.digest("sha1", text)) end

local Db = {}
Db.__index = Db

-- Takes the write lock; false when it stayed taken (LOCK_GIVE_UP tries).
function Db:lock()
  for _ = 1, LOCK_GIVE_UP do
    if state:add(self.k_lock, self.token, LOCK_TTL) then return true end
    moonport.sleep(LOCK_WAIT_MS)
  end
  return false
end

function Db:unlock()
  state:delete(self.k_lock)
end

-- Puts the file's document in the store when none is there. Under the lock.
function Db:seed()
  if state:get(self.k_version) ~= nil then return true end
  local text, err = read_file(self.path)
  if text == nil then return nil, err end
  local doc
  doc, err = decode_db(text, self.path)
  if doc == nil then return nil, err end
  local ok, why = state:set(self.k_data, json_encode(doc))
  if not ok then return nil, why end
  state:set(self.k_file, digest(text))
  state:incr(self.k_version, 1, 0)
  return true
end

-- The current document (shared by the requests of this worker: not to be
-- changed), or nil and why.
function Db:read()
  local v = state:get(self.k_version)
  if v == nil then
    if not self:lock() then return nil, "the database is locked" end
    local ok, err = self:seed()
    self:unlock()
    if not ok then return nil, err end
    v = state:get(self.k_version)
  end
  local cache = self.cache
  if cache and cache.version == v then return cache.doc end
  local text = state:get(self.k_data)
  local doc, err = json_decode(text or "")
  if doc == nil then return nil, err end
  self.cache = { version = v, doc = doc }
  return doc
end

-- Runs change(doc) on a fresh copy of the document under the lock; when it
-- returns true, stores the document and writes the file before letting
-- the lock go. Returns change's second and third values, or nil, status
-- and why.
function Db:write(change)
  if not self:lock() then return nil, 503, "the database stayed locked" end
  local ok, err = self:seed()
  if not ok then self:unlock() return nil, 500, err end
  local old = state:get(self.k_data)
  local doc = json_decode(old)
  local pok, changed, a, b = pcall(change, doc)
  if not pok then
    self:unlock()
    if type(changed) == "table" and changed.status then return nil, changed.status, changed.message end
    return nil, 500, changed
  end
  if changed then
    local text = json_encode(doc)
    local stored, why = state:set(self.k_data, text)
    if not stored then self:unlock() return nil, 507, "the mock's state store is full: " .. tostring(why) end
    local file_text = pretty_text(doc)
    -- Before the rename, whose reload must not take it for a hand edit.
    state:set(self.k_file, digest(file_text))
    local written, werr = write_file(self.path, file_text)
    if not written then
      state:set(self.k_data, old)
      self:unlock()
      return nil, 500, "cannot write " .. self.path .. ": " .. tostring(werr)
    end
    local v = state:incr(self.k_version, 1, 0)
    self.cache = { version = v, doc = doc }
  end
  self:unlock()
  return a, b
end

-- Queries -----------------------------------------------------------------------

-- The parameters json-server takes out before filtering.
local RESERVED = { q = true, _start = true, _end = true, _page = true, _sort = true, _order = true,
                   _limit = true, _embed = true, _expand = true }

local function like_regex(pattern)
  local re, err = core.regex("(?s:.*?)(?:" .. pattern .. ")(?s:.*)", true)
  if re == nil then error({ status = 500, message = "Invalid regular expression: /" .. pattern .. "/: " .. err }) end
  return re
end

-- Whether item passes the filter key=values (json-server's rules: any of
-- the values for =, _gte, _lte and _like; all of them for _ne).
local function passes(item, key, values, regexes)
  local path, op = key, nil
  for _, suffix in ipairs({ "_lte", "_gte", "_ne", "_like" }) do
    if #key > #suffix and sub(key, -#suffix) == suffix then
      path, op = sub(key, 1, -#suffix - 1), suffix
      break
    end
  end
  local v = get_path(item, path)
  local any, all = false, true
  for _, want in ipairs(values) do
    local r
    if absent(v) then
      r = false
    elseif op == "_gte" then
      r = not js_less(v, want)
    elseif op == "_lte" then
      r = not js_less(want, v)
    elseif op == "_ne" then
      r = want ~= js_string(v)
    elseif op == "_like" then
      r = regexes[want]:match(js_string(v)) == true
    else
      r = want == js_string(v)
    end
    any = any or r
    all = all and r
  end
  if op == "_ne" then return all end
  return any
end

-- json-server's deepQuery: q (lower case) in a string of the value.
local function deep_query(v, q)
  if not truthy(v) then return false end
  if type(v) == "table" then
    for _, x in pairs(v) do
      if deep_query(x, q) then return true end
    end
    return false
  end
  return find(lower(js_string(v)), q, 1, true) ~= nil
end

-- lodash's compareAscending: values, then null, then undefined.
local function compare(a, b)
  if a == b then return 0 end
  local ra = a == nil and 2 or (a == null and 1 or 0)
  local rb = b == nil and 2 or (b == null and 1 or 0)
  if ra ~= rb then return ra < rb and -1 or 1 end
  if ra ~= 0 then return 0 end
  if js_less(a, b) then return -1 end
  if js_less(b, a) then return 1 end
  return 0
end

local function order_by(list, fields, orders)
  local keyed = {}
  for i, item in ipairs(list) do keyed[i] = { item = item, i = i } end
  sort(keyed, function(x, y)
    for n, field in ipairs(fields) do
      local c = compare(get_path(x.item, field), get_path(y.item, field))
      if c ~= 0 then
        if orders[n] == "desc" then c = -c end
        return c < 0
      end
    end
    return x.i < y.i
  end)
  local out = {}
  for i, k in ipairs(keyed) do out[i] = k.item end
  return out
end

-- Array.prototype.slice.
local function slice(list, s, e)
  local n = #list
  s = s or 0
  e = e == nil and n or e
  if s < 0 then s = math.max(n + s, 0) end
  if e < 0 then e = math.max(n + e, 0) end
  local out = setmetatable({}, array_mt)
  for i = s + 1, math.min(e, n) do out[#out + 1] = list[i] end
  return out
end

local function as_list(v)
  if type(v) == "table" then return v end
  return { v }
end

-- Adds the embedded children (_embed) and expanded parents (_expand) to a
-- copy of item.
local function embed_expand(doc, name, item, embeds, expands)
  if embeds == nil and expands == nil then return item end
  item = shallow_copy(item)
  for _, child in ipairs(embeds and as_list(embeds) or {}) do
    local key = singular(name) .. FOREIGN_KEY
    local out = setmetatable({}, array_mt)
    local list = doc[child]
    if is_array(list) then
      for _, c in ipairs(list) do
        if is_object(c) and deep_equal(c[key], item.id) then out[#out + 1] = c end
      end
    end
    item[child] = out
  end
  for _, parent in ipairs(expands and as_list(expands) or {}) do
    local list = doc[plural(parent)]
    if type(list) == "table" then
      local ref = item[parent .. FOREIGN_KEY]
      item[parent] = ref ~= nil and ref ~= null and is_array(list) and find_by_id(list, ref) or nil
    end
  end
  return item
end

-- The link of page n: the request's URL with its first "page=<current>"
-- made "page=<n>".
local function page_url(full, current, n)
  local from, to = find(full, "page=" .. current, 1, true)
  if from == nil then return full end
  return sub(full, 1, from - 1) .. "page=" .. n .. sub(full, to + 1)
end

-- GET /{name}: returns the items, and the headers.
local function list(doc, name, query, full_url)
  local items = doc[name]
  local q = query.q and first(query.q)
  local filters = {}
  for key, value in pairs(query) do
    if not RESERVED[key] and key ~= "callback" and key ~= "_" then
      -- json-server ignores a field no item has.
      local known = key:find("_lte$") or key:find("_gte$") or key:find("_ne$") or key:find("_like$")
      if not known then
        for _, item in ipairs(items) do
          if get_path(item, key) ~= nil then known = true break end
        end
      end
      if known then filters[#filters + 1] = { key = key, values = as_list(value) } end
    end
  end
  local regexes = {}
  for _, f in ipairs(filters) do
    if f.key:find("_like$") then
      for _, v in ipairs(f.values) do regexes[v] = regexes[v] or like_regex(v) end
    end
  end
  local chain = {}
  for _, item in ipairs(items) do
    local ok = true
    if q and q ~= "" then
      ok = false
      local ql = lower(q)
      if is_object(item) then
        for _, v in pairs(item) do
          if deep_query(v, ql) then ok = true break end
        end
      end
    end
    for _, f in ipairs(filters) do
      if not ok then break end
      ok = passes(item, f.key, f.values, regexes)
    end
    if ok then chain[#chain + 1] = item end
  end

  local sort_by = first(query._sort)
  if sort_by and sort_by ~= "" then
    local fields, orders = {}, {}
    for f in (sort_by .. ","):gmatch("([^,]*),") do fields[#fields + 1] = f end
    for o in ((first(query._order) or "") .. ","):gmatch("([^,]*),") do orders[#orders + 1] = lower(o) end
    chain = order_by(chain, fields, orders)
  end

  local headers = {}
  local page, limit, s_end = first(query._page), first(query._limit), first(query._end)
  if (page and page ~= "") or (limit and limit ~= "") or (s_end and s_end ~= "") then
    headers[#headers + 1] = { "X-Total-Count", tostring(#chain) }
    headers[#headers + 1] = { "Access-Control-Expose-Headers",
                              "X-Total-Count" .. ((page and page ~= "") and ", Link" or "") }
  end
  local start = parse_int(query._start) or 0
  if page and page ~= "" then
    local p = parse_int(page)
    p = (p and p >= 1) and p or 1
    local per = parse_int(limit)
    if per == nil or per == 0 then per = 10 end
    local from, to = (p - 1) * per, p * per
    local items_page = slice(chain, from, to)
    local links = {}
    if #items_page > 0 and #items_page ~= #chain then
      local last = math.ceil(#chain / per)
      links[#links + 1] = { "first", 1 }
      if p > 1 then links[#links + 1] = { "prev", p - 1 } end
      if to < #chain then links[#links + 1] = { "next", p + 1 } end
      links[#links + 1] = { "last", last }
    end
    local parts = {}
    for i, l in ipairs(links) do
      parts[i] = ("<%s>; rel=\"%s\""):format(page_url(full_url, p, l[2]), l[1])
    end
    headers[#headers + 1] = { "Link", concat(parts, ", ") }
    chain = items_page
  elseif s_end and s_end ~= "" then
    chain = slice(chain, start, parse_int(s_end) or 0)
  elseif limit and limit ~= "" then
    local n = parse_int(limit)
    chain = slice(chain, start, n and start + n or 0)
  end

  local out = setmetatable({}, array_mt)
  for i, item in ipairs(chain) do
    out[i] = is_object(item) and embed_expand(doc, name, item, query._embed, query._expand) or item
  end
  return out, headers
end

-- Requests ----------------------------------------------------------------------

local function send(res, status, value, headers)
  res:status(status)
  res:header("Cache-Control", "no-cache"):header("Pragma", "no-cache"):header("Expires", "-1")
  for _, h in ipairs(headers or {}) do res:header(h[1], h[2]) end
  return res:json(value == nil and {} or value)
end

local function not_found(res) return send(res, 404, {}) end

-- The request's body as json-server's body parser reads it: JSON or a
-- form, else an empty object. Returns nil, why for bad JSON.
local function body_of(req)
  local ctype = lower(req:header("content-type") or "")
  local text = req:body() or ""
  if find(ctype, "json", 1, true) then
    if text:find("^%s*$") then return {} end
    local v, err = json_decode(text)
    if v == nil then return nil, "invalid JSON: " .. tostring(err) end
    if not is_object(v) then return nil, "the body must be a JSON object" end
    return v
  end
  if find(ctype, "application/x-www-form-urlencoded", 1, true) then
    return url.parse_query(text)
  end
  return {}
end

local function full_url(req)
  return "http://" .. (req:header("host") or "") .. req.target
end

--- Adds json-server's routes for the JSON file at path to app: `GET /db`,
-- and `GET/POST/PUT/PATCH/DELETE` on `/{name}`, `/{name}/{id}` and
-- `/{name}/{id}/{child}` for every top-level array or object of the file.
-- A path whose first segment names no resource of the file goes to
-- what the app serves otherwise (a mock app's stubs) unless opts.stubs is
-- false, else gets 404 `{}`.
-- Raises when the file cannot be read or is not an object of arrays and
-- objects. Returns app.
-- @usage mock.json_db(app, "db.json")
function M.attach(app, path, opts)
  if type(path) ~= "string" or path == "" then error("mock.json_db: path must be a file name", 2) end
  local text, err = read_file(path)
  if text == nil then error("mock.json_db: cannot read " .. tostring(err), 2) end
  local at_load, derr = decode_db(text, path)
  if derr then error("mock.json_db: " .. derr, 2) end
  if core.track_file then core.track_file(path) end

  -- The app's store: its Redis store when the mock's state is shared.
  state = app.mock_store or core.mock_state
  local key = "jsondb:" .. (state.remote and path:match("[^/]*$") or path)
  local db = setmetatable({ path = path, k_data = key .. ":data", k_version = key .. ":version",
                            k_lock = key .. ":lock", k_file = key .. ":file",
                            token = tostring(random(1, 2 ^ 30)) }, Db)
  -- The file was edited by hand since the store last read or wrote it
  -- (its change reloaded the app, which runs this again): the store takes
  -- the file's document. Checked under the write lock, on the file as it
  -- is then: a writer of another worker may have written it since it was
  -- read above, and its newer document must not be taken back. When a
  -- writer holds the lock, its own rename reloads the app again, and the
  -- check runs then.
  if not state.remote and state:get(db.k_version) ~= nil and state:add(db.k_lock, db.token, LOCK_TTL) then
    local now_text = read_file(path)
    local now_doc = now_text and decode_db(now_text, path)
    if now_doc and state:get(db.k_file) ~= digest(now_text) and state:set(db.k_data, json_encode(now_doc)) then
      state:set(db.k_file, digest(now_text))
      state:incr(db.k_version, 1, 0)
      core.log("info", "mock: " .. path .. " changed on disk: reloaded")
    end
    db:unlock()
  end
  local fallback = app.serve_stubs and not (opts and opts.stubs == false) and function(req, res) return app:serve_stubs(req, res) end

  -- Runs fn(doc, req, res) with the current document, or answers why not.
  local function reading(fn)
    return function(req, res)
      local ok, doc, why = pcall(db.read, db)
      if not ok then
        -- Redis out of reach (--mock-store): a path that names none of the
        -- file's resources still goes to the stubs.
        if fallback and state.remote and at_load[req.params.name or ""] == nil then return fallback(req, res) end
        error(doc, 0)
      end
      if doc == nil then return send(res, 500, { error = tostring(why) }) end
      local name = req.params.name
      if name ~= nil and doc[name] == nil then
        if fallback then return fallback(req, res) end
        return not_found(res)
      end
      local ok, e = pcall(fn, doc, req, res)
      if not ok then
        if type(e) == "table" and e.status then return send(res, e.status, { error = e.message }) end
        error(e, 0)
      end
    end
  end

  -- Answers a write: change(doc, body) returns changed, status, value.
  local function writing(req, res, change, headers)
    local body, why = body_of(req)
    if body == nil then return send(res, 400, { error = why }) end
    local status, value, fail = db:write(function(doc) return change(doc, body) end)
    if status == nil then return send(res, value, { error = tostring(fail) }) end
    return send(res, status, value, headers)
  end

  local function location(req, res, tail)
    res:header("Access-Control-Expose-Headers", "Location")
    res:header("Location", full_url(req):gsub("%?.*$", "") .. (tail or ""))
  end

  app:get("/db", function(req, res)
    local doc, why = db:read()
    if doc == nil then return send(res, 500, { error = tostring(why) }) end
    return send(res, 200, doc)
  end)

  -- /{name}
  app:get("/:name", reading(function(doc, req, res)
    local r = doc[req.params.name]
    if is_object(r) then return send(res, 200, r) end
    local items, headers = list(doc, req.params.name, url.parse_query(req.query_string), full_url(req))
    return send(res, 200, items, headers)
  end))
  app:post("/:name", reading(function(doc, req, res)
    local name = req.params.name
    if is_object(doc[name]) then
      location(req, res)
      return writing(req, res, function(d, body) d[name] = body return true, 201, body end)
    end
    return writing(req, res, function(d, body)
      local items = d[name]
      if not truthy(body.id) then body.id = create_id(items) end
      if find_by_id(items, body.id) then
        error({ status = 500, message = "Error: Insert failed, duplicate id" })
      end
      items[#items + 1] = body
      location(req, res, "/" .. js_string(body.id))
      return true, 201, body
    end)
  end))
  for _, method in ipairs({ "put", "patch" }) do
    app[method](app, "/:name", reading(function(doc, req, res)
      local name = req.params.name
      if not is_object(doc[name]) then return not_found(res) end
      return writing(req, res, function(d, body)
        if method == "put" then
          d[name] = body
        else
          for k, v in pairs(body) do d[name][k] = v end
        end
        return true, 200, d[name]
      end)
    end))
  end
  app:delete("/:name", reading(function(_, _, res) return not_found(res) end))

  -- /{name}/{id}
  app:get("/:name/:id", reading(function(doc, req, res)
    local items = doc[req.params.name]
    if not is_array(items) then return not_found(res) end
    local item = find_by_id(items, req.params.id)
    if item == nil then return not_found(res) end
    local query = url.parse_query(req.query_string)
    return send(res, 200, embed_expand(doc, req.params.name, item, query._embed, query._expand))
  end))
  for _, method in ipairs({ "put", "patch" }) do
    app[method](app, "/:name/:id", reading(function(doc, req, res)
      local name, id = req.params.name, req.params.id
      if not is_array(doc[name]) then return not_found(res) end
      return writing(req, res, function(d, body)
        local item = find_by_id(d[name], id)
        if item == nil then return false, 404, {} end
        local keep = item.id
        if method == "put" then
          for k in pairs(item) do item[k] = nil end
        end
        for k, v in pairs(body) do item[k] = v end
        item.id = keep
        return true, 200, item
      end)
    end))
  end
  app:delete("/:name/:id", reading(function(doc, req, res)
    local name, id = req.params.name, req.params.id
    if not is_array(doc[name]) then return not_found(res) end
    return writing(req, res, function(d)
      local _, at = find_by_id(d[name], id)
      if at == nil then return false, 404, {} end
      table.remove(d[name], at)
      -- json-server's getRemovable: items whose <name>Id names an item of
      -- <names> that is no longer there go too.
      for _, coll in pairs(d) do
        if is_array(coll) then
          local i = 1
          while i <= #coll do
            local item, gone = coll[i], false
            if is_object(item) then
              for k, v in pairs(item) do
                if type(k) == "string" and #k > #FOREIGN_KEY and k:sub(-#FOREIGN_KEY) == FOREIGN_KEY then
                  local ref = d[plural(k:sub(1, -#FOREIGN_KEY - 1))]
                  if ref ~= nil and (not is_array(ref) or find_by_id(ref, v) == nil) then gone = true break end
                end
              end
            end
            if gone then table.remove(coll, i) else i = i + 1 end
          end
        end
      end
      return true, 200, {}
    end)
  end))
  app:post("/:name/:id", reading(function(_, _, res) return not_found(res) end))

  -- /{name}/{id}/{child}: the children whose <name>Id is id.
  local function nested(fn)
    return reading(function(doc, req, res)
      local child = req.params.child
      if doc[child] == nil then return not_found(res) end
      return fn(doc, req, res, child, singular(req.params.name) .. FOREIGN_KEY)
    end)
  end
  app:get("/:name/:id/:child", nested(function(doc, req, res, child, key)
    if is_object(doc[child]) then return send(res, 200, doc[child]) end
    local query = url.parse_query(req.query_string)
    query[key] = req.params.id
    local items, headers = list(doc, child, query, full_url(req))
    return send(res, 200, items, headers)
  end))
  app:post("/:name/:id/:child", nested(function(doc, req, res, child, key)
    local items = doc[child]
    return writing(req, res, function(d, body)
      body[key] = req.params.id
      if is_object(items) then d[child] = body return true, 201, body end
      if not truthy(body.id) then body.id = create_id(d[child]) end
      if find_by_id(d[child], body.id) then
        error({ status = 500, message = "Error: Insert failed, duplicate id" })
      end
      d[child][#d[child] + 1] = body
      location(req, res, "/" .. js_string(body.id))
      return true, 201, body
    end)
  end))
  return app
end

-- Test hooks for the pure parts.
M._js_string, M._singular, M._plural, M._create_id = js_string, singular, plural, create_id

return M
