--- A throw-away PostgreSQL 15 cluster for the specs: Debian's `initdb`
-- into a scratch directory, `postgres` on 127.0.0.1, a free port and a
-- Unix socket in that directory, stopped and removed when the spec is done
-- with it. No mock: the specs of moonport.pg talk to the real server.
--
-- Usage:
--   local pg = require("spec.support.pg")
--
--   describe("queries", function()
--     -- Started (fixtures loaded) before the block's first test, stopped
--     -- and removed after its last.
--     local db = pg.cluster({ fixtures = { pg.TFB, pg.SCHEMA } })
--     it("reads", function()
--       assert.equal("12", db:psql("select count(*) from fortune"))
--       -- db.conninfo, db.url, db.port, db.env.PGHOST ... for moonport
--     end)
--   end)
--
--   it("has a cluster of its own", function()
--     local db = pg.start()
--     support.defer(function() db:destroy() end)
--     db:kill()      -- pg_ctl stop -m immediate
--     db:restart()   -- same port, same data
--   end)
--
-- The server refuses to run as root. When the spec runs as root (CI does),
-- initdb and postgres run as the `postgres` system user that Debian's
-- postgresql package creates, and the scratch directory is theirs;
-- otherwise they run as the spec's own user. psql runs as the spec's user
-- over TCP: the cluster trusts every local and 127.0.0.1 connection, except
-- those of `pg.PASSWORD_USER`, which must give `pg.PASSWORD`
-- (scram-sha-256). postgres runs with fsync, synchronous_commit and
-- full_page_writes off, pg_stat_statements loaded (tracking every
-- statement) and 200 connections allowed; it gets SIGQUIT (an immediate
-- shutdown) if the spec's process dies without stopping it. Waits are
-- polls bounded by deadlines, never sleeps.
--
-- The binaries are $MOONPORT_PG_BIN (default /usr/lib/postgresql/15/bin,
-- else `pg_config --bindir`).

local process = require("spec.support.process")
local unistd = require("posix.unistd")
local stat = require("posix.sys.stat")
local dirent = require("posix.dirent")
local signal = require("posix.signal")
local wait = require("posix.sys.wait")
local stdlib = require("posix.stdlib")
local pwd = require("posix.pwd")

local pg = {}

--- TechEmpower's tables (world, fortune), the benchmarks' own, relative to
-- the repository root.
pg.TFB = "bench/tfb/tfb.sql"
--- The `types` table and pg_stat_statements, relative to the repository
-- root.
pg.SCHEMA = "spec/fixtures/pg/schema.sql"
--- The superuser, trusted without a password.
pg.SUPERUSER = "postgres"
--- The database the cluster's connection strings name.
pg.DATABASE = "moonport"
--- A role that must authenticate with a password (scram-sha-256). It
-- reads and writes every table (pg_read_all_data, pg_write_all_data).
pg.PASSWORD_USER = "moonport_pw"
pg.PASSWORD = "moonport-pw"
--- The system user initdb and postgres run as when the spec runs as root.
pg.OS_USER = "postgres"

-- Variables of libpq's that would steer psql away from the cluster.
local LIBPQ_ENV = {
  "PGHOST", "PGHOSTADDR", "PGPORT", "PGUSER", "PGPASSWORD", "PGPASSFILE",
  "PGDATABASE", "PGOPTIONS", "PGSERVICE", "PGSERVICEFILE", "PGSSLMODE",
  "PGREQUIRESSL", "PGAPPNAME", "PGTARGETSESSIONATTRS", "PGCONNECT_TIMEOUT",
  "PGCHANNELBINDING", "PGGSSENCMODE", "PGTZ", "PGCLIENTENCODING",
  "DATABASE_URL",
}

local function executable(path)
  return unistd.access(path, "x") == 0
end

local function has_binaries(dir)
  return executable(dir .. "/initdb") and executable(dir .. "/postgres")
    and executable(dir .. "/psql")
end

--- The folder of initdb, postgres and psql: $MOONPORT_PG_BIN, else
-- /usr/lib/postgresql/15/bin, else `pg_config --bindir`. Raises when none
-- holds them.
local bindir
function pg.bindir()
  if bindir then return bindir end
  local env = os.getenv("MOONPORT_PG_BIN")
  local candidates = { env ~= "" and env or nil }
  if not candidates[1] then
    candidates[1] = "/usr/lib/postgresql/15/bin"
    if not has_binaries(candidates[1]) then
      local ok, code, out = pcall(process.command, { "pg_config", "--bindir" }, { timeout = 10 })
      if ok and code == 0 then candidates[2] = (out:gsub("%s+$", "")) end
    end
  end
  for _, dir in ipairs(candidates) do
    if has_binaries(dir) then
      bindir = dir
      return dir
    end
  end
  error("PostgreSQL's initdb, postgres and psql were not found in "
    .. table.concat(candidates, " or ")
    .. " (install Debian's postgresql package, or set MOONPORT_PG_BIN)", 2)
end

local function is_root()
  return unistd.geteuid() == 0
end

-- The command line that runs `argv` as the cluster's system user (the
-- spec's own user unless it is root), with `pdeathsig` (a signal name) sent
-- to it when the spec's process dies.
local function as_owner(argv, pdeathsig)
  local out = { "setpriv" }
  if is_root() then
    out[#out + 1] = "--reuid=" .. pg.OS_USER
    out[#out + 1] = "--regid=" .. pg.OS_USER
    out[#out + 1] = "--init-groups"
  end
  if pdeathsig then
    out[#out + 1] = "--pdeathsig"
    out[#out + 1] = pdeathsig
  end
  out[#out + 1] = "--"
  for _, a in ipairs(argv) do out[#out + 1] = a end
  return out
end

-- A scratch directory the cluster's system user owns.
local function make_dir()
  local dir = os.tmpname()
  os.remove(dir)
  assert(stat.mkdir(dir, 493))
  assert(stat.mkdir(dir .. "/sock", 493))
  if is_root() then
    local user = pwd.getpwnam(pg.OS_USER)
    if not user then
      unistd.rmdir(dir .. "/sock"); unistd.rmdir(dir)
      error("the specs run as root and PostgreSQL refuses root: they need the "
        .. pg.OS_USER .. " system user, which Debian's postgresql package creates", 3)
    end
    assert(unistd.chown(dir, user.pw_uid, user.pw_gid))
    assert(unistd.chown(dir .. "/sock", user.pw_uid, user.pw_gid))
  end
  return dir
end

-- Removes `path` and, if it is a directory, everything under it, without
-- following symbolic links.
local function remove_tree(path)
  local st = stat.lstat(path)
  if not st then return end
  if stat.S_ISDIR(st.st_mode) ~= 0 then
    for name in dirent.files(path) do
      if name ~= "." and name ~= ".." then remove_tree(path .. "/" .. name) end
    end
    unistd.rmdir(path)
  else
    os.remove(path)
  end
end

local function read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

local function quote_conninfo(value)
  return "'" .. tostring(value):gsub("[\\']", "\\%0") .. "'"
end

-- The settings postgres starts with, before those of `opts.settings`.
local SETTINGS = {
  { "listen_addresses", "127.0.0.1" },
  { "fsync", "off" },
  { "synchronous_commit", "off" },
  { "full_page_writes", "off" },
  { "shared_preload_libraries", "pg_stat_statements" },
  { "pg_stat_statements.track", "all" },
  { "max_connections", "200" },
  -- Timestamps with time zone read the same on every machine.
  { "TimeZone", "UTC" },
}

local HBA = [[
# Written by spec/support/pg.lua: one role with a password, trust for the rest.
local all %s scram-sha-256
host  all %s 127.0.0.1/32 scram-sha-256
local all all trust
host  all all 127.0.0.1/32 trust
]]

------------------------------------------------------------------------------
-- A cluster
------------------------------------------------------------------------------

local Cluster = {}
Cluster.__index = Cluster

-- The cluster's connection details, for a port.
function Cluster:_set_port(port)
  self.port = port
  self.conninfo = ("host=%s port=%d user=%s dbname=%s"):format(
    self.host, port, pg.SUPERUSER, self.database)
  self.socket_conninfo = ("host=%s port=%d user=%s dbname=%s"):format(
    quote_conninfo(self.socket_dir), port, pg.SUPERUSER, self.database)
  self.password_conninfo = ("host=%s port=%d user=%s password=%s dbname=%s"):format(
    self.host, port, pg.PASSWORD_USER, quote_conninfo(pg.PASSWORD), self.database)
  self.url = ("postgresql://%s@%s:%d/%s"):format(pg.SUPERUSER, self.host, port, self.database)
  self.env = {
    PGHOST = self.host, PGPORT = tostring(port),
    PGUSER = pg.SUPERUSER, PGDATABASE = self.database,
  }
end

-- The postmaster's status line in postmaster.pid ("starting", "ready",
-- "stopping"), once the file names `pid`.
local function postmaster_status(data, pid)
  local text = read_file(data .. "/postmaster.pid")
  if not text then return nil end
  local lines = {}
  for line in text:gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
  if tonumber(lines[1]) ~= pid then return nil end
  return lines[8] and lines[8]:match("^%s*(%S+)")
end

-- Starts postgres on `self.port` and waits until it accepts connections.
-- Returns true, or false and its log when it exited at startup (a port
-- taken by someone else shows there).
function Cluster:_spawn(timeout)
  local argv = { self.bindir .. "/postgres", "-D", self.data,
                 "-p", tostring(self.port), "-k", self.socket_dir }
  for _, kv in ipairs(self.settings) do
    argv[#argv + 1] = "-c"
    argv[#argv + 1] = kv[1] .. "=" .. kv[2]
  end
  local env = {}
  for _, name in ipairs(LIBPQ_ENV) do env[name] = false end
  env.PGDATA = false
  self.program = process.spawn(as_owner(argv, "QUIT"), { cwd = self.dir, env = env })
  self.pid = self.program.pid
  local deadline = process.now() + timeout
  repeat
    if not self.program:alive() then
      local log = self.program:output()
      self:_retire_program()
      return false, log
    end
    if postmaster_status(self.data, self.pid) == "ready" then
      -- Ready by its own account: check that a client gets an answer.
      local ok, out = self:try_psql("select 1", { database = "postgres", timeout = 30 })
      if ok and out == "1" then return true end
      if not self.program:alive() then
        local log = self.program:output()
        self:_retire_program()
        return false, log
      end
    end
    process.nap(0.02)
  until process.now() >= deadline
  local log = self.program:output()
  self:_halt(signal.SIGQUIT)
  error(("postgres on port %d did not accept connections within %gs; its log:\n%s"):format(
    self.port, timeout, log), 0)
end

-- Keeps the log of the program that has exited, and lets its file go.
function Cluster:_retire_program()
  local p = self.program
  if not p then return end
  p:alive()
  self.old_log = (self.old_log or "") .. p:output()
  p:stop()
  self.program = nil
  self.pid = nil
end

--- Whether postgres runs.
function Cluster:running()
  return self.program ~= nil and self.program:alive()
end

--- The pids of the processes whose working directory is `data`: a
-- cluster's postmaster and its children (postgres runs in its data
-- directory), sorted.
function pg.processes_in(data)
  local found = {}
  for name in dirent.files("/proc") do
    if name:match("^%d+$") then
      local cwd = unistd.readlink("/proc/" .. name .. "/cwd")
      if cwd == data then found[#found + 1] = tonumber(name) end
    end
  end
  table.sort(found)
  return found
end

--- The pids of the cluster's processes (`pg.processes_in` its data
-- directory). Empty once the cluster has stopped.
function Cluster:processes()
  return pg.processes_in(self.data)
end

-- Sends `sig` to the postmaster and waits for it and every process of the
-- cluster to exit, escalating to SIGQUIT and then SIGKILL after
-- `timeout` seconds each. Returns the postmaster's exit code.
function Cluster:_halt(sig, timeout)
  local p = self.program
  if not p then return nil end
  timeout = timeout or 30
  local steps = { sig }
  if sig ~= signal.SIGQUIT then steps[#steps + 1] = signal.SIGQUIT end
  steps[#steps + 1] = signal.SIGKILL
  local code
  for _, s in ipairs(steps) do
    if p:alive() then signal.kill(p.pid, s) end
    local deadline = process.now() + (s == signal.SIGKILL and 10 or timeout)
    while p:alive() and process.now() < deadline do process.nap(0.01) end
    if not p:alive() then code = p.status; break end
  end
  if code == nil then
    wait.wait(p.pid)
    p.status, code = -1, -1
  end
  -- A postmaster that exits has stopped its children first; SIGKILL does
  -- not give it the chance, so any left are killed here.
  local deadline = process.now() + 10
  local left = self:processes()
  while #left > 0 and process.now() < deadline do
    process.nap(0.02)
    left = self:processes()
  end
  for _, pid in ipairs(left) do signal.kill(pid, signal.SIGKILL) end
  self:_retire_program()
  self.exit_code = code
  return code
end

--- Stops postgres with a fast shutdown (SIGINT: `pg_ctl stop -m fast`),
-- which ends the sessions of connected clients, and waits until all of
-- the cluster's processes have exited (escalating after `timeout` seconds,
-- default 30). The data directory stays, for `restart`. Returns the
-- postmaster's exit code; safe to call when stopped.
function Cluster:stop(timeout)
  return self:_halt(signal.SIGINT, timeout)
end

--- Kills postgres with an immediate shutdown (SIGQUIT: `pg_ctl stop -m
-- immediate`), as a crash would: sessions are cut, nothing is
-- checkpointed, the next start recovers from the WAL. Returns once all of
-- the cluster's processes have exited. Commits made under
-- synchronous_commit=off in the last moments may be lost; the fixtures are
-- checkpointed when loaded.
function Cluster:kill(timeout)
  return self:_halt(signal.SIGQUIT, timeout)
end

--- Starts postgres again on the same port with the same data (stopping it
-- first with `stop` if it runs), and waits until it accepts connections
-- (`timeout` seconds, default 60).
function Cluster:restart(timeout)
  assert(not self.destroyed, "the cluster has been destroyed")
  if self:running() then self:stop() end
  self:_retire_program()
  timeout = timeout or 60
  local deadline = process.now() + timeout
  local log
  repeat
    local ok
    ok, log = self:_spawn(math.max(1, deadline - process.now()))
    if ok then return self end
    -- Another process may hold the port for a moment; only that is retried.
    if not (log or ""):find("could not bind", 1, true) then break end
    process.nap(0.2)
  until process.now() >= deadline
  error(("postgres did not start again on port %d; its log:\n%s"):format(self.port, log or ""), 2)
end

--- Stops postgres if it runs and removes the scratch directory (data,
-- socket). Safe to call twice.
function Cluster:destroy()
  if self.destroyed then return end
  self.destroyed = true
  self:stop()
  if self.dir then remove_tree(self.dir) end
end

--- What postgres has logged since the cluster was made (every start).
function Cluster:log()
  local now = self.program and self.program:output() or ""
  return (self.old_log or "") .. now
end

-- The psql command line and environment for `opts`.
function Cluster:_psql_argv(opts)
  local user = opts.user or pg.SUPERUSER
  local argv = { self.bindir .. "/psql", "-X", "-q", "-A", "-t", "-w",
                 "-v", "ON_ERROR_STOP=1",
                 "-h", opts.socket and self.socket_dir or self.host,
                 "-p", tostring(self.port), "-U", user,
                 "-d", opts.database or self.database }
  if opts.file then
    argv[#argv + 1] = "-f"
    argv[#argv + 1] = opts.file
  end
  local env = {}
  for _, name in ipairs(LIBPQ_ENV) do env[name] = false end
  env.PGCONNECT_TIMEOUT = "10"
  env.PGPASSFILE = self.dir .. "/no-pgpass"
  env.PGCLIENTENCODING = "UTF8"
  env.PGAPPNAME = "spec-psql"
  if opts.password then env.PGPASSWORD = opts.password end
  return argv, env
end

--- Runs `sql` (any number of statements) with psql, stopping at the first
-- error. `opts` (all optional): `user` (default the superuser),
-- `password`, `database` (default `pg.DATABASE`), `socket` (true: over the
-- Unix socket instead of TCP), `file` (a file of SQL, absolute or
-- relative to the repository root, run instead of `sql`, which is then
-- nil), `timeout` (seconds, default 60). Returns true and the output, or false, the output and the
-- error text. The output is unaligned and without headers: one line per
-- row, columns separated by `|`, NULL as an empty string; the last
-- newline is dropped.
function Cluster:try_psql(sql, opts)
  opts = opts or {}
  local argv, env = self:_psql_argv(opts)
  local code, out, err = process.command(argv, {
    stdin = sql, env = env, timeout = opts.timeout or 60,
  })
  out = out:gsub("\n$", "")
  if code ~= 0 then return false, out, err end
  return true, out, err
end

--- `try_psql` that raises with psql's error text instead of returning
-- false. Returns the output.
function Cluster:psql(sql, opts)
  local ok, out, err = self:try_psql(sql, opts)
  if not ok then
    error(("psql failed on port %s: %s\nsql: %s"):format(
      tostring(self.port), err, process.shorten(sql or opts.file, 500)), 2)
  end
  return out
end

--- Loads SQL files (paths relative to the repository root) into the
-- database, then checkpoints, so that the data outlives `kill`.
function Cluster:load(...)
  for _, path in ipairs({ ... }) do
    local full = path:sub(1, 1) == "/" and path or (process.root .. "/" .. path)
    self:psql(nil, { file = full, timeout = 120 })
  end
  self:psql("checkpoint")
end

--- Sets PGHOST, PGPORT, PGUSER and PGDATABASE to the cluster's in the
-- spec's own environment, for a moonport started afterwards; `unsetenv`
-- clears them (and PGPASSWORD and DATABASE_URL).
function Cluster:setenv()
  for name, value in pairs(self.env) do stdlib.setenv(name, value) end
end

function Cluster:unsetenv()
  for name in pairs(self.env) do stdlib.setenv(name, nil) end
  stdlib.setenv("PGPASSWORD", nil)
  stdlib.setenv("DATABASE_URL", nil)
end

-- Creates the password role and the database, with pg_stat_statements.
function Cluster:_provision()
  self:psql(([[
create role %s login password '%s';
create database %s;
]]):format(pg.PASSWORD_USER, pg.PASSWORD, self.database), { database = "postgres" })
  self:psql(([[
create extension if not exists pg_stat_statements;
grant pg_read_all_data, pg_write_all_data, pg_read_all_stats to %s;
grant all on schema public to %s;
]]):format(pg.PASSWORD_USER, pg.PASSWORD_USER))
end

--- Makes a cluster and starts it: initdb into a scratch directory, postgres
-- on 127.0.0.1 and a free port, the database (`opts.database`, default
-- `pg.DATABASE`) and the role `pg.PASSWORD_USER`, then the SQL files of
-- `opts.fixtures` (paths relative to the repository root) loaded in
-- order. `opts.settings`: more server settings, `{ {name, value}, ... }`,
-- after the defaults; `opts.timeout`: seconds to wait for the server
-- (default 60); `opts.init_timeout`: seconds for initdb (default 120).
-- Raises, leaving nothing behind, when any of it fails. Returns the cluster: `.port`, `.host` (127.0.0.1),
-- `.socket_dir`, `.database`, `.conninfo`, `.socket_conninfo`,
-- `.password_conninfo`, `.url`, `.env` (PGHOST, PGPORT, PGUSER,
-- PGDATABASE), `.pid` (the postmaster's, while it runs), `.dir`, `.data`;
-- `:psql`, `:try_psql`, `:load`, `:stop`, `:kill`, `:restart`,
-- `:running`, `:processes`, `:log`, `:setenv`, `:unsetenv` and `:destroy`,
-- which the caller makes sure runs.
function pg.start(opts)
  opts = opts or {}
  local self = setmetatable({
    bindir = pg.bindir(), host = "127.0.0.1",
    database = opts.database or pg.DATABASE,
  }, Cluster)
  self.settings = {}
  for _, kv in ipairs(SETTINGS) do self.settings[#self.settings + 1] = kv end
  for _, kv in ipairs(opts.settings or {}) do self.settings[#self.settings + 1] = kv end
  self.dir = make_dir()
  self.data = self.dir .. "/data"
  self.socket_dir = self.dir .. "/sock"

  local ok, err = pcall(function()
    local env = {}
    for _, name in ipairs(LIBPQ_ENV) do env[name] = false end
    env.PGDATA = false
    local code, out, errtext = process.command(as_owner({
      self.bindir .. "/initdb", "-D", self.data, "-U", pg.SUPERUSER,
      "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync",
      "--no-instructions",
    }), { cwd = self.dir, env = env, timeout = opts.init_timeout or 120 })
    if code ~= 0 then
      error(("initdb exited with %d: %s%s"):format(code, out, errtext), 0)
    end
    local f = assert(io.open(self.data .. "/pg_hba.conf", "w"))
    f:write(HBA:format(pg.PASSWORD_USER, pg.PASSWORD_USER))
    f:close()

    -- A free port may be taken before postgres binds it: try another.
    local log
    for _ = 1, 5 do
      self:_set_port(process.free_port())
      local started
      started, log = self:_spawn(opts.timeout or 60)
      if started then break end
      if not (log or ""):find("could not bind", 1, true) then
        error("postgres exited at startup; its log:\n" .. (log or ""), 0)
      end
    end
    if not self:running() then
      error("postgres found no free port; its last log:\n" .. (log or ""), 0)
    end
    self:_provision()
    if opts.fixtures and #opts.fixtures > 0 then
      self:load(unpack(opts.fixtures))
    end
  end)
  if not ok then
    self:destroy()
    error("spec.support.pg: " .. tostring(err), 2)
  end
  return self
end

--- A cluster for the enclosing describe block, made by `pg.start(opts)` in
-- the block's setup and destroyed in its teardown (with `opts.each`:
-- before and after each test). Returns a handle whose fields and methods
-- are the cluster's once it runs.
function pg.cluster(opts)
  opts = opts or {}
  local cluster
  local handle = setmetatable({}, {
    __index = function(_, key)
      if cluster == nil then
        error("the PostgreSQL cluster is not running: use it inside it(), "
          .. "or in a block that runs after the setup that starts it", 2)
      end
      local v = cluster[key]
      if type(v) == "function" then
        return function(_, ...) return v(cluster, ...) end
      end
      return v
    end,
    __tostring = function() return "PostgreSQL cluster" end,
  })
  local busted = require("busted")
  local up, down = busted.setup, busted.teardown
  if opts.each then up, down = busted.before_each, busted.after_each end
  up(function() cluster = pg.start(opts) end)
  down(function()
    local c = cluster
    cluster = nil
    if c then c:destroy() end
  end)
  return handle
end

return pg
