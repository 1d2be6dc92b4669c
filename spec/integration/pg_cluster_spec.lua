-- The PostgreSQL harness of the specs (spec/support/pg.lua) on its own: a
-- throw-away cluster starts (as the postgres user when the spec runs as
-- root, as the spec's user otherwise), answers psql, holds the fixtures of
-- bench/tfb/tfb.sql and spec/fixtures/pg/schema.sql, is killed and
-- restarted on the same port with its data, and leaves no process and no
-- directory behind, each within a bound.
local pg = require("spec.support.pg")
local process = require("spec.support.process")
local support = require("spec.support.server")
local socket = require("socket")
local unistd = require("posix.unistd")
local stat = require("posix.sys.stat")
local signal = require("posix.signal")
local pwd = require("posix.pwd")

-- The real user id a process runs as.
local function uid_of(pid)
  local f = assert(io.open("/proc/" .. pid .. "/status"))
  local text = f:read("*a")
  f:close()
  return tonumber(text:match("\nUid:%s+(%d+)"))
end

local function expected_uid()
  if unistd.geteuid() == 0 then return pwd.getpwnam(pg.OS_USER).pw_uid end
  return unistd.geteuid()
end

-- Whether something accepts TCP connections on 127.0.0.1:port.
local function listening(port)
  local c = socket.tcp()
  c:settimeout(1)
  local ok = c:connect("127.0.0.1", port)
  c:close()
  return ok ~= nil
end

local function exists(path)
  return stat.lstat(path) ~= nil
end

-- Waits until `fn()` is true or `timeout` seconds pass; returns whether it was.
local function eventually(fn, timeout)
  local deadline = process.now() + timeout
  repeat
    if fn() then return true end
    process.nap(0.02)
  until process.now() >= deadline
  return fn() and true or false
end

-- A psql session that sleeps on the server until it is cut off.
local function sleeping_session(db)
  local session = process.spawn({ pg.bindir() .. "/psql", "-X", "-w", "-h", "127.0.0.1",
    "-p", tostring(db.port), "-U", pg.SUPERUSER, "-d", db.database,
    "-c", "select pg_sleep(120)" })
  support.defer(function() session:stop() end)
  assert(eventually(function()
    return db:psql("select count(*) from pg_stat_activity where query = 'select pg_sleep(120)'") == "1"
  end, 30), "the sleeping session never showed up: " .. session:output())
  return session
end

-- What the first block's cluster was, for the block after it.
local seen = {}

describe("a PostgreSQL cluster for a describe block", function()
  local db = pg.cluster({ fixtures = { pg.TFB, pg.SCHEMA } })

  it("runs postgres as the postgres user under root, else as the spec's user", function()
    seen.dir, seen.data, seen.port = db.dir, db.data, db.port
    assert.is_true(db:running())
    assert.equal(expected_uid(), uid_of(db.pid))
    local pids = db:processes()
    assert.is_true(#pids >= 2, "a postmaster and its helpers")
    for _, pid in ipairs(pids) do assert.equal(expected_uid(), uid_of(pid)) end
    assert.equal("postgres", db:psql("select current_user"))
  end)

  it("answers psql over TCP and the Unix socket, and reports errors", function()
    assert.equal("1|a", db:psql("select 1, 'a'"))
    assert.equal("moonport", db:psql("select current_database()", { socket = true }))
    assert.equal("2\n3", db:psql("select 2; select 3"))
    local ok, out, err = db:try_psql("select 4; select nope; select 5")
    assert.is_false(ok)
    assert.equal("4", out)
    assert.matches('column "nope" does not exist', err, 1, true)
    local raised = select(2, pcall(db.psql, db, "select nope"))
    assert.matches('column "nope" does not exist', raised, 1, true)
  end)

  it("gives connection details that name the cluster", function()
    assert.equal("127.0.0.1", db.host)
    assert.equal(("host=127.0.0.1 port=%d user=postgres dbname=moonport"):format(db.port),
      db.conninfo)
    assert.equal(("postgresql://postgres@127.0.0.1:%d/moonport"):format(db.port), db.url)
    assert.same({ PGHOST = "127.0.0.1", PGPORT = tostring(db.port), PGUSER = "postgres",
                  PGDATABASE = "moonport" }, db.env)
    assert.is_true(exists(db.socket_dir .. "/.s.PGSQL." .. db.port))
    assert.matches("host='" .. db.socket_dir .. "'", db.socket_conninfo, 1, true)
  end)

  it("runs with the settings the specs rely on", function()
    assert.equal(table.concat({ "off", "off", "off", "200", "pg_stat_statements", "all",
      "UTF8", "UTC", "127.0.0.1" }, "\n"),
      db:psql([[show fsync; show synchronous_commit; show full_page_writes;
        show max_connections; show shared_preload_libraries; show pg_stat_statements.track;
        show server_encoding; show timezone; show listen_addresses]]))
    db:psql("select pg_stat_statements_reset(); select 12345 as marker")
    assert.equal("1", db:psql("select count(*) from pg_stat_statements where query like 'select $1 as marker'"))
  end)

  it("holds the TechEmpower tables", function()
    assert.equal("10000|1|10000|10000", db:psql(
      "select count(*), min(id), max(id), count(distinct id) from world"))
    local lo, hi, distinct = db:psql(
      "select min(randomnumber), max(randomnumber), count(distinct randomnumber) from world")
      :match("^(%d+)|(%d+)|(%d+)$")
    assert.is_true(tonumber(lo) >= 1 and tonumber(hi) <= 10000, lo .. ".." .. hi)
    assert.is_true(tonumber(distinct) > 5000, distinct .. " distinct numbers")
    assert.equal("12", db:psql("select count(*) from fortune"))
    assert.equal("フレームワークのベンチマーク", db:psql("select message from fortune where id = 12"))
    assert.equal("A computer scientist is someone who fixes things that aren't broken.",
      db:psql("select message from fortune where id = 2"))
  end)

  it("holds a types table with NULLs, limits, quotes, Unicode and int8 past 2^53", function()
    local columns = db:psql([[select string_agg(column_name || ' ' || udt_name, ',' order by ordinal_position)
      from information_schema.columns where table_name = 'types']])
    assert.equal("id int4,label text,v_int2 int2,v_int4 int4,v_int8 int8,v_float4 float4,"
      .. "v_float8 float8,v_numeric numeric,v_bool bool,v_text text,v_varchar varchar,"
      .. "v_json json,v_jsonb jsonb,v_bytea bytea,v_timestamp timestamp,"
      .. "v_timestamptz timestamptz,v_date date,v_uuid uuid,v_int4_array _int4,"
      .. "v_text_array _text", columns)
    -- Every column NULL in one row.
    assert.equal("18", db:psql([[select num_nulls(v_int2, v_int4, v_int8, v_float4, v_float8,
      v_numeric, v_bool, v_text, v_varchar, v_json, v_jsonb, v_bytea, v_timestamp,
      v_timestamptz, v_date, v_uuid, v_int4_array, v_text_array) from types where label = 'nulls']]))
    assert.equal("9007199254740993|-9007199254740993|9223372036854775807",
      db:psql([[select (select v_int8 from types where label = 'beyond 2^53'),
        (select v_int8 from types where label = 'below -2^53'),
        (select v_int8 from types where label = 'maximum')]]))
    assert.equal([[it's "quoted" \ back\slash; -- not a comment|O'Brien]],
      db:psql("select v_text, v_varchar from types where label = 'quotes'"))
    assert.equal("héllo wörld — 日本語 🎉|🎉",
      db:psql("select v_text, v_jsonb->>'emoji' from types where label = 'unicode'"))
    assert.equal("t", db:psql([[select v_json::text = 'null' and v_json is not null
      from types where label = 'minimum']]))
  end)

  it("asks the password role for its password, over TCP and the Unix socket", function()
    local ok, _, err = db:try_psql("select 1", { user = pg.PASSWORD_USER })
    assert.is_false(ok)
    assert.matches("password", err)
    ok, _, err = db:try_psql("select 1", { user = pg.PASSWORD_USER, password = "wrong" })
    assert.is_false(ok)
    assert.matches('password authentication failed for user "moonport_pw"', err, 1, true)
    assert.equal("moonport_pw|10000", db:psql("select current_user, count(*) from world",
      { user = pg.PASSWORD_USER, password = pg.PASSWORD }))
    assert.equal("moonport_pw", db:psql("select current_user",
      { user = pg.PASSWORD_USER, password = pg.PASSWORD, socket = true }))
    assert.equal("SCRAM-SHA-256", db:psql(
      "select left(rolpassword, 13) from pg_authid where rolname = 'moonport_pw'"))
  end)

  it("stops at once with a client connected, keeping the data for a restart", function()
    local session = sleeping_session(db)
    local port, old_pid = db.port, db.pid
    local t0 = process.now()
    db:stop()
    assert.is_true(process.now() - t0 < 20, "a fast shutdown, not a smart one")
    assert.is_false(db:running())
    assert.same({}, db:processes())
    assert.is_true(eventually(function() return not session:alive() end, 10))
    assert.is_false(listening(port))
    assert.is_false((db:try_psql("select 1")))

    t0 = process.now()
    db:restart()
    assert.is_true(process.now() - t0 < 60)
    assert.equal(port, db.port)
    assert.are_not.equal(old_pid, db.pid)
    assert.equal("10000", db:psql("select count(*) from world"))
  end)

  it("kills the server mid-query and restarts it on the same port with the data", function()
    db:psql("set synchronous_commit = on; create table survivor (n int); insert into survivor values (7)")
    local session = sleeping_session(db)
    local port, old_pid = db.port, db.pid
    local t0 = process.now()
    db:kill()
    assert.is_true(process.now() - t0 < 20)
    assert.is_false(db:running())
    assert.same({}, db:processes())
    assert.is_true(eventually(function() return not session:alive() end, 10))
    assert.is_false(listening(port))
    db:kill()  -- a second kill does nothing

    t0 = process.now()
    db:restart()
    assert.is_true(process.now() - t0 < 60)
    assert.equal(port, db.port)
    assert.are_not.equal(old_pid, db.pid)
    assert.is_true(listening(port))
    assert.equal("7", db:psql("select n from survivor"))
    assert.equal("10000|12", db:psql("select (select count(*) from world), (select count(*) from fortune)"))
    assert.matches("received immediate shutdown request", db:log(), 1, true)
    assert.matches("database system was interrupted", db:log(), 1, true)
  end)

  it("restarts a running server", function()
    local old_pid = db.pid
    db:restart()
    assert.are_not.equal(old_pid, db.pid)
    assert.equal("1", db:psql("select 1"))
  end)
end)

describe("after a describe block's cluster", function()
  it("has stopped every process and removed its directory", function()
    assert.is_string(seen.dir)
    assert.is_false(exists(seen.dir))
    assert.is_false(listening(seen.port))
    assert.same({}, pg.processes_in(seen.data))
  end)
end)

describe("pg.start", function()
  it("starts clusters of its own, side by side, and destroys them", function()
    local t0 = process.now()
    local a = pg.start()
    support.defer(function() a:destroy() end)
    local b = pg.start()
    support.defer(function() b:destroy() end)
    assert.is_true(process.now() - t0 < 120)
    assert.are_not.equal(a.port, b.port)
    a:psql("create table only_a (n int)")
    assert.is_false((b:try_psql("select * from only_a")))
    assert.equal("0", a:psql("select count(*) from only_a"))

    local dir, data, port = a.dir, a.data, a.port
    a:destroy()
    a:destroy()
    assert.is_false(exists(dir))
    assert.is_false(listening(port))
    assert.same({}, pg.processes_in(data))
    assert.is_true(b:running())
    assert.equal("1", b:psql("select 1"))
  end)

  it("stops postgres when the process that started it dies", function()
    local child = process.spawn({ "luajit", "-e", [[
      local pg = require("spec.support.pg")
      local db = pg.start()
      io.write("data ", db.data, " log ", db.program.path, "\n")
      io.flush()
      require("socket").sleep(300)
    ]] }, { env = { MOONPORT_ROOT = process.root } })
    support.defer(function() child:stop() end)
    local data, log
    assert.is_true(eventually(function()
      data, log = child:output():match("data (%S+) log (%S+)\n")
      return data ~= nil or not child:alive()
    end, 120), "the child never started its cluster")
    assert.is_truthy(data, "the child said: " .. child:output())
    local dir = data:match("^(.*)/data$")
    support.defer(function()
      process.command({ "rm", "-rf", dir })
      os.remove(log)
    end)
    assert.is_true(#pg.processes_in(data) >= 2)
    signal.kill(child.pid, signal.SIGKILL)
    assert.is_true(eventually(function() return #pg.processes_in(data) == 0 end, 30),
      "postgres outlived the process that started it")
  end)

  it("runs as a user other than root", function()
    if unistd.geteuid() ~= 0 then
      -- The spec's own user: the cluster above ran as it.
      local db = pg.start()
      support.defer(function() db:destroy() end)
      assert.equal(unistd.geteuid(), uid_of(db.pid))
      return
    end
    -- Root: run the harness itself as the postgres user, from a copy it can
    -- read wherever the repository lives.
    local dir = os.tmpname()
    os.remove(dir)
    support.defer(function() process.command({ "rm", "-rf", dir }) end)
    for _, d in ipairs({ dir, dir .. "/spec", dir .. "/spec/support" }) do
      assert(stat.mkdir(d, 493))
    end
    for _, name in ipairs({ "pg.lua", "process.lua" }) do
      assert.equal(0, (process.command({ "cp", "spec/support/" .. name, dir .. "/spec/support/" })))
      assert(stat.chmod(dir .. "/spec/support/" .. name, 420))
    end
    local code, out, err = process.command({
      "setpriv", "--reuid=" .. pg.OS_USER, "--regid=" .. pg.OS_USER, "--init-groups", "--",
      "luajit", "-e", [[
        local pg = require("spec.support.pg")
        local unistd = require("posix.unistd")
        local db = pg.start()
        local f = io.open("/proc/" .. db.pid .. "/status")
        local server_uid = f:read("*a"):match("\nUid:%s+(%d+)")
        f:close()
        db:kill()
        db:restart()
        io.write(unistd.geteuid(), " ", server_uid, " ", db:psql("select current_user"), "\n")
        local data = db.data
        db:destroy()
        io.write(#db:processes(), " ", tostring(io.open(data) ~= nil), "\n")
      ]] }, { cwd = dir, env = { MOONPORT_ROOT = dir, LUA_PATH = dir .. "/?.lua;;" },
              timeout = 180 })
    local uid = tostring(pwd.getpwnam(pg.OS_USER).pw_uid)
    assert.equal(0, code, out .. err)
    assert.equal(("%s %s postgres\n0 false\n"):format(uid, uid), out)
  end)
end)
