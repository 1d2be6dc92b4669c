--- moonport.core: the door between Lua and the core, and everything of it
-- the rest of moonport uses, gathered from its parts in core/, one per API
-- (as server/lua/ffi/ has one C file per API):
--
-- - core/base.lua: the contract's constants, request handles, errors, what
--   Lua keeps for a request while its handler runs;
-- - core/runner.lua: the body of handler coroutines, waits, moonport.sleep;
-- - core/request.lua and core/response.lua: `req` and `res`, which
--   core/handle.lua hands to handles through the number metatable;
-- - core/shared.lua (moonport.shared and the mock's stores),
--   core/regex.lua, core/fs.lua, core/time.lua, core/mock.lua (the
--   mock's settings), core/log.lua (moonport.log), core/app.lua (apps and
--   the files they load);
-- - core/task.lua: moonport.timer, moonport.thread and moonport.semaphore,
--   with the classic functions server/lua/vm.c registers for it as
--   moonport.core.native (spawning and killing light threads).
--
-- server/lua/vm.c sets DONE here, and uses WAIT, run, forget, timer_run,
-- track_loads and export.
-- @module moonport.core

local base = require("moonport.core.base")
local runner = require("moonport.core.runner")
require("moonport.core.handle")
local shared = require("moonport.core.shared")
local regex = require("moonport.core.regex")
local fs = require("moonport.core.fs")
local app = require("moonport.core.app")
local task = require("moonport.core.task")

-- Every Lua state (a worker's, each reload's) draws its own math.random
-- sequence, seeded from the kernel's random bytes: workers and restarts
-- of the same app do not repeat one another's ids, UUIDs and delays.
do
  local seed = os.time()
  local f = io.open("/dev/urandom", "rb")
  if f then
    local b = f:read(4)
    f:close()
    if b and #b == 4 then
      local b1, b2, b3, b4 = b:byte(1, 4)
      seed = ((b1 * 256 + b2) * 256 + b3) * 256 + b4
    end
  end
  math.randomseed(seed)
end

return {
  WAIT = runner.WAIT,
  run = runner.run,
  forget = base.forget,
  timer_run = task.timer_main,
  timer = task.timer,
  thread = task.thread,
  semaphore = task.semaphore,
  sleep = runner.sleep,
  log = require("moonport.core.log").log,
  shared = shared.shared,
  mock_state = shared.mock_state,
  mock_journal = shared.mock_journal,
  regex = regex.new,
  dir_list = fs.dir_list,
  dir_make = fs.dir_make,
  strerror = fs.strerror,
  confine = fs.confine,
  now = require("moonport.core.time").now,
  mock_settings = require("moonport.core.mock").settings,
  App = app.App,
  loaded_files = app.loaded_files,
  track_file = app.track_file,
  track_loads = app.track_loads,
  export = app.export,
}
