-- Templates in the real server: an app (spec/fixtures/template_app.lua)
-- renders template files from a scratch directory; the spec edits them
-- while the server runs and reads what it answers.
local helpers = require("spec.helpers")
local support = require("spec.support.server")

local write, scratch_dir, remove_dir = helpers.write_file, helpers.scratch_dir, helpers.remove_dir
local stats = helpers.stats

local read = helpers.read_file

local FIXTURE = read(helpers.resolve("spec/fixtures/template_app.lua"))

-- page.html in the version `v`.
local function page_source(v)
  return "<h1><%= title %> " .. v .. "</h1>\n<ul>\n<% for _, item in ipairs(items) do -%>\n"
    .. "<li><%= item %></li>\n<% end -%>\n</ul>\n"
end
local function page_html(v)
  return ("<h1>Fortunes %s</h1>\n<ul>\n<li>a &amp; b</li>\n<li>&lt;script&gt;</li>\n</ul>\n")
    :format(v)
end

local function get(port, path)
  local ok, status, headers, body = pcall(helpers.request, port, "GET", path)
  if not ok then return nil end
  return status, body, headers
end

-- Waits until GET path answers 200 with `want`; returns whether it did.
local function answers(port, path, want)
  return helpers.eventually(function()
    local status, body = get(port, path)
    return status == 200 and body == want
  end, 10)
end

describe("templates", function()
  local dir

  before_each(function()
    dir = scratch_dir()
    write(dir .. "/app.lua", FIXTURE)
    write(dir .. "/page.html", page_source("v1"))
    write(dir .. "/late.html", "late <%= n %>")
    write(dir .. "/oops.html", "<p>\n<%= user.name %>\n</p>")
  end)
  after_each(function() remove_dir(dir) end)

  it("serves a page rendered from a template file, its values escaped", function()
    local server = support.start(dir .. "/app.lua")
    local status, body, headers = get(server.port, "/page")
    assert.equal(200, status)
    assert.equal(page_html("v1"), body)
    assert.equal("text/html; charset=utf-8", headers["content-type"])
  end)

  it("serves an edit of the template file", function()
    local server = support.start(dir .. "/app.lua", { "--stats" })
    assert.equal(page_html("v1"), select(2, get(server.port, "/page")))
    write(dir .. "/page.html", page_source("v2"))
    assert.truthy(answers(server.port, "/page", page_html("v2")), "the edit was never served")
    assert.equal(1, stats(server.port).reload.reloads)
  end)

  it("keeps the old page when the template no longer compiles, and takes the fix", function()
    local server = support.start(dir .. "/app.lua", { "--workers", "2", "--stats" })
    write(dir .. "/page.html", "<h1>\n\n<%= title </h1>\n")
    assert.truthy(helpers.eventually(function()
      return stats(server.port).reload.failures == 1
    end, 10), "the failed reload was not reported")
    local err = stats(server.port).reload.last_error
    assert.truthy(err:find("page.html:3: '<%=' is not closed by '%>'", 1, true), err)
    assert.truthy(server:stderr():find("reload %(files changed%) failed: [^\n]*page%.html:3: "), server:stderr())
    for _ = 1, 10 do assert.equal(page_html("v1"), select(2, get(server.port, "/page"))) end
    -- Bad Lua in a block fails the same way, naming its line.
    write(dir .. "/page.html", "<h1>\n<% if then %>\n")
    assert.truthy(helpers.eventually(function()
      return stats(server.port).reload.failures == 2
    end, 10), "the second failed reload was not reported")
    err = stats(server.port).reload.last_error
    assert.truthy(err:find("page.html:2: ", 1, true), err)
    assert.equal(page_html("v1"), select(2, get(server.port, "/page")))
    write(dir .. "/page.html", page_source("fixed"))
    assert.truthy(answers(server.port, "/page", page_html("fixed")), "the fix was never served")
  end)

  it("watches a template a handler loads first", function()
    local server = support.start(dir .. "/app.lua")
    assert.truthy(answers(server.port, "/late", "late 1"))
    write(dir .. "/late.html", "later <%= n + 1 %>")
    assert.truthy(answers(server.port, "/late", "later 2"), "the edit was never served")
  end)

  it("names the template's file and line of an error while rendering", function()
    local server = support.start(dir .. "/app.lua", { "--debug" })
    local status, body = get(server.port, "/oops")
    assert.equal(500, status)
    assert.truthy(body:find("oops.html:2: attempt to index global 'user' (a nil value)", 1, true), body)
    assert.truthy(helpers.eventually(function()
      return server:stderr():find("oops.html:2: attempt to index global 'user'", 1, true)
    end), server:stderr())
  end)
end)
