-- The command line: startup line, --version, --help, --check, bad options,
-- broken apps and signals.
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local signal = require("posix.signal")

local function lines(s)
  local out = {}
  for line in s:gmatch("[^\n]+") do out[#out + 1] = line end
  return out
end

describe("command line", function()
  describe("startup", function()
    it("prints exactly one listening line with the real port and route count", function()
      local server = support.start("spec/fixtures/two_routes.lua")
      assert.is_true(server.port > 0, "port 0 printed instead of the bound port")
      assert.equal("127.0.0.1", server.host)
      assert.equal(2, server.routes)
      assert.matches("two_routes.lua", server.from, 1, true)
      local status, _, body = helpers.request(server.port, "GET", "/alpha")
      assert.equal(200, status)
      assert.equal("alpha", body)
      assert.equal("beta 5", select(3, helpers.request(server.port, "POST", "/beta/5", nil, "")))
      server:stop()
      assert.same({ server.line }, lines(server:stdout()))
    end)

    it("prints the same version as --version", function()
      local server = support.start("scripts/hello.lua")
      server:stop()
      local code, out = helpers.run({ "--version" })
      assert.equal(0, code)
      assert.matches(server.version, out, 1, true)
    end)

    it("runs two servers side by side on different free ports", function()
      local a = support.start("scripts/hello.lua")
      local b = support.start("scripts/hello.lua")
      assert.are_not.equal(a.port, b.port)
      assert.equal(200, (helpers.request(a.port, "GET", "/hello")))
      assert.equal(200, (helpers.request(b.port, "GET", "/hello")))
    end)
  end)

  describe("signals", function()
    it("exits 0 on SIGTERM", function()
      local server = support.start("scripts/hello.lua")
      assert.equal(200, (helpers.request(server.port, "GET", "/hello")))
      assert.equal(0, server:stop(signal.SIGTERM))
    end)

    it("exits 0 on SIGINT", function()
      local server = support.start("scripts/hello.lua")
      assert.equal(200, (helpers.request(server.port, "GET", "/hello")))
      assert.equal(0, server:stop(signal.SIGINT))
    end)

    it("exits 0 on SIGTERM with an idle keep-alive connection open", function()
      local server = support.start("scripts/hello.lua")
      local conn = helpers.connect(server.port)
      support.defer(function() conn:close() end)
      assert.equal(200, conn:request("GET", "/hello").status)
      assert.equal(0, server:stop(signal.SIGTERM))
      -- The server's exit closes the connection.
      assert.is_true(conn:wait_eof(5))
    end)

    it("stops listening after SIGTERM", function()
      local server = support.start("scripts/hello.lua")
      server:stop(signal.SIGTERM)
      local ok = pcall(helpers.connect, server.port, 1)
      assert.is_false(ok, "port still accepts connections after exit")
    end)
  end)

  describe("--version and --help", function()
    it("--version prints a version and exits 0", function()
      local code, out = helpers.run({ "--version" })
      assert.equal(0, code)
      assert.matches("%d+%.%d+", out)
      assert.matches("moonport", out)
    end)

    it("--help prints usage and exits 0", function()
      local code, out = helpers.run({ "--help" })
      assert.equal(0, code)
      assert.matches("--listen", out, 1, true)
      assert.matches("--max-body-size", out, 1, true)
    end)

    it("--help lists the options of README's table, each with README's default", function()
      local code, out = helpers.run({ "--help" })
      assert.equal(0, code)
      local help = {}
      for line in out:gmatch("[^\n]+") do
        local name = line:match("^  (%-%-[%w-]+)")
        if name then help[name] = line:match("%(default ([^,)]+)[,)]") or "" end
      end
      local f = assert(io.open(helpers.root .. "/README.md"))
      local readme = f:read("*a")
      f:close()
      local section = readme:match("\n## Command line\n(.-)\n## ")
      assert.truthy(section, "README.md has no Command line section")
      local documented = {}
      for name, default in section:gmatch("\n| `(%-%-[%w-]+)[^`]*` |%s*([^|]-)%s*|") do
        -- A default in backquotes is a value; "off", "stderr" or nothing
        -- say what happens without the option, which --help leaves out.
        documented[name] = default:match("^`(.*)`$") or ""
      end
      assert.truthy(next(documented), "no options table in README.md's Command line section")
      for name, default in pairs(documented) do
        assert.equal(default, help[name], name .. ": README.md's default, --help's")
      end
      for name in pairs(help) do
        assert.truthy(documented[name], name .. " is in --help and not in README.md's table")
      end
    end)
  end)

  describe("bad options", function()
    it("names an unknown option and exits 2", function()
      local code, out, err = helpers.run({ "--no-such-option", "scripts/hello.lua" })
      assert.equal(2, code)
      assert.matches("--no-such-option", err, 1, true)
      assert.equal("", out)
    end)

    for _, case in ipairs({
      { "--max-body-size", "abc" },
      { "--max-body-size", "-5" },
      { "--max-header-size", "12x" },
      { "--max-headers", "" },
      { "--idle-timeout", "soon" },
      { "--listen", "127.0.0.1" },
      { "--listen", "127.0.0.1:99999" },
    }) do
      it(("rejects %s %q with exit 2, naming the option"):format(case[1], case[2]), function()
        local code, _, err = helpers.run({ case[1], case[2], "scripts/hello.lua" })
        assert.equal(2, code)
        assert.matches(case[1]:sub(3), err, 1, true)
      end)
    end

    it("exits 2 for an option missing its value", function()
      local code, _, err = helpers.run({ "scripts/hello.lua", "--max-body-size" })
      assert.equal(2, code)
      assert.matches("max-body-size", err, 1, true)
    end)
  end)

  describe("broken apps", function()
    it("exits 1 naming a missing app file", function()
      local code, out, err = helpers.run({ "--listen", "127.0.0.1:0", "spec/fixtures/does_not_exist.lua" })
      assert.equal(1, code)
      assert.equal("", out)
      assert.matches("spec/fixtures/does_not_exist.lua: cannot open", err, 1, true)
      assert.equal(1, #lines(err))
    end)

    it("exits 1 with file:line: for a syntax error", function()
      local code, out, err = helpers.run({ "--listen", "127.0.0.1:0", "spec/fixtures/syntax_error.lua" })
      assert.equal(1, code)
      assert.equal("", out)
      assert.matches("syntax_error.lua:5: ", err, 1, true)
      assert.equal(1, #lines(err), "want one line, got:\n" .. err)
    end)

    it("exits 1 with file:line: for an error raised while loading", function()
      local code, out, err = helpers.run({ "--listen", "127.0.0.1:0", "spec/fixtures/load_error.lua" })
      assert.equal(1, code)
      assert.equal("", out)
      assert.matches("load_error.lua:5: ", err, 1, true)
      assert.matches("load failure on purpose", err, 1, true)
    end)
  end)

  describe("--check", function()
    it("lists the routes of scripts/api.lua and exits 0", function()
      local code, out, err = helpers.run({ "--check", "scripts/api.lua" })
      assert.equal(0, code, "stderr: " .. err)
      assert.matches("GET%s+/users/:id", out)
      assert.matches("POST%s+/add", out)
      assert.matches("GET%s+/health", out)
    end)

    it("lists exactly the routes of a two-route app", function()
      local code, out = helpers.run({ "--check", "spec/fixtures/two_routes.lua" })
      assert.equal(0, code)
      assert.matches("GET%s+/alpha", out)
      assert.matches("POST%s+/beta/:id", out)
      local routes = 0
      for _, line in ipairs(lines(out)) do
        if line:match("%u+%s+/") then routes = routes + 1 end
      end
      assert.equal(2, routes, "route lines in:\n" .. out)
    end)

    it("reports file:line: for a syntax error and exits 1", function()
      local code, out, err = helpers.run({ "--check", "spec/fixtures/syntax_error.lua" })
      assert.equal(1, code)
      assert.matches("syntax_error.lua:5: ", out .. err, 1, true)
    end)

    it("exits 1 naming a missing file", function()
      local code, out, err = helpers.run({ "--check", "spec/fixtures/does_not_exist.lua" })
      assert.equal(1, code)
      assert.matches("does_not_exist.lua", out .. err, 1, true)
    end)
  end)
end)
