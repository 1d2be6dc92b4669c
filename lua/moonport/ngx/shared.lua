--- ngx.shared.DICT on moonport.shared: OpenResty's shared dictionary
-- methods and return values over moonport's one store, each dictionary's
-- keys kept apart under a prefix of its own ("ngx.shared.NAME:"), so that
-- ngx.shared.a and ngx.shared.b do not see each other's keys and
-- flush_all empties one dictionary. Every worker sees the same entries.
--
-- Differences (README, "OpenResty compatibility"): flags are not stored
-- (get returns the value alone); safe_set and safe_add may evict other
-- entries as set and add do; replace, expire and incr without init check
-- and then write, two calls that another worker may come between;
-- flush_all and get_keys walk the whole store; capacity and free_space,
-- and the list methods (lpush, ...), are not there.
-- @module moonport.ngx.shared

local store = require("moonport.core.shared").shared

local type, error, tostring, setmetatable, getmetatable, ipairs =
  type, error, tostring, setmetatable, getmetatable, ipairs
local sub = string.sub

local Dict = {}
Dict.__index = Dict

local function key_of(self, key, name)
  if type(key) ~= "string" then
    if type(key) ~= "number" then
      error("ngx.shared." .. self._name .. ":" .. name .. ": key must be a string", 3)
    end
    key = tostring(key)
  end
  if key == "" then return nil end
  return self._prefix .. key
end

local function check_self(self, name)
  if getmetatable(self) ~= Dict then
    error("ngx.shared.DICT:" .. name .. ": call it with ':'", 3)
  end
end

--- The value under key, or nil (a key that is empty or expired too).
-- @usage local v = ngx.shared.cache:get("k")
function Dict:get(key)
  check_self(self, "get")
  local k = key_of(self, key, "get")
  if k == nil then return nil, "empty key" end
  return store:get(k)
end

--- As get, with false as third result (expired entries are gone at once).
-- @usage local v, flags, stale = ngx.shared.cache:get_stale("k")
function Dict:get_stale(key)
  check_self(self, "get_stale")
  local k = key_of(self, key, "get_stale")
  if k == nil then return nil, "empty key" end
  return store:get(k), nil, false
end

local function write(self, name, key, value, exptime, add)
  check_self(self, name)
  local k = key_of(self, key, name)
  if k == nil then return false, "empty key", false end
  if exptime ~= nil and (type(exptime) ~= "number" or exptime < 0) then
    error("ngx.shared.DICT:" .. name .. ": bad exptime", 3)
  end
  if exptime == 0 then exptime = nil end
  local vt = type(value)
  if value ~= nil and vt ~= "string" and vt ~= "number" and vt ~= "boolean" then
    return false, "bad value type", false
  end
  local ok, err, forcible
  if add then
    ok, err, forcible = store:add(k, value, exptime)
  else
    ok, err, forcible = store:set(k, value, exptime)
  end
  return ok, err, forcible or false
end

--- Stores value under key for exptime seconds (0 or nil: no expiry); nil
-- deletes. Returns true, nil, forcible (true when other entries were
-- evicted), or false, "no memory", false.
-- @usage ngx.shared.cache:set("k", "v", 60)
function Dict:set(key, value, exptime)
  return write(self, "set", key, value, exptime, false)
end
Dict.safe_set = Dict.set

--- As set, only when the key is absent: false, "exists", false otherwise.
-- @usage local ok, err = ngx.shared.locks:add("job", true, 30)
function Dict:add(key, value, exptime)
  if value == nil then return false, "exists", false end
  return write(self, "add", key, value, exptime, true)
end
Dict.safe_add = Dict.add

--- As set, only when the key is present: false, "not found", false
-- otherwise.
-- @usage ngx.shared.cache:replace("k", "v2")
function Dict:replace(key, value, exptime)
  check_self(self, "replace")
  local k = key_of(self, key, "replace")
  if k == nil or store:get(k) == nil then return false, "not found", false end
  return write(self, "replace", key, value, exptime, false)
end

--- Adds value to the number under key: the new number, nil, forcible.
-- An absent key: nil, "not found" unless init is given, which it then
-- starts from (with init_ttl seconds to live). nil, "not a number" when
-- the value is not one.
-- @usage local n = ngx.shared.counters:incr("hits", 1, 0)
function Dict:incr(key, value, init, init_ttl)
  check_self(self, "incr")
  local k = key_of(self, key, "incr")
  if k == nil then return nil, "empty key" end
  if type(value) ~= "number" then
    error("ngx.shared.DICT:incr: value must be a number", 2)
  end
  if init == nil then
    if store:get(k) == nil then return nil, "not found" end
    init = 0
  elseif type(init) ~= "number" then
    error("ngx.shared.DICT:incr: init must be a number", 2)
  end
  local n, err = store:incr(k, value, init, init_ttl)
  if n == nil then return nil, err end
  return n, nil, false
end

--- Removes key.
-- @usage ngx.shared.cache:delete("k")
function Dict:delete(key)
  check_self(self, "delete")
  local k = key_of(self, key, "delete")
  if k ~= nil then store:delete(k) end
  return true
end

--- Seconds key has left (0: no expiry), or nil, "not found".
-- @usage local left = ngx.shared.cache:ttl("k")
function Dict:ttl(key)
  check_self(self, "ttl")
  local k = key_of(self, key, "ttl")
  if k == nil then return nil, "not found" end
  return store:ttl(k)
end

--- Gives key exptime more seconds (0: none): true, or nil, "not found".
-- @usage ngx.shared.sessions:expire(id, 3600)
function Dict:expire(key, exptime)
  check_self(self, "expire")
  local k = key_of(self, key, "expire")
  local v = k and store:get(k)
  if v == nil then return nil, "not found" end
  store:set(k, v, exptime ~= 0 and exptime or nil)
  return true
end

-- The store's keys that are this dictionary's, without the prefix.
local function own_keys(self, max)
  local prefix = self._prefix
  local n = #prefix
  local keys = {}
  for _, k in ipairs(store:keys(0)) do
    if sub(k, 1, n) == prefix then
      keys[#keys + 1] = sub(k, n + 1)
      if max > 0 and #keys >= max then break end
    end
  end
  return keys
end

--- Up to max_count keys of the dictionary (default 1024; 0 for all).
-- @usage for _, k in ipairs(ngx.shared.cache:get_keys(0)) do ... end
function Dict:get_keys(max_count)
  check_self(self, "get_keys")
  return own_keys(self, max_count or 1024)
end

--- Removes every key of the dictionary.
-- @usage ngx.shared.cache:flush_all()
function Dict:flush_all()
  check_self(self, "flush_all")
  local prefix = self._prefix
  for _, k in ipairs(own_keys(self, 0)) do store:delete(prefix .. k) end
end

--- Expired entries are removed as they are met: nothing to do; 0.
-- @usage ngx.shared.cache:flush_expired()
function Dict:flush_expired()
  return 0
end

local shared = {}

--- ngx.shared: a dictionary for every name, made when first asked for.
shared.dicts = setmetatable({}, {
  __index = function(t, name)
    if type(name) ~= "string" then return nil end
    local d = setmetatable({ _name = name, _prefix = "ngx.shared." .. name .. ":" }, Dict)
    t[name] = d
    return d
  end,
})

return shared
