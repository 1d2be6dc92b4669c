-- Server-sent events (res:sse) over a real socket: the stream's head, each
-- field written as the format wants (a data line per line, JSON for other
-- values), events arriving while the handler goes on, and the handler
-- told when its client leaves.
local helpers = require("spec.helpers")
local support = require("spec.support.server")

-- The chunked body's bytes so far, dechunked.
local function dechunk(text)
  local out, pos = {}, 1
  while true do
    local size, at = text:match("^(%x+)\r\n()", pos)
    if not size then break end
    size = tonumber(size, 16)
    if size == 0 or #text < at + size - 1 then break end
    out[#out + 1] = text:sub(at, at + size - 1)
    pos = at + size + 2
  end
  return table.concat(out)
end

describe("res:sse", function()
  local server = support.serve("spec/fixtures/sse.lua")

  it("streams events, each flushed, and the handler learns when the client left", function()
    local conn = helpers.connect(server.port)
    conn:send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
    local want = ": hello\n: there\n\n"
      .. "event: greet\nid: 1\nretry: 2500\ndata: two\ndata: lines\n\n"
      .. 'data: {"n":3}\n\n'
      .. "event: tick\ndata: 0\n\n"
    local head, body
    assert.truthy(helpers.eventually(function()
      conn:fill(helpers.now() + 0.1)
      local text = table.concat(conn.parts)
      head, body = text:match("^(.-\r\n\r\n)(.*)$")
      return body and #dechunk(body) >= #want
    end), "the events did not come")
    assert.truthy(head:find("Content-Type: text/event-stream\r\n", 1, true), head)
    assert.truthy(head:find("Cache-Control: no-cache\r\n", 1, true), head)
    assert.equal(want, dechunk(body):sub(1, #want))
    conn:close()
    local left = helpers.eventually(function()
      local _, _, n = helpers.request(server.port, "GET", "/left")
      return n ~= "nil" and n
    end)
    assert.truthy(tonumber(left), "the handler did not see the client leave")
  end)

  it("refuses a field that would end its line", function()
    local _, _, body = helpers.request(server.port, "GET", "/bad")
    assert.truthy(body:find("event must be one line", 1, true), body)
  end)
end)
