-- The mock server against hostile clients and web pages, over real
-- sockets: every file it reads stays inside DIR/__files (names with "..",
-- templated and percent-encoded names, symbolic links leading out, the
-- files served to a GET no stub matches, a Lua stub's file helpers), and
-- /__admin answers neither web pages of other origins nor Host names that
-- are not its own (DNS rebinding).
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local cjson = require("cjson.safe")

local SECRET = "TOP SECRET: outside __files"

local function sh(cmd)
  assert(os.execute(cmd) == 0, cmd)
end

local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

-- A WireMock root in a new directory:
--   secret.txt                      outside __files
--   __files-secret/x.txt            beside __files, its name a prefix
--   __files/ok.txt, nested/in.txt
--   __files/link-out.txt  -> ../secret.txt
--   __files/link-sibling  -> ../__files-secret/x.txt
--   __files/link-in.txt   -> ok.txt
--   helpers.lua                     a Lua stub using app:send_file / app:read_file
local function make_root()
  local dir = os.tmpname()
  os.remove(dir)
  sh("mkdir -p " .. dir .. "/mappings " .. dir .. "/__files/nested " .. dir .. "/__files-secret")
  write(dir .. "/secret.txt", SECRET)
  write(dir .. "/__files-secret/x.txt", SECRET)
  write(dir .. "/__files/ok.txt", "ok")
  write(dir .. "/__files/nested/in.txt", "nested")
  sh("ln -s ../secret.txt " .. dir .. "/__files/link-out.txt")
  sh("ln -s ../__files-secret/x.txt " .. dir .. "/__files/link-sibling")
  sh("ln -s ok.txt " .. dir .. "/__files/link-in.txt")
  write(dir .. "/mappings/files.json", cjson.encode({ mappings = {
    { request = { url_path = "/file/out" }, response = { bodyFileName = "../secret.txt" } },
    { request = { url_path = "/file/passwd" }, response = { bodyFileName = "../../../../../../etc/passwd" } },
    { request = { url_path = "/file/link-out" }, response = { bodyFileName = "link-out.txt" } },
    { request = { url_path = "/file/link-sibling" }, response = { bodyFileName = "link-sibling" } },
    { request = { url_path = "/file/link-in" }, response = { bodyFileName = "link-in.txt" } },
    { request = { url_path = "/file/nested" }, response = { bodyFileName = "nested/../nested/in.txt" } },
    { request = { url_path = "/file/named" },
      response = { bodyFileName = "{{request.query.name}}", transformers = { "response-template" } } },
  } }))
  write(dir .. "/helpers.lua", [[
return function(app)
  app:stub{ request = { url_path = "/helper/send" },
            response = function(req, res) app:send_file(res, req:query("name"), "text/plain") end }
  app:stub{ request = { url_path = "/helper/read" },
            response = function(req, res)
              local text, err = app:read_file(req:query("name"))
              res:send(text or ("refused: " .. err))
            end }
end
]])
  return dir
end

local function get(port, target, headers)
  local status, h, body = helpers.request(port, "GET", target, headers)
  return status, body, h
end

describe("mock files stay inside __files", function()
  local dir = make_root()
  local server = support.serve(dir, nil, { mock = true })
  teardown(function() helpers.remove_dir(dir) end)

  local function refused(target, want)
    local status, body = get(server.port, target)
    assert.equal(want or 403, status, target .. ": " .. body)
    assert.is_nil(body:find(SECRET, 1, true), target .. " served the secret")
    assert.is_nil(body:find("root:", 1, true), target .. " served /etc/passwd")
    return body
  end

  it("refuses a bodyFileName with '..' that leads out, and logs it", function()
    refused("/file/out")
    refused("/file/passwd")
    assert.truthy(server:stderr():find('refused, it leads outside', 1, true), server:stderr())
  end)

  it("refuses a templated name a client chose, percent-encoded or not", function()
    refused("/file/named?name=..%2Fsecret.txt")
    refused("/file/named?name=../__files-secret/x.txt")
    refused("/file/named?name=..%2F..%2F..%2F..%2F..%2Fetc%2Fpasswd")
    refused("/file/named?name=%2Fetc%2Fpasswd", 404) -- read as __files/etc/passwd
    assert.equal("ok", select(2, get(server.port, "/file/named?name=ok.txt")))
  end)

  it("refuses symbolic links that lead out, even to a directory whose name starts the same", function()
    refused("/file/link-out")
    refused("/file/link-sibling")
    assert.equal("ok", select(2, get(server.port, "/file/link-in")))
    assert.equal("nested", select(2, get(server.port, "/file/nested")))
  end)

  it("serves a GET no stub matches from __files only", function()
    for _, target in ipairs({ "/..%2Fsecret.txt", "/%2e%2e/secret.txt", "/link-out.txt",
                              "/link-sibling", "/nested/..%2F..%2Fsecret.txt" }) do
      refused(target, 404)
    end
    assert.equal("nested", select(2, get(server.port, "/nested%2Fin.txt")))
    assert.equal("ok", select(2, get(server.port, "/link-in.txt")))
  end)

  it("confines a Lua stub's file helpers the same way", function()
    refused("/helper/send?name=..%2Fsecret.txt")
    refused("/helper/send?name=link-out.txt")
    assert.equal("ok", select(2, get(server.port, "/helper/send?name=ok.txt")))
    local body = refused("/helper/read?name=..%2Fsecret.txt", 200)
    assert.truthy(body:find("^refused: "), body)
    assert.equal("nested", select(2, get(server.port, "/helper/read?name=nested/in.txt")))
  end)

  it("refuses the same names added through the admin API", function()
    local status = helpers.request(server.port, "POST", "/__admin/mappings", nil,
      '{"request":{"url":"/admin-out"},"response":{"bodyFileName":"../../../../../../etc/hostname"}}')
    assert.equal(201, status)
    refused("/admin-out")
  end)
end)

describe("mock /__admin against web pages", function()
  local server = support.serve("spec/fixtures/mock.lua")

  local EVIL = { Origin = "http://evil.test" }

  it("answers no request from a page of another origin, and gives it no CORS", function()
    local status, body, h = get(server.port, "/__admin/mappings", EVIL)
    assert.equal(403, status)
    assert.is_nil(h["access-control-allow-origin"])
    assert.truthy(body:find("--admin-cors", 1, true), body)
    -- A simple cross-origin POST (no preflight) adds nothing.
    local st, hh = helpers.request(server.port, "POST", "/__admin/mappings",
      { Origin = "http://evil.test", ["Content-Type"] = "text/plain" },
      '{"request":{"url":"/planted"},"response":{"body":"planted"}}')
    assert.equal(403, st)
    assert.is_nil(hh["access-control-allow-origin"])
    assert.equal(404, (get(server.port, "/planted")))
    -- Browsers say so with Sec-Fetch-Site too.
    assert.equal(403, (get(server.port, "/__admin/requests", { ["Sec-Fetch-Site"] = "cross-site" })))
    assert.equal(403, (get(server.port, "/__admin/requests", { Origin = "null" })))
  end)

  it("refuses preflights to /__admin, known paths or not", function()
    for _, path in ipairs({ "/__admin/mappings", "/__admin/reset", "/__admin/nothing" }) do
      local status, h = helpers.request(server.port, "OPTIONS", path, {
        Origin = "http://evil.test", ["Access-Control-Request-Method"] = "POST" })
      assert.equal(403, status, path)
      assert.is_nil(h["access-control-allow-origin"], path)
    end
  end)

  it("answers its own origin and clients that are not browsers", function()
    -- Browsers put the port in Host, and leave the default one out of Origin.
    local status, _, h = get(server.port, "/__admin/mappings",
      { Origin = "http://127.0.0.1:" .. server.port, Host = "127.0.0.1:" .. server.port })
    assert.equal(200, status)
    assert.is_nil(h["access-control-allow-origin"])
    assert.equal(200, (get(server.port, "/__admin/mappings", { Origin = "http://localhost", Host = "localhost:80" })))
    status, _, h = get(server.port, "/__admin/mappings")
    assert.equal(200, status)
    assert.is_nil(h["access-control-allow-origin"])
  end)

  it("answers only Host names of its own (DNS rebinding)", function()
    local status, body = get(server.port, "/__admin/mappings", { Host = "evil.test:" .. server.port })
    assert.equal(403, status)
    assert.truthy(body:find("--admin-host", 1, true), body)
    assert.equal(403, (get(server.port, "/__admin/mappings", { Host = "127.0.0.1.evil.test" })))
    for _, host in ipairs({ "localhost:" .. server.port, "127.0.0.1:" .. server.port, "127.1.2.3", "[::1]:" .. server.port, "LOCALHOST" }) do
      assert.equal(200, (get(server.port, "/__admin/mappings", { Host = host })), host)
    end
    assert.truthy(server:stderr():find("not Host evil.test", 1, true), server:stderr())
  end)

  it("keeps CORS for stubs", function()
    local status, _, h = get(server.port, "/path-only", EVIL)
    assert.equal(200, status)
    assert.equal("http://evil.test", h["access-control-allow-origin"])
    status, h = helpers.request(server.port, "OPTIONS", "/path-only", {
      Origin = "http://evil.test", ["Access-Control-Request-Method"] = "GET" })
    assert.equal(204, status)
    assert.equal("http://evil.test", h["access-control-allow-origin"])
  end)
end)

describe("mock /__admin options", function()
  it("--admin-cors lets other origins in, with CORS", function()
    local server = support.start("spec/fixtures/mock.lua", { "--admin-cors" })
    local status, _, h = get(server.port, "/__admin/mappings", { Origin = "http://app.test" })
    assert.equal(200, status)
    assert.equal("http://app.test", h["access-control-allow-origin"])
    status, h = helpers.request(server.port, "OPTIONS", "/__admin/mappings", {
      Origin = "http://app.test", ["Access-Control-Request-Method"] = "POST" })
    assert.equal(204, status)
    assert.equal("http://app.test", h["access-control-allow-origin"])
    -- The Host check stays.
    assert.equal(403, (get(server.port, "/__admin/mappings", { Host = "evil.test" })))
  end)

  it("--admin-host allows more Host names", function()
    local server = support.start("spec/fixtures/mock.lua", { "--admin-host", "mock.internal,Other.Test" })
    assert.equal(200, (get(server.port, "/__admin/mappings", { Host = "mock.internal:" .. server.port })))
    assert.equal(200, (get(server.port, "/__admin/mappings", { Host = "other.test" })))
    assert.equal(403, (get(server.port, "/__admin/mappings", { Host = "evil.test" })))
  end)
end)
