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
-- A request goes through the steps json-server's Express app puts it
-- through, in its order: a file of the static folder (GET and HEAD, the
-- path as sent), the read-only refusal, `GET /__rules`, the rewriting
-- rules of a routes file (each rule in the file's order, on what the
-- rules before it left), the delay, then json-server's router on the
-- rewritten path, which this module routes itself: its routes are
-- registered as catch-alls (`/:name`, `/:name/*rest`, and `/` where a
-- static folder or rules may need it), so that a path of no resource
-- goes on to the mock's stubs.
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
-- in the store. An edit by hand reloads the app (the file is watched);
-- the first request after the load takes the file's document into the
-- store, under the lock, when the file's text is not the one the store
-- last read or wrote (a writer's own rename reloads the app too, and its
-- text is known).
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
local regex = require("moonport.core.regex")

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
    if s == "Infinity" or s == "+Infinity" then return huge end
    if s == "-Infinity" then return -huge end
    return tonumber(s)
  end
  if v == null then return 0 end
  return nil
end

-- JavaScript's abstract comparison of a and b: -1, 0 or 1, or nil where
-- a number is NaN (every <, <=, >, >= is then false). Strings compare as
-- strings when both are; anything else as numbers.
local function js_compare(a, b)
  if is_object(a) or is_array(a) then a = js_string(a) end
  if is_object(b) or is_array(b) then b = js_string(b) end
  if type(a) == "string" and type(b) == "string" then
    if a == b then return 0 end
    return a < b and -1 or 1
  end
  local x, y = js_number(a), js_number(b)
  if x == nil or y == nil or x ~= x or y ~= y then return nil end
  if x == y then return 0 end
  return x < y and -1 or 1
end

-- a < b as JavaScript compares two values.
local function js_less(a, b) return js_compare(a, b) == -1 end

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

-- parseFloat(s), nil for NaN.
local function parse_float(s)
  if type(s) == "table" then s = s[1] end
  if type(s) ~= "string" then return nil end
  local n = s:match("^%s*([+-]?%d*%.?%d+[eE][+-]?%d+)") or s:match("^%s*([+-]?%d+%.?%d*)")
    or s:match("^%s*([+-]?%.%d+)")
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
  if word == "" then return word end
  if word:find("[^aeiou]y$") then return word:sub(1, -2) .. "ies" end
  if word:find("[sxz]$") or word:find("[cs]h$") then return word .. "es" end
  return word .. "s"
end

-- lodash-id's getById: the item whose id field (`idk`), as a string, is
-- id's.
local function find_by_id(list, id, idk)
  local want = js_string(id)
  for i, item in ipairs(list) do
    if is_object(item) and not absent(item[idk]) and js_string(item[idk]) == want then
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
local function create_id(list, idk)
  idk = idk or "id"
  local max
  for _, item in ipairs(list) do
    local id = is_object(item) and item[idk] or nil
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

-- The document of a file: a JSON object whose values are arrays or objects
-- (but for "$schema", which json-server leaves alone), no key with a "/".
local function decode_db(text, where)
  local doc, err = json_decode(text)
  if doc == nil then return nil, where .. ": not JSON: " .. tostring(err) end
  if not is_object(doc) then return nil, where .. ": not a JSON object" end
  for name, v in pairs(doc) do
    if find(name, "/", 1, true) then
      return nil, ("%s: %q: a name with / is not supported (see --routes)"):format(where, name)
    end
    if type(v) ~= "table" and name ~= "$schema" then
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

-- After a load (the app's, at start or on a change of its files): the
-- file was edited by hand when its text is not the one the store last
-- read or wrote, and the store then takes the file's document. Under the
-- lock, where no writer is between its store and its rename.
function Db:sync_file()
  self.check_file = false
  if state:get(self.k_version) == nil then return end
  local text = read_file(self.path)
  if text == nil or state:get(self.k_file) == digest(text) then return end
  local doc = decode_db(text, self.path)
  if doc == nil then return end
  if state:set(self.k_data, json_encode(doc)) then
    state:set(self.k_file, digest(text))
    state:incr(self.k_version, 1, 0)
    core.log("info", "mock: " .. self.path .. " changed on disk: reloaded")
  end
end

-- The current document (shared by the requests of this worker: not to be
-- changed), or nil and why.
function Db:read()
  local v = state:get(self.k_version)
  if v == nil or self.check_file then
    if not self:lock() then return nil, "the database is locked" end
    if self.check_file then self:sync_file() end
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
  if self.check_file then self:sync_file() end
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
local RESERVED = { q = true, _start = true, _end = true, _sort = true, _order = true,
                   _limit = true, _embed = true, _expand = true }

local function like_regex(pattern)
  local re, err = core.regex("(?s:.*?)(?:" .. pattern .. ")(?s:.*)", true)
  if re == nil then error({ status = 500, message = "Invalid regular expression: /" .. pattern .. "/: " .. err }) end
  return re
end

-- The filter's operator, and the path it applies to.
local function operator(key)
  for _, suffix in ipairs({ "_lte", "_gte", "_ne", "_like" }) do
    if #key > #suffix and sub(key, -#suffix) == suffix then return sub(key, 1, -#suffix - 1), suffix end
  end
  return key, nil
end

-- Whether item passes the filter key=values (json-server's rules: any of
-- the values for =, _gte, _lte and _like; all of them for _ne; never when
-- the field is null or absent).
local function passes(item, key, values, regexes)
  local path, op = operator(key)
  local v = get_path(item, path)
  local any, all = false, true
  for _, want in ipairs(values) do
    local r
    if absent(v) then
      r = false
    elseif op == "_gte" then
      local c = js_compare(want, v)     -- value <= elementValue
      r = c ~= nil and c <= 0
    elseif op == "_lte" then
      local c = js_compare(want, v)     -- value >= elementValue
      r = c ~= nil and c >= 0
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
  if js_less(b, a) then return 1 end
  if js_less(a, b) then return -1 end
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
-- copy of item. opts: the database's id field and foreign key suffix.
local function embed_expand(doc, name, item, embeds, expands, opts)
  if embeds == nil and expands == nil then return item end
  local fks = opts.fks
  item = shallow_copy(item)
  for _, child in ipairs(embeds and as_list(embeds) or {}) do
    local key = singular(name) .. fks
    local out = setmetatable({}, array_mt)
    local list = doc[child]
    if is_array(list) then
      for _, c in ipairs(list) do
        if is_object(c) and deep_equal(c[key], item[opts.id]) then out[#out + 1] = c end
      end
    end
    item[child] = out
  end
  for _, parent in ipairs(expands and as_list(expands) or {}) do
    local list = doc[plural(parent)]
    if type(list) == "table" then
      local ref = item[parent .. fks]
      item[parent] = ref ~= nil and ref ~= null and is_array(list) and find_by_id(list, ref, opts.id) or nil
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
local function list(doc, name, query, full_url, opts)
  local items = doc[name]
  local q = query.q and first(query.q)
  local filters = {}
  for key, value in pairs(query) do
    if not RESERVED[key] and key ~= "callback" and key ~= "_" then
      -- json-server ignores a field no item has.
      local known = select(2, operator(key)) ~= nil
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
    out[i] = is_object(item) and embed_expand(doc, name, item, query._embed, query._expand, opts) or item
  end
  return out, headers
end

-- Routes files: json-server's rewriter ---------------------------------------
-- json-server 0.17 hands each rule of --routes to express-urlrewrite 1.4,
-- which turns its left side into a regular expression with
-- path-to-regexp 0.1, tests it against the request's URL (path and query,
-- as sent) and, on a match, makes the URL its right side with `$n` and
-- `:name` filled in. Every rule runs, in the file's order, each on what
-- the rules before it left.

-- The first `\x` or `*` of a custom group, a `*` made `(.*)`.
local function custom_group(capture)
  local i = 1
  while i <= #capture do
    local c = sub(capture, i, i)
    if c == "\\" and i < #capture then return capture end
    if c == "*" then return sub(capture, 1, i - 1) .. "(.*)" .. sub(capture, i + 1) end
    i = i + 1
  end
  return capture
end

-- path-to-regexp 0.1.13's source for an Express path (non-strict, to the
-- end, case-insensitive), and its keys ({name}, in group order: unnamed
-- groups take the names 0, 1, ...).
local function path_source(path)
  local out, keys = {}, {}
  local outlen = 0
  local function emit(s)
    out[#out + 1] = s
    outlen = outlen + #s
  end
  local backtrack, pos = "", 0
  local i, n = 1, #path
  while i <= n do
    local c = sub(path, i, i)
    local offset = i - 1
    local j = i
    local slash, dot = false, false
    if c == "/" then slash, j = true, j + 1 end
    if sub(path, j, j) == "." then dot, j = true, j + 1 end
    local key = sub(path, j, j) == ":" and path:match("^[%w_]+", j + 1)
    if c == "\\" and i < n then
      backtrack = backtrack .. sub(path, i, i + 1)
      pos = pos + 2
      emit(sub(path, i, i + 1))
      i = i + 2
    elseif key then
      j = j + 1 + #key
      local capture
      if sub(path, j, j) == "(" then
        local close = find(path, ")", j + 1, true)
        if close then capture, j = sub(path, j, close), close + 1 end
      end
      local star = sub(path, j, j) == "*"
      if star then j = j + 1 end
      local optional = sub(path, j, j) == "?"
      if optional then j = j + 1 end
      if slash or dot then backtrack = "" else backtrack = backtrack .. sub(path, pos + 1, offset) end
      pos = offset + (j - i)
      local f = dot and "\\." or ""
      if capture then
        capture = custom_group(capture)
      elseif backtrack ~= "" then
        capture = "((?:(?!/|" .. backtrack .. ").)+?)"
      else
        capture = "([^/" .. f .. "]+?)"
      end
      keys[#keys + 1] = { name = key, at = outlen }
      emit("(?:" .. f .. (slash and "/" or "") .. capture
        .. (star and ("((?:[/" .. f .. "].+?)?)") or "") .. ")" .. (optional and "?" or ""))
      backtrack = ""
      i = j
    elseif c == "." then
      backtrack = backtrack .. "\\."
      pos = pos + 1
      emit("\\.")
      i = i + 1
    elseif c == "*" then
      pos = offset + 1
      backtrack = ""
      emit("(.*)")
      i = i + 1
    elseif c == "/" and sub(path, i + 1, i + 1) == "(" then
      backtrack = backtrack .. sub(path, pos + 1, offset) .. "/"
      pos = offset + 2
      emit("/(?:")
      i = i + 2
    else
      emit(c)
      i = i + 1
    end
  end
  local src = concat(out)
  -- The groups no key names (a `*`, a key's `*` tail, a group written in
  -- the path) get numbers for names, in order.
  local k, unnamed = 1, 0
  i = 1
  while i <= #src do
    local c = sub(src, i, i)
    if c == "\\" then
      i = i + 2
    else
      if c == "(" and (sub(src, i + 1, i + 1) ~= "?" or src:find("^%(%?<[%w_]+>", i)) then
        if k > #keys or keys[k].at > i - 1 then
          insert(keys, k, { name = tostring(unnamed), at = i - 1 })
          unnamed = unnamed + 1
        end
        k = k + 1
      end
      i = i + 1
    end
  end
  src = src .. (sub(src, -1) == "/" and "?" or "/?") .. "$"
  return "^" .. src, keys
end

-- A rule {from, to} made ready: its compiled expression and the group of
-- each key's name.
local function compile_rule(from, to, where)
  local src, keys = path_source(from)
  local c, err = regex.re_compile(src, regex.flags.i)
  if c == nil then error(("%s: the rule %q: %s"):format(where, from, err), 0) end
  local map = {}
  for i, key in ipairs(keys) do
    if map[key.name] == nil then map[key.name] = i end
  end
  return { from = from, to = to, re = c, map = map }
end

-- The URL rule makes of subject, or nil when it does not match.
local function rewrite_url(rule, subject)
  local c = rule.re
  local ok = regex.re_exec(c, subject, 0)
  if not ok then return nil end
  local ov = c.ov
  local function group(n)
    if n > c.ncaptures or ov[2 * n] < 0 then return "undefined" end
    return sub(subject, ov[2 * n] + 1, ov[2 * n + 1])
  end
  local to, out, i = rule.to, {}, 1
  while i <= #to do
    local ch = sub(to, i, i)
    local digits = ch == "$" and to:match("^%d+", i + 1)
    local name = not digits and ch == ":" and to:match("^[%w_]+", i + 1)
    if digits then
      out[#out + 1] = group(tonumber(digits))
      i = i + 1 + #digits
    elseif name then
      local at = rule.map[name]
      if at == nil then
        error({ status = 500, message = ("the rule %q names :%s, which its path has not"):format(rule.from, name) })
      end
      out[#out + 1] = group(at)
      i = i + 1 + #name
    else
      out[#out + 1] = ch
      i = i + 1
    end
  end
  return concat(out)
end

-- The end of the JSON string that starts at text's byte i (a quote).
local function string_end(text, i)
  local j = i + 1
  while j <= #text do
    local c = sub(text, j, j)
    if c == "\\" then
      j = j + 2
    elseif c == '"' then
      return j
    else
      j = j + 1
    end
  end
  return nil
end

-- The rules of a routes file: a JSON object of strings, in the file's
-- order (a name given twice keeps its first place and its last value).
-- Raises naming the file.
local function load_routes(path)
  local text, err = read_file(path)
  if text == nil then error("cannot read the routes file " .. tostring(err), 0) end
  local doc, derr = json_decode(text)
  if not is_object(doc) then error(path .. ": not a JSON object" .. (derr and (": " .. derr) or ""), 0) end
  local order, seen = {}, {}
  local i = text:find("{", 1, true) + 1
  while true do
    i = text:find("[^%s]", i)
    if i == nil or sub(text, i, i) == "}" then break end
    if sub(text, i, i) == "," then i = i + 1 end
    i = text:find("[^%s]", i)
    local e = string_end(text, i)
    local name = json_decode(sub(text, i, e))
    if not seen[name] then
      seen[name] = true
      order[#order + 1] = name
    end
    i = text:find(":", e + 1, true) + 1
    i = text:find("[^%s]", i)
    if sub(text, i, i) ~= '"' then
      error(("%s: the rule %q: its target must be a string"):format(path, name), 0)
    end
    i = string_end(text, i) + 1
  end
  local rules = {}
  for n, name in ipairs(order) do rules[n] = compile_rule(name, doc[name], path) end
  return rules, doc
end

-- Requests ----------------------------------------------------------------------

local function no_cache(res)
  res:header("Cache-Control", "no-cache"):header("Pragma", "no-cache"):header("Expires", "-1")
end

-- Express's res.jsonp: JSON, or with a `callback` parameter the
-- JavaScript that calls it.
local function send(res, query, status, value, headers)
  res:status(status)
  no_cache(res)
  for _, h in ipairs(headers or {}) do res:header(h[1], h[2]) end
  local body = json_encode(value == nil and {} or value)
  local cb = query and first(query.callback)
  if type(cb) == "string" and cb ~= "" then
    cb = gsub(cb, "[^%[%]%w_$.]", "")
    body = gsub(gsub(body, "\226\128\168", "\\u2028"), "\226\128\169", "\\u2029")
    res:header("X-Content-Type-Options", "nosniff")
    res:header("Content-Type", "text/javascript; charset=utf-8")
    return res:send("/**/ typeof " .. cb .. " === 'function' && " .. cb .. "(" .. body .. ");")
  end
  res:header("Content-Type", "application/json; charset=utf-8")
  return res:send(body)
end

-- The request's body as json-server's body parser reads it: JSON or a
-- form, else an empty object. Returns nil, why for bad JSON.
local function body_of(req)
  local mime = lower(req:header("content-type") or ""):match("^%s*([^;%s]*)")
  local text = req:body() or ""
  if mime == "application/json" then
    if text:find("^%s*$") then return {} end
    local v, err = json_decode(text)
    if v == nil then return nil, "invalid JSON: " .. tostring(err) end
    if not is_object(v) then return nil, "the body must be a JSON object" end
    return v
  end
  if mime == "application/x-www-form-urlencoded" then
    return url.parse_query(text)
  end
  return {}
end

-- The methods json-server's routes answer.
local METHODS = { "GET", "POST", "PUT", "PATCH", "DELETE" }

-- The resource a path segment names: the name itself, else the one name
-- equal to it but for case (Express routes ignore case).
local function resource_name(doc, seg)
  if seg == nil or seg == "" or seg == "$schema" then return nil end
  if doc[seg] ~= nil then return seg end
  local want, found = lower(seg), nil
  for k in pairs(doc) do
    if k ~= "$schema" and lower(k) == want then
      if found then return nil end
      found = k
    end
  end
  return found
end

-- json-server's getRemovable, then the removal: the items of any resource
-- whose <singular>Id field names a resource that has no item with that
-- id, all found first, then removed.
local function remove_dependents(d, opts)
  local fks, gone = opts.fks, {}
  for _, coll in pairs(d) do
    if is_array(coll) then
      for _, item in ipairs(coll) do
        if is_object(item) then
          for k, v in pairs(item) do
            if type(k) == "string" and #k > #fks and sub(k, -#fks) == fks then
              local ref = d[plural(sub(k, 1, -#fks - 1))]
              if type(ref) == "table" and (not is_array(ref) or absent(v) or find_by_id(ref, v, opts.id) == nil) then
                gone[item] = true
                break
              end
            end
          end
        end
      end
    end
  end
  local removed = false
  if next(gone) == nil then return false end
  for _, coll in pairs(d) do
    if is_array(coll) then
      local i = 1
      while i <= #coll do
        if gone[coll[i]] then table.remove(coll, i) removed = true else i = i + 1 end
      end
    end
  end
  return removed
end

--- Adds json-server's routes for the JSON file at path to app: `GET /db`,
-- and `GET/POST/PUT/PATCH/DELETE` on `/{name}`, `/{name}/{id}` and
-- `/{name}/{id}/{child}` for every top-level array or object of the file.
-- A path whose first segment names no resource of the file goes to
-- what the app serves otherwise (a mock app's stubs) unless opts.stubs is
-- false, else gets 404 `{}`.
-- opts (json-server's command-line options): `routes` (a routes file,
-- or a list of {from, to} rules), `static` (a folder served first),
-- `id` (the id field, "id"), `foreign_key_suffix` ("Id"), `read_only`
-- (every method but GET gets 403), `delay` (milliseconds before each
-- answer of the database).
-- Raises when the file cannot be read or is not an object of arrays and
-- objects, or an option is wrong. Returns app.
-- @usage mock.json_db(app, "db.json", { routes = "routes.json", static = "public" })
function M.attach(app, path, opts)
  if type(path) ~= "string" or path == "" then error("mock.json_db: path must be a file name", 2) end
  if opts ~= nil and type(opts) ~= "table" then error("mock.json_db: opts must be a table", 2) end
  opts = opts or {}
  local text, err = read_file(path)
  if text == nil then error("mock.json_db: cannot read " .. tostring(err), 2) end
  local at_load, derr = decode_db(text, path)
  if derr then error("mock.json_db: " .. derr, 2) end
  if core.track_file then core.track_file(path) end

  local function option(name, kind, default)
    local v = opts[name]
    if v == nil then return default end
    if type(v) ~= kind or v == "" then error(("mock.json_db: opts.%s must be a %s"):format(name, kind), 3) end
    return v
  end
  local cfg = { id = option("id", "string", "id"), fks = option("foreign_key_suffix", "string", "Id"),
                read_only = option("read_only", "boolean", false), delay = option("delay", "number", 0),
                static = option("static", "string", nil) }
  if cfg.delay < 0 or cfg.delay ~= cfg.delay then error("mock.json_db: opts.delay must be at least 0", 2) end
  if cfg.static and core.dir_list(cfg.static) == nil then
    error("mock.json_db: the static folder " .. cfg.static .. " is not a directory", 2)
  end
  local rules, rules_doc
  if type(opts.routes) == "string" then
    local ok, r, d = pcall(load_routes, opts.routes)
    if not ok then error("mock.json_db: " .. tostring(r), 2) end
    rules, rules_doc = r, d
    if core.track_file then core.track_file(opts.routes) end
  elseif type(opts.routes) == "table" then
    rules, rules_doc = {}, {}
    for i, rule in ipairs(opts.routes) do
      if type(rule) ~= "table" or type(rule[1]) ~= "string" or type(rule[2]) ~= "string" then
        error("mock.json_db: opts.routes[" .. i .. "] must be a {from, to} pair of strings", 2)
      end
      rules[i] = compile_rule(rule[1], rule[2], "opts.routes")
      rules_doc[rule[1]] = rule[2]
    end
  elseif opts.routes ~= nil then
    error("mock.json_db: opts.routes must be a file name or a list of {from, to} rules", 2)
  end

  -- The app's store: its Redis store when the mock's state is shared.
  state = app.mock_store or core.mock_state
  local key = "jsondb:" .. (state.remote and path:match("[^/]*$") or path)
  -- check_file: the first request after this load looks whether the file
  -- was edited by hand (its change reloaded the app, which runs this
  -- again), under the lock (Db:sync_file).
  local db = setmetatable({ path = path, k_data = key .. ":data", k_version = key .. ":version",
                            k_lock = key .. ":lock", k_file = key .. ":file",
                            token = tostring(random(1, 2 ^ 30)), check_file = not state.remote }, Db)
  local fallback = app.serve_stubs and opts.stubs ~= false and function(req, res) return app:serve_stubs(req, res) end
  local idk = cfg.id

  -- Answers a write: change(doc, body) returns changed, status, value.
  local function writing(req, res, query, change, headers, body_extra)
    local body, why = body_of(req)
    if body == nil then return send(res, nil, 400, { error = why }) end
    for k, v in pairs(body_extra or {}) do body[k] = v end
    local status, value, fail = db:write(function(doc) return change(doc, body) end)
    if status == nil then return send(res, nil, value, { error = tostring(fail) }) end
    return send(res, query, status, value, headers)
  end

  -- json-server's router on the (rewritten) path.
  local function route(req, res, method, path_, query, full_url)
    local read_ok, doc, why = pcall(db.read, db)
    if not read_ok then
      -- Redis out of reach (--mock-store): a path that names none of the
      -- file's resources still goes to the stubs.
      if fallback and state.remote and resource_name(at_load, path_:match("^/([^/]+)")) == nil then
        return fallback(req, res)
      end
      error(doc, 0)
    end
    if doc == nil then return send(res, nil, 500, { error = tostring(why) }) end
    if method == "POST" then
      local override = req:header("x-http-method-override")
      if override and override ~= "" then
        local m = override:upper()
        for _, known in ipairs(METHODS) do if m == known then method = m end end
      end
    end
    if method == "HEAD" then method = "GET" end
    -- Express's paths: a route matches with one trailing slash or none,
    -- ignoring case; a resource's router is mounted at /{name}, whose
    -- match takes one slash after the name with it.
    if method == "GET" and lower(path_):find("^/db/?$") then
      return send(res, query, 200, doc)
    end
    -- The delay a request asks for (`_delay`, in ms), as json-server's
    -- routers take it.
    local d = parse_float(query._delay)
    query._delay = nil
    if d and d > 0 then moonport.sleep(d) end

    local first_seg, rest = path_:match("^/([^/]+)(.*)$")
    local own = resource_name(doc, first_seg) ~= nil
    local extra
    local parent, parent_id, child = path_:match("^/([^/]+)/([^/]+)/([^/]+)/?$")
    if parent and (method == "GET" or method == "POST") then
      -- /{parent}/{id}/{child}: the child resource, its <parent>Id
      -- being id (a filter, or a field of the new item).
      local fk = singular(url.decode(parent)) .. cfg.fks
      if method == "GET" then query[fk] = url.decode(parent_id) else extra = { [fk] = url.decode(parent_id) } end
      first_seg, rest = url.decode(child), ""
    end
    local name = resource_name(doc, first_seg)
    if name == nil then
      if fallback and not own then return fallback(req, res) end
      return send(res, query, 404, {})
    end
    if sub(rest, 1, 2) == "//" then rest = sub(rest, 2) end
    local segs
    if rest == "" or rest == "/" then
      segs = { name }
    else
      local id = rest:match("^/([^/]+)/?$")
      if id == nil then return send(res, query, 404, {}) end
      segs = { name, url.decode(id) }
    end
    local value = doc[name]

    local function location(tail)
      return { { "Access-Control-Expose-Headers", "Location" }, { "Location", full_url .. (tail or "") } }
    end

    if is_object(value) then
      if #segs ~= 1 then return send(res, query, 404, {}) end
      if method == "GET" then return send(res, query, 200, value) end
      if method == "POST" then
        return writing(req, res, query, function(dd, body) dd[name] = body return true, 201, body end,
                       location(), extra)
      end
      if method == "PUT" or method == "PATCH" then
        return writing(req, res, query, function(dd, body)
          if method == "PUT" then
            dd[name] = body
          else
            for k, v in pairs(body) do dd[name][k] = v end
          end
          return true, 200, dd[name]
        end)
      end
      return send(res, query, 404, {})
    end

    if #segs == 1 then
      if method == "GET" then
        local items, headers = list(doc, name, query, full_url, cfg)
        return send(res, query, 200, items, headers)
      end
      if method == "POST" then
        local headers = {}
        return writing(req, res, query, function(dd, body)
          local items = dd[name]
          if not truthy(body[idk]) then body[idk] = create_id(items, idk) end
          if find_by_id(items, body[idk], idk) then
            error({ status = 500, message = "Error: Insert failed, duplicate id" })
          end
          items[#items + 1] = body
          for _, h in ipairs(location("/" .. js_string(body[idk]))) do headers[#headers + 1] = h end
          return true, 201, body
        end, headers, extra)
      end
      return send(res, query, 404, {})
    end
    if #segs ~= 2 then return send(res, query, 404, {}) end
    local id = segs[2]
    if method == "GET" then
      local item = find_by_id(value, id, idk)
      if item == nil then return send(res, query, 404, {}) end
      return send(res, query, 200, embed_expand(doc, name, item, query._embed, query._expand, cfg))
    end
    if method == "PUT" or method == "PATCH" then
      return writing(req, res, query, function(dd, body)
        local item = find_by_id(dd[name], id, idk)
        if item == nil then return false, 404, {} end
        local keep = item[idk]
        if method == "PUT" then
          for k in pairs(item) do item[k] = nil end
        end
        for k, v in pairs(body) do item[k] = v end
        item[idk] = keep
        return true, 200, item
      end)
    end
    if method == "DELETE" then
      return writing(req, res, query, function(dd)
        local _, at = find_by_id(dd[name], id, idk)
        if at ~= nil then table.remove(dd[name], at) end
        -- As json-server, the dependents go whether or not the item was there.
        local removed = remove_dependents(dd, cfg)
        if at == nil then return removed, 404, {} end
        return true, 200, {}
      end)
    end
    return send(res, query, 404, {})
  end

  -- The steps of json-server's Express app, in its order.
  local function handle(req, res)
    local method = req.method
    if cfg.static and (method == "GET" or method == "HEAD") then
      local sent, why = res:send_file(req.path, { root = cfg.static, index = true,
                                                  cache_control = "public, max-age=0" })
      if sent or why == "closed" then return end
    end
    if cfg.read_only and method ~= "GET" then
      res:status(403)
      no_cache(res)
      res:header("Content-Type", "text/plain; charset=utf-8")
      return res:send("Forbidden")
    end
    local target, query = req.target, url.parse_query(req.query_string)
    if rules then
      local path_ = lower(target:match("^[^?#]*"))
      if method == "GET" and (path_ == "/__rules" or path_ == "/__rules/") then
        res:status(200)
        no_cache(res)
        res:header("Content-Type", "application/json; charset=utf-8")
        return res:send(json_encode(rules_doc))
      end
      for _, rule in ipairs(rules) do
        local ok, new = pcall(rewrite_url, rule, target)
        if not ok then return send(res, nil, 500, { error = type(new) == "table" and new.message or tostring(new) }) end
        if new then
          target = new
          local q = find(new, "?", 2, true)
          if q then query = url.parse_query((sub(new, q + 1):gsub("#.*$", ""))) end
        end
      end
    end
    if cfg.delay > 0 then moonport.sleep(cfg.delay) end
    local full_url = "http://" .. (req:header("host") or "") .. target
    local ok, e = pcall(route, req, res, method, target:match("^[^?#]*"), query, full_url)
    if not ok then
      if type(e) == "table" and e.status then return send(res, nil, e.status, { error = e.message }) end
      error(e, 0)
    end
  end

  -- Catch-alls: every path comes here but those the app's own routes
  -- (literal segments) take; "/" too where a static folder or the rules
  -- may answer it.
  local patterns = { "/:name", "/:name/*rest" }
  if cfg.static or rules then insert(patterns, 1, "/") end
  for _, method in ipairs(METHODS) do
    for _, pattern in ipairs(patterns) do app:route(method, pattern, handle) end
  end
  return app
end

-- Test hooks for the pure parts.
M._js_string, M._singular, M._plural, M._create_id = js_string, singular, plural, create_id
M._path_source, M._rewrite = path_source, function(from, to, subject)
  return rewrite_url(compile_rule(from, to, "test"), subject)
end

return M
