-- The app bench/stall/run measures: GET /hello, and GET /hold?port=N,
-- whose handler waits on an upstream that never answers (upstream.lua's
-- /stall) until its client leaves; GET /timeout?port=N&ms=M reads from
-- that upstream with a read timeout of M ms and answers how long the
-- receive took, in ms, measured in the handler.
local moonport = require("moonport")
local now = require("moonport.core").now
local app = moonport.app()

app:get("/hello", function(req, res) res:send("Hello, World!") end)

local function stalled(req, timeout)
  local sock = moonport.socket.tcp()
  sock:settimeouts(1000, 1000, timeout)
  assert(sock:connect("127.0.0.1", req:query("port")))
  assert(sock:send("GET /stall HTTP/1.1\r\nHost: upstream\r\n\r\n"))
  return sock
end

app:get("/hold", function(req, res)
  local sock = stalled(req, 3600000)
  res:write("waiting\n")
  sock:receive()
end)

app:get("/timeout", function(req, res)
  local sock = stalled(req, tonumber(req:query("ms")))
  local t = now()
  local _, err = sock:receive()
  res:send(("%s %.3f"):format(err, (now() - t) * 1000))
end)

return app
