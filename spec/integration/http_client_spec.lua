-- moonport.http against real servers on loopback: a second moonport as the
-- upstream (spec/fixtures/http_upstream.lua, with --stats to count its
-- accepts), a raw server for responses no real server sends
-- (spec/support/raw_http.py), openssl s_server -www for TLS with a
-- certificate made for the test, and tinyproxy as a forward proxy (with
-- Basic authentication, CONNECT allowed to the TLS server's port only).
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local process = require("spec.support.process")

local dir = helpers.scratch_dir()
local cert, key = dir .. "/cert.pem", dir .. "/key.pem"
assert(os.execute(("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
  .. "-nodes -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 "
  .. "-days 2 -keyout %s -out %s 2>/dev/null"):format(key, cert)))

local raw_port, tls_port
local raw = support.program(function()
  raw_port = process.free_port()
  return { "/usr/bin/python3", "spec/support/raw_http.py", tostring(raw_port) }
end, function(p) process.wait_port(raw_port, 10, p) end)
local tls = support.program(function()
  tls_port = process.free_port()
  return { "openssl", "s_server", "-accept", "127.0.0.1:" .. tls_port, "-cert", cert,
           "-key", key, "-www", "-quiet" }
end, function(p) process.wait_port(tls_port, 10, p) end)

local proxy_port
local proxy = support.program(function()
  proxy_port = process.free_port()
  local conf = dir .. "/tinyproxy.conf"
  local f = assert(io.open(conf, "w"))
  f:write(("Port %d\nListen 127.0.0.1\nTimeout 30\nAllow 127.0.0.1\nLogLevel Connect\n"
    .. "BasicAuth user s3cret\nConnectPort %d\n"):format(proxy_port, tls_port))
  f:close()
  return { "tinyproxy", "-d", "-c", conf }
end, function(p) process.wait_port(proxy_port, 10, p) end)

describe("moonport.http", function()
  local upstream, client
  setup(function()
    upstream = process.start("spec/fixtures/http_upstream.lua", { "--stats" })
    client = process.start("spec/fixtures/http_client.lua", nil,
      { env = { UPSTREAM = "http://127.0.0.1:" .. upstream.port } })
  end)
  teardown(function()
    if client then client:stop() end
    if upstream then upstream:stop() end
    helpers.remove_dir(dir)
  end)

  local function call(target)
    local status, _, body = helpers.request(client.port, "GET", target)
    return status, helpers.json(body)
  end

  local function echoed(target)
    local status, r = call(target)
    assert.equal(200, status, r.error)
    return r, helpers.json(r.body)
  end

  it("sends a GET with its headers and reads the answer's", function()
    local r, e = echoed("/call?q=a%20b")
    assert.equal(200, r.status)
    assert.equal("OK", r.reason)
    assert.equal("application/json", r.content_type)
    assert.equal("GET", e.method)
    assert.equal("/echo", e.path)
    assert.equal("q=a%20b", e.query)
    assert.equal("1", e.headers["x-test"])
    assert.equal("127.0.0.1:" .. upstream.port, e.headers.host)
    assert.equal("moonport", e.headers["user-agent"])
  end)

  it("sends every method with its body", function()
    for _, m in ipairs({ "POST", "PUT", "PATCH", "DELETE" }) do
      local _, e = echoed("/call?method=" .. m .. "&body=payload-" .. m)
      assert.equal(m, e.method)
      assert.equal("payload-" .. m, e.body)
    end
  end)

  it("sends JSON and decodes it", function()
    local _, r = call("/json")
    assert.same({ a = 1, list = { 1, 2 } }, helpers.json(r.sent))
    assert.equal("application/json", r.content_type)
  end)

  it("sends an iterator's body chunked", function()
    local _, e = echoed("/upload")
    assert.equal("part1,part2,part3,", e.body)
    assert.equal("chunked", e.headers["transfer-encoding"])
  end)

  it("reads a chunked answer", function()
    local _, r = call("/call?path=/chunked/5")
    assert.equal("piece1;piece2;piece3;piece4;piece5;", r.body)
  end)

  it("streams a body in pieces", function()
    for _, how in ipairs({ "stream", "body-false" }) do
      local status, r = call("/stream/100000?how=" .. how)
      assert.equal(200, status, how)
      assert.equal(100000, r.total, how)
      assert.is_true(r.pieces >= 100, how)
    end
  end)

  it("reuses its pooled connection for requests one after another", function()
    local function accepted()
      local _, _, body = helpers.request(upstream.port, "GET", "/__moonport/stats")
      return helpers.json(body).worker.connections.accepted
    end
    local before = accepted()
    local status = helpers.request(client.port, "GET", "/sequence/20")
    assert.equal(200, status)
    -- One connection for the 20 (or none, when the pool held one), and
    -- the stats request's own.
    assert.is_true(accepted() - before <= 2)
  end)

  it("serves other requests while 100 handlers wait on a slow upstream", function()
    local waiting = {}
    for i = 1, 100 do
      waiting[i] = helpers.connect(client.port)
      waiting[i]:send(helpers.build_request("GET", "/call?path=/slow/4000&timeout=20000"))
    end
    -- Answered while every one of the 100 still waits on the upstream.
    local r = echoed("/call")
    assert.equal(200, r.status)
    for i = 1, 100 do
      assert.is_false(waiting[i]:read_available(), "a slow request was answered first")
    end
    for i = 1, 100 do
      local resp = waiting[i]:read_response({ timeout = 30 })
      waiting[i]:close()
      assert.equal(200, resp.status)
    end
  end)

  it("closes the outbound connection when its client leaves", function()
    local function open_on_upstream()
      local _, _, body = helpers.request(upstream.port, "GET", "/__moonport/stats")
      -- Less the stats request's own connection.
      return helpers.json(body).worker.connections.open - 1
    end
    local before = open_on_upstream()
    local conn = helpers.connect(client.port)
    -- By name: a pool of its own, with no idle connection to take.
    conn:send(helpers.build_request("GET", "/fetch?timeout=30000&url=http://localhost:"
      .. upstream.port .. "/slow/20000"))
    assert.is_truthy(helpers.eventually(function() return open_on_upstream() > before end))
    conn:close()
    assert.is_truthy(helpers.eventually(function() return open_on_upstream() <= before end),
      "the outbound connection stayed open")
  end)

  it("times a slow answer out", function()
    local started = helpers.now()
    local status, r = call("/call?path=/slow/3000&timeout=200")
    assert.equal(502, status)
    assert.equal("timeout", r.error)
    assert.is_true(helpers.now() - started < 2.5)
  end)

  it("follows redirects only when asked", function()
    local _, r = call("/call?path=/redirect")
    assert.equal(302, r.status)
    local _, e = echoed("/call?path=/redirect&redirects=1")
    assert.equal("/echo", e.path)
    assert.equal("from=redirect", e.query)
    local _, post = echoed("/call?path=/see-other&method=POST&body=x&redirects=1")
    assert.equal("GET", post.method)
  end)

  it("reads HEAD and 204 answers without a body", function()
    local _, r = call("/call?path=/big/50&method=HEAD")
    assert.equal(200, r.status)
    assert.equal("", r.body)
    _, r = call("/call?path=/status/204")
    assert.equal(204, r.status)
    assert.equal("", r.body)
  end)

  it("reads an answer that ends with the connection, and skips 100 Continue", function()
    local base = "/fetch?url=http://127.0.0.1:" .. raw_port
    local _, r = call(base .. "/to-close")
    assert.equal("read until the close", r.body)
    _, r = call(base .. "/continue")
    assert.equal(200, r.status)
    assert.equal("final", r.body)
  end)

  it("refuses malformed answers and cut bodies with an error, not a hang", function()
    local base = "/fetch?timeout=5000&url=http://127.0.0.1:" .. raw_port
    for path, why in pairs({
      ["/obs-fold"] = "obsolete line folding", ["/bare-cr"] = "bare CR",
      ["/two-lengths"] = "Content-Length", ["/cut-body"] = "closed",
      ["/cut-chunked"] = "closed",
    }) do
      local status, r = call(base .. path)
      assert.equal(502, status, path)
      assert.is_truthy(r.error:find(why, 1, true), path .. ": " .. tostring(r.error))
    end
    -- A reset: named as such when it ends a read, "closed" when it came
    -- between two (the socket already knew).
    local status, r = call(base .. "/reset-body")
    assert.equal(502, status)
    assert.is_true(r.error == "connection reset by peer" or r.error == "closed", r.error)
  end)

  it("sends an idempotent request again when its pooled connection closes under it", function()
    local url = "http://127.0.0.1:" .. raw_port .. "/keep-then-drop"
    local status, _, body = helpers.request(client.port, "GET", "/twice?url=" .. url)
    assert.equal(200, status, body)
    assert.equal("kept,kept", body)
    -- A POST may have been acted on: the failure is the caller's to judge.
    -- (Its first request may already take the connection the GET left.)
    status, _, body = helpers.request(client.port, "GET", "/twice?method=POST&body=b&url=" .. url)
    assert.equal(502, status)
    assert.truthy(body:match("^request [12]: closed before the response head$"), body)
  end)

  it("inflates gzip bodies when asked, and only then", function()
    local base = "/fetch?url=http://127.0.0.1:" .. raw_port
    local _, r = call(base .. "/gzip&gzip=yes")
    assert.equal(("hello gzip "):rep(1000) .. "end", r.body)
    local _, raw_body = call(base .. "/gzip")
    assert.is_true(#raw_body.body < 200)
    local status, bad = call(base .. "/bad-gzip&gzip=yes")
    assert.equal(502, status)
    assert.equal("bad gzip body", bad.error)
    local _, e = echoed("/fetch?gzip=yes&url=http://127.0.0.1:" .. upstream.port .. "/echo")
    assert.equal("gzip", e.headers["accept-encoding"])
  end)

  it("refuses a URL that would write another request line or header", function()
    local status, r = call("/injected")
    assert.equal(502, status)
    assert.equal("bad url: a space or a control byte", r.error)
  end)

  it("says why a connection is refused", function()
    local status, r = call("/fetch?url=http://127.0.0.1:" .. process.free_port() .. "/")
    assert.equal(502, status)
    assert.equal("connection refused", r.error)
  end)

  it("verifies TLS, naming the reason, and talks TLS when told not to verify", function()
    local url = "https://127.0.0.1:" .. tls_port .. "/"
    local status, r = call("/fetch?url=" .. url)
    assert.equal(502, status)
    assert.is_truthy(r.error:find("certificate verify failed", 1, true), r.error)
    local ok, answer = call("/fetch?verify=no&url=" .. url)
    assert.equal(200, ok, answer.error)
    assert.equal(200, answer.status)
    assert.is_truthy(answer.body:find("s_server", 1, true), answer.body)
  end)

  it("goes through a forward proxy: the absolute target for http, a CONNECT tunnel for https", function()
    local via = "http://user:s3cret@127.0.0.1:" .. proxy_port
    local target = "http://127.0.0.1:" .. upstream.port .. "/echo?through=proxy"
    local r, e = echoed("/fetch?proxy=" .. via .. "&url=" .. target)
    assert.equal(200, r.status)
    assert.equal("through=proxy", e.query)
    assert.is_truthy(tostring(e.headers.via):find("tinyproxy", 1, true), tostring(e.headers.via))
    assert.is_nil(e.headers["proxy-authorization"])
    local status, t = call("/fetch?verify=no&proxy=" .. via .. "&url=https://127.0.0.1:" .. tls_port .. "/")
    assert.equal(200, status, t.error)
    assert.is_truthy(t.body:find("s_server", 1, true), t.body)
    assert.is_truthy(proxy:output():find("CONNECT 127.0.0.1:" .. tls_port, 1, true), proxy:output())
    -- Without the password the proxy answers 407; a CONNECT it does not
    -- allow is refused, naming its answer.
    _, r = call("/fetch?proxy=http://127.0.0.1:" .. proxy_port .. "&url=" .. target)
    assert.equal(407, r.status)
    status, t = call("/fetch?proxy=" .. via .. "&url=https://127.0.0.1:" .. raw_port .. "/")
    assert.equal(502, status)
    assert.is_truthy(t.error:find("proxy refused CONNECT: 403", 1, true), t.error)
    status, t = call("/fetch?proxy=socks5://127.0.0.1:1&url=" .. target)
    assert.equal(502, status)
    assert.equal("proxy must be an http:// URL", t.error)
  end)
end)
