-- Response compression (moonport.compress, --gzip) over real sockets:
-- bodies curl --compressed decodes back to what the handler sent, the
-- fields that say so (Content-Encoding, Vary), what is left alone (small
-- bodies, other types, bodies already encoded, clients that refuse gzip),
-- and a stream whose every piece is flushed as it is written.
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local process = require("spec.support.process")
local cjson = require("cjson")

local APP = "spec/fixtures/compress.lua"
local TEXT = ("hello compression "):rep(500)

-- curl --compressed: the decoded body and the head, lower-case names.
local function curl(port, path)
  local code, out = process.command({ "curl", "-s", "--compressed", "-D", "-",
    "http://127.0.0.1:" .. port .. path })
  assert.equal(0, code, out)
  local head, body = out:match("^(.-\r\n)\r\n(.*)$")
  local fields = {}
  for name, value in head:gmatch("\n([^:\r\n]+): ([^\r\n]*)") do fields[name:lower()] = value end
  return body, fields
end

-- Inflates gzip bytes (a whole stream, or a flushed prefix of one).
local function gunzip(bytes)
  local code, out = process.command({ "/usr/bin/python3", "-c",
    "import sys, zlib; sys.stdout.buffer.write(zlib.decompressobj(31).decompress(sys.stdin.buffer.read()))" },
    { stdin = bytes })
  assert.equal(0, code)
  return out
end

describe("moonport.compress", function()
  local server = support.serve(APP)

  it("gzips a text body for a client that accepts it, and says so", function()
    local body, fields = curl(server.port, "/text")
    assert.equal(TEXT, body)
    assert.equal("gzip", fields["content-encoding"])
    assert.equal("Accept-Encoding", fields.vary)
    local status, headers, raw = helpers.request(server.port, "GET", "/text",
      { ["Accept-Encoding"] = "br;q=1, gzip;q=0.5" })
    assert.equal(200, status)
    assert.equal("gzip", headers["content-encoding"])
    assert.equal(#raw, tonumber(headers["content-length"]))
    assert.is_true(#raw < #TEXT / 10)
    assert.equal(TEXT, gunzip(raw))
  end)

  it("gzips res:json's body", function()
    local body, fields = curl(server.port, "/json")
    assert.equal("gzip", fields["content-encoding"])
    assert.equal(300, #cjson.decode(body))
  end)

  it("leaves alone a client that does not accept gzip, small bodies, other types and encoded bodies", function()
    for _, accept in ipairs({ false, "gzip;q=0", "br", "identity" }) do
      local _, headers, raw = helpers.request(server.port, "GET", "/text",
        accept and { ["Accept-Encoding"] = accept } or nil)
      assert.is_nil(headers["content-encoding"], tostring(accept))
      assert.equal("Accept-Encoding", headers.vary, tostring(accept))
      assert.equal(TEXT, raw)
    end
    local gzip = { ["Accept-Encoding"] = "gzip" }
    local _, headers, raw = helpers.request(server.port, "GET", "/small", gzip)
    assert.is_nil(headers["content-encoding"])
    assert.equal("tiny", raw)
    _, headers, raw = helpers.request(server.port, "GET", "/png", gzip)
    assert.is_nil(headers["content-encoding"])
    assert.is_nil(headers.vary)
    assert.equal(TEXT, raw)
    _, headers, raw = helpers.request(server.port, "GET", "/encoded", gzip)
    assert.equal("identity-ish", headers["content-encoding"])
    assert.equal(TEXT, raw)
    _, headers, raw = helpers.request(server.port, "GET", "/plain", gzip)
    assert.is_nil(headers["content-encoding"], "no rule, no --gzip")
  end)

  it("flushes each piece of a compressed stream as it is written", function()
    local conn = helpers.connect(server.port)
    conn:send("GET /stream HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n")
    -- The head and the first piece, while the handler waits for /release.
    local got = helpers.eventually(function()
      conn:fill(helpers.now() + 0.2)
      local text = table.concat(conn.parts)
      local head, rest = text:match("^(.-\r\n\r\n)(.*)$")
      if not head then return nil end
      local size, chunk = rest:match("^(%x+)\r\n(.*)$")
      if not size or #chunk < tonumber(size, 16) then return nil end
      return { head = head, first = chunk:sub(1, tonumber(size, 16)) }
    end)
    assert.truthy(got, "no first piece before the handler went on")
    assert.truthy(got.head:lower():find("content%-encoding: gzip"), got.head)
    assert.truthy(got.head:lower():find("transfer%-encoding: chunked"), got.head)
    assert.equal("first piece;", gunzip(got.first))
    assert.equal(200, (helpers.request(server.port, "GET", "/release")))
    local resp = conn:read_response()
    conn:close()
    assert.equal("first piece;" .. ("second piece;"):rep(100), gunzip(resp.body))
  end)
end)

describe("--gzip", function()
  local server = support.serve(APP, { "--gzip" })

  it("gzips every text body from 1 KiB up", function()
    local body, fields = curl(server.port, "/plain")
    assert.equal(TEXT, body)
    assert.equal("gzip", fields["content-encoding"])
    local _, headers, raw = helpers.request(server.port, "GET", "/plain-small", { ["Accept-Encoding"] = "gzip" })
    assert.is_nil(headers["content-encoding"])
    assert.equal("tiny", raw)
  end)
end)
