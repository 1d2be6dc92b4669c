-- Mock state across instances (--mock-store): two moonport mocks on two
-- ports share one real redis-server (started by this spec on a free port,
-- with a Unix socket beside it), and behave as one mock: admin mappings,
-- scenario states, the journal and json-db data are the same through
-- either. Redis stopped mid-run: admin calls answer 503, stubs from files
-- still answer, journal entries not stored are logged; Redis back, all of
-- it resumes.
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local process = require("spec.support.process")
local cjson = require("cjson")
local socket = require("socket")

local dir = helpers.scratch_dir()
local redis_sock = dir .. "/redis.sock"
local redis_port = process.free_port()
local redis_argv = { "redis-server", "--port", tostring(redis_port), "--bind", "127.0.0.1",
                     "--unixsocket", redis_sock, "--save", "", "--appendonly", "no" }

for _, d in ipairs({ "/mock", "/mock/mappings", "/a", "/b" }) do
  assert(require("posix.sys.stat").mkdir(dir .. d, 493))
end
-- The mock directory both instances serve, and a json-db file for each
-- (the same document, in two places).
helpers.write_file(dir .. "/mock/mappings/file.json", cjson.encode({
  request = { method = "GET", url = "/from-file" },
  response = { status = 200, body = "from a file" },
}))
local db = cjson.encode({ posts = { { id = 1, title = "first" } }, profile = { name = "typicode" } })
helpers.write_file(dir .. "/a/db.json", db)
helpers.write_file(dir .. "/b/db.json", db)

local redis
local function start_redis()
  redis = process.spawn(redis_argv)
  process.wait_port(redis_port, 10, redis)
end
local function stop_redis()
  if redis then redis:stop() end
  redis = nil
end

-- One command to redis from the spec (inline protocol): the reply's first
-- line.
local function redis_command(line)
  local c = assert(socket.connect("127.0.0.1", redis_port))
  c:settimeout(5)
  assert(c:send(line .. "\r\n"))
  local first = assert(c:receive("*l"))
  local n = tonumber(first:match("^%$(%d+)"))
  local body
  if n then body = assert(c:receive(n + 2)):sub(1, n) end
  c:close()
  return first, body
end

local function call(port, method, path, value)
  local body = value
  if type(value) == "table" then body = cjson.encode(value) end
  local status, headers, text = helpers.request(port, method, path,
    body and { ["Content-Type"] = "application/json" } or nil, body)
  return status, text, headers
end

local function mapping(url, body, extra)
  local m = { request = { method = "GET", url = url }, response = { status = 200, body = body } }
  for k, v in pairs(extra or {}) do m[k] = v end
  return m
end

describe("mock state across instances (--mock-store)", function()
  setup(start_redis)

  -- A over TCP, B over the Unix socket, each with two workers.
  local a = support.serve(dir .. "/mock", { "--workers", "2", "--json-db", dir .. "/a/db.json",
    "--mock-store", "redis://127.0.0.1:" .. redis_port .. "/0?timeout=500" }, { mock = true })
  local b = support.serve(dir .. "/mock", { "--workers", "2", "--json-db", dir .. "/b/db.json",
    "--mock-store", "unix:" .. redis_sock .. "?db=0&timeout=500" }, { mock = true })
  -- Registered after the servers' own teardowns, so it runs after them:
  -- the mocks stop while their store and directory are still there.
  teardown(function()
    stop_redis()
    helpers.remove_dir(dir)
  end)

  before_each(function()
    assert.equal(200, (call(a.port, "POST", "/__admin/reset")))
  end)

  it("serves through one instance a mapping added through the other", function()
    assert.equal(201, (call(a.port, "POST", "/__admin/mappings", mapping("/added", "added through A"))))
    for _ = 1, 4 do -- both workers of B
      local status, body = call(b.port, "GET", "/added")
      assert.equal(200, status)
      assert.equal("added through A", body)
    end
    local _, list = call(b.port, "GET", "/__admin/mappings")
    assert.equal(2, helpers.json(list).meta.total) -- the file's and the added one
    -- Removed through B: gone from A.
    local id = helpers.json(select(2, call(a.port, "GET", "/__admin/mappings"))).mappings[1].id
    assert.equal(200, (call(b.port, "DELETE", "/__admin/mappings/" .. id)))
    assert.equal(404, (call(a.port, "GET", "/added")))
    -- Redis holds it under the documented keys.
    assert.equal(":0", (redis_command("HEXISTS moonport:mock:state mapping:" .. id)))
  end)

  it("moves a scenario through one instance and shows it through the other", function()
    assert.equal(201, (call(a.port, "POST", "/__admin/mappings", mapping("/cart", "empty",
      { scenarioName = "cart", requiredScenarioState = "Started", newScenarioState = "Full" }))))
    assert.equal(201, (call(a.port, "POST", "/__admin/mappings", mapping("/cart", "full",
      { scenarioName = "cart", requiredScenarioState = "Full" }))))
    assert.equal("empty", select(2, call(a.port, "GET", "/cart")))
    assert.equal("full", select(2, call(b.port, "GET", "/cart")))
    local _, text = call(b.port, "GET", "/__admin/scenarios")
    assert.equal("Full", helpers.json(text).scenarios[1].state)
    -- Set through B's admin API, served so by A.
    assert.equal(200, (call(b.port, "PUT", "/__admin/scenarios/cart/state", { state = "Started" })))
    assert.equal("empty", select(2, call(a.port, "GET", "/cart")))
    assert.equal(200, (call(a.port, "POST", "/__admin/scenarios/reset")))
    assert.equal("empty", select(2, call(b.port, "GET", "/cart")))
  end)

  it("keeps one journal of both instances: list, count, find, reset", function()
    call(a.port, "GET", "/from-file?by=a")
    call(b.port, "GET", "/from-file?by=b")
    call(b.port, "GET", "/nothing-here")
    for _, port in ipairs({ a.port, b.port }) do
      local _, text = call(port, "GET", "/__admin/requests")
      local got = helpers.json(text)
      assert.equal(3, got.meta.total)
      -- Newest first, ids unique across the instances.
      assert.same({ "/nothing-here", "/from-file?by=b", "/from-file?by=a" },
        { got.requests[1].request.url, got.requests[2].request.url, got.requests[3].request.url })
      assert.are_not.equal(got.requests[1].id, got.requests[2].id)
      local _, count = call(port, "POST", "/__admin/requests/count", { urlPath = "/from-file" })
      assert.equal(2, helpers.json(count).count)
      local _, found = call(port, "POST", "/__admin/requests/find", { url = "/from-file?by=b" })
      assert.equal(1, #helpers.json(found).requests)
      local _, unmatched = call(port, "GET", "/__admin/requests/unmatched")
      assert.equal("/nothing-here", helpers.json(unmatched).requests[1].url)
    end
    assert.equal(200, (call(b.port, "DELETE", "/__admin/requests")))
    local _, text = call(a.port, "GET", "/__admin/requests")
    assert.equal(0, helpers.json(text).meta.total)
  end)

  it("reads through one instance what json-db wrote through the other", function()
    local status, text = call(a.port, "POST", "/posts", { title = "through A" })
    assert.equal(201, status, text)
    assert.equal(2, helpers.json(text).id)
    local _, list = call(b.port, "GET", "/posts")
    assert.same({ "first", "through A" }, { helpers.json(list)[1].title, helpers.json(list)[2].title })
    assert.equal(200, (call(b.port, "PATCH", "/posts/2", { title = "changed through B" })))
    assert.equal("changed through B", helpers.json(select(2, call(a.port, "GET", "/posts/2"))).title)
    -- The writing instance's file has each of its writes.
    assert.truthy(helpers.read_file(dir .. "/a/db.json"):find("through A", 1, true))
    assert.truthy(helpers.read_file(dir .. "/b/db.json"):find("changed through B", 1, true))
    assert.equal(200, (call(a.port, "DELETE", "/posts/2")))
    assert.equal(1, #helpers.json(select(2, call(b.port, "GET", "/posts"))))
  end)

  it("gives each step of a scenario to one request when both instances race", function()
    local steps = 10
    for i = 1, steps do
      assert.equal(201, (call(a.port, "POST", "/__admin/mappings", mapping("/race", "step " .. i, {
        scenarioName = "race", requiredScenarioState = i == 1 and "Started" or ("s" .. i),
        newScenarioState = "s" .. (i + 1) }))))
    end
    -- 24 requests at once, half to each instance, on connections of their own.
    local conns = {}
    for i = 1, 24 do conns[i] = helpers.connect(i % 2 == 0 and a.port or b.port) end
    local request = helpers.build_request("GET", "/race")
    for i = 1, #conns do conns[i]:send(request) end
    local seen, unmatched = {}, 0
    for i = 1, #conns do
      local resp = conns[i]:read_response()
      conns[i]:close()
      if resp.status == 404 then
        unmatched = unmatched + 1
      else
        assert.equal(200, resp.status)
        assert.is_nil(seen[resp.body], resp.body .. " answered twice")
        seen[resp.body] = true
      end
    end
    for i = 1, steps do assert.truthy(seen["step " .. i], "step " .. i .. " never answered") end
    assert.equal(24 - steps, unmatched)
  end)

  it("answers 503 to admin calls without Redis, keeps serving stubs, and resumes when it is back", function()
    assert.equal(201, (call(a.port, "POST", "/__admin/mappings", mapping("/kept", "kept"))))
    assert.equal("kept", select(2, call(b.port, "GET", "/kept")))
    stop_redis()
    -- Admin calls: 503 with the reason.
    local status, text, headers = call(a.port, "GET", "/__admin/mappings")
    assert.equal(503, status)
    assert.equal("1", headers["retry-after"])
    local err = helpers.json(text).errors[1]
    assert.equal("Mock store unavailable", err.title)
    assert.truthy(err.detail:find("cannot be reached", 1, true), err.detail)
    assert.equal(503, (call(b.port, "POST", "/__admin/mappings", mapping("/late", "late"))))
    assert.equal(503, (call(b.port, "GET", "/__admin/requests")))
    -- json-db: 503 too.
    assert.equal(503, (call(a.port, "GET", "/posts")))
    -- Stubs still answer: the files', and those the workers had loaded;
    -- an unmatched request is still a 404.
    for _ = 1, 4 do
      assert.equal("from a file", select(2, call(a.port, "GET", "/from-file")))
      assert.equal("from a file", select(2, call(b.port, "GET", "/from-file")))
    end
    assert.equal(404, (call(b.port, "GET", "/missing")))
    -- The journal entries not stored are logged, with their count.
    assert.truthy(helpers.eventually(function()
      return a:stderr():find("a journal entry was not stored", 1, true)
    end))

    start_redis() -- empty: what was stored is gone with the old server
    -- Each worker finds it again on its own, answering 503 with
    -- Retry-After until it has.
    assert.truthy(helpers.eventually(function()
      return call(a.port, "GET", "/__admin/mappings") == 200
    end, 5))
    assert.truthy(helpers.eventually(function()
      return call(b.port, "POST", "/__admin/mappings", mapping("/again", "again")) == 201
    end, 5))
    assert.truthy(helpers.eventually(function()
      return select(2, call(a.port, "GET", "/again")) == "again"
    end, 5))
    call(b.port, "GET", "/from-file")
    local _, list = call(a.port, "GET", "/__admin/requests")
    assert.is_true(helpers.json(list).meta.total >= 1)
    assert.equal(200, (call(b.port, "GET", "/posts")))
    assert.truthy(helpers.eventually(function()
      -- Said by the workers that saw it gone, once each serves again:
      -- requests keep coming until one of them has (which worker takes a
      -- connection is the kernel's choice).
      call(a.port, "GET", "/from-file")
      call(b.port, "GET", "/from-file")
      return (a:stderr() .. b:stderr()):find("answers again; journal entries not stored meanwhile: %d+")
    end, 5), a:stderr() .. b:stderr())
  end)
end)

describe("mock.app{store = URL} in a script", function()
  local port = process.free_port()
  local pass_redis
  setup(function()
    pass_redis = process.spawn({ "redis-server", "--port", tostring(port), "--bind", "127.0.0.1",
      "--requirepass", "s3cret", "--save", "", "--appendonly", "no" })
    process.wait_port(port, 10, pass_redis)
  end)
  teardown(function() if pass_redis then pass_redis:stop() end end)

  it("connects with a password to a database of its choice, under its prefix", function()
    local script = dir .. "-script.lua"
    helpers.write_file(script, ([[
      local mock = require("moonport.mock")
      local app = mock.app{ store = "redis://:s3cret@127.0.0.1:%d/3?prefix=team1:" }
      app:stub{ request = { url = "/lua" }, response = { body = "from Lua" } }
      return app
    ]]):format(port))
    support.defer(function() os.remove(script) end)
    local one = support.start(script)
    local two = support.start(script)
    assert.equal(201, (call(one.port, "POST", "/__admin/mappings", mapping("/shared", "shared"))))
    assert.equal("shared", select(2, call(two.port, "GET", "/shared")))
    assert.equal("from Lua", select(2, call(two.port, "GET", "/lua")))
    -- In database 3, under the prefix given.
    local c = assert(socket.connect("127.0.0.1", port))
    c:settimeout(5)
    assert(c:send("AUTH s3cret\r\nSELECT 3\r\nEXISTS team1:state\r\n"))
    assert.equal("+OK", c:receive("*l"))
    assert.equal("+OK", c:receive("*l"))
    assert.equal(":1", c:receive("*l"))
    c:close()
  end)

  it("refuses a URL it cannot use, naming it", function()
    local script = dir .. "-bad.lua"
    helpers.write_file(script, [[
      return require("moonport.mock").app{ store = "http://127.0.0.1:1" }
    ]])
    support.defer(function() os.remove(script) end)
    local code, _, err = process.command({ process.bin, "--check", script })
    assert.are_not.equal(0, code)
    assert.truthy(err:find("mock store http://127.0.0.1:1: expected redis://", 1, true), err)
  end)
end)
