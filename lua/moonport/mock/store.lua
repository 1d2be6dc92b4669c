--- The mock's state in Redis (--mock-store URL): the same methods as the
-- in-process stores (core.mock_state and core.mock_journal: get, set,
-- add, incr, delete, keys, flush_all), over a Redis server that several
-- moonport instances share, plus what a shared mock needs done in one
-- round trip (refresh, advance, append, each_entry).
--
-- In Redis, under the prefix P (default "moonport:mock:"):
--
--   P state       a hash: the admin-added mappings ("mapping:<id>"), the
--                 version counter the workers watch, the journal's
--                 counters, settings, the recorder's state
--   P scenarios   a hash: scenario name -> its state
--   P journal     a hash: entry number -> the entry (JSON)
--   P jsondb:<file>:data, :version, :lock, :file
--                 the --json-db document, its version and its write lock
--
-- Values of the state hash and the json-db keys keep their Lua type: a
-- number as its digits (so HINCRBY works on counters), a string behind an
-- "s", a boolean as "T" or "F".
--
-- Every method but refresh, advance, append and each_entry raises a
-- store.Unavailable error when Redis cannot be reached: the mock turns it
-- into 503 for admin calls and json-db requests. The version and the
-- scenario states are read only by refresh, in one round trip before a
-- request is matched, and served from that snapshot (matching must not
-- yield); writes of this worker update the snapshot too.
-- @module moonport.mock.store

local redis = require("moonport.mock.redis")
local crypto = require("moonport.core.crypto")
local log = require("moonport.core.log").log
local now = require("moonport.core.time").now

local type, tostring, tonumber, setmetatable, error = type, tostring, tonumber, setmetatable, error
local getmetatable = getmetatable
local byte, sub, format, find = string.byte, string.sub, string.format, string.find

local store = {}

-- How many journal entries each_entry reads in one round trip.
local PAGE = 256
-- The least time between two log lines about entries not journaled.
local LOST_LOG_EVERY = 10

--- The error a store method raises when Redis cannot be reached:
-- {message = why}, with this metatable.
local Unavailable = { __tostring = function(e) return e.message end }
store.Unavailable = Unavailable

--- Whether err is a store.Unavailable error.
-- @usage if store.unavailable(err) then ... end
function store.unavailable(err)
  return type(err) == "table" and getmetatable(err) == Unavailable
end

local function starts_with(s, p) return find(s, p, 1, true) == 1 end

local function encode(v)
  local t = type(v)
  if t == "number" then
    if v == math.floor(v) and v > -2 ^ 53 and v < 2 ^ 53 then return format("%d", v) end
    return format("%.17g", v)
  end
  if t == "string" then return "s" .. v end
  if t == "boolean" then return v and "T" or "F" end
  error("mock store: a value must be a string, number or boolean (got " .. t .. ")", 3)
end

local function decode(v)
  if v == false or v == nil then return nil end
  local b = byte(v, 1)
  if b == 115 then return sub(v, 2) end -- 's'
  if v == "T" then return true end
  if v == "F" then return false end
  return tonumber(v)
end

-- Scripts run by EVALSHA, their SHA-1 known here; EVAL when Redis does not
-- have them (a restart flushed its script cache).
local function script(text)
  return { text = text, sha = crypto.hex(crypto.digest("sha1", text)) }
end

-- A scenario's move, only from the state the request was matched in:
-- KEYS[1] the scenarios hash; ARGV: name, required state, new state.
local ADVANCE = script([[
local cur = redis.call('HGET', KEYS[1], ARGV[1]) or 'Started'
if cur ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
]])

-- A journal entry: its number from the counter, its id made from the
-- number, the oldest beyond the journal's size dropped. KEYS: the state
-- hash, the journal hash; ARGV: the id's prefix, the entry's JSON (an
-- object, without its id), the counter's field, the size, the field of
-- the first entry kept.
local APPEND = script([[
local n = redis.call('HINCRBY', KEYS[1], ARGV[3], 1)
local body = ARGV[2]
redis.call('HSET', KEYS[2], n, '{"id":"' .. ARGV[1] .. string.format('%012x', n) .. '",' .. string.sub(body, 2))
local size = tonumber(ARGV[4])
if n > size then
  redis.call('HDEL', KEYS[2], n - size)
  redis.call('HSET', KEYS[1], ARGV[5], n - size + 1)
end
return n
]])

local State = {}
State.__index = State
local Journal = {}
Journal.__index = Journal

-- Logs what could not be done for want of Redis, at most once every
-- LOST_LOG_EVERY seconds for each kind of thing.
local function complain(self, kind, msg)
  local t = now()
  if t - (self.complained[kind] or 0) >= LOST_LOG_EVERY then
    self.complained[kind] = t
    log("warn", "mock store: " .. msg)
  end
end

local function unavailable(self, err)
  return setmetatable({ message = ("the mock store (%s) cannot be reached: %s")
    :format(self.client:name(), tostring(err)) }, Unavailable)
end

-- Runs a pipeline; raises Unavailable when Redis cannot be reached, and an
-- ordinary error for an error reply.
local function run(self, cmds)
  local replies, err = self.client:run(cmds)
  if replies == nil then error(unavailable(self, err), 0) end
  for i = 1, #replies do
    local r = replies[i]
    if type(r) == "table" and r.err then error("mock store: redis: " .. r.err, 0) end
  end
  return replies
end

local function run1(self, ...)
  return run(self, { { ... } })[1]
end

-- Runs a script; returns its reply, or nil and why Redis could not be
-- reached (an error reply raises).
local function eval(self, s, keys, args)
  local function cmd(op, first)
    local c = { op, first, #keys }
    for i = 1, #keys do c[#c + 1] = keys[i] end
    for i = 1, #args do c[#c + 1] = args[i] end
    return c
  end
  local replies, err = self.client:run({ cmd("EVALSHA", s.sha) })
  if replies == nil then return nil, err end
  local r = replies[1]
  if type(r) == "table" and r.err and starts_with(r.err, "NOSCRIPT") then
    replies, err = self.client:run({ cmd("EVAL", s.text) })
    if replies == nil then return nil, err end
    r = replies[1]
  end
  if type(r) == "table" and r.err then error("mock store: redis: " .. r.err, 0) end
  return r
end

--- A store over Redis for a --mock-store URL. keys names the mock's own
-- keys: version (the counter the workers watch), scenario (the prefix of
-- scenario states), journal_seq, journal_first, entry (the prefix of
-- journal entries), entry_id (what an entry's id starts with). Returns
-- the state store and the journal store, or nil and why the URL is not
-- one. Connects to nothing yet.
-- @usage local state, journal = store.new("redis://127.0.0.1:6379/0", keys)
function store.new(url, keys)
  local where, err = redis.parse_url(url)
  if where == nil then return nil, err end
  local client = redis.new(where)
  local p = where.prefix
  local st = setmetatable({
    remote = true, client = client, names = keys, prefix = p,
    k_state = p .. "state", k_scen = p .. "scenarios", k_journal = p .. "journal",
    snap = nil, lost = 0, lost_since = 0, complained = {},
  }, State)
  local journal = setmetatable({ state = st, client = client }, Journal)
  client.on_up = function()
    local msg = client:name() .. " answers again"
    if st.lost_since > 0 then
      msg = msg .. ("; journal entries not stored meanwhile: %d"):format(st.lost_since)
      st.lost_since = 0
    end
    log("warn", "mock store: " .. msg)
  end
  return st, journal
end

-- Where key lives: "scen" (a field of the scenarios hash), "plain" (a
-- key of its own) or "hash" (a field of the state hash), and the name.
local function place(self, key)
  local sp = self.names.scenario
  if starts_with(key, sp) then return "scen", sub(key, #sp + 1) end
  if starts_with(key, "jsondb:") then return "plain", self.prefix .. key end
  return "hash", key
end

-- The methods of the in-process stores ------------------------------------

--- The value under key, or nil. The version and scenario states come from
-- the last refresh.
-- @usage local v = state:get("settings")
function State:get(key)
  if key == self.names.version and self.snap then return self.snap.version end
  local where, name = place(self, key)
  if where == "scen" then return self.snap and self.snap.scenarios[name] or nil end
  if self.offline then return nil end
  if where == "plain" then return decode(run1(self, "GET", name)) end
  return decode(run1(self, "HGET", self.k_state, name))
end

--- The values under a list of keys of the state hash, in one round trip:
-- a list (nil where there is none).
-- @usage local values = state:get_many({ "mapping:a", "mapping:b" })
function State:get_many(list)
  local out = {}
  if #list == 0 or self.offline then return out end
  local cmd = { "HMGET", self.k_state }
  for i = 1, #list do cmd[i + 2] = list[i] end
  local got = run(self, { cmd })[1]
  for i = 1, #list do out[i] = decode(got[i]) end
  return out
end

--- Stores value under key (ttl: seconds, for json-db keys). Returns true.
-- @usage state:set("settings", text)
function State:set(key, value, ttl)
  if value == nil then return self:delete(key) end
  local where, name = place(self, key)
  if where == "scen" then
    run1(self, "HSET", self.k_scen, name, tostring(value))
    if self.snap then self.snap.scenarios[name] = tostring(value) end
  elseif where == "plain" then
    if ttl and ttl > 0 then
      run1(self, "SET", name, encode(value), "PX", math.ceil(ttl * 1000))
    else
      run1(self, "SET", name, encode(value))
    end
  else
    run1(self, "HSET", self.k_state, name, encode(value))
  end
  return true
end

--- Stores value under key only when there is none: true, or false and
-- "exists".
-- @usage local first = state:add("recorded:" .. digest, true)
function State:add(key, value, ttl)
  local where, name = place(self, key)
  local done
  if where == "plain" then
    if ttl and ttl > 0 then
      done = run1(self, "SET", name, encode(value), "NX", "PX", math.ceil(ttl * 1000)) ~= false
    else
      done = run1(self, "SET", name, encode(value), "NX") ~= false
    end
  else
    local hash = where == "scen" and self.k_scen or self.k_state
    done = run1(self, "HSETNX", hash, name, where == "scen" and tostring(value) or encode(value)) == 1
  end
  if done then return true end
  return false, "exists"
end

--- Adds by (default 1) to the number under key, atomically across
-- instances; returns the new value.
-- @usage local n = state:incr("version")
function State:incr(key, by)
  by = by or 1
  local where, name = place(self, key)
  local n
  if where == "plain" then
    n = run1(self, "INCRBY", name, by)
  else
    n = run1(self, "HINCRBY", self.k_state, name, by)
  end
  if key == self.names.version and self.snap then self.snap.version = n end
  return n
end

--- Removes key. Returns true.
-- @usage state:delete("mapping:" .. id)
function State:delete(key)
  local where, name = place(self, key)
  if where == "scen" then
    run1(self, "HDEL", self.k_scen, name)
    if self.snap then self.snap.scenarios[name] = nil end
  elseif where == "plain" then
    run1(self, "DEL", name)
  else
    run1(self, "HDEL", self.k_state, name)
  end
  return true
end

--- The keys of the state hash and the scenarios (max is ignored: all).
-- @usage for _, k in ipairs(state:keys(0)) do ... end
function State:keys()
  if self.offline then return {} end
  local r = run(self, { { "HKEYS", self.k_state }, { "HKEYS", self.k_scen } })
  local out = r[1]
  for _, name in ipairs(r[2]) do out[#out + 1] = self.names.scenario .. name end
  return out
end

--- Removes the state hash and the scenarios.
-- @usage state:flush_all()
function State:flush_all()
  run(self, { { "DEL", self.k_state, self.k_scen } })
  self.snap = nil
end

--- Runs fn() with every read answered as if Redis held nothing but what
-- the snapshot has, without the network: how a worker that cannot reach
-- Redis builds its stubs from the script and the mapping files alone.
-- fn must not yield.
-- @usage state:without_network(function() current(app) end)
function State:without_network(fn)
  self.offline = true
  local ok, err = pcall(fn)
  self.offline = nil
  if not ok then error(err, 0) end
end

-- What a shared mock does in one round trip -------------------------------

--- Reads the version and every scenario's state in one round trip, for
-- the request about to be matched. Returns true, or nil and why (the
-- snapshot is then left as it was; a worker that never had one gets an
-- empty one, version -1).
-- @usage if not state:refresh() then ... end
function State:refresh()
  local replies, err = self.client:run({ { "HGET", self.k_state, self.names.version },
                                         { "HGETALL", self.k_scen } })
  if replies == nil then
    if self.snap == nil then self.snap = { version = -1, scenarios = {} } end
    return nil, unavailable(self, err)
  end
  local scenarios, list = {}, replies[2]
  if type(list) == "table" and not list.err then
    for i = 1, #list, 2 do scenarios[list[i]] = list[i + 1] end
  end
  self.snap = { version = tonumber(replies[1]) or 0, scenarios = scenarios }
  return true
end

--- Moves scenario name to new_state, only when it is in required (nil:
-- whatever it is in). Returns true when it moved, false when another
-- request (of any instance) moved it first, or nil and why Redis could not
-- be reached (logged, at most once every 10 s).
-- @usage local won = state:advance("cart", "Started", "Full")
function State:advance(name, required, new_state)
  local r, err
  if required == nil then
    local replies
    replies, err = self.client:run({ { "HSET", self.k_scen, name, new_state } })
    r = replies and 1
  else
    r, err = eval(self, ADVANCE, { self.k_scen }, { name, required, new_state })
  end
  if r == nil then
    err = unavailable(self, err)
    complain(self, "scenario", ("scenario %s not moved to %s: %s"):format(name, new_state, tostring(err)))
    return nil, err
  end
  if r ~= 1 then return false end
  if self.snap then self.snap.scenarios[name] = new_state end
  return true
end

--- Journals an entry (JSON text of an object without its id) in one
-- round trip: its number and id are given by Redis, and the oldest entry
-- beyond size goes. Returns the entry's number; or nil when Redis could
-- not be reached, which is counted and logged (not more than once every
-- 10 s, with the count).
-- @usage state:append(json_encode(entry), 1000)
function State:append(text, size)
  local k = self.names
  local n, err = eval(self, APPEND, { self.k_state, self.k_journal },
                      { k.entry_id, text, k.journal_seq, size, k.journal_first })
  if n then return n end
  self.lost, self.lost_since = self.lost + 1, self.lost_since + 1
  complain(self, "journal", ("a journal entry was not stored (%d in all by this worker): %s")
    :format(self.lost, tostring(unavailable(self, err))))
  return nil
end

--- Calls fn(entry) for every journal entry kept, decoded, newest first
-- (oldest first with oldest_first), reading PAGE entries a round trip;
-- stops when fn returns false. decode is the JSON decoder.
-- @usage state:each_entry(function(e) ... end, false, json.decode)
function State:each_entry(fn, oldest_first, json_decode)
  local k = self.names
  local r = run(self, { { "HMGET", self.k_state, k.journal_seq, k.journal_first } })[1]
  local last, first = tonumber(r[1]) or 0, tonumber(r[2]) or 1
  local from, to, step = last, first, -1
  if oldest_first then from, to, step = first, last, 1 end
  local n = from
  while (step < 0 and n >= to) or (step > 0 and n <= to) do
    local cmd, nums = { "HMGET", self.k_journal }, {}
    while #nums < PAGE and ((step < 0 and n >= to) or (step > 0 and n <= to)) do
      nums[#nums + 1] = n
      cmd[#cmd + 1] = n
      n = n + step
    end
    local got = run(self, { cmd })[1]
    for i = 1, #nums do
      local e = got[i] and json_decode(got[i])
      if e and fn(e) == false then return end
    end
  end
end

-- The journal store ----------------------------------------------------------

local function entry_field(self, key)
  return sub(key, #self.state.names.entry + 1)
end

--- The entry under key ("entry:<n>"), or nil.
-- @usage local text = journal:get("entry:" .. n)
function Journal:get(key)
  return run1(self.state, "HGET", self.state.k_journal, entry_field(self, key)) or nil
end

--- Stores an entry's text under key. Returns true.
-- @usage journal:set("entry:" .. n, text)
function Journal:set(key, text)
  run1(self.state, "HSET", self.state.k_journal, entry_field(self, key), text)
  return true
end

--- Removes the entry under key. Returns true.
-- @usage journal:delete("entry:" .. n)
function Journal:delete(key)
  run1(self.state, "HDEL", self.state.k_journal, entry_field(self, key))
  return true
end

--- Removes every entry.
-- @usage journal:flush_all()
function Journal:flush_all()
  run1(self.state, "DEL", self.state.k_journal)
end

return store
