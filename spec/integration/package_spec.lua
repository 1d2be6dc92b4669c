-- Installing moonport: `cmake --install` into a scratch prefix, and the
-- Debian package `cpack -G DEB` makes, unpacked into a throw-away root with
-- dpkg -x. Each tree's binary serves an installed example app with its Lua
-- library found relative to itself (server/lua/vm.c), moved or not, and
-- refuses to start without it rather than reach for the checkout's. The
-- manual page lists what --help lists, word for word. As root on a
-- machine whose PID 1 is systemd, the package is also installed for real
-- (dpkg -i), its unit started and reloaded, then purged; elsewhere that
-- test is pending with the reason. Everything made is removed.
--
-- $MOONPORT_BUILD is the build folder (CTest sets it), which cmake
-- --install and cpack read.

local helpers = require("spec.helpers")
local support = require("spec.support.server")
local process = require("spec.support.process")
local unistd = require("posix.unistd")
local stat = require("posix.sys.stat")

local build = os.getenv("MOONPORT_BUILD")
if build == nil or build == "" then
  build = helpers.root .. "/build"
end

-- Runs argv to completion (bounded); raises with its output unless it
-- exits 0. Returns stdout.
local function must(argv, opts)
  local code, out, err = process.command(argv, opts)
  if code ~= 0 then
    error(("%s exited %d: %s %s"):format(table.concat(argv, " "), code,
      helpers.shorten(out, 2000), helpers.shorten(err, 2000)), 2)
  end
  return out
end

local function exists(path)
  return stat.stat(path) ~= nil
end

local function executable(path)
  return unistd.access(path, "x") == 0
end

local function on_path(name)
  return process.command({ "sh", "-c", "command -v " .. name }) == 0
end

-- The files under dir, as paths relative to it, sorted.
local function tree(dir)
  local out = must({ "find", ".", "-type", "f" }, { cwd = dir })
  local files = {}
  for line in out:gmatch("[^\n]+") do files[#files + 1] = line:sub(3) end
  table.sort(files)
  return files
end

-- Serves app with the binary bin and checks the reference API answers.
local function serves_api(bin, app)
  local server = support.start(app, {}, { bin = bin })
  local status, _, body = helpers.request(server.port, "GET", "/health")
  assert.equal(200, status)
  assert.same({ ok = true }, helpers.json(body))
  status, _, body = helpers.request(server.port, "GET", "/users/42")
  assert.equal(200, status)
  assert.same({ id = 42, name = "user-42" }, helpers.json(body))
  return server
end

-- An app that answers where require found moonport and resty.core.
local WHERE_APP = [[
local app = require("moonport").app()
app:get("/where", function(req, res)
  res:json({ moonport = package.searchpath("moonport", package.path),
             resty = package.searchpath("resty.core", package.path),
             lrucache = require("resty.lrucache").new ~= nil })
end)
return app
]]

-- The options as --help prints them, one line each.
local function help_lines(bin)
  local out = must({ bin, "--help" })
  local lines = {}
  for line in out:gmatch("[^\n]+") do
    if line:match("^  %-%-") then lines[#lines + 1] = line end
  end
  return lines
end

-- The options of a manual page's OPTIONS section, formatted as --help
-- formats them (config.c: "  %-30s %s"), roff escapes undone.
local function man_option_lines(roff)
  local function plain(s)
    return (s:gsub("\\%-", "-"):gsub("\\e", "\\"):gsub("\\&", ""))
  end
  local section = assert(roff:match("\n%.SH OPTIONS\n(.-)\n%.SH "),
    "the page has no OPTIONS section")
  local lines = {}
  for head, text in section:gmatch("%.TP\n([^\n]+)\n([^\n]+)") do
    local name, arg = head:match("^\\fB(.-)\\fR \\fI(.-)\\fR$")
    if not name then name = assert(head:match("^\\fB(.-)\\fR$"), head) end
    local left = plain(name) .. (arg and " " .. plain(arg) or "")
    lines[#lines + 1] = ("  %-30s %s"):format(left, plain(text))
  end
  return lines
end

describe("cmake --install", function()
  local scratch, prefix

  setup(function()
    scratch = helpers.scratch_dir()
    prefix = scratch .. "/prefix"
    must({ "cmake", "--install", build, "--prefix", prefix }, { timeout = 120 })
  end)

  teardown(function()
    if scratch then helpers.remove_dir(scratch) end
  end)

  it("puts the binary, the library, the manual page and the examples under the prefix", function()
    assert.is_true(executable(prefix .. "/bin/moonport"))
    assert.same(tree(helpers.root .. "/lua/moonport"),
      tree(prefix .. "/share/lua/5.1/moonport"))
    assert.same(tree(helpers.root .. "/lua/resty"),
      tree(prefix .. "/share/moonport/lua/resty"))
    assert.same(tree(helpers.root .. "/scripts"),
      tree(prefix .. "/share/doc/moonport/examples"))
    assert.is_true(exists(prefix .. "/share/man/man1/moonport.1.gz"))
    -- What only the Debian package installs stays out.
    assert.is_false(exists(prefix .. "/etc"))
    assert.is_false(exists(prefix .. "/lib"))
  end)

  it("serves an installed example with the library found beside the binary", function()
    serves_api(prefix .. "/bin/moonport", prefix .. "/share/doc/moonport/examples/api.lua")
  end)

  it("loads moonport and the resty.* modules from the installed tree", function()
    local app = scratch .. "/where.lua"
    helpers.write_file(app, WHERE_APP)
    local server = support.start(app, {}, { bin = prefix .. "/bin/moonport" })
    local status, _, body = helpers.request(server.port, "GET", "/where")
    assert.equal(200, status)
    assert.same({
      moonport = prefix .. "/share/lua/5.1/moonport/init.lua",
      resty = prefix .. "/share/moonport/lua/resty/core.lua",
      lrucache = true,
    }, helpers.json(body))
  end)

  it("works moved elsewhere as a whole", function()
    local moved = scratch .. "/moved"
    assert(os.rename(prefix, moved))
    support.defer(function() assert(os.rename(moved, prefix)) end)
    serves_api(moved .. "/bin/moonport", moved .. "/share/doc/moonport/examples/api.lua")
  end)

  it("refuses to start without its library, saying where it looked", function()
    local lib = prefix .. "/share/lua/5.1/moonport"
    assert(os.rename(lib, lib .. ".gone"))
    support.defer(function() assert(os.rename(lib .. ".gone", lib)) end)
    local code, out, err = process.command({ prefix .. "/bin/moonport", "--check",
      prefix .. "/share/doc/moonport/examples/hello.lua" })
    assert.equal(1, code)
    assert.equal("", out)
    assert.equal("moonport: cannot find its Lua library: no moonport/init.lua in "
      .. prefix .. "/share/lua/5.1 (installed) nor in " .. prefix
      .. "/lua (a build folder at the top of a checkout)\n", err)
  end)

  it("has a manual page listing every option --help lists, with the same text", function()
    local bin = prefix .. "/bin/moonport"
    local roff = must({ "gzip", "-dc", prefix .. "/share/man/man1/moonport.1.gz" })
    local help = help_lines(bin)
    assert.is_true(#help > 40, "--help lists " .. #help .. " options")
    assert.same(help, man_option_lines(roff))
    assert.equal(roff, must({ bin, "--help-man" }))
    -- The hidden option that prints the page is not an option of the page.
    assert.is_nil(roff:find("help\\-man", 1, true))
  end)

  it("has a manual page man renders without a warning", function()
    if not on_path("man") then
      pending("man is not installed (Debian's man-db, in .ci/packages-test): not rendered")
      return
    end
    local page = prefix .. "/share/man/man1/moonport.1.gz"
    local code, out, err = process.command({ "man", "--warnings", "-l", page },
      { env = { MANWIDTH = "200", MANPAGER = "cat", PAGER = "cat" } })
    assert.equal(0, code)
    assert.equal("", err)
    out = out:gsub(".\b", "")
    for _, line in ipairs(help_lines(prefix .. "/bin/moonport")) do
      local name = line:match("^  (%-%-[%w-]+)")
      assert.truthy(out:find("\n       " .. name, 1, true), name .. " is not in man's page")
    end
    assert.truthy(out:find("SIGUSR1", 1, true))
  end)
end)

describe("the Debian package", function()
  local scratch, deb, root

  setup(function()
    scratch = helpers.scratch_dir()
    must({ "cpack", "-G", "DEB", "--config", build .. "/CPackConfig.cmake",
           "-B", scratch .. "/out" }, { timeout = 240 })
    local found = must({ "find", scratch .. "/out", "-maxdepth", "1", "-name", "*.deb" })
    deb = assert(found:match("^([^\n]+%.deb)\n$"), "not one .deb: " .. found)
    root = scratch .. "/root"
    must({ "dpkg-deb", "-x", deb, root })
  end)

  teardown(function()
    if scratch then helpers.remove_dir(scratch) end
  end)

  local function field(name)
    return must({ "dpkg-deb", "-f", deb, name }):gsub("\n$", "")
  end

  it("depends on the package of every shared library the binary needs, and adduser", function()
    local depends = field("Depends")
    local names = {}
    for name in depends:gsub("%b()", ""):gmatch("[^,|%s]+") do names[name] = true end
    assert.truthy(names.adduser, depends)
    local needed = 0
    local dynamic = must({ "objdump", "-p", root .. "/usr/bin/moonport" })
    -- The library of this machine's architecture (libc6's libm.so.6, not
    -- libc6-i386's).
    local multiarch = must({ "dpkg-architecture", "-qDEB_HOST_MULTIARCH" }):gsub("\n", "")
    for soname in dynamic:gmatch("NEEDED%s+(%S+)") do
      needed = needed + 1
      local _, owners = process.command({ "dpkg", "-S", "*/" .. multiarch .. "/" .. soname })
      local owner = owners:match("([%w][%w.+-]*)[:%w]*: %S+/" .. soname:gsub("%p", "%%%0") .. "\n")
      assert.truthy(owner, "no package owns " .. soname)
      assert.truthy(names[owner], soname .. " comes with " .. owner .. ", not in Depends: " .. depends)
    end
    assert.is_true(needed >= 8, "the binary needs " .. needed .. " libraries")
  end)

  it("creates the moonport system user, and keeps /etc's files as conffiles", function()
    local control = scratch .. "/control"
    must({ "dpkg-deb", "-e", deb, control })
    local postinst = helpers.read_file(control .. "/postinst")
    assert.matches("adduser %-%-system %-%-group .-%-%-quiet moonport\n", postinst)
    assert.is_true(executable(control .. "/postinst"))
    must({ "sh", "-n", control .. "/postinst" })
    must({ "sh", "-n", control .. "/prerm" })
    must({ "sh", "-n", control .. "/postrm" })
    local conffiles = {}
    for line in helpers.read_file(control .. "/conffiles"):gmatch("[^\n]+") do
      conffiles[#conffiles + 1] = line
      assert.is_true(exists(root .. line), line .. " is not in the package")
    end
    table.sort(conffiles)
    assert.same({ "/etc/default/moonport", "/etc/logrotate.d/moonport", "/etc/moonport/app.lua" },
      conffiles)
  end)

  it("unpacked anywhere, serves /etc/moonport/app.lua with the library found beside the binary", function()
    serves_api(root .. "/usr/bin/moonport", root .. "/etc/moonport/app.lua")
    assert.is_true(exists(root .. "/usr/share/lua/5.1/moonport/init.lua"))
    assert.is_true(exists(root .. "/usr/share/man/man1/moonport.1.gz"))
    assert.is_true(exists(root .. "/usr/share/doc/moonport/examples/webapp.lua"))
  end)

  it("takes the options /etc/default/moonport gives the unit", function()
    local opts = helpers.read_file(root .. "/etc/default/moonport"):match('\nMOONPORT_OPTS="([^"]*)"')
    assert.truthy(opts)
    assert.matches("--error-log /var/log/moonport/error.log", opts, 1, true)
    assert.matches("--access-log /var/log/moonport/access.log", opts, 1, true)
    local argv = { root .. "/usr/bin/moonport" }
    for word in opts:gsub("/var/log/moonport", scratch):gmatch("%S+") do argv[#argv + 1] = word end
    argv[#argv + 1] = "--check"
    argv[#argv + 1] = root .. "/etc/moonport/app.lua"
    assert.matches(": ok, 5 routes\n", must(argv))
  end)

  it("has a unit that runs /etc/moonport/app.lua as moonport, reloads with SIGHUP, follows upgrades by its pid file, restarts, hardened", function()
    local unit = helpers.read_file(root .. "/lib/systemd/system/moonport.service")
    local set = {}
    for key, value in unit:gmatch("\n(%u%w+)=([^\n]*)") do set[key] = value end
    assert.equal("/usr/bin/moonport --pid-file /run/moonport/moonport.pid $MOONPORT_OPTS /etc/moonport/app.lua",
      set.ExecStart)
    assert.equal("/run/moonport/moonport.pid", set.PIDFile)
    assert.equal("moonport", set.RuntimeDirectory)
    assert.equal("-/etc/default/moonport", set.EnvironmentFile)
    assert.equal("moonport", set.User)
    assert.equal("/bin/kill -HUP $MAINPID", set.ExecReload)
    assert.equal("on-failure", set.Restart)
    assert.equal("moonport", set.LogsDirectory)
    assert.equal("yes", set.NoNewPrivileges)
    assert.equal("strict", set.ProtectSystem)
    assert.equal("yes", set.PrivateTmp)
    assert.equal("yes", set.ProtectHome)
    assert.equal("multi-user.target", set.WantedBy)
    if not on_path("systemd-analyze") then
      pending("systemd-analyze is not installed (Debian's systemd): the unit was not verified")
      return
    end
    -- Verified with ExecStart pointing into the unpacked root, since
    -- /usr/bin/moonport is not installed here.
    local copy = scratch .. "/moonport.service"
    helpers.write_file(copy, (unit:gsub("/usr/bin/moonport", root .. "/usr/bin/moonport")))
    local code, out, err = process.command({ "systemd-analyze", "verify", "--man=no", copy })
    assert.equal(0, code, out .. err)
    assert.equal("", err)
    code, out, err = process.command({ "systemd-analyze", "security", "--offline=yes",
      "--threshold=40", copy })
    assert.equal(0, code, "exposure past 4.0: " .. out .. err)
  end)

  it("has a logrotate configuration for /var/log/moonport that reopens the logs with SIGUSR1", function()
    local conf = root .. "/etc/logrotate.d/moonport"
    local text = helpers.read_file(conf)
    assert.matches("^[^\n]*\n[^\n]*\n/var/log/moonport/%*%.log {\n", text)
    assert.matches("systemctl kill --kill-who=main --signal=USR1 moonport.service", text, 1, true)
    if not on_path("logrotate") then
      pending("logrotate is not installed: its configuration was not parsed")
      return
    end
    local code, out, err = process.command({ "logrotate", "--debug", "--state",
      scratch .. "/logrotate.state", conf })
    assert.equal(0, code)
    assert.is_nil((out .. err):find("error", 1, true), out .. err)
  end)

  it("installs with dpkg -i, and systemd serves, reloads and stops it", function()
    local pid1 = io.open("/proc/1/comm") and helpers.read_file("/proc/1/comm") or ""
    if unistd.geteuid() ~= 0 or pid1 ~= "systemd\n" or not exists("/run/systemd/system") then
      pending("needs root on a machine whose PID 1 is systemd (here: uid "
        .. unistd.geteuid() .. ", PID 1 " .. pid1:gsub("\n", "") .. "): the package was "
        .. "unpacked and its binary run above instead")
      return
    end
    if process.command({ "dpkg-query", "-W", "moonport" }) == 0 then
      pending("a moonport package is installed on this machine already: left alone")
      return
    end
    local had_user = process.command({ "getent", "passwd", "moonport" }) == 0
    support.defer(function()
      process.command({ "systemctl", "stop", "moonport.service" }, { timeout = 60 })
      must({ "dpkg", "--purge", "moonport" }, { timeout = 120 })
      if not had_user then
        process.command({ "deluser", "--system", "moonport" })
        process.command({ "delgroup", "--system", "moonport" })
      end
      process.command({ "systemctl", "reset-failed", "moonport.service" })
      assert.is_false(exists("/lib/systemd/system/moonport.service"))
      assert.is_false(exists("/etc/moonport"))
    end)
    must({ "dpkg", "-i", deb }, { timeout = 120 })
    local port = process.free_port()
    local defaults = helpers.read_file("/etc/default/moonport")
    helpers.write_file("/etc/default/moonport",
      (defaults:gsub("127%.0%.0%.1:8080", "127.0.0.1:" .. port)))
    must({ "systemctl", "restart", "moonport.service" }, { timeout = 60 })
    process.wait_port(port, 20)
    local status = helpers.request(port, "GET", "/health")
    assert.equal(200, status)
    local main = tonumber((must({ "systemctl", "show", "-p", "MainPID", "--value", "moonport.service" })))
    assert.is_true(main > 0)
    local owner = must({ "ps", "-o", "user=", "-p", tostring(main) }):gsub("%s", "")
    assert.equal("moonport", owner)
    must({ "systemctl", "reload", "moonport.service" }, { timeout = 60 })
    assert.truthy(helpers.eventually(function()
      local ok, log = pcall(helpers.read_file, "/var/log/moonport/error.log")
      return ok and log:find("(SIGHUP): 5 routes", 1, true)
    end, 10), "no reload in /var/log/moonport/error.log")
    assert.equal(200, (helpers.request(port, "GET", "/health")))
    assert.equal(main, tonumber((must({ "systemctl", "show", "-p", "MainPID", "--value", "moonport.service" }))))
  end)
end)
