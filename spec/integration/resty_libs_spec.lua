-- Debian's OpenResty client libraries run unmodified inside moonport
-- (through require("moonport.ngx")) against the real servers: a
-- redis-server (TCP and a Unix socket), a memcached and a WebSocket echo
-- server (spec/support/ws_echo.py, Debian's python3-websockets), each
-- started on a free loopback port by this spec. The fixture is
-- spec/fixtures/resty.lua; spec/support/fetch_resty.sh unpacks the
-- libraries (the CTest fixture setup.resty_libs).
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local process = require("spec.support.process")
local socket = require("socket")

local FIXTURE = "spec/fixtures/resty.lua"

local dir = helpers.scratch_dir()
local redis_sock = dir .. "/redis.sock"
local redis_port, memcached_port, ws_port

local redis_server = support.program(function()
  redis_port = process.free_port()
  return { "redis-server", "--port", tostring(redis_port), "--bind", "127.0.0.1",
           "--unixsocket", redis_sock, "--save", "", "--appendonly", "no" }
end, function(p) process.wait_port(redis_port, 10, p) end)

local memcached_server = support.program(function()
  memcached_port = process.free_port()
  return { "memcached", "-l", "127.0.0.1", "-p", tostring(memcached_port), "-U", "0",
           "-u", "root" }
end, function(p) process.wait_port(memcached_port, 10, p) end)

local ws_server = support.program(function()
  ws_port = process.free_port()
  -- Debian's python3, which python3-websockets is installed for.
  return { "/usr/bin/python3", "spec/support/ws_echo.py", tostring(ws_port) }
end, function(p) process.wait_port(ws_port, 10, p) end)

-- One command to redis from the spec itself (inline protocol); returns
-- the reply's first line and the rest.
local function redis_command(line)
  local c = assert(socket.connect("127.0.0.1", redis_port))
  c:settimeout(5)
  assert(c:send(line .. "\r\n"))
  local first = assert(c:receive("*l"))
  local body = ""
  local n = tonumber(first:match("^%$(%d+)"))
  if n then body = assert(c:receive(n + 2)) end
  c:close()
  return first, body
end

-- What redis says about its clients: how many are connected over TCP now
-- (the spec's own connection left out), and how many connections it has
-- accepted in all.
local function redis_clients()
  local _, list = redis_command("CLIENT LIST")
  local now = 0
  for line in list:gmatch("[^\n]+") do
    if line:find(" addr=127%.0%.0%.1:") and not line:find(" cmd=client") then now = now + 1 end
  end
  local _, info = redis_command("INFO stats")
  -- Not counting the two connections this function made.
  return now, tonumber(info:match("total_connections_received:(%d+)")) - 2
end

describe("OpenResty libraries from Debian, unmodified", function()
  local server = support.serve(FIXTURE)

  teardown(function() helpers.remove_dir(dir) end)

  local function get(target)
    local status, _, body = helpers.request(server.port, "GET", target)
    assert.equal(200, status, body)
    return helpers.json(body)
  end

  describe("lua-nginx-redis", function()
    it("sets and gets a key over TCP and goes back to the pool", function()
      local r = get("/redis/setget?key=a&value=1&port=" .. redis_port)
      assert.same({ set = "OK", get = "1", missing = "null", reused = 0, keepalive = 1 }, r)
      r = get("/redis/setget?key=b&value=2&port=" .. redis_port)
      assert.equal("2", r.get)
      assert.equal(1, r.reused)
    end)

    it("talks over a Unix socket", function()
      local r = get("/redis/setget?key=u&value=unix&path=" .. redis_sock)
      assert.equal("unix", r.get)
    end)

    it("runs a pipeline of ten commands", function()
      local r = get("/redis/pipeline?port=" .. redis_port)
      assert.same({ "OK", "OK", "OK", "OK", "OK", "1", "4", "9", "16", "25" }, r.results)
    end)

    it("times out a subscription that hears nothing", function()
      local started = helpers.now()
      local r = get("/redis/subscribe?channel=quiet&timeout=200&port=" .. redis_port)
      local elapsed = helpers.now() - started
      assert.same({ "subscribe", "quiet", 1 }, r.subscribed)
      assert.equal("timeout", r.err)
      assert.is_true(elapsed >= 0.2 and elapsed < 1.2, "took " .. elapsed .. " s")
    end)

    it("receives a message published while it waits", function()
      local conn = helpers.connect(server.port)
      conn:send(helpers.build_request("GET", "/redis/subscribe?channel=news&timeout=5000&port=" .. redis_port))
      -- Publish until the subscriber is there to hear it.
      assert.truthy(helpers.eventually(function()
        return get("/redis/publish?channel=news&message=hi&port=" .. redis_port).receivers == 1
      end))
      local r = helpers.json(conn:read_response().body)
      conn:close()
      assert.same({ "message", "news", "hi" }, r.message)
    end)

    it("runs two commands at once in light threads (ngx.thread)", function()
      redis_command("SET t1 one")
      redis_command("SET t2 two")
      assert.same({ a = "one", b = "two" }, get("/redis/threads?port=" .. redis_port))
    end)

    it("talks to redis from a timer (ngx.timer.at)", function()
      assert.same({ ok = true }, get("/redis/timer?key=from_timer&port=" .. redis_port))
      assert.truthy(helpers.eventually(function()
        local first, body = redis_command("GET from_timer")
        return first == "$5" and body == "timer\r\n"
      end))
    end)

    it("answers connection refused when redis is not there", function()
      local r = get("/redis/setget?key=a&value=1&port=" .. process.free_port())
      assert.same({ err = "connection refused" }, r)
    end)

    it("serves 10,000 requests over 32 connections with at most 32 connections to redis", function()
      redis_command("SET k v")
      local _, accepted_before = redis_clients()
      accepted_before = accepted_before + 2 -- redis_clients' own, made since
      local conns = {}
      for i = 1, 32 do conns[i] = helpers.connect(server.port) end
      local request = helpers.build_request("GET", "/redis/get?key=k&port=" .. redis_port)
      local done = 0
      while done < 10000 do
        for i = 1, 32 do conns[i]:send(request) end
        for i = 1, 32 do
          local resp = conns[i]:read_response()
          assert.equal(200, resp.status)
          assert.equal("v", resp.body)
        end
        done = done + 32
      end
      for i = 1, 32 do conns[i]:close() end
      local now, accepted_after = redis_clients()
      assert.is_true(now <= 32, now .. " connections to redis")
      assert.is_true(accepted_after - accepted_before <= 32,
        (accepted_after - accepted_before) .. " connections opened to redis")
    end)
  end)

  describe("lua-nginx-memcached", function()
    it("sets, gets, increments and deletes, and reuses its connection", function()
      local r = get("/memcached?key=m&value=hello&port=" .. memcached_port)
      assert.same({ set = 1, get = "hello", counter_set = 1, incr = "15", deleted = 1,
                    after = "nil", reused = 0 }, r)
      r = get("/memcached?key=m2&value=again&port=" .. memcached_port)
      assert.equal("again", r.get)
      assert.equal(1, r.reused)
    end)

    it("serves many requests at once", function()
      local conns = {}
      for i = 1, 20 do
        conns[i] = helpers.connect(server.port)
        conns[i]:send(helpers.build_request("GET", "/memcached?key=c" .. i .. "&value=v" .. i
          .. "&port=" .. memcached_port))
      end
      for i = 1, 20 do
        local r = helpers.json(conns[i]:read_response().body)
        conns[i]:close()
        assert.equal("v" .. i, r.get)
      end
    end)
  end)

  describe("lua-nginx-websocket", function()
    it("connects, sends and receives text and binary messages, pings and closes", function()
      local r = get("/websocket?text=hello&port=" .. ws_port)
      assert.same({ text = "hello", text_type = "text", binary_len = 100000, binary_type = "binary",
                    binary_same = true, pong = "p", pong_type = "pong", close_type = "close",
                    close_code = 1000 }, r)
    end)

    it("serves many clients at once", function()
      local conns = {}
      for i = 1, 10 do
        conns[i] = helpers.connect(server.port)
        conns[i]:send(helpers.build_request("GET", "/websocket?text=t" .. i .. "&port=" .. ws_port))
      end
      for i = 1, 10 do
        local r = helpers.json(conns[i]:read_response().body)
        conns[i]:close()
        assert.equal("t" .. i, r.text)
      end
    end)
  end)

  describe("scripts/cache.lua", function()
    local stdlib = require("posix.stdlib")
    -- The example reads REDIS_PORT when it loads; set before it starts.
    setup(function() stdlib.setenv("REDIS_PORT", tostring(redis_port)) end)
    local cache = support.serve("scripts/cache.lua")
    teardown(function() stdlib.setenv("REDIS_PORT", nil) end)

    it("loads an item once, then answers it from redis", function()
      local status, headers, body = helpers.request(cache.port, "GET", "/items/42")
      assert.equal(200, status)
      assert.equal("miss", headers["x-cache"])
      local first = helpers.json(body)
      assert.equal("42", first.id)
      status, headers, body = helpers.request(cache.port, "GET", "/items/42")
      assert.equal("hit", headers["x-cache"])
      assert.same(first, helpers.json(body))
      local _, cached = redis_command("GET item:42")
      assert.same(first, helpers.json(cached:sub(1, -3)))
    end)

    it("serves from the backend when redis is down", function()
      stdlib.setenv("REDIS_PORT", tostring(process.free_port()))
      local down = support.start("scripts/cache.lua")
      stdlib.setenv("REDIS_PORT", tostring(redis_port))
      local status, headers, body = helpers.request(down.port, "GET", "/items/7")
      assert.equal(200, status)
      assert.equal("bypass", headers["x-cache"])
      assert.equal("item 7", helpers.json(body).name)
      local _, _, health = helpers.request(down.port, "GET", "/health")
      assert.equal("down: connection refused", helpers.json(health).redis)
    end)
  end)
end)
