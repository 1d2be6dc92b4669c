-- moonport.pg against a real PostgreSQL (spec/support/pg.lua): types,
-- parameters, many requests over one pipelined connection, batches,
-- transactions, errors, timeouts, a server killed and restarted, results
-- past the memory limit, and scripts/todo_pg.lua.
local helpers = require("spec.helpers")
local pgsupport = require("spec.support.pg")

local FIXTURE = "spec/fixtures/pg_app.lua"

describe("moonport.pg", function()
  local cluster = pgsupport.cluster({ fixtures = { pgsupport.TFB, pgsupport.SCHEMA } })
  setup(function() cluster:psql("CREATE TABLE kv (k text PRIMARY KEY, v text)") end)
  local function serve(args)
    local all = { "--pg", cluster.conninfo }
    for _, a in ipairs(args or {}) do all[#all + 1] = a end
    return all
  end

  local app
  setup(function()
    app = require("spec.support.process").start(FIXTURE, serve({ "--request-memory-limit", "4m" }))
  end)
  teardown(function() if app then app:stop() end end)

  local function get(target, method, body)
    local status, headers, resp = helpers.request(app.port, method or "GET", target, nil, body)
    return status, helpers.json(resp), headers
  end

  it("reads every type as the README says", function()
    local _, row = get("/types/ordinary")
    assert.same({
      id = 1, label = "ordinary", v_int2 = 42, v_int4 = 100000, v_int8 = 5000000000,
      v_float4 = 1.5, v_float8 = 2.25, v_numeric = "3.14159", v_bool = true,
      v_text = "hello", v_varchar = "world",
      v_json = { a = 1, b = { true, helpers.json("null"), "x" } },
      v_jsonb = { a = 1, b = { true, helpers.json("null"), "x" } },
      v_bytea = "\0\1\2\3\255\254",
      v_timestamp = "2024-02-29T13:45:30.123456", v_timestamptz = "2024-02-29T13:45:30.123456+00",
      v_date = "2024-02-29", v_uuid = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
      v_int4_array = { 1, 2, 3 }, v_text_array = { "a", "b c" },
    }, row)
  end)

  it("reads NULL as null and int8 past 2^53 as a string", function()
    local _, row = get("/types/nulls")
    local null = helpers.json("null")
    assert.equal(null, row.v_int4)
    assert.equal(null, row.v_jsonb)
    assert.equal(null, row.v_text_array)
    local _, big = get("/types/beyond%202%5E53")
    assert.equal("9007199254740993", big.v_int8)
  end)

  it("passes parameters with quotes and Unicode through unchanged, and refuses NUL bytes", function()
    local text = "it's \"quoted\" \\ ; DROP TABLE world; -- é 日本 🎉"
    local _, row = get("/echo", "POST", text)
    assert.equal(text, row.v)
    local status = helpers.request(app.port, "POST", "/echo", nil, "a\0b")
    assert.equal(500, status)
    local _, world = get("/world/1")
    assert.equal(1, world.id)
  end)

  it("answers 1,000 requests at once over its one connection, each its own answer", function()
    local conns = {}
    for i = 1, 1000 do
      conns[i] = helpers.connect(app.port)
      conns[i]:send(helpers.build_request("GET", "/double/" .. i))
    end
    for i = 1, 1000 do
      local resp = conns[i]:read_response()
      conns[i]:close()
      assert.equal(200, resp.status)
      assert.equal(tostring(2 * i), resp.body)
    end
    -- The listening connection of db:listen aside.
    local backends = cluster:psql("SELECT count(*) FROM pg_stat_activity WHERE datname = 'moonport' "
      .. "AND pid <> pg_backend_pid() AND query NOT LIKE 'LISTEN%'")
    assert.equal("1", backends)
  end)

  it("prepares a statement once per connection, and sends each query at once", function()
    -- Queries leave at the end of the loop turn that made them: were the
    -- socket left corked, each would wait the kernel's 200 ms.
    local started = helpers.now()
    local _, r = get("/in_a_row/200")
    assert.same({ prepared = 1 }, r)
    local _, again = get("/in_a_row/1")
    assert.same({ prepared = 1 }, again)
    assert.is_true(helpers.now() - started < 20, "took " .. (helpers.now() - started) .. " s")
  end)

  it("runs a batch whose failing statement leaves the others alone", function()
    local _, r = get("/batch")
    assert.same({ a = 1 }, r[1][1])
    assert.equal("42P01: relation \"no_such_table\" does not exist", r[2])
    assert.equal("42P01", r[3])
    assert.same({ n = 10000 }, r[4][1])
  end)

  it("gives the server's errors as tables", function()
    local _, r = get("/error")
    assert.same({ rows = helpers.json("null"), message = "division by zero", sqlstate = "22012",
                  printed = "22012: division by zero" }, r)
  end)

  it("commits a transaction, rolls a savepoint back alone, and hides uncommitted rows", function()
    local conn = helpers.connect(app.port)
    conn:send(helpers.build_request("POST", "/tx/a?hold=300", nil, ""))
    -- While the transaction holds its row, others do not see it.
    assert.truthy(helpers.eventually(function()
      return cluster:psql("SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction'") == "1"
    end))
    local _, during = get("/kv/a")
    assert.equal(0, during.n)
    local resp = conn:read_response()
    conn:close()
    assert.same({ ok = true, err = helpers.json("null") }, helpers.json(resp.body))
    local _, after = get("/kv/a")
    assert.equal(1, after.n)
    local _, inner = get("/kv/a:inner")
    assert.equal(0, inner.n)
  end)

  it("rolls a failing transaction back and raises its error again", function()
    local _, r = get("/tx/b?fail=1", "POST", "")
    assert.is_false(r.ok)
    assert.matches("changed my mind", r.err)
    local _, kv = get("/kv/b")
    assert.equal(0, kv.n)
  end)

  it("times a query out, cancels it, and the connection goes on", function()
    local started = helpers.now()
    local _, r = get("/sleep/5")
    local elapsed = helpers.now() - started
    assert.equal("timeout", r.err)
    assert.is_true(elapsed >= 0.2 and elapsed < 2, "took " .. elapsed .. " s")
    started = helpers.now()
    local _, world = get("/world/2")
    assert.equal(2, world.id, require("cjson").encode(world))
    assert.is_true(helpers.now() - started < 2)
  end)

  it("fails a request whose result is past --request-memory-limit, and serves the next", function()
    local status = helpers.request(app.port, "GET", "/huge")
    assert.equal(500, status)
    local _, world = get("/world/3")
    assert.equal(3, world.id)
  end)

  it("delivers NOTIFY to db:listen", function()
    assert.truthy(helpers.eventually(function()
      cluster:psql("NOTIFY events, 'hello'")
      local _, r = get("/notified")
      return r.value == "events:hello"
    end))
  end)

  it("turns a killed server into errors, then serves again once it is back", function()
    assert.equal("2", select(3, helpers.request(app.port, "GET", "/double/1")))
    -- Killed under load: the queries in flight fail, none hangs.
    local busy = {}
    for i = 1, 20 do
      busy[i] = helpers.connect(app.port)
      busy[i]:send(helpers.build_request("GET", "/busy"))
    end
    assert.truthy(helpers.eventually(function()
      return cluster:psql("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(0.5)%' "
        .. "AND pid <> pg_backend_pid()") ~= "0"
    end))
    cluster:kill()
    for i = 1, 20 do
      local resp = busy[i]:read_response({ timeout = 10 })
      busy[i]:close()
      assert.equal(503, resp.status, resp.body)
    end
    local status, _, body = helpers.request(app.port, "GET", "/double/2")
    assert.equal(503, status, body)
    cluster:restart()
    local started = helpers.now()
    assert.truthy(helpers.eventually(function()
      local s, _, b = helpers.request(app.port, "GET", "/double/3")
      return s == 200 and b == "6"
    end, 10))
    -- The backoff is at most 1 s, so about a second on an idle machine; the
    -- bound is wide for a loaded one.
    assert.is_true(helpers.now() - started < 5, "recovered after " .. (helpers.now() - started) .. " s")
  end)
end)

describe("moonport.pg at load time", function()
  it("raises a clear error for a query", function()
    local dir = helpers.scratch_dir()
    local path = dir .. "/load.lua"
    helpers.write_file(path, [[
local db = require("moonport.pg").connect("host=127.0.0.1 port=1")
db:query("SELECT 1")
return require("moonport").app()
]])
    local code, _, err = require("spec.support.process").run({ "--check", path })
    helpers.remove_dir(dir)
    assert.equal(1, code)
    assert.matches("load.lua:2: moonport.pg: queries are only available while serving", err, 1, true)
  end)
end)

describe("scripts/todo_pg.lua", function()
  local cluster = pgsupport.cluster()
  local app
  setup(function()
    app = require("spec.support.process").start("scripts/todo_pg.lua", { "--pg", cluster.conninfo })
  end)
  teardown(function() if app then app:stop() end end)

  local function call(method, target, body)
    local status, headers, resp = helpers.request(app.port, method, target,
      body and { ["Content-Type"] = "application/json" } or nil, body)
    return status, resp ~= "" and helpers.json(resp) or nil, headers
  end

  it("creates, lists, filters, updates and deletes todos", function()
    local status, todo, headers = call("POST", "/todos", '{"title":"milk","tags":["shop"]}')
    assert.equal(201, status)
    assert.equal("/todos/" .. todo.id, headers["location"])
    assert.same({ "shop" }, todo.tags)
    assert.is_false(todo.done)
    assert.equal(201, (call("POST", "/todos", '{"title":"bread","done":true}')))
    local _, list = call("GET", "/todos?done=true")
    assert.equal(1, list.total)
    assert.equal("bread", list.items[1].title)
    _, list = call("GET", "/todos?q=mil&limit=1")
    assert.equal("milk", list.items[1].title)
    local _, updated = call("PATCH", "/todos/" .. todo.id, '{"done":true}')
    assert.is_true(updated.done)
    assert.equal(204, (call("DELETE", "/todos/" .. todo.id)))
    assert.equal(404, (call("GET", "/todos/" .. todo.id)))
    assert.equal(404, (call("DELETE", "/todos/" .. todo.id)))
  end)

  it("answers 422 for bad input and 409 for a title taken", function()
    assert.equal(422, (call("POST", "/todos", '{"title":""}')))
    assert.equal(422, (call("POST", "/todos", '{"title":"x","done":"yes"}')))
    assert.equal(422, (call("POST", "/todos", "not json")))
    assert.equal(422, (call("GET", "/todos?limit=0")))
    assert.equal(201, (call("POST", "/todos", '{"title":"unique"}')))
    local status, body = call("POST", "/todos", '{"title":"unique"}')
    assert.equal(409, status)
    assert.equal("a todo with this title exists", body.error)
  end)
end)
