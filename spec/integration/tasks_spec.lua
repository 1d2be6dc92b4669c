-- Timers, light threads and semaphores (lua/moonport/core/task.lua,
-- server/req/task.c, timer.c, park.c) over the real binary: when timers
-- fire and what they are told, threads running side by side and what
-- wait and kill answer, the request's end waiting for its threads or
-- killing them, nothing left behind when a client leaves, semaphores
-- waking a request from another, and timers across a reload and a stop.
-- Bounds are wide (a sanitizer build on a loaded machine): "no earlier
-- than asked and within a second after", "less than the sum of two
-- sleeps".
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local signal = require("posix.signal")

local FIXTURE = "spec/fixtures/tasks.lua"

local function get(port, path)
  local status, _, body = helpers.request(port, "GET", path)
  assert.equal(200, status, body)
  return body
end

-- What the fixture stored under key in moonport.shared ("nil" when
-- nothing).
local function stored(port, key)
  return get(port, "/shared/" .. key)
end

local function eventually_stored(port, key, want, timeout)
  return helpers.eventually(function()
    local v = stored(port, key)
    if want == nil then return v ~= "nil" and v end
    return v == want and v
  end, timeout or 10)
end

-- The line of the fixture where `text` is, for messages that name it.
local function fixture_line(text)
  local n = 0
  for line in io.lines(FIXTURE) do
    n = n + 1
    if line:find(text, 1, true) then return n end
  end
  error("no line with " .. text .. " in " .. FIXTURE)
end

describe("timers", function()
  local server = support.serve(FIXTURE, { "--stats" })

  it("run one made while the app loaded once the worker serves, with its arguments", function()
    assert.equal("false x 42 timer", eventually_stored(server.port, "load_timer"))
  end)

  it("fire no earlier than asked and within a second after, outside any request", function()
    local t0 = helpers.now()
    assert.equal("true nil", get(server.port, "/timer/at?key=at300&ms=300"))
    local t1 = helpers.now()
    local v = eventually_stored(server.port, "at300")
    assert.truthy(v, "the timer did not fire")
    local at, premature, phase = v:match("^(%S+) (%S+) (%S+)$")
    local fired = tonumber(at) / 1000
    assert.is_true(fired - t0 >= 0.3, ("fired %.3f s after the request began"):format(fired - t0))
    assert.is_true(fired - t1 <= 1.3, ("fired %.3f s after the request ended"):format(fired - t1))
    assert.equal("false", premature)
    assert.equal("timer", phase)
  end)

  it("repeat with every", function()
    assert.equal("ok", get(server.port, "/timer/every?key=every&ms=30"))
    assert.truthy(helpers.eventually(function()
      return (tonumber(stored(server.port, "every")) or 0) >= 3
    end, 10), "the recurring timer ran " .. stored(server.port, "every") .. " times")
  end)

  it("log a timer's error with its file and line, and the worker keeps serving", function()
    assert.equal("ok", get(server.port, "/timer/fail"))
    local want = ("timer failed: spec/fixtures/tasks.lua:%d: timer went wrong"):format(
      fixture_line('error("timer went wrong")'))
    assert.truthy(helpers.eventually(function()
      return server:stderr():find(want, 1, true)
    end, 10), server:stderr())
    assert.equal("hello", get(server.port, "/hello"))
  end)

  it("sleep without holding up requests, and count while pending and running", function()
    local before = tonumber(get(server.port, "/timer/count"))
    assert.equal("true nil", get(server.port, "/timer/at?key=later&ms=60000"))
    assert.equal(before + 1, tonumber(get(server.port, "/timer/count")))
    assert.equal("ok", get(server.port, "/timer/sleepy?key=sleepy&ms=1500"))
    assert.truthy(eventually_stored(server.port, "sleepy", "sleeping"))
    assert.equal(before + 2, tonumber(get(server.port, "/timer/count")))
    local t0 = helpers.now()
    assert.equal("hello", get(server.port, "/hello"))
    assert.is_true(helpers.now() - t0 < 1, "a request waited behind a sleeping timer")
    assert.equal("sleeping", stored(server.port, "sleepy"))
    -- Its light thread's phase is the timer's.
    assert.equal("done timer", eventually_stored(server.port, "sleepy", "done timer"))
    assert.truthy(helpers.eventually(function()
      return tonumber(get(server.port, "/timer/count")) == before + 1
    end))
  end)

  it("raise for bad arguments, naming the caller's line", function()
    local errs = helpers.json(get(server.port, "/timer/bad"))
    local line = fixture_line("timer.at(-1, print)")
    assert.equal(("spec/fixtures/tasks.lua:%d: moonport.timer.at: delay must be a non-negative "
      .. "number of milliseconds"):format(line), errs[1])
    assert.matches(":" .. line + 1 .. ": moonport.timer.at: delay must be", errs[2])
    assert.matches(":" .. line + 2 .. ": moonport.timer.at: delay must be", errs[3])
    assert.matches(":" .. line + 3 .. ": moonport.timer.at: fn must be a function", errs[4])
    assert.matches(":" .. line + 4 .. ": moonport.timer.every: interval must be more than 0", errs[5])
  end)
end)

describe("light threads", function()
  local server = support.serve(FIXTURE, { "--stats", "--write-high-water", "64k",
                                          "--request-memory-limit", "4m" })

  local function threads()
    return helpers.stats(server.port).worker.threads
  end

  it("run side by side, in the request's phase, with its req", function()
    local out = helpers.json(get(server.port, "/threads/concurrent?ms=500"))
    assert.is_true(out.ok)
    assert.equal("one", out.a)
    assert.equal("two", out.b)
    -- moonport.sleep counts from the loop's clock, read once per turn.
    assert.is_true(out.elapsed >= 450, tostring(out.elapsed))
    assert.is_true(out.elapsed < 1000, "two 500 ms sleeps took " .. out.elapsed .. " ms")
    assert.equal("content", out.phase)
    assert.is_true(out.same_req)
    assert.equal("nil already waited or killed", out.again)
  end)

  it("wait returns the thread that ended first", function()
    assert.same({ ok = true, first = "fast", ok2 = true, second = "slow" },
      helpers.json(get(server.port, "/threads/first")))
  end)

  it("wait returns a thread's error, which is logged with its line", function()
    local line = fixture_line('error("thread went wrong")')
    local msg = ("spec/fixtures/tasks.lua:%d: thread went wrong"):format(line)
    assert.same({ ok = false, err = msg }, helpers.json(get(server.port, "/threads/error")))
    assert.truthy(server:stderr():find("GET /threads/error: light thread failed: " .. msg, 1, true),
      server:stderr())
  end)

  it("a thread that never waits has ended when spawn returns", function()
    assert.same({ ok = true, sum = 5 }, helpers.json(get(server.port, "/threads/sync")))
  end)

  it("kill ends a thread for good, and answers as OpenResty's", function()
    local out = helpers.json(get(server.port, "/threads/kill?key=killed"))
    assert.same({ kill = "true", again = "nil already waited or killed",
                  wait = "nil already waited or killed", zombie = "nil already terminated",
                  not_parent = "nil killer not parent", parent = "true" }, out)
    helpers.nap(0.6) -- past the killed thread's 300 ms sleep
    assert.equal("killed", stored(server.port, "killed"))
    assert.equal(0, threads())
  end)

  it("the request ends once its threads have, though the handler returned", function()
    -- The next request on the connection is served only once the first is
    -- over: by then its second thread has ended.
    local conn = helpers.connect(server.port)
    support.defer(function() conn:close() end)
    conn:send(helpers.build_request("GET", "/threads/later?key=later_threads")
      .. helpers.build_request("GET", "/shared/later_threads"))
    assert.equal("from the thread", conn:read_response().body)
    assert.equal("second thread done", conn:read_response().body)
  end)

  it("write the response from a thread, with the handler's req.ctx", function()
    assert.equal("piece1;piece2;piece3;", get(server.port, "/threads/stream"))
  end)

  it("send what a thread writes as it writes it", function()
    -- The thread writes a piece every 2 s, the second after its first
    -- wait: it goes out then, not when the thread ends 2 s later.
    local conn = helpers.connect(server.port)
    support.defer(function() conn:close() end)
    local t0 = helpers.now()
    conn:send(helpers.build_request("GET", "/threads/stream?gap=2000"))
    local deadline = t0 + 3.5
    while not conn.buf:find("piece2;", 1, true) and conn:fill(deadline) do end
    assert.truthy(conn.buf:find("piece2;", 1, true), "the second piece waited: " .. conn.buf)
    assert.falsy(conn.buf:find("piece3;", 1, true))
    assert.equal("piece1;piece2;piece3;", conn:read_response({ timeout = 10 }).body)
  end)

  it("read the body as it arrives and wait at the high-water mark", function()
    local conn = helpers.connect(server.port)
    support.defer(function() conn:close() end)
    conn:nodelay()
    conn:send("POST /threads/io HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
    for _ = 1, 5 do
      conn:send(("%x\r\n%s\r\n"):format(1000, ("b"):rep(1000)))
      helpers.nap(0.02)
    end
    conn:send("0\r\n\r\n")
    local body = conn:read_response({ timeout = 10 }).body
    assert.equal(32 * 65536 + #"read 5000", #body)
    assert.equal("read 5000", body:sub(-9))
  end)

  it("a thread past --request-memory-limit fails alone, and its memory comes back", function()
    local function heap() return helpers.stats(server.port).worker.lua_heap_bytes end
    assert.equal('[false,"aborted"]', get(server.port, "/threads/memory"))
    local after_one = heap()
    for _ = 1, 3 do assert.equal('[false,"aborted"]', get(server.port, "/threads/memory")) end
    assert.is_true(heap() < after_one + 1024 * 1024, ("heap %d after one, %d after four"):format(
      after_one, heap()))
    assert.truthy(server:stderr():find("GET /threads/memory: light thread failed: request memory "
      .. "limit exceeded", 1, true), server:stderr())
    assert.equal(0, threads())
  end)

  it("spawn one inside another a thousand deep", function()
    assert.equal("1000", get(server.port, "/threads/deep?n=1000"))
    assert.equal(0, threads())
  end)

  it("spawn a thousand at once", function()
    assert.equal("500500", get(server.port, "/threads/many?n=1000"))
    assert.equal(0, threads())
  end)

  it("are killed when the handler fails", function()
    local status = helpers.request(server.port, "GET", "/threads/fail?key=failed")
    assert.equal(500, status)
    assert.equal(0, threads())
    helpers.nap(0.6) -- past the thread's 300 ms sleep
    assert.equal("nil", stored(server.port, "failed"))
  end)

  it("see the phase and request of their handler", function()
    assert.same({ handler = "content", thread = "content", same = true },
      helpers.json(get(server.port, "/phase")))
  end)

  it("are told when the client leaves, and nothing is left behind", function()
    local conn = helpers.connect(server.port)
    conn:send(helpers.build_request("GET", "/threads/leave?key=left"))
    assert.truthy(eventually_stored(server.port, "left", "waiting"))
    assert.equal(2, threads())
    conn:close()
    assert.equal("closed", eventually_stored(server.port, "left1", "closed"))
    assert.equal("closed", eventually_stored(server.port, "left2", "closed"))
    assert.truthy(helpers.eventually(function() return threads() == 0 end, 10))
  end)
end)

describe("light threads of a request stopped after its client left", function()
  local server = support.serve(FIXTURE, { "--stats", "--shutdown-timeout", "1" })

  it("are killed with it", function()
    local conn = helpers.connect(server.port)
    conn:send(helpers.build_request("GET", "/threads/leave?key=stubborn&stubborn=1"))
    assert.truthy(eventually_stored(server.port, "stubborn", "waiting"))
    conn:close()
    assert.truthy(helpers.eventually(function()
      return server:stderr():find("GET /threads/leave: handler stopped", 1, true)
    end, 10), server:stderr())
    assert.equal(0, helpers.stats(server.port).worker.threads)
    assert.equal("hello", get(server.port, "/hello"))
  end)
end)

describe("semaphores", function()
  local server = support.serve(FIXTURE)

  it("wake a request waiting on one from another request (long polling)", function()
    local poll = helpers.connect(server.port)
    support.defer(function() poll:close() end)
    poll:send(helpers.build_request("GET", "/sem/wait?ms=10000"))
    assert.truthy(helpers.eventually(function() return get(server.port, "/sem/count") == "-1" end))
    assert.is_false(poll:fill(helpers.now() + 0.2), "answered before the post: " .. poll.buf)
    local t0 = helpers.now()
    assert.equal("0", get(server.port, "/sem/post"))
    assert.equal("true nil", poll:read_response().body)
    assert.is_true(helpers.now() - t0 < 1)
  end)

  it("time out no earlier than asked", function()
    local t0 = helpers.now()
    assert.equal("nil timeout", get(server.port, "/sem/wait?ms=300"))
    local took = helpers.now() - t0
    assert.is_true(took >= 0.3 and took < 1.3, tostring(took))
    assert.equal("0", get(server.port, "/sem/count"))
  end)

  it("give a waiter whose client left nothing, and lose no post to it", function()
    local conn = helpers.connect(server.port)
    conn:send(helpers.build_request("GET", "/sem/wait?ms=60000"))
    assert.truthy(helpers.eventually(function() return get(server.port, "/sem/count") == "-1" end))
    conn:close()
    assert.truthy(helpers.eventually(function() return get(server.port, "/sem/count") == "0" end))
    assert.equal("1", get(server.port, "/sem/post"))
    assert.equal("true nil", get(server.port, "/sem/wait?ms=100"))
  end)

  it("take a free resource at once, and wake a thread of the same request", function()
    assert.same({ "true", "timeout", "count -1", "thread true", "nil timeout true" },
      helpers.json(get(server.port, "/sem/local")))
  end)
end)

describe("recurring timers across a reload", function()
  local dir, app
  setup(function()
    dir = helpers.scratch_dir()
    app = dir .. "/app.lua"
  end)
  teardown(function() helpers.remove_dir(dir) end)

  local function source(version)
    return ([[
local moonport = require("moonport")
local shared = moonport.shared
local app = moonport.app()
moonport.timer.every(30, function(premature)
  if premature then shared:set("premature%d", true) return end
  shared:incr("ticks%d")
end)
app:get("/n/:key", function(req, res) res:send(tostring(shared:get(req.params.key))) end)
return app
]]):format(version, version)
  end

  it("run once more with premature true when the code is replaced, and stop", function()
    helpers.write_file(app, source(1))
    local server = support.start(app, { "--watch-delay", "0.01" })
    local function n(key) return get(server.port, "/n/" .. key) end
    assert.truthy(helpers.eventually(function() return (tonumber(n("ticks1")) or 0) >= 2 end))
    helpers.write_by_rename(app, source(2))
    assert.truthy(helpers.eventually(function() return n("premature1") == "true" end, 10),
      server:stderr())
    assert.truthy(helpers.eventually(function() return (tonumber(n("ticks2")) or 0) >= 2 end))
    local ticks = n("ticks1")
    helpers.nap(0.3)
    assert.equal(ticks, n("ticks1"))
    assert.equal("nil", n("premature2"))
  end)
end)

describe("timers when the worker stops", function()
  local dir, app, out
  setup(function()
    dir = helpers.scratch_dir()
    app = dir .. "/app.lua"
    out = dir .. "/out"
  end)
  teardown(function() helpers.remove_dir(dir) end)

  local function read_out()
    local f = io.open(out)
    if not f then return nil end
    local text = f:read("*a")
    f:close()
    return text
  end

  -- An app whose timer code is `body`, with note(text) appending to the
  -- out file.
  local function start(body, args)
    os.remove(out)
    helpers.write_file(app, ([[
local moonport = require("moonport")
local function note(text)
  local f = assert(io.open(%q, "a"))
  f:write(text, "\n")
  f:close()
end
local app = moonport.app()
%s
app:get("/", function(req, res) res:send("ok") end)
return app
]]):format(out, body))
    return support.start(app, args)
  end

  it("fire at once with premature true, and new ones are refused", function()
    local server = start([[
moonport.timer.at(60000, function(premature)
  note("premature " .. tostring(premature))
  note("again " .. table.concat({ tostring(moonport.timer.at(0, print)) ,
    select(2, moonport.timer.at(0, print)) }, " "))
end)
]])
    local t0 = helpers.now()
    server:stop()
    assert.is_true(helpers.now() - t0 < 5)
    assert.equal("premature true\nagain nil process exiting\n", read_out())
  end)

  it("hold the stop until a running one ends", function()
    local server = start([[
moonport.timer.at(0, function(premature)
  note("started")
  moonport.sleep(700)
  note("finished " .. tostring(premature))
end)
]])
    assert.truthy(helpers.eventually(function() return read_out() end))
    server:stop()
    assert.equal("started\nfinished false\n", read_out())
  end)

  it("are stopped --shutdown-timeout after the stop began", function()
    local server = start([[
moonport.timer.at(0, function()
  note("started")
  while true do moonport.sleep(100) end
end)
]], { "--shutdown-timeout", "1" })
    assert.truthy(helpers.eventually(function() return read_out() end))
    local t0 = helpers.now()
    server:stop()
    assert.is_true(helpers.now() - t0 < 8)
    assert.truthy(server:stderr():find("shutdown: 0 connections and 1 timer still busy", 1, true),
      server:stderr())
  end)
end)
