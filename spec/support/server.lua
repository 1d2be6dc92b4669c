--- One way for the specs to start and stop servers.
--
-- A server is started on 127.0.0.1 and a free port (spec/support/process.lua)
-- and stopped when its spec is done with it, whatever happened: stopping
-- sends SIGTERM, waits, and fails the spec unless the server exited 0 with
-- no sanitizer report on stderr.
--
-- Usage:
--   local support = require("spec.support.server")
--
--   describe("the API", function()
--     -- Started before the block's first test, stopped after its last.
--     local server = support.serve("scripts/api.lua", { "--stats" })
--     it("answers", function()
--       helpers.request(server.port, "GET", "/health")
--     end)
--   end)
--
--   it("starts a server of its own", function()
--     -- Stopped when the test ends, passed or failed.
--     local server = support.start("scripts/hello.lua", { "--debug" })
--   end)
--
-- busted runs setup and teardown blocks in the order they were registered:
-- files a server needs are written before `serve` is called (or in a setup
-- registered before it), and a teardown registered after it runs once the
-- server has stopped.

local busted = require("busted")
local process = require("spec.support.process")

local support = {}

--- A server for the enclosing describe block: `moonport --listen
-- 127.0.0.1:0 [args...] app` (`opts.mock`: `--mock app`), started in the
-- block's setup and stopped in its teardown, or, with `opts.each`, started
-- before each test and stopped after it. `opts.timeout`: seconds to wait
-- for the listening line (default 10).
-- Returns a handle that stands for the running server once it has
-- started: `.port`, `.pid`, `.line`, `:stderr()`, `:workers()`, `:stop()`
-- and the rest of spec/support/process.lua's server object.
function support.serve(app, args, opts)
  opts = opts or {}
  local server
  local handle = {}
  local function current()
    if server == nil then
      error("the server of " .. app .. " is not running: use it inside it(), "
        .. "or in a block that runs after the setup that starts it", 3)
    end
    return server
  end
  setmetatable(handle, {
    __index = function(_, key)
      local s = current()
      local v = s[key]
      if type(v) ~= "function" then return v end
      -- A method called on the handle runs on the server.
      return function(self, ...)
        if self == handle then self = s end
        return v(self, ...)
      end
    end,
    __newindex = function(_, key, value) current()[key] = value end,
    __tostring = function() return "server of " .. app end,
  })
  local up, down = busted.setup, busted.teardown
  if opts.each then up, down = busted.before_each, busted.after_each end
  up(function() server = process.start(app, args, opts) end)
  down(function()
    local s = server
    server = nil
    if s then s:stop() end
  end)
  return handle
end

-- Cleanups of the test now running, run last first by the `finally` that
-- `defer` gives busted.
local cleanups = {}

local function run_cleanups()
  local first_error
  while #cleanups > 0 do
    local fn = table.remove(cleanups)
    local ok, err = pcall(fn)
    if not ok and first_error == nil then first_error = err end
  end
  if first_error ~= nil then error(first_error, 0) end
end

-- busted's `finally` of the running test: it lives in the test's
-- environment, which the spec's own functions share and this module's do
-- not, so it is found through the callers on the stack.
local function test_finally()
  for level = 3, 40 do
    local ok, env = pcall(getfenv, level)
    if not ok then break end
    local finally = env and env ~= _G and env.finally
    if type(finally) == "function" then return finally end
  end
  error("spec.support.server: start and defer work inside it() only", 3)
end

--- Runs `fn` when the test now running ends, passed or failed, after
-- the cleanups deferred after it (last in, first out). An error in `fn`
-- fails the test. busted keeps one `finally` per test: a test that defers
-- anything must not call `finally` itself.
function support.defer(fn)
  test_finally()(run_cleanups)
  cleanups[#cleanups + 1] = fn
end

--- Starts a server for the test now running, as `serve` does, and stops
-- it (checking its exit) when the test ends. Returns the server object;
-- a test may stop it earlier itself (`:stop(sig)`, or `:wait(timeout,
-- sig, want)` after a signal it sent, for another exit status).
function support.start(app, args, opts)
  local finally = test_finally()
  local server = process.start(app, args, opts)
  finally(run_cleanups)
  cleanups[#cleanups + 1] = function() server:stop() end
  return server
end

--- Another program (a real upstream: an openssl s_server, redis-server,
-- memcached) for the enclosing describe block: `argv_fn()` gives its
-- command line when the block starts (so it can pick ports and write
-- files first), `ready(program)` waits until it serves (process.wait_port
-- fits most). Stopped in the block's teardown. Returns a handle whose
-- fields are the program's once it runs.
function support.program(argv_fn, ready)
  local program
  local handle = setmetatable({}, {
    __index = function(_, key)
      if program == nil then error("the program is not running", 2) end
      local v = program[key]
      if type(v) == "function" then
        return function(self, ...) return v(program, ...) end
      end
      return v
    end,
  })
  busted.setup(function()
    program = process.spawn(argv_fn())
    if ready then ready(program) end
  end)
  busted.teardown(function()
    local p = program
    program = nil
    if p then p:stop() end
  end)
  return handle
end

return support
