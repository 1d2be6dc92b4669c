-- Hot reload over real processes: the app lives in a scratch directory, the
-- spec edits it while the server runs and reads what the server answers.
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local signal = require("posix.signal")
local stdlib = require("posix.stdlib")
local cjson = require("cjson.safe")

local write, write_by_rename = helpers.write_file, helpers.write_by_rename
local scratch_dir, remove_dir = helpers.scratch_dir, helpers.remove_dir

-- An app answering GET /v with `version`, GET /slow with it after 600 ms
-- (GET /slow-started says when one began), GET /loads with a module-level
-- count, GET /shared with a moonport.shared count, and `extra` lines
-- inserted before `return app`.
local function app_source(version, extra)
  return ([[
local moonport = require("moonport")
local app = moonport.app()
local loads = 0
loads = loads + 1
app:get("/v", function(req, res) res:send(%q) end)
app:get("/slow", function(req, res)
  moonport.shared:set("slow", "started")
  moonport.sleep(600)
  res:send(%q)
end)
app:get("/slow-started", function(req, res)
  res:send(tostring(moonport.shared:get("slow")))
end)
app:get("/loads", function(req, res)
  loads = loads + 1
  res:send(tostring(loads))
end)
app:get("/shared", function(req, res)
  res:send(tostring(moonport.shared:incr("n")))
end)
%s
return app
]]):format(version, version, extra or "")
end

local function get(port, path)
  local ok, status, _, body = pcall(helpers.request, port, "GET", path)
  if not ok then return nil end
  return status, body
end

-- Waits until GET path answers `want`; returns whether it did.
local function answers(port, path, want, timeout)
  return helpers.eventually(function()
    local status, body = get(port, path)
    return status == 200 and body == want
  end, timeout or 10)
end

-- Private resident memory (RssAnon) of a process, in KiB.
local function rss_anon_kb(pid)
  local f = assert(io.open("/proc/" .. pid .. "/status"))
  local text = f:read("*a")
  f:close()
  return tonumber(text:match("RssAnon:%s*(%d+)"))
end

local stats = helpers.stats

-- Each test starts its own server (stopped when the test ends, before
-- after_each removes the app's directory).
describe("hot reload", function()
  local dir, app

  before_each(function()
    dir = scratch_dir()
    app = dir .. "/app.lua"
    write(app, app_source("one"))
  end)
  after_each(function() remove_dir(dir) end)

  it("serves an edit on the next request", function()
    local server = support.start(app, { "--workers", "2", "--stats" })
    assert.equal("one", select(2, get(server.port, "/v")))
    write(app, app_source("two"))
    assert.truthy(answers(server.port, "/v", "two"), "the edit was never served")
    local st = stats(server.port).reload
    assert.equal(2, st.generation)
    assert.equal(1, st.reloads)
    assert.truthy(server:stderr():find("master: reloaded .*app%.lua"))
  end)

  it("sees a save by rename", function()
    local server = support.start(app)
    write_by_rename(app, app_source("renamed"))
    assert.truthy(answers(server.port, "/v", "renamed"), "the rename was not seen")
  end)

  it("keeps the old code on a syntax error, reports it, and takes the next good save", function()
    local server = support.start(app, { "--workers", "2", "--stats" })
    write(app, app_source("broken") .. "\nthis is not lua\n")
    assert.truthy(helpers.eventually(function()
      return stats(server.port).reload.failures == 1
    end), "the failed reload was not reported")
    local st = stats(server.port).reload
    assert.is_false(st.last_ok)
    assert.truthy(st.last_error:find("app%.lua:%d+: "), st.last_error)
    assert.truthy(server:stderr():find("reload %(files changed%) failed: [^\n]*app%.lua:%d+: "),
                  server:stderr())
    for _ = 1, 10 do assert.equal("one", select(2, get(server.port, "/v"))) end
    write(app, app_source("fixed"))
    assert.truthy(answers(server.port, "/v", "fixed"))
    st = stats(server.port).reload
    assert.is_true(st.last_ok)
    assert.equal(cjson.null, st.last_error)
  end)

  it("keeps the old code when the script raises while building its routes", function()
    local server = support.start(app)
    write(app, app_source("raised", 'error("no database configured")'))
    assert.truthy(helpers.eventually(function()
      return server:stderr():find("app%.lua:%d+: no database configured")
    end), server:stderr())
    assert.equal("one", select(2, get(server.port, "/v")))
    -- A route the router refuses is a load error too.
    write(app, app_source("badroute", 'app:get("no-slash", function() end)'))
    assert.truthy(helpers.eventually(function()
      return server:stderr():find("pattern must be a string starting with '/'", 1, true)
    end), server:stderr())
    assert.equal("one", select(2, get(server.port, "/v")))
  end)

  it("lets a request started before the edit finish on the old code", function()
    local server = support.start(app)
    local c = helpers.connect(server.port)
    c:send(helpers.build_request("GET", "/slow"))
    assert.truthy(answers(server.port, "/slow-started", "started"))
    write(app, app_source("new"))
    assert.truthy(answers(server.port, "/v", "new"))
    local resp = assert(c:read_response())
    assert.equal("one", resp.body)
    -- The same keep-alive connection now gets the new code.
    assert.equal("new", c:request("GET", "/v").body)
    c:close()
  end)

  it("gives 404 for a removed route and starts module state afresh, shared data kept", function()
    local server = support.start(app)
    assert.equal("1", select(2, get(server.port, "/shared")))
    assert.equal("2", select(2, get(server.port, "/loads")))
    write(app, app_source("two"):gsub('app:get%("/slow".-\nend%)\n', ""))
    assert.truthy(answers(server.port, "/v", "two"))
    assert.equal(404, (get(server.port, "/slow")))
    assert.equal("2", select(2, get(server.port, "/loads")), "module state survived the reload")
    assert.equal("2", select(2, get(server.port, "/shared")), "moonport.shared lost its data")
  end)

  it("picks up a new file the app requires, then watches it", function()
    local server = support.start(app)
    write(dir .. "/extra.lua", 'return { word = "first" }\n')
    write(app, app_source("x", 'app:get("/extra", function(req, res) res:send(require("extra").word) end)'))
    assert.truthy(answers(server.port, "/extra", "first"))
    write(dir .. "/extra.lua", 'return { word = "second" }\n')
    assert.truthy(answers(server.port, "/extra", "second"), "an edit of the new file was not seen")
  end)

  it("reloads every worker, keeping their keep-alive connections", function()
    local server = support.start(app, { "--workers", "4" })
    local conns, pids = {}, {}
    for i = 1, 32 do
      conns[i] = helpers.connect(server.port)
      assert.equal("one", conns[i]:request("GET", "/v").body)
    end
    for _, pid in ipairs(server:workers()) do pids[pid] = true end
    write(app, app_source("all"))
    assert.truthy(answers(server.port, "/v", "all"))
    -- Every connection opened before the edit, whichever worker holds it,
    -- is still open and soon answers with the new code.
    for i, c in ipairs(conns) do
      assert.truthy(helpers.eventually(function()
        return c:request("GET", "/v").body == "all"
      end), "connection " .. i .. " kept the old code")
      c:close()
    end
    for _, pid in ipairs(server:workers()) do
      assert.truthy(pids[pid], "a worker was replaced instead of reloaded")
    end
  end)

  it("closes the states it replaces: 40 reloads leave private memory where it was", function()
    -- Under AddressSanitizer freed memory waits in a quarantine before
    -- reuse; without one, a sanitized build measures the same thing.
    local asan = os.getenv("ASAN_OPTIONS")
    stdlib.setenv("ASAN_OPTIONS", (asan and asan .. ":" or "") .. "quarantine_size_mb=0")
    local server = support.start(app)
    stdlib.setenv("ASAN_OPTIONS", asan)
    local master, worker = server.pid, server:workers()[1]
    -- The first reloads touch code paths for the first time and grow the
    -- allocators' caches.
    for i = 1, 20 do
      write(app, app_source("warm" .. i))
      assert.truthy(answers(server.port, "/v", "warm" .. i))
    end
    local before = rss_anon_kb(master) + rss_anon_kb(worker)
    for i = 1, 40 do
      write(app, app_source("r" .. i))
      assert.truthy(answers(server.port, "/v", "r" .. i))
    end
    local after = rss_anon_kb(master) + rss_anon_kb(worker)
    -- A state left open costs over 100 KiB in each process: 40 of them
    -- would be 8 MiB or more; a sanitized build grows by about 1 MiB.
    assert.is_true(after - before < 3072,
                   ("private memory grew from %d to %d KiB"):format(before, after))
  end)

  it("names a stuck handler of replaced code as such, not by the new routes", function()
    local spin = 'app:get("/spin", function(req, res) local n = 0 while true do n = n + 1 end end)'
    write(app, app_source("one", spin))
    local server = support.start(app, { "--handler-timeout", "1" })
    local c = helpers.connect(server.port)
    c:send(helpers.build_request("GET", "/spin"))
    -- The master reloads; the spinning worker cannot.
    write(app, app_source("two"))
    assert.truthy(helpers.eventually(function()
      return server:stderr():find("master: reloaded", 1, true)
    end), server:stderr())
    assert.truthy(helpers.eventually(function()
      return server:stderr():find("has been running a handler of code since reloaded", 1, true)
    end, 10), server:stderr())
    c:close()
    assert.truthy(answers(server.port, "/v", "two"))
  end)

  it("waits --watch-delay after the last change before reloading", function()
    -- 2 s, so that a busy machine's pauses stay well inside it.
    local server = support.start(app, { "--watch-delay", "2" })
    local t0 = helpers.now()
    write(app, app_source("later"))
    helpers.nap(0.5) -- a quarter of the delay: no reload yet
    assert.equal("one", select(2, get(server.port, "/v")))
    assert.truthy(answers(server.port, "/v", "later", 10), "never reloaded")
    assert.is_true(helpers.now() - t0 >= 2)
  end)

  it("reloads on SIGHUP, and only then with --no-watch", function()
    local server = support.start(app, { "--no-watch" })
    write(app, app_source("hup"))
    helpers.nap(0.3) -- six debounce delays: a watcher would have reloaded
    assert.equal("one", select(2, get(server.port, "/v")))
    signal.kill(server.pid, signal.SIGHUP)
    assert.truthy(answers(server.port, "/v", "hup"))
  end)
end)
