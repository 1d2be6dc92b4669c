--- moonport's LRU cache, with lua-resty-lrucache's API: a cache of at
-- most `size` items in one worker's Lua state (not shared between
-- workers), least recently used out first, with an optional time to live
-- per item. resty.lrucache is Debian's lua-resty-lrucache where that is
-- installed, and this otherwise.
--
--     local lrucache = require("resty.lrucache")
--     local c = assert(lrucache.new(200))
--     c:set("dog", 32, 0.5)       -- half a second to live
--     local v, stale = c:get("dog")
--
-- @module moonport.lrucache

local type, setmetatable = type, setmetatable
local now = require("moonport.core.time").now

local Cache = {}
Cache.__index = Cache

local lrucache = { _VERSION = "0.13" }

--- A cache of at most size items, or nil and why.
-- @usage local c, err = lrucache.new(100)
function lrucache.new(size)
  if type(size) ~= "number" or size < 1 then
    return nil, "size too small"
  end
  -- A ring through a head node: head.next the most recently used.
  local head = {}
  head.prev, head.next = head, head
  return setmetatable({ size = size - size % 1, n = 0, head = head, nodes = {} }, Cache)
end

local function unlink(node)
  node.prev.next = node.next
  node.next.prev = node.prev
end

local function push_front(head, node)
  node.next, node.prev = head.next, head
  head.next.prev = node
  head.next = node
end

--- The value under key and its flags; nil, the stale value and its
-- flags when it has expired (the item is then dropped); nil when absent.
-- @usage local v = c:get("dog")
function Cache:get(key)
  local node = self.nodes[key]
  if node == nil then return nil end
  if node.expire and node.expire < now() then
    unlink(node)
    self.nodes[key] = nil
    self.n = self.n - 1
    return nil, node.value, node.flags
  end
  unlink(node)
  push_front(self.head, node)
  return node.value, node.flags
end

--- Stores value under key, for ttl seconds (nil or 0: until evicted),
-- with an optional number flags; evicts the least recently used item when
-- the cache is full.
-- @usage c:set("dog", 32, 60)
function Cache:set(key, value, ttl, flags)
  local nodes = self.nodes
  local node = nodes[key]
  if node then
    unlink(node)
  else
    if self.n >= self.size then
      node = self.head.prev
      unlink(node)
      nodes[node.key] = nil
    else
      node = {}
      self.n = self.n + 1
    end
    node.key = key
    nodes[key] = node
  end
  node.value = value
  node.flags = flags
  node.expire = (ttl and ttl > 0) and now() + ttl or nil
  push_front(self.head, node)
end

--- Removes key; true when it was there.
-- @usage c:delete("dog")
function Cache:delete(key)
  local node = self.nodes[key]
  if node == nil then return false end
  unlink(node)
  self.nodes[key] = nil
  self.n = self.n - 1
  return true
end

--- How many items the cache holds (expired ones not yet dropped too).
-- @usage local n = c:count()
function Cache:count()
  return self.n
end

--- The most items the cache holds.
-- @usage local max = c:capacity()
function Cache:capacity()
  return self.size
end

--- Up to max_count keys (0 or nil: all), most recently used first, into
-- res when given.
-- @usage local keys = c:get_keys()
function Cache:get_keys(max_count, res)
  res = res or {}
  local i, node, head = 0, self.head.next, self.head
  max_count = max_count or 0
  while node ~= head and (max_count == 0 or i < max_count) do
    i = i + 1
    res[i] = node.key
    node = node.next
  end
  res[i + 1] = nil
  return res
end

--- Removes every item.
-- @usage c:flush_all()
function Cache:flush_all()
  local head = self.head
  head.prev, head.next = head, head
  self.nodes = {}
  self.n = 0
end

return lrucache
