-- TLS over moonport.socket against a real TLS server (openssl s_server,
-- which answers each line reversed) with a certificate made for the test:
-- verification against --tls-ca and against the system store, the host
-- name check, verification turned off, pooled TLS connections, and a
-- handshake that stalls.
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local process = require("spec.support.process")
local socket = require("socket")

local FIXTURE = "spec/fixtures/tls.lua"

local dir = helpers.scratch_dir()
local cert, key = dir .. "/cert.pem", dir .. "/key.pem"
-- A self-signed certificate for localhost and 127.0.0.1: its own CA.
assert(os.execute(("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
  .. "-nodes -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 "
  .. "-days 2 -keyout %s -out %s 2>/dev/null"):format(key, cert)))

local tls_port
local tls_server = support.program(function()
  tls_port = process.free_port()
  return { "openssl", "s_server", "-accept", "127.0.0.1:" .. tls_port, "-cert", cert,
           "-key", key, "-rev", "-quiet" }
end, function(p) process.wait_port(tls_port, 10, p) end)

local function rev(server, query)
  local status, _, body = helpers.request(server.port, "GET", "/rev?port=" .. tls_port .. "&" .. query)
  assert.equal(200, status, body)
  return helpers.json(body)
end

describe("moonport.socket TLS", function()
  local trusting = support.serve(FIXTURE, { "--tls-ca", cert })
  local system = support.serve(FIXTURE)

  teardown(function() helpers.remove_dir(dir) end)

  it("verifies the server against --tls-ca and its name, and carries data both ways", function()
    local r = rev(trusting, "name=localhost&text=hello")
    assert.equal("olleh", r.line)
  end)

  it("refuses a certificate the system store does not trust, saying why", function()
    local r = rev(system, "name=localhost")
    assert.same({ step = "handshake", err = "certificate verify failed: self-signed certificate" }, r)
  end)

  it("refuses a certificate for another name", function()
    local r = rev(trusting, "name=other.example")
    assert.same({ step = "handshake", err = "certificate host mismatch" }, r)
  end)

  it("accepts any certificate with verification off", function()
    local r = rev(system, "name=localhost&verify=0&text=abc")
    assert.equal("cba", r.line)
  end)

  it("pools TLS connections and reuses them without a new handshake", function()
    local first = rev(trusting, "name=localhost&ka=1&pool=tls&text=one")
    assert.same({ line = "eno", reused = 0, resumed = false, keepalive = 1 }, first)
    local second = rev(trusting, "name=localhost&pool=tls&text=two")
    assert.equal("owt", second.line)
    assert.equal(1, second.reused)
  end)

  it("times out a handshake the server never answers", function()
    -- A listener that never accepts: the kernel completes the TCP
    -- handshake, and the ClientHello waits unread.
    local silent = assert(socket.bind("127.0.0.1", 0))
    local _, port = silent:getsockname()
    local started = helpers.now()
    local status, _, body = helpers.request(trusting.port, "GET",
      "/rev?port=" .. port .. "&name=localhost&timeout=300")
    local elapsed = helpers.now() - started
    silent:close()
    assert.equal(200, status)
    assert.same({ step = "handshake", err = "timeout" }, helpers.json(body))
    assert.is_true(elapsed >= 0.3 and elapsed < 1.3, "took " .. elapsed .. " s")
  end)
end)
