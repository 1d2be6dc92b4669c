-- moonport.socket.tcp against a real upstream (a second moonport,
-- spec/fixtures/upstream.lua) and a closed port: OpenResty's answers for
-- each way an upstream can fail, keep-alive pools and their cap, waits
-- from inside coroutines, and requests whose client leaves while their
-- handler waits on an upstream.
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local socket = require("socket")

local FIXTURE = "spec/fixtures/sockets.lua"
local UPSTREAM = "spec/fixtures/upstream.lua"

-- A port nothing listens on: bound, then closed.
local function closed_port()
  local s = assert(socket.bind("127.0.0.1", 0))
  local _, port = s:getsockname()
  s:close()
  return tonumber(port)
end

local function get(server, target)
  local status, _, body = helpers.request(server.port, "GET", target)
  assert.equal(200, status, body)
  return helpers.json(body)
end

describe("moonport.socket.tcp", function()
  local upstream = support.serve(UPSTREAM, { "--idle-timeout", "1" })
  local server = support.serve(FIXTURE)

  local function fetch(query)
    return get(server, "/fetch?port=" .. upstream.port .. "&" .. (query or ""))
  end

  it("sends a request and reads lines and a sized body", function()
    local r = fetch("path=/hello")
    assert.equal("HTTP/1.1 200 OK", r.status)
    assert.equal("hello world", r.body)
    assert.equal(0, r.reused)
    assert.equal(1, r.closed)
  end)

  it("resolves host names with the system resolver, /etc/hosts included", function()
    local r = fetch("host=localhost&path=/hello")
    assert.equal("hello world", r.body)
  end)

  it("reads bodies larger than its buffer", function()
    local r = fetch("path=/big/300000")
    assert.equal(300000, #r.body)
    assert.equal(string.rep("x", 300000), r.body)
  end)

  it("puts connections into a pool and takes them out again", function()
    local first = fetch("path=/hello&ka=1&pool=reuse")
    assert.equal(1, first.keepalive)
    local second = fetch("path=/hello&ka=1&pool=reuse")
    assert.equal(1, second.reused)
    local third = fetch("path=/hello&ka=1&pool=reuse")
    assert.equal(2, third.reused)
  end)

  it("drops a pooled connection the upstream closes", function()
    fetch("path=/hello&ka=1&pool=dropped")
    -- The upstream closes keep-alive connections idle for a second; the
    -- idle connection's watch sees it and leaves the pool.
    assert.truthy(helpers.eventually(function()
      return get(server, "/counts").idle == 0
    end, 5))
    assert.equal(0, fetch("path=/hello&pool=dropped").reused)
  end)

  it("drops a pooled connection idle past max_idle_ms", function()
    fetch("path=/hello&ka=1&idle=100&pool=idled")
    assert.truthy(helpers.eventually(function()
      return get(server, "/counts").idle == 0
    end, 5))
  end)

  it("answers connection refused", function()
    local r = get(server, "/fetch?port=" .. closed_port())
    assert.same({ step = "connect", err = "connection refused" }, r)
  end)

  it("answers a host that does not resolve with its name", function()
    local r = get(server, "/fetch?host=no-such-host.invalid&port=80")
    assert.equal("connect", r.step)
    assert.matches("^no%-such%-host%.invalid could not be resolved %(", r.err)
  end)

  it("times a stalled read out, no earlier than set and within a second after, and keeps the connection", function()
    local started = helpers.now()
    local r = get(server, "/stall?timeout=300&port=" .. upstream.port)
    local elapsed = helpers.now() - started
    assert.equal("timeout", r.err)
    assert.equal("", r.partial)
    assert.is_true(r.open_after)
    assert.is_true(elapsed >= 0.3, "returned after " .. elapsed .. " s")
    assert.is_true(elapsed < 1.3, "returned after " .. elapsed .. " s")
  end)

  it("answers a reset with connection reset by peer", function()
    local r = fetch("path=/reset")
    assert.equal("status", r.step)
    assert.equal("connection reset by peer", r.err)
  end)

  it("answers a connection closed mid-body with closed and the partial body", function()
    local r = fetch("path=/cut")
    assert.equal("body", r.step)
    assert.equal("closed", r.err)
    assert.equal("partial", r.partial)
  end)

  it("keeps bytes beyond what was asked for, and will not pool the connection with them", function()
    local r = get(server, "/more?port=" .. upstream.port)
    assert.equal("hello", r.first)
    assert.equal("unread data in buffer", r.err)
  end)

  it("reads up to a boundary, whole, in pieces and inclusive", function()
    local r = get(server, "/until?port=" .. upstream.port)
    assert.equal("200", r.status)
    assert.equal("alpha", r.whole)
    assert.same({ "bet", "a" }, r.pieces)
    assert.equal("gamma--", r.inclusive)
    assert.equal("re", r.any)
    assert.equal("st", r.rest)
  end)

  it("waits from inside a coroutine the handler made", function()
    local status, _, body = helpers.request(server.port, "GET", "/wrapped?port=" .. upstream.port)
    assert.equal(200, status)
    assert.equal("after 20", body)
  end)

  it("runs upstream calls side by side in light threads", function()
    local r = get(server, "/threads?port=" .. upstream.port)
    assert.equal("after 300", r[1].body)
    assert.equal("after 300", r[2].body)
    -- Side by side: each call began before the other ended (however slow
    -- the machine, one after the other they could not overlap).
    assert.is_true(r[1].began < r[2].ended and r[2].began < r[1].ended)
  end)

  it("calls an upstream from a timer", function()
    local status = helpers.request(server.port, "GET", "/timer?port=" .. upstream.port)
    assert.equal(200, status)
    assert.truthy(helpers.eventually(function()
      return get(server, "/shared/timer_fetch").value == "after 20"
    end))
  end)

  it("answers closed on a socket never connected or closed", function()
    local r = get(server, "/closed?port=" .. upstream.port)
    assert.same({ "closed", "closed", "closed", "closed" }, r)
  end)

  it("caps a pool's connections with a backlog and refuses past it", function()
    local conns = {}
    for i = 1, 3 do
      conns[i] = helpers.connect(server.port)
      conns[i]:send(helpers.build_request("GET", "/capped?ms=400&port=" .. upstream.port))
      -- In order: the first connects, the second waits, the third finds
      -- the backlog full.
      helpers.nap(0.1)
    end
    local bodies = {}
    for i = 1, 3 do
      local resp = conns[i]:read_response()
      bodies[i] = helpers.json(resp.body)
      conns[i]:close()
    end
    assert.same({ body = "after 400", reused = 0 }, bodies[1])
    assert.same({ body = "after 400", reused = 1 }, bodies[2])
    assert.same({ err = "too many waiting connect operations" }, bodies[3])
  end)

  it("closes the socket of a request whose client left, and serves others meanwhile", function()
    local held = {}
    for i = 1, 20 do
      held[i] = helpers.connect(server.port)
      held[i]:send(helpers.build_request("GET", "/hold?port=" .. upstream.port))
    end
    assert.truthy(helpers.eventually(function()
      return get(server, "/counts").in_use == 20
    end))
    local started = helpers.now()
    assert.equal("hello world", fetch("path=/hello").body)
    assert.is_true(helpers.now() - started < 1)
    for i = 1, 20 do held[i]:close() end
    assert.truthy(helpers.eventually(function()
      return get(server, "/counts").in_use == 0
    end))
  end)
end)

describe("moonport.socket under --request-memory-limit", function()
  local upstream = support.serve(UPSTREAM)
  local server = support.serve(FIXTURE, { "--request-memory-limit", "128k" })

  it("refuses to buffer more than the limit, and the worker goes on", function()
    local r = get(server, "/fetch?path=/big/300000&port=" .. upstream.port)
    assert.equal("body", r.step)
    assert.equal("no memory", r.err)
    r = get(server, "/fetch?path=/big/1000&port=" .. upstream.port)
    assert.equal(1000, #r.body)
  end)
end)

describe("moonport.socket.udp", function()
  local process = require("spec.support.process")
  local udp_port
  -- memcached answers its UDP protocol: a real datagram peer.
  local memcached = support.program(function()
    udp_port = process.free_port()
    return { "memcached", "-l", "127.0.0.1", "-U", tostring(udp_port), "-p", "0", "-u", "root" }
  end, function(p)
    assert.truthy(helpers.eventually(function() return p:alive() end, 1))
  end)
  local server = support.serve(FIXTURE)

  it("sends a datagram and receives the answer", function()
    local r
    -- memcached may not be bound yet: a datagram before that is refused.
    helpers.eventually(function()
      r = get(server, "/udp?port=" .. udp_port)
      return r.text ~= nil
    end)
    assert.is_true(r.header)
    assert.matches("^VERSION %d", r.text)
  end)

  it("times a receive out when nothing answers", function()
    local r = get(server, "/udp?port=" .. udp_port .. "&command=delete+k+noreply&timeout=200")
    -- memcached answers nothing to a command sent with noreply.
    assert.same({ step = "receive", err = "timeout" }, r)
  end)

  it("answers connection refused from a closed port", function()
    local r = get(server, "/udp?port=" .. closed_port())
    assert.same({ step = "receive", err = "connection refused" }, r)
  end)

  it("sends to a Unix-domain datagram socket", function()
    local unix = require("socket.unix")
    local dir = helpers.scratch_dir()
    local path = dir .. "/log.sock"
    local listener = assert(unix.dgram())
    assert(listener:bind(path))
    listener:settimeout(5)
    local r = get(server, "/udp?noreply=1&command=hello&host=unix:" .. path)
    local got = listener:receive()
    listener:close()
    helpers.remove_dir(dir)
    assert.same({ sent = 1 }, r)
    assert.equal("\0\1\0\0\0\1\0\0hello\r\n", got)
  end)
end)

describe("moonport.socket at load time", function()
  it("raises a clear error", function()
    local dir = helpers.scratch_dir()
    local app = dir .. "/load.lua"
    helpers.write_file(app, [[
local moonport = require("moonport")
moonport.socket.tcp():connect("127.0.0.1", 1)
return moonport.app()
]])
    local code, _, err = require("spec.support.process").run({ "--check", app })
    helpers.remove_dir(dir)
    assert.equal(1, code)
    assert.matches("load.lua:2: moonport.socket: connect is only available while serving", err, 1, true)
  end)
end)
