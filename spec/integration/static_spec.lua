-- Static files served by the core (app:static, res:send_file, the mock's
-- __files) over real sockets: validators and every conditional, ranges
-- (single, several, suffix, open-ended, unsatisfiable, If-Range), HEAD,
-- directory index and the 301 to the slash, precompressed siblings,
-- Cache-Control, types, dotfiles, traversal in every encoding, a 64 MiB
-- file whole, pipelined requests around a file, and that a file never
-- enters Lua.
local helpers = require("spec.helpers")
local support = require("spec.support.server")

-- The app and its files live in a scratch directory, made before the
-- server starts and removed after.
local dir = os.tmpname()
os.remove(dir)
local APP = dir .. "/app.lua"
local BIG = 64 * 1024 * 1024

local function sh(cmd)
  local ok = os.execute(cmd)
  assert(ok == true or ok == 0, "failed: " .. cmd)
end

local function write(path, text)
  local f = assert(io.open(dir .. "/" .. path, "wb"))
  f:write(text)
  f:close()
end

local function read(path) return helpers.read_file(dir .. "/" .. path) end

local function sha256(text)
  local tmp = os.tmpname()
  local f = assert(io.open(tmp, "wb"))
  f:write(text)
  f:close()
  local p = assert(io.popen("sha256sum " .. tmp))
  local sum = p:read("*l"):match("^(%x+)")
  p:close()
  os.remove(tmp)
  return sum
end

setup(function()
  sh("mkdir -p " .. dir .. "/public/sub " .. dir .. "/public/.git " .. dir .. "/public/plain")
  write("secret.txt", "TOP SECRET\n")
  write("public/hello.txt", "hello world\n")
  write("public/index.html", "<h1>home</h1>\n")
  write("public/sub/index.html", "<h1>sub</h1>\n")
  write("public/plain/note.txt", "no index here\n")
  write("public/.env", "PASSWORD=x\n")
  write("public/.git/config", "[core]\n")
  write("public/app.css", "body { color: red }\n")
  sh("gzip -c " .. dir .. "/public/app.css > " .. dir .. "/public/app.css.gz")
  write("public/app.js", "console.log('plain')\n")
  write("public/app.js.gz", "GZ-BYTES")
  write("public/app.js.br", "BR-BYTES")
  for _, name in ipairs({ "data.json", "logo.svg", "font.woff2", "page.htm", "mod.wasm",
                          "pic.png", "noext", "x.unknownext" }) do
    write("public/" .. name, "x")
  end
  write("public/%2e%2e", "a file named %2e%2e\n")
  sh("ln -s " .. dir .. "/secret.txt " .. dir .. "/public/link-out")
  sh("ln -s " .. dir .. " " .. dir .. "/public/dir-out")
  sh("ln -s hello.txt " .. dir .. "/public/link-in")
  sh("head -c " .. BIG .. " /dev/urandom > " .. dir .. "/public/big.bin")
  write("app.lua", [[
local app = require("moonport").app()
-- A relative root: relative to this file's directory.
app:static("/assets", "public", { cache_control = "public, max-age=60" })
app:static("/bare", "public", { index = false, dotfiles = true, precompressed = false })
app:get("/assets/api", function(req, res) res:send("a route under the mount") end)
app:get("/hello", function(req, res) res:send("hi") end)
app:get("/send/*name", function(req, res)
  local ok, err = res:send_file(req.params.name, { root = "]] .. dir .. [[/public", index = true })
  if not ok then res:status(404):send("send_file: " .. err) end
end)
app:get("/send-path", function(req, res)
  res:status(201):header("X-Own", "yes")
  assert(res:send_file("]] .. dir .. [[/public/hello.txt"))
end)
return app
]])
end)

teardown(function() helpers.remove_dir(dir) end)

describe("static files", function()
  local server = support.serve(APP, { "--stats" })

  local function get(path, headers, method)
    return helpers.request(server.port, method or "GET", path, headers)
  end

  describe("a file", function()
    it("comes with its length, type, validators, Accept-Ranges and the mount's Cache-Control", function()
      local status, h, body = get("/assets/hello.txt")
      assert.equal(200, status)
      assert.equal("hello world\n", body)
      assert.equal("12", h["content-length"])
      assert.equal("text/plain; charset=utf-8", h["content-type"])
      assert.matches('^"%x+%-c"$', h["etag"])
      assert.matches("^%a%a%a, %d%d %a%a%a %d%d%d%d %d%d:%d%d:%d%d GMT$", h["last-modified"])
      assert.equal("bytes", h["accept-ranges"])
      assert.equal("public, max-age=60", h["cache-control"])
      assert.equal("Accept-Encoding", h["vary"])
    end)

    it("has no Cache-Control or Vary where the mount sets none", function()
      local status, h = get("/bare/hello.txt")
      assert.equal(200, status)
      assert.is_nil(h["cache-control"])
      assert.is_nil(h["vary"])
    end)

    it("gets its Content-Type from its extension", function()
      local want = {
        ["data.json"] = "application/json", ["logo.svg"] = "image/svg+xml",
        ["font.woff2"] = "font/woff2", ["page.htm"] = "text/html; charset=utf-8",
        ["mod.wasm"] = "application/wasm", ["pic.png"] = "image/png",
        ["app.css"] = "text/css; charset=utf-8", ["app.js"] = "text/javascript; charset=utf-8",
        ["noext"] = "application/octet-stream", ["x.unknownext"] = "application/octet-stream",
      }
      for name, type in pairs(want) do
        local status, h = get("/bare/" .. name)
        assert.equal(200, status, name)
        assert.equal(type, h["content-type"], name)
      end
    end)

    it("answers HEAD with the GET's head and no body", function()
      local conn = helpers.connect(server.port)
      local resp = conn:request("HEAD", "/assets/hello.txt")
      assert.equal(200, resp.status)
      assert.equal("12", resp.headers["content-length"])
      assert.truthy(resp.headers["etag"])
      -- The next response on the connection starts right after the head.
      local after = conn:request("GET", "/hello")
      conn:close()
      assert.equal("hi", after.body)
    end)

    it("follows a symbolic link that stays inside the root", function()
      local status, _, body = get("/assets/link-in")
      assert.equal(200, status)
      assert.equal("hello world\n", body)
    end)

    it("is served whole when 64 MiB, with the right sha256", function()
      local conn = helpers.connect(server.port)
      local resp = conn:request("GET", "/assets/big.bin", nil, nil, { timeout = 60 })
      conn:close()
      assert.equal(200, resp.status)
      assert.equal(tostring(BIG), resp.headers["content-length"])
      assert.equal(BIG, #resp.body)
      assert.equal(sha256(read("public/big.bin")), sha256(resp.body))
    end)

    it("never enters Lua: no route counts it", function()
      local function routed()
        local n = 0
        for _, r in ipairs(helpers.stats(server.port).routes) do n = n + r.count end
        return n
      end
      local before = routed()
      for _ = 1, 5 do assert.equal(200, (get("/assets/hello.txt"))) end
      assert.equal(304, (get("/assets/", { ["If-None-Match"] = "*" })))
      assert.equal(before, routed())
    end)
  end)

  describe("conditionals", function()
    local etag, modified
    before_each(function()
      local _, h = get("/assets/hello.txt")
      etag, modified = h["etag"], h["last-modified"]
    end)

    it("answer a matching If-None-Match with 304, validators and no body", function()
      local status, h, body = get("/assets/hello.txt", { ["If-None-Match"] = etag })
      assert.equal(304, status)
      assert.equal("", body)
      assert.equal(etag, h["etag"])
      assert.equal(modified, h["last-modified"])
      assert.equal("public, max-age=60", h["cache-control"])
      assert.is_nil(h["content-length"])
    end)

    it("match an If-None-Match list, a weak tag and *", function()
      assert.equal(304, (get("/assets/hello.txt", { ["If-None-Match"] = '"nope", W/' .. etag })))
      assert.equal(304, (get("/assets/hello.txt", { ["If-None-Match"] = "*" })))
      assert.equal(200, (get("/assets/hello.txt", { ["If-None-Match"] = '"nope"' })))
    end)

    it("answer If-Modified-Since at or after the file's time with 304", function()
      assert.equal(304, (get("/assets/hello.txt", { ["If-Modified-Since"] = modified })))
      assert.equal(304, (get("/assets/hello.txt", { ["If-Modified-Since"] = "Fri, 01 Jan 2100 00:00:00 GMT" })))
      assert.equal(200, (get("/assets/hello.txt", { ["If-Modified-Since"] = "Thu, 01 Jan 1970 00:00:00 GMT" })))
      assert.equal(200, (get("/assets/hello.txt", { ["If-Modified-Since"] = "not a date" })))
    end)

    it("let If-None-Match decide over If-Modified-Since", function()
      assert.equal(200, (get("/assets/hello.txt", {
        ["If-None-Match"] = '"nope"', ["If-Modified-Since"] = modified })))
    end)

    it("answer HEAD too", function()
      local conn = helpers.connect(server.port)
      local resp = conn:request("HEAD", "/assets/hello.txt", { ["If-None-Match"] = etag })
      conn:close()
      assert.equal(304, resp.status)
    end)
  end)

  describe("ranges", function()
    it("answer one range with 206 and Content-Range", function()
      local status, h, body = get("/assets/hello.txt", { Range = "bytes=0-4" })
      assert.equal(206, status)
      assert.equal("hello", body)
      assert.equal("bytes 0-4/12", h["content-range"])
      assert.equal("5", h["content-length"])
      assert.equal("text/plain; charset=utf-8", h["content-type"])
    end)

    it("take a suffix and an open-ended range", function()
      local status, h, body = get("/assets/hello.txt", { Range = "bytes=-6" })
      assert.equal(206, status)
      assert.equal("world\n", body)
      assert.equal("bytes 6-11/12", h["content-range"])
      status, h, body = get("/assets/hello.txt", { Range = "bytes=6-" })
      assert.equal(206, status)
      assert.equal("world\n", body)
      assert.equal("bytes 6-11/12", h["content-range"])
    end)

    it("cut a range at the end of the file", function()
      local status, h, body = get("/assets/hello.txt", { Range = "bytes=10-500" })
      assert.equal(206, status)
      assert.equal("d\n", body)
      assert.equal("bytes 10-11/12", h["content-range"])
    end)

    it("answer several ranges with multipart/byteranges", function()
      local status, h, body = get("/assets/hello.txt", { Range = "bytes=0-1,6-7,-1" })
      assert.equal(206, status)
      local boundary = h["content-type"]:match("^multipart/byteranges; boundary=(.+)$")
      assert.truthy(boundary)
      assert.equal(tostring(#body), h["content-length"])
      local parts = {}
      for range, data in body:gmatch("Content%-Range: bytes ([%d%-/]+)\r\n\r\n(.-)\r\n%-%-" .. boundary:gsub("%-", "%%-")) do
        parts[#parts + 1] = { range, data }
      end
      assert.same({ { "0-1/12", "he" }, { "6-7/12", "wo" }, { "11-11/12", "\n" } }, parts)
      assert.truthy(body:find("^%-%-" .. boundary:gsub("%-", "%%-") .. "\r\n"))
      assert.truthy(body:find("\r\n%-%-" .. boundary:gsub("%-", "%%-") .. "%-%-\r\n$"))
      assert.truthy(body:find("Content-Type: text/plain; charset=utf-8", 1, true))
    end)

    it("answer a range past the end with 416 and Content-Range: bytes */size", function()
      local status, h = get("/assets/hello.txt", { Range = "bytes=100-" })
      assert.equal(416, status)
      assert.equal("bytes */12", h["content-range"])
      assert.equal(416, (get("/assets/hello.txt", { Range = "bytes=12-20,50-60" })))
    end)

    it("are ignored when malformed, or of another unit", function()
      for _, v in ipairs({ "bytes=5-1", "bytes=x-", "items=0-1", "bytes=" }) do
        local status, _, body = get("/assets/hello.txt", { Range = v })
        assert.equal(200, status, v)
        assert.equal("hello world\n", body, v)
      end
    end)

    it("apply with a matching If-Range (tag or date), not with a stale one", function()
      local _, h = get("/assets/hello.txt")
      assert.equal(206, (get("/assets/hello.txt", { Range = "bytes=0-0", ["If-Range"] = h["etag"] })))
      assert.equal(206, (get("/assets/hello.txt", { Range = "bytes=0-0", ["If-Range"] = h["last-modified"] })))
      local status, _, body = get("/assets/hello.txt", { Range = "bytes=0-0", ["If-Range"] = '"stale"' })
      assert.equal(200, status)
      assert.equal("hello world\n", body)
      assert.equal(200, (get("/assets/hello.txt", { Range = "bytes=0-0", ["If-Range"] = "W/" .. h["etag"] })))
    end)

    it("reach the middle of a big file", function()
      local status, h, body = get("/assets/big.bin", { Range = "bytes=1000000-1000099" })
      assert.equal(206, status)
      assert.equal("bytes 1000000-1000099/" .. BIG, h["content-range"])
      assert.equal(read("public/big.bin"):sub(1000001, 1000100), body)
    end)
  end)

  describe("directories", function()
    it("serve their index.html", function()
      local status, h, body = get("/assets/")
      assert.equal(200, status)
      assert.equal("<h1>home</h1>\n", body)
      assert.equal("text/html; charset=utf-8", h["content-type"])
      assert.equal("<h1>sub</h1>\n", select(3, get("/assets/sub/")))
    end)

    it("asked without their slash get a 301 to it, the query kept", function()
      local status, h = get("/assets/sub")
      assert.equal(301, status)
      assert.equal("/assets/sub/", h["location"])
      status, h = get("/assets?x=1")
      assert.equal(301, status)
      assert.equal("/assets/?x=1", h["location"])
    end)

    it("have no index with index = false, nor one that is missing", function()
      assert.equal(404, (get("/bare/")))
      assert.equal(404, (get("/assets/plain/")))
    end)
  end)

  describe("precompressed siblings", function()
    it("serve NAME.gz to a client that takes gzip, with Content-Encoding and Vary", function()
      local status, h, body = get("/assets/app.css", { ["Accept-Encoding"] = "gzip, deflate" })
      assert.equal(200, status)
      assert.equal("gzip", h["content-encoding"])
      assert.equal("Accept-Encoding", h["vary"])
      assert.equal("text/css; charset=utf-8", h["content-type"])
      assert.equal(read("public/app.css.gz"), body)
    end)

    it("prefer NAME.br when the client takes br", function()
      local status, h, body = get("/assets/app.js", { ["Accept-Encoding"] = "gzip, br" })
      assert.equal(200, status)
      assert.equal("br", h["content-encoding"])
      assert.equal("BR-BYTES", body)
      status, h, body = get("/assets/app.js", { ["Accept-Encoding"] = "gzip, br;q=0" })
      assert.equal("gzip", h["content-encoding"])
      assert.equal("GZ-BYTES", body)
    end)

    it("are not served to a client that does not take them, nor for a Range", function()
      for _, headers in ipairs({ {}, { ["Accept-Encoding"] = "gzip;q=0" },
                                 { ["Accept-Encoding"] = "identity" } }) do
        local status, h, body = get("/assets/app.css", headers)
        assert.equal(200, status)
        assert.is_nil(h["content-encoding"])
        assert.equal("body { color: red }\n", body)
        assert.equal("Accept-Encoding", h["vary"])
      end
      local status, h, body = get("/assets/app.css", { ["Accept-Encoding"] = "gzip", Range = "bytes=0-3" })
      assert.equal(206, status)
      assert.is_nil(h["content-encoding"])
      assert.equal("body", body)
    end)

    it("are not served where the mount turned them off", function()
      local _, h, body = get("/bare/app.css", { ["Accept-Encoding"] = "gzip" })
      assert.is_nil(h["content-encoding"])
      assert.equal("body { color: red }\n", body)
    end)
  end)

  describe("names", function()
    it("starting with a dot are refused by default, served where allowed", function()
      assert.equal(404, (get("/assets/.env")))
      assert.equal(404, (get("/assets/.git/config")))
      assert.equal(404, (get("/assets/%2eenv")))
      local status, _, body = get("/bare/.env")
      assert.equal(200, status)
      assert.equal("PASSWORD=x\n", body)
    end)

    it("that lead out of the root get 404, in every encoding", function()
      local attempts = {
        "/assets/../secret.txt", "/assets/%2e%2e/secret.txt", "/assets/%2E%2e/secret.txt",
        "/assets/..%2fsecret.txt", "/assets/%2e%2e%2fsecret.txt", "/assets/..%2Fsecret.txt",
        "/assets/sub/../../secret.txt", "/assets/sub/%2e%2e/%2e%2e/secret.txt",
        "/assets//../secret.txt", "/assets/..%5csecret.txt", "/assets/%5c..%5csecret.txt",
        "/assets/sub%2f..%2f..%2fsecret.txt", "/assets/%2e%2e%5csecret.txt",
        "/assets/link-out", "/assets/dir-out/secret.txt", "/bare/dir-out/secret.txt",
        "/assets/hello.txt%00", "/assets/%00../secret.txt", "/assets/hello.txt%00.png",
        "/assets/./hello.txt", "/assets/%2e/hello.txt",
      }
      for _, path in ipairs(attempts) do
        local status, _, body = get(path)
        assert.equal(404, status, path)
        assert.is_nil(body:find("SECRET", 1, true), path)
      end
    end)

    it("with a raw backslash never reach a file", function()
      local conn = helpers.connect(server.port)
      conn:send("GET /assets/..\\secret.txt HTTP/1.1\r\nHost: x\r\n\r\n")
      local resp = conn:read_response()
      conn:close()
      assert.is_true(resp == nil or resp.status == 404 or resp.status == 400)
      assert.is_nil(resp and resp.body:find("SECRET", 1, true))
    end)

    it("are decoded once: %252e%252e is a name, not a climb", function()
      local status, _, body = get("/assets/%252e%252e")
      assert.equal(200, status)
      assert.equal("a file named %2e%2e\n", body)
      assert.equal(404, (get("/assets/%252e%252e/secret.txt")))
    end)

    it("without a file go on to the routes", function()
      local status, _, body = get("/assets/api")
      assert.equal(200, status)
      assert.equal("a route under the mount", body)
      assert.equal(404, (get("/assets/missing.txt")))
    end)

    it("of other methods go to the routes", function()
      assert.equal(404, (get("/assets/hello.txt", nil, "POST")))
    end)
  end)

  describe("on a keep-alive connection", function()
    it("answers pipelined requests around files in order", function()
      local conn = helpers.connect(server.port)
      conn:send(table.concat({
        helpers.build_request("GET", "/assets/hello.txt"),
        helpers.build_request("GET", "/hello"),
        helpers.build_request("GET", "/assets/big.bin", { Range = "bytes=0-9,20-29" }),
        helpers.build_request("HEAD", "/assets/app.css"),
        helpers.build_request("GET", "/assets/big.bin"),
        helpers.build_request("GET", "/assets/hello.txt", { ["If-None-Match"] = "*" }),
        helpers.build_request("GET", "/assets/sub"),
        helpers.build_request("GET", "/hello"),
      }))
      local r1 = conn:read_response()
      local r2 = conn:read_response()
      local r3 = conn:read_response()
      local r4 = conn:read_response({ head = true })
      local r5 = conn:read_response({ timeout = 60 })
      local r6 = conn:read_response()
      local r7 = conn:read_response()
      local r8 = conn:read_response()
      conn:close()
      assert.equal("hello world\n", r1.body)
      assert.equal("hi", r2.body)
      assert.equal(206, r3.status)
      assert.equal(200, r4.status)
      assert.equal("20", r4.headers["content-length"])
      assert.equal(BIG, #r5.body)
      assert.equal(304, r6.status)
      assert.equal(301, r7.status)
      assert.equal("hi", r8.body)
    end)
  end)

  describe("res:send_file", function()
    it("sends a file confined to a root, with validators and ranges", function()
      local status, h, body = get("/send/hello.txt", { Range = "bytes=0-4" })
      assert.equal(206, status)
      assert.equal("hello", body)
      assert.truthy(h["etag"])
      assert.equal("<h1>sub</h1>\n", select(3, get("/send/sub/")))
    end)

    it("says what it did not send", function()
      local status, _, body = get("/send/missing")
      assert.equal(404, status)
      assert.equal("send_file: not found", body)
      status, _, body = get("/send/%2e%2e/secret.txt")
      assert.equal(404, status)
      assert.equal("send_file: refused", body)
      status, _, body = get("/send/link-out")
      assert.equal("send_file: refused", body)
    end)

    it("keeps the handler's status and headers, with the file as the body", function()
      local status, h, body = get("/send-path", { ["If-None-Match"] = "*", Range = "bytes=0-1" })
      assert.equal(201, status)
      assert.equal("yes", h["x-own"])
      assert.equal("hello world\n", body)
      assert.is_nil(h["etag"])
    end)
  end)
end)

describe("the mock's __files", function()
  local mock = dir .. "-mock"
  setup(function()
    sh("mkdir -p " .. mock .. "/mappings " .. mock .. "/__files/docs")
    local f = assert(io.open(mock .. "/__files/docs/report.txt", "wb"))
    f:write("0123456789")
    f:close()
  end)
  teardown(function() helpers.remove_dir(mock) end)
  local server = support.serve(mock, nil, { mock = true })

  it("are served by the core: validators, conditionals, ranges, types", function()
    local status, h, body = helpers.request(server.port, "GET", "/docs/report.txt")
    assert.equal(200, status)
    assert.equal("0123456789", body)
    assert.equal("text/plain; charset=utf-8", h["content-type"])
    local etag = h["etag"]
    assert.truthy(etag)
    assert.equal(304, (helpers.request(server.port, "GET", "/docs/report.txt", { ["If-None-Match"] = etag })))
    status, h, body = helpers.request(server.port, "GET", "/docs/report.txt", { Range = "bytes=-3" })
    assert.equal(206, status)
    assert.equal("789", body)
    assert.equal("bytes 7-9/10", h["content-range"])
  end)

  it("refuse names that lead out", function()
    local status, _, body = helpers.request(server.port, "GET", "/docs/%2e%2e/%2e%2e/mappings")
    assert.equal(404, status)
    assert.is_nil(body:find("0123456789", 1, true))
  end)
end)
