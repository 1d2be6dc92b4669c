-- moonport.shared as handlers use it: every method, types, TTLs, LRU
-- eviction at --shared-size, and misuse.
local helpers = require("spec.helpers")
local support = require("spec.support.server")

local APP = "spec/fixtures/workers.lua"

describe("moonport.shared", function()
  local server = support.serve(APP, { "--workers", "2" })

  local function call(method, target)
    local status, _, body = helpers.request(server.port, method, target)
    assert.equal(200, status, body)
    return body
  end

  before_each(function() call("POST", "/flush") end)

  it("stores strings, numbers and booleans and gives them back typed", function()
    assert.equal("boolean:true nil:nil boolean:false", call("PUT", "/kv/s?v=hello%20world"))
    assert.equal("string:hello world", call("GET", "/kv/s"))
    call("PUT", "/kv/empty?v=")
    assert.equal("string:", call("GET", "/kv/empty"))
    call("PUT", "/kv/n?v=-2.5&type=number")
    assert.equal("number:-2.5", call("GET", "/kv/n"))
    call("PUT", "/kv/t?v=true&type=boolean")
    assert.equal("boolean:true", call("GET", "/kv/t"))
    call("PUT", "/kv/f?v=false&type=boolean")
    assert.equal("boolean:false", call("GET", "/kv/f"))
    assert.equal("nil:nil", call("GET", "/kv/missing"))
  end)

  it("replaces a value, and deletes it when set to nil", function()
    call("PUT", "/kv/k?v=one")
    call("PUT", "/kv/k?v=" .. string.rep("z", 3000))
    assert.equal("string:" .. string.rep("z", 3000), call("GET", "/kv/k"))
    call("PUT", "/kv/k?v=2&type=number")
    assert.equal("number:2", call("GET", "/kv/k"))
    call("PUT", "/kv/k") -- no v: nil
    assert.equal("nil:nil", call("GET", "/kv/k"))
  end)

  it("adds only when absent", function()
    assert.equal("boolean:true nil:nil boolean:false", call("POST", "/kv/a?v=first"))
    assert.equal("boolean:false string:exists", call("POST", "/kv/a?v=second"))
    assert.equal("string:first", call("GET", "/kv/a"))
  end)

  it("increments atomically, starting from init, and refuses non-numbers", function()
    assert.equal("number:1", call("POST", "/kv/c/incr"))
    assert.equal("number:11", call("POST", "/kv/c/incr?by=10"))
    assert.equal("number:10.5", call("POST", "/kv/c/incr?by=-0.5"))
    assert.equal("number:105", call("POST", "/kv/d/incr?by=5&init=100"))
    call("PUT", "/kv/s?v=text")
    assert.equal("nil:nil string:not a number", call("POST", "/kv/s/incr"))
  end)

  it("deletes", function()
    call("PUT", "/kv/k?v=1")
    assert.equal("boolean:true", call("DELETE", "/kv/k"))
    assert.equal("nil:nil", call("GET", "/kv/k"))
    assert.equal("boolean:true", call("DELETE", "/kv/k"))
  end)

  it("expires entries after their TTL and reports what is left", function()
    call("PUT", "/kv/hour?v=x&ttl=3600")
    call("PUT", "/kv/short?v=x&ttl=0.3")
    call("PUT", "/kv/long?v=x")
    -- What is left of an hour: a little less, however long the machine
    -- took to ask.
    local left = tonumber(call("GET", "/kv/hour/ttl"):match("^number:(.*)$"))
    assert.is_true(left > 3000 and left <= 3600, tostring(left))
    assert.equal("number:0", call("GET", "/kv/long/ttl"))
    assert.equal("nil:nil string:not found", call("GET", "/kv/none/ttl"))
    assert.truthy(helpers.eventually(function()
      return call("GET", "/kv/short") == "nil:nil"
    end, 10), "the entry did not expire")
    assert.equal("string:x", call("GET", "/kv/long"))
    -- An expired key counts as absent for add and incr.
    call("PUT", "/kv/e?v=5&type=number&ttl=0.05")
    assert.truthy(helpers.eventually(function()
      return call("GET", "/kv/e") == "nil:nil"
    end, 10))
    assert.equal("number:1", call("POST", "/kv/e/incr"))
  end)

  it("lists keys that have not expired, up to max", function()
    call("PUT", "/kv/b?v=1")
    call("PUT", "/kv/a?v=1")
    call("PUT", "/kv/c?v=1")
    assert.equal("a,b,c", call("GET", "/keys"))
    local two = call("GET", "/keys?max=2")
    assert.equal(2, select(2, two:gsub(",", "")) + 1)
    call("POST", "/flush")
    assert.equal("", call("GET", "/keys"))
  end)

  it("shows on the stats endpoint, with the worker that answered", function()
    local other = support.start(APP, { "--workers", "2", "--stats" })
    helpers.request(other.port, "PUT", "/kv/seen?v=1")
    local doc = helpers.stats(other.port)
    assert.truthy(doc.worker.id == 1 or doc.worker.id == 2, tostring(doc.worker.id))
    assert.equal(1, doc.shared.entries)
    assert.is_true(doc.shared.capacity_bytes > 8 * 1024 * 1024)
    assert.is_true(doc.shared.used_bytes > 0)
  end)

  it("raises on misuse: a dot call names the colon form", function()
    assert.truthy(call("GET", "/misuse"):find("call it with ':'", 1, true))
  end)
end)

describe("moonport.shared when full", function()
  it("evicts the least recently used entries and says so", function()
    local server = support.start(APP, { "--shared-size", "64k" })
    local function call(method, target)
      local status, _, body = helpers.request(server.port, method, target)
      assert.equal(200, status, body)
      return body
    end
    local x1000 = "string:" .. string.rep("x", 1000)
    -- How many 1,000-byte values fit: the first set that evicts says.
    local first = tonumber(call("POST", "/fill?n=1000&size=1000"))
    assert.truthy(first, "1,000 sets into 64k and none evicted")
    -- Fill to just under that, then use the oldest entry.
    call("POST", "/flush")
    assert.equal("nil", call("POST", "/fill?n=" .. (first - 2) .. "&size=1000"))
    assert.equal(x1000, call("GET", "/kv/fill:1"))
    -- More values evict the least recently used: fill:2 and on, not fill:1.
    assert.truthy(tonumber(call("POST", "/fill?prefix=more&n=5&size=1000")))
    assert.equal("nil:nil", call("GET", "/kv/fill:2"))
    assert.equal(x1000, call("GET", "/kv/fill:1"))
    assert.equal(x1000, call("GET", "/kv/more:5"))
    -- A value larger than the whole store is refused, not evicted for.
    local status, _, body = helpers.request(server.port, "PUT", "/kv/big?size=70000")
    assert.equal(200, status)
    assert.equal("boolean:false string:no memory", body)
  end)
end)
