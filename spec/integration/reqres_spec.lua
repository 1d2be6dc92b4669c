-- Requests and responses over real sockets (spec/fixtures/reqres.lua):
-- cookies as a real client jar (Python's http.cookiejar) takes and sends
-- them, signed cookies, forms, multipart uploads from curl -F (a 100 MiB
-- file streamed to a checksum with the worker's memory flat), multipart
-- limits, redirects, res:json and res:html with a status, and req:accepts.
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local process = require("spec.support.process")

local json = helpers.json

-- The Set-Cookie fields of a response, in order.
local function set_cookies(resp)
  local list = {}
  for _, h in ipairs(resp.header_list) do
    if h[1]:lower() == "set-cookie" then list[#list + 1] = h[2] end
  end
  return list
end

-- s percent-encoded as a query value.
local function escape(s)
  return (s:gsub("[^%w%-%._~]", function(c) return ("%%%02X"):format(c:byte()) end))
end

-- Runs argv to completion; raises unless it exits 0. Returns stdout.
local function run(argv, timeout)
  local code, out, err = process.command(argv, { timeout = timeout or 60 })
  assert(code == 0, table.concat(argv, " ") .. " exited " .. code .. ": " .. err)
  return out
end

-- The resident memory of pid, in KiB.
local function rss_kib(pid)
  local f = assert(io.open("/proc/" .. pid .. "/status"))
  local text = f:read("*a")
  f:close()
  return tonumber(text:match("VmRSS:%s*(%d+)"))
end

-- A file of n random bytes in a fresh temporary folder, removed when the
-- test ends. Returns its path.
local function random_file(n, name)
  local dir = run({ "mktemp", "-d" }):gsub("%s+$", "")
  support.defer(function() run({ "rm", "-rf", dir }) end)
  local path = dir .. "/" .. (name or "upload.bin")
  run({ "sh", "-c", ("head -c %d /dev/urandom > '%s'"):format(n, path) })
  return path
end

describe("requests and responses", function()
  local server = support.serve("spec/fixtures/reqres.lua", { "--max-body-size", "200m" })

  local function get(target, headers)
    return helpers.request(server.port, "GET", target, headers)
  end

  local function curl(args)
    local argv = { "curl", "-sS", "--max-time", "60" }
    for _, a in ipairs(args) do argv[#argv + 1] = a end
    return run(argv, 90)
  end

  describe("cookies", function()
    it("writes one Set-Cookie field per cookie, with its attributes", function()
      local status, _, _, resp = get("/cookies/set?domain=example.test")
      assert.equal(200, status)
      assert.same({
        "plain=hello",
        "spaced=a%20b%3Bc%2Cd%22e%5Cf%25g",
        "scoped=1; Domain=example.test; Path=/cookies; Max-Age=3600; HttpOnly; SameSite=Lax",
        "dated=2; Path=/; Expires=Fri, 01 Jan 2100 00:00:00 GMT; Secure",
        "gone=; Path=/; Max-Age=0",
      }, set_cookies(resp))
    end)

    it("are taken, scoped and sent back by a real client cookie jar", function()
      local out = run({ "/usr/bin/python3", "spec/support/cookie_jar.py", tostring(server.port),
        "www.example.test", "/cookies/pre", "/echo", "/cookies/set?domain=example.test",
        "/cookies/echo", "/echo", "other.test:/cookies/echo" })
      local result = json(out)
      local jar = {}
      for _, c in ipairs(result.cookies) do jar[c.name] = c end
      -- Max-Age=0 removed the cookie /cookies/pre had set.
      assert.equal("gone=soon", result.gets[2].cookie)
      assert.is_nil(jar.gone)
      assert.equal("hello", jar.plain.value)
      assert.equal("/cookies", jar.plain.path) -- the default path: the request's folder
      assert.equal(".example.test", jar.scoped.domain)
      assert.is_true(jar.scoped.domain_specified)
      assert.equal("/cookies", jar.scoped.path)
      assert.is_true(jar.scoped.http_only)
      assert.equal("Lax", jar.scoped.same_site)
      assert.is_true(math.abs(jar.scoped.expires - (os.time() + 3600)) < 120)
      assert.is_true(jar.dated.secure)
      assert.equal(4102444800, jar.dated.expires)
      assert.is_false(jar.dated.http_only)
      -- Sent back under /cookies: everything but the Secure cookie (plain http).
      local echo = result.gets[4].body
      assert.same({ plain = "hello", spaced = 'a b;c,d"e\\f%g', scoped = "1" }, echo.cookies)
      assert.equal("hello", echo.one)
      -- Outside the path, and to another host: nothing.
      assert.same({}, result.gets[5].body.cookies)
      assert.same({}, result.gets[6].body.cookies)
    end)

    it("are read from the Cookie header: the first of a name wins, quotes dropped", function()
      local _, _, body = get("/cookies/echo?name=b", { Cookie = 'a=1; b="x%20y" ; a=2;flag; =z' })
      assert.same({ cookies = { a = "1", b = "x y", flag = "" }, one = "x y" }, json(body))
      local _, _, none = get("/cookies/echo")
      assert.same({ cookies = {}, one = json("null") }, json(none))
    end)

    it("refuses names that are no token and attributes that would inject, and encodes values", function()
      local _, _, body, resp = get("/cookies/inject?what=value")
      assert.same({ ok = true, err = json("null") }, json(body))
      assert.same({ "v=x%0D%0ASet-Cookie:%20evil=1" }, set_cookies(resp))
      local errors = {
        name = "res:cookie: name must be a token (letters, digits and !#$%&'*+-.^_`|~)",
        path = "res:cookie: path must be a string without ';' or control bytes",
        domain = "res:cookie: domain must be a string without ';' or control bytes",
        option = "res:cookie: unknown option 'httponly'",
      }
      for what, message in pairs(errors) do
        local _, _, b, r = get("/cookies/inject?what=" .. what)
        assert.same({ ok = false, err = message }, json(b))
        assert.same({}, set_cookies(r))
      end
    end)

    it("signed, verify as sent and fail when tampered with", function()
      local _, _, _, resp = get("/signed/set?uid=u.42")
      local field = set_cookies(resp)[1]
      local value = field:match("^uid=([^;]*); Path=/; HttpOnly$")
      assert.truthy(value, field)
      local status, _, body = get("/signed/who", { Cookie = "uid=" .. value })
      assert.equal(200, status)
      assert.same({ uid = "u.42" }, json(body))
      -- Another value with the same signature, a changed signature, none.
      local mac = value:match("%.([^.]*)$")
      local forged = {
        "u.43." .. mac,
        value:sub(1, -2) .. (value:sub(-1) == "A" and "B" or "A"),
        "u.42",
        "",
      }
      for _, v in ipairs(forged) do
        local s, _, b = get("/signed/who", { Cookie = "uid=" .. v })
        assert.equal(401, s, v)
        assert.same({ error = "bad signature" }, json(b))
      end
    end)
  end)

  describe("forms", function()
    local function post_form(body, content_type)
      return helpers.request(server.port, "POST", "/form",
        { ["Content-Type"] = content_type or "application/x-www-form-urlencoded" }, body)
    end

    it("decode '+' and %XX and give repeated names as lists", function()
      local status, _, body = post_form("a=1&b=x+y%21&a=2&flag&c=%E2%82%AC&a=3&e=a%3Db%26c")
      assert.equal(200, status)
      assert.same({ a = { "1", "2", "3" }, b = "x y!", flag = "", c = "€", e = "a=b&c" }, json(body))
    end)

    it("read what curl --data-urlencode sends", function()
      local out = curl({ "--data-urlencode", "name=José & co+1", "--data-urlencode", "tag=a b",
        "--data-urlencode", "tag=100%", "http://127.0.0.1:" .. server.port .. "/form" })
      assert.same({ name = "José & co+1", tag = { "a b", "100%" } }, json(out))
    end)

    it("take a charset parameter, and answer nil and why for other types", function()
      local status, _, body = post_form("a=1", "Application/X-WWW-Form-Urlencoded; charset=UTF-8")
      assert.equal(200, status)
      assert.same({ a = "1" }, json(body))
      status, _, body = post_form("{}", "application/json")
      assert.equal(415, status)
      assert.same({ error = "not a form: Content-Type is 'application/json', "
        .. "not application/x-www-form-urlencoded" }, json(body))
      status, _, body = helpers.request(server.port, "POST", "/form", nil, "a=1")
      assert.equal(415, status)
      assert.same({ error = "not a form: Content-Type is missing, not application/x-www-form-urlencoded" },
        json(body))
    end)
  end)

  describe("multipart uploads", function()
    local function upload(path, args)
      local argv = {}
      for _, a in ipairs(args) do argv[#argv + 1] = a end
      argv[#argv + 1] = "http://127.0.0.1:" .. server.port .. path
      return json(curl(argv))
    end

    it("give each part's name, filename, type, headers and data (curl -F)", function()
      local file = random_file(300000, "photo one.jpg")
      local sum = run({ "sha256sum", file }):match("^(%x+)")
      for _, read in ipairs({ "", "?read=body", "?read=1000" }) do
        local result = upload("/upload" .. read, { "-F", "title=Hello, world",
          "-F", "photo=@" .. file .. ";type=image/jpeg", "-F", "empty=" })
        local parts = result.parts
        assert.equal(3, #parts)
        assert.equal("title", parts[1].name)
        assert.equal(json("null"), parts[1].filename)
        assert.equal("text/plain", parts[1].content_type)
        assert.equal(12, parts[1].length)
        assert.equal("photo", parts[2].name)
        assert.equal("photo one.jpg", parts[2].filename)
        assert.equal("image/jpeg", parts[2].content_type)
        assert.equal("image/jpeg", parts[2].headers["content-type"])
        assert.equal('form-data; name="photo"; filename="photo one.jpg"',
          parts[2].headers["content-disposition"])
        assert.equal(300000, parts[2].length)
        assert.equal(sum, parts[2].sha256)
        if read == "?read=1000" then assert.equal(1000, parts[2].largest) end
        assert.equal(0, parts[3].length)
      end
    end)

    it("skip the parts a handler leaves unread", function()
      local result = upload("/upload?read=skip", { "-F", "a=1", "-F", "b=@CMakeLists.txt", "-F", "c=3" })
      assert.equal(3, #result.parts)
      assert.equal("c", result.parts[3].name)
    end)

    it("stream a 100 MiB file to its checksum with the worker's memory flat", function()
      -- Under AddressSanitizer freed memory waits in a quarantine before
      -- reuse; without one, a sanitized build measures the same thing.
      local asan = os.getenv("ASAN_OPTIONS")
      local own = support.start("spec/fixtures/reqres.lua", { "--max-body-size", "200m" },
        { env = { ASAN_OPTIONS = (asan and asan .. ":" or "") .. "quarantine_size_mb=0" } })
      local function upload_own(path, args)
        local argv = {}
        for _, a in ipairs(args) do argv[#argv + 1] = a end
        argv[#argv + 1] = "http://127.0.0.1:" .. own.port .. path
        return json(curl(argv))
      end
      local file = random_file(100 * 1024 * 1024)
      local sum = run({ "sha256sum", file }):match("^(%x+)")
      local worker = own:workers()[1]
      -- A small upload first, so that what is measured is the big one.
      upload_own("/upload", { "-F", "warm=@CMakeLists.txt" })
      local before = rss_kib(worker)
      local result = upload_own("/upload", { "-F", "file=@" .. file .. ";type=application/octet-stream",
        "-F", "after=1" })
      local after = rss_kib(worker)
      local part = result.parts[1]
      assert.equal(104857600, part.length)
      assert.equal(sum, part.sha256)
      assert.equal("1", result.parts[2].name == "after" and "1" or nil)
      -- Pieces as they arrived, never the whole file.
      assert.is_true(part.pieces > 100, part.pieces)
      assert.is_true(part.largest <= 1024 * 1024, part.largest)
      assert.is_true(after - before < 20 * 1024, ("RSS grew from %d to %d KiB"):format(before, after))
    end)

    it("count against --request-memory-limit only when a handler holds a file whole", function()
      local file = random_file(16 * 1024 * 1024)
      local worker = server:workers()[1]
      local code, out = process.command({ "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}",
        "-F", "file=@" .. file, "http://127.0.0.1:" .. server.port .. "/upload?read=body" },
        { timeout = 60 })
      -- The 500 comes before the rest of the body was sent, and the
      -- connection closes: curl may see the reset (56) after it.
      assert.is_true(code == 0 or code == 56, "curl exited " .. code)
      assert.equal("500", out)
      assert.matches("request memory limit exceeded", server:stderr(), 1, true)
      -- The worker collected the handler's pieces and goes on serving.
      assert.same({ worker }, server:workers())
      -- The same file, streamed: fine.
      local result = upload("/upload", { "-F", "file=@" .. file })
      assert.equal(16 * 1024 * 1024, result.parts[1].length)
    end)

    it("stop at max_parts and max_header_size with 413", function()
      local url = "http://127.0.0.1:" .. server.port .. "/upload/limited"
      local out = curl({ "-w", "\n%{http_code}", "-F", "a=1", "-F", "b=2", "-F", "c=3", "-F", "d=4", url })
      local body, code = out:match("^(.*)\n(%d+)$")
      assert.equal("413", code)
      assert.same({ error = "req:parts: more than 3 parts (max_parts)", parts = 3 }, json(body))
      out = curl({ "-w", "\n%{http_code}", "-F", "a=1", "-F", "b=1;filename=" .. ("x"):rep(300), url })
      body, code = out:match("^(.*)\n(%d+)$")
      assert.equal("413", code)
      assert.same({ error = "req:parts: a part's headers are larger than 256 bytes (max_header_size)",
        parts = 1 }, json(body))
    end)

    it("answer a malformed body with 400 and another type with 415", function()
      local function post(body, content_type)
        local status, _, b = helpers.request(server.port, "POST", "/upload",
          { ["Content-Type"] = content_type }, body)
        return status, json(b)
      end
      local status, body = post("--xyz\r\nContent-Disposition: form-data; name=a\r\n\r\nno end",
        "multipart/form-data; boundary=xyz")
      assert.equal(400, status)
      assert.same({ error = "req:parts: the body ended inside a part", parts = 0 }, body)
      status, body = post("--xyz\r\nno colon\r\n\r\nx\r\n--xyz--", "multipart/form-data; boundary=xyz")
      assert.equal(400, status)
      assert.same({ error = "req:parts: a part has a malformed header line", parts = 0 }, body)
      status, body = post("a=1", "application/x-www-form-urlencoded")
      assert.equal(415, status)
      assert.same({ error = "Content-Type is not multipart/form-data" }, body)
      status, body = post("--xyz--", "multipart/form-data")
      assert.equal(415, status)
      assert.same({ error = "multipart/form-data without a boundary" }, body)
    end)

    it("raise for bad options, whatever the request", function()
      local status, _, body = helpers.request(server.port, "POST", "/upload/bad-opts")
      assert.equal(200, status)
      assert.same({ ok = false, err = "req:parts: max_parts must be a positive integer" }, json(body))
    end)
  end)

  describe("redirects, JSON and HTML", function()
    it("redirect with 302 by default, or the status given, Location encoded", function()
      local status, headers, body = get("/redirect?to=" .. escape("/a b/%zz?x=é%25"))
      assert.equal(302, status)
      assert.equal("/a%20b/%25zz?x=%C3%A9%25", headers.location)
      assert.equal("Redirecting to /a%20b/%25zz?x=%C3%A9%25\n", body)
      for _, code in ipairs({ 301, 303, 307, 308 }) do
        local s, h = get("/redirect?to=https%3A%2F%2Fexample.com%2Fx&status=" .. code)
        assert.equal(code, s)
        assert.equal("https://example.com/x", h.location)
      end
      -- curl follows it.
      local out = run({ "curl", "-sS", "-L", "-o", "/dev/null", "-w", "%{url_effective}",
        "http://127.0.0.1:" .. server.port .. "/redirect?to=%2Fhtml" })
      assert.equal("http://127.0.0.1:" .. server.port .. "/html", out)
    end)

    it("refuse a URL with CR or LF, and a status outside 300..399", function()
      local _, _, body, resp = get("/redirect/bad")
      assert.same({ ok = false, err = "res:redirect: url must have no control bytes (CR, LF, ...)",
        ok2 = false, err2 = "res:redirect: status must be an integer, 300..399" }, json(body))
      assert.same({}, set_cookies(resp))
    end)

    it("send JSON with a status, or 200 without one", function()
      local status, headers, body = get("/json-status")
      assert.equal(201, status)
      assert.equal("application/json", headers["content-type"])
      assert.equal('{"created":true}', body)
      status, headers, body = get("/json-plain")
      assert.equal(200, status)
      assert.equal('{"plain":true}', body)
      status = get("/json-bad-status")
      assert.equal(500, status)
      assert.matches("res:json: status must be an integer, 200..599", server:stderr(), 1, true)
    end)

    it("send HTML, with a status when given", function()
      local status, headers, body = get("/html")
      assert.equal(200, status)
      assert.equal("text/html; charset=utf-8", headers["content-type"])
      assert.equal("<h1>hi</h1>", body)
      status, headers, body = get("/html?status=410")
      assert.equal(410, status)
      assert.equal("text/html; charset=utf-8", headers["content-type"])
      assert.equal("<p>gone</p>", body)
    end)
  end)

  describe("req:accepts", function()
    local function best(accept, offers)
      local _, _, body = get("/accepts?offers=" .. (offers or "json,html"),
        accept and { Accept = accept } or nil)
      return json(body)
    end

    it("picks the offer the Accept header prefers", function()
      assert.same({ best = "html", first = "html" }, best("text/html,application/xhtml+xml,*/*;q=0.8"))
      assert.same({ best = "json", first = "json" }, best("application/json, text/html;q=0.5"))
      assert.same({ best = "html", first = "html" }, best("text/*;q=0.9, application/json;q=0.5"))
      assert.same({ best = "json", first = "html" }, best(nil))
      assert.same({ best = json("null"), first = json("null") }, best("image/png"))
      assert.same({ best = "png", first = json("null") }, best("image/*", "json,png"))
      assert.same({ best = "text/csv", first = "html" }, best("text/csv, */*;q=0.1", "json,text/csv"))
    end)
  end)
end)

describe("uploads over --max-body-size", function()
  local server = support.serve("spec/fixtures/reqres.lua", {})

  it("get 413 from the core before the handler reads them", function()
    local file = random_file(2 * 1024 * 1024)
    local code, out = process.command({ "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}",
      "-F", "file=@" .. file, "http://127.0.0.1:" .. server.port .. "/upload" }, { timeout = 60 })
    assert.equal(0, code)
    assert.equal("413", out)
  end)
end)
