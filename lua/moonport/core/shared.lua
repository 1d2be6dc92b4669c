--- moonport.shared and the mock's stores: key-value stores in shared
-- memory that every worker sees (server/lua/ffi/shared.c).
-- @module moonport.core.shared

local ffi = require("ffi")
local base = require("moonport.core.base")

ffi.cdef[[
int mp_store_get(int store, const char *key, size_t klen, double *num,
                 const char **str, size_t *len);
int mp_store_set(int store, const char *key, size_t klen, int type,
                 double num, const char *str, size_t len, double ttl,
                 int add);
int mp_store_incr(int store, const char *key, size_t klen, double by,
                  double init, double ttl, double *result);
int mp_store_delete(int store, const char *key, size_t klen);
int mp_store_ttl(int store, const char *key, size_t klen, double *ttl);
int mp_store_keys(int store, unsigned max, const char **out, size_t *len);
int mp_store_flush(int store);
]]

local C = ffi.C
local mp_store_get = C.mp_store_get
local mp_store_set = C.mp_store_set
local mp_store_incr = C.mp_store_incr
local mp_store_delete = C.mp_store_delete
local mp_store_ttl = C.mp_store_ttl
local mp_store_keys = C.mp_store_keys
local mp_store_flush = C.mp_store_flush

local MP_DECLINED = C.MP_DECLINED
local MP_NOMEM = C.MP_NOMEM
local STRING = C.MP_SHARED_STRING
local NUMBER = C.MP_SHARED_NUMBER
local BOOLEAN = C.MP_SHARED_BOOLEAN
local KEY_MAX = C.MP_SHARED_KEY_MAX

local type, error, setmetatable = type, error, setmetatable
local ffi_string = ffi.string
local fail = base.fail

local out = ffi.new("const char *[1]")
local num_out = ffi.new("double[1]")
local len_out = ffi.new("size_t[1]")
local value_types = { string = STRING, number = NUMBER, boolean = BOOLEAN }

-- A store of the shared segment. moonport.shared is one; the mock server
-- keeps its state and its journal in two more (server/base/shared.h's
-- MP_STORE_*), out of reach of what scripts store and of each other.
local Shared = {}
Shared.__index = Shared
local store_ids, store_names = {}, {}

local function new_store(id, name)
  local st = setmetatable({}, Shared)
  store_ids[st], store_names[st] = id, name
  return st
end

local shared = {}
--- The store of moonport.shared.
shared.shared = new_store(C.MP_STORE_SHARED, "moonport.shared")
--- The mock server's state: admin-added mappings, scenario states and
-- counters. Never evicted: a set that does not fit returns false,
-- "no memory" (--mock-state-size).
shared.mock_state = new_store(C.MP_STORE_MOCK, "core.mock_state")
--- The mock server's journal entries; when full, the oldest written are
-- dropped (--journal-memory).
shared.mock_journal = new_store(C.MP_STORE_JOURNAL, "core.mock_journal")

-- Checks the receiver of a store method; returns its store's index.
-- level: where the caller of the method is.
local function store_of(self, name, level)
  local id = store_ids[self]
  if id == nil then
    error("moonport.shared:" .. name .. ": call it with ':' (moonport.shared:"
          .. name .. "(...))", level + 1)
  end
  return id
end

-- Checks the receiver and the key of a store method; returns the index.
local function check(self, key, name)
  local id = store_of(self, name, 3)
  if type(key) ~= "string" or #key == 0 or #key > KEY_MAX then
    error(store_names[self] .. ":" .. name .. ": key must be a string of 1 to "
          .. KEY_MAX .. " bytes", 3)
  end
  return id
end

local function check_ttl(self, ttl, name)
  if ttl == nil then return 0 end
  if type(ttl) ~= "number" or ttl < 0 or ttl ~= ttl then
    error(store_names[self] .. ":" .. name .. ": ttl must be a non-negative "
          .. "number of seconds", 3)
  end
  return ttl
end

--- The value stored under key (a string, number or boolean), or nil when
-- there is none or it expired.
-- @usage local n = moonport.shared:get("hits")
function Shared:get(key)
  local id = check(self, key, "get")
  local t = mp_store_get(id, key, #key, num_out, out, len_out)
  if t == STRING then return ffi_string(out[0], len_out[0]) end
  if t == NUMBER then return num_out[0] end
  if t == BOOLEAN then return num_out[0] ~= 0 end
  return nil
end

-- set and add: true, nil, evicted; or false and why.
local function store(self, key, value, ttl, add, name)
  local id = check(self, key, name)
  ttl = check_ttl(self, ttl, name)
  local vt = type(value)
  local t = value_types[vt]
  if t == nil then
    if value == nil and not add then
      mp_store_delete(id, key, #key)
      return true, nil, false
    end
    error(store_names[self] .. ":" .. name .. ": value must be a string, "
          .. "number or boolean (got " .. vt .. ")", 3)
  end
  local rc
  if t == STRING then
    rc = mp_store_set(id, key, #key, t, 0, value, #value, ttl, add and 1 or 0)
  elseif t == NUMBER then
    rc = mp_store_set(id, key, #key, t, value, nil, 0, ttl, add and 1 or 0)
  else
    rc = mp_store_set(id, key, #key, t, value and 1 or 0, nil, 0, ttl,
                      add and 1 or 0)
  end
  if rc >= 0 then return true, nil, rc == 1 end
  if rc == MP_DECLINED then return false, "exists" end
  if rc == MP_NOMEM then return false, "no memory" end
  return false, "invalid"
end

--- Stores value under key, for ttl seconds (nil or 0: until evicted);
-- nil deletes. Returns true, nil, evicted: evicted is true when the store
-- was full and least recently used entries made room. Returns false,
-- "no memory" when the value is larger than the store can hold.
-- @usage moonport.shared:set("session:" .. id, user, 3600)
function Shared:set(key, value, ttl)
  return store(self, key, value, ttl, false, "set")
end

--- Like set, but only when the key is absent (or expired): false, "exists"
-- otherwise.
-- @usage local first = moonport.shared:add("lock:" .. job, true, 30)
function Shared:add(key, value, ttl)
  return store(self, key, value, ttl, true, "add")
end

--- Adds by (default 1) to the number under key and returns the new value,
-- atomically across workers. An absent key starts from init (default 0)
-- and expires after ttl seconds (nil or 0: never); an existing key keeps
-- its expiry. Returns nil, "not a number" when the value is not one.
-- @usage local n = moonport.shared:incr("hits")
function Shared:incr(key, by, init, ttl)
  local id = check(self, key, "incr")
  by, init = by or 1, init or 0
  if type(by) ~= "number" or type(init) ~= "number" then
    error(store_names[self] .. ":incr: by and init must be numbers", 2)
  end
  ttl = check_ttl(self, ttl, "incr")
  local rc = mp_store_incr(id, key, #key, by, init, ttl, num_out)
  if rc >= 0 then return num_out[0] end
  if rc == MP_NOMEM then return nil, "no memory" end
  return nil, "not a number"
end

--- Removes key. Returns true.
-- @usage moonport.shared:delete("session:" .. id)
function Shared:delete(key)
  local id = check(self, key, "delete")
  mp_store_delete(id, key, #key)
  return true
end

--- Seconds until key expires (0 when it never does), or nil, "not found".
-- @usage local left = moonport.shared:ttl("session:" .. id)
function Shared:ttl(key)
  local id = check(self, key, "ttl")
  local rc = mp_store_ttl(id, key, #key, num_out)
  if rc ~= 0 then return nil, "not found" end
  return num_out[0]
end

--- Up to max keys (default 1024; 0 for all) that have not expired, in no
-- particular order.
-- @usage for _, k in ipairs(moonport.shared:keys(0)) do ... end
function Shared:keys(max)
  local id = store_of(self, "keys", 2)
  max = max or 1024
  if type(max) ~= "number" or max < 0 or max % 1 ~= 0 then
    error(store_names[self] .. ":keys: max must be a whole number >= 0", 2)
  end
  local n = mp_store_keys(id, max, out, len_out)
  if n < 0 then fail(n, store_names[self] .. ":keys") end
  local keys, p, off = {}, out[0], 0
  for i = 1, n do
    local klen = ffi.cast("const uint32_t *", p + off)[0]
    keys[i] = ffi_string(p + off + 4, klen)
    off = off + 4 + klen
  end
  return keys
end

--- Removes every key.
-- @usage moonport.shared:flush_all()
function Shared:flush_all()
  mp_store_flush(store_of(self, "flush_all", 2))
end

return shared
