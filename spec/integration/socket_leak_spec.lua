-- Clients that leave while their handlers wait on an upstream leave
-- nothing behind: after 10,000 of them, the worker's descriptors, its
-- outbound connections and its Lua heap are back where they started.
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local socket = require("socket")

local ROUNDS = 10000
local BATCH = 50

local function fd_count(pid)
  local n = 0
  for _ in require("posix.dirent").files("/proc/" .. pid .. "/fd") do n = n + 1 end
  return n
end

describe("a client that leaves while its handler waits on an upstream", function()
  local upstream = support.serve("spec/fixtures/upstream.lua")
  local server = support.serve("spec/fixtures/sockets.lua", { "--stats" })

  -- BATCH clients at once: each sends its request, reads the start of the
  -- answer (its handler is then waiting on the upstream) and leaves.
  local function batch()
    local conns = {}
    local request = "GET /wait?port=" .. upstream.port .. " HTTP/1.1\r\nHost: x\r\n\r\n"
    for i = 1, BATCH do
      local c = assert(socket.connect("127.0.0.1", server.port))
      c:settimeout(10)
      assert(c:send(request))
      conns[i] = c
    end
    for i = 1, BATCH do
      local seen = ""
      repeat
        local data, err, partial = conns[i]:receive(1)
        seen = seen .. (data or partial or "")
        assert(err == nil, err)
      until seen:find("waiting\n", 1, true)
      conns[i]:close()
    end
  end

  local function state()
    local stats = helpers.stats(server.port)
    local counts = helpers.json(select(3, helpers.request(server.port, "GET", "/counts")))
    local live = helpers.json(select(3, helpers.request(server.port, "GET", "/heap")))
    return { fds = fd_count(server:workers()[1]), in_use = counts.in_use,
             heap = live.bytes, heap_total = stats.worker.lua_heap_bytes }
  end

  local function settled(before)
    return helpers.eventually(function()
      local now = state()
      return now.in_use == 0 and now.fds <= before.fds and now
    end)
  end

  it("leaves no socket, descriptor or heap behind", function()
    batch() -- warm up: pools, buffers, the JIT
    local before = assert(settled({ fds = math.huge }))
    for _ = 1, ROUNDS / BATCH do batch() end
    local after = settled(before)
    assert.truthy(after, "still held: " .. require("cjson").encode(state()))
    assert.equal(0, after.in_use)
    assert.is_true(after.fds <= before.fds, ("descriptors %d -> %d"):format(before.fds, after.fds))
    -- What the heap holds live after a full collection: a leak of even a
    -- few bytes per request would be hundreds of KiB.
    assert.is_true(after.heap < before.heap + 256 * 1024,
      ("Lua heap %d -> %d bytes"):format(before.heap, after.heap))
  end)
end)
