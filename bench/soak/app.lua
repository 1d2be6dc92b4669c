-- The app bench/soak/run keeps under load and faults: the reference API
-- (scripts/api.lua, copied beside this file as api.lua, so that it is
-- watched and reloaded with it) and the routes the soak's other clients
-- use. The soak saves this file every 20 s with the next SAVE number
-- (a new file renamed over it), so GET /version tells which save a
-- worker runs.
--
-- Pooled connections (to the upstream and to Redis) are kept idle for 2 s
-- only: under load they are reused long before, and once the load stops
-- they close, so the soak can compare each process's open files with the
-- load stopped at the start and at the end, pools empty both times.
--
-- Environment: UPSTREAM_PORT, the port of a second moonport serving
-- scripts/hello.lua, and REDIS_PORT, a redis-server's; both on 127.0.0.1.
local moonport = require("moonport")
local http = require("moonport.http")

local SAVE = 0

local app = require("api")

local UPSTREAM = "http://127.0.0.1:" .. assert(tonumber(os.getenv("UPSTREAM_PORT")), "UPSTREAM_PORT")
  .. "/hello"
local REDIS_PORT = assert(tonumber(os.getenv("REDIS_PORT")), "REDIS_PORT")
local IDLE_MS = 2000
local INCR = "*2\r\n$4\r\nINCR\r\n$9\r\nsoak:hits\r\n"

app:get("/version", function(req, res)
  res:send(tostring(SAVE))
end)

-- One GET to the upstream moonport through moonport.http's pool; 502
-- with the reason when it cannot be had (while the upstream restarts).
app:get("/upstream", function(req, res)
  local got, err = http.request({ url = UPSTREAM, timeout = 5000, keepalive_timeout = IDLE_MS })
  if not got then
    return res:status(502):send("upstream: " .. err)
  end
  res:status(got.status):send(got.body)
end)

-- INCR of one key in Redis over a pooled moonport.socket connection;
-- answers the new count.
app:get("/redis", function(req, res)
  local sock = moonport.socket.tcp()
  sock:settimeouts(1000, 1000, 1000)
  local ok, err = sock:connect("127.0.0.1", REDIS_PORT, { pool_size = 16 })
  if not ok then
    return res:status(502):send("redis connect: " .. err)
  end
  local sent
  sent, err = sock:send(INCR)
  local line
  if sent then line, err = sock:receive() end
  if not line or line:sub(1, 1) ~= ":" then
    sock:close()
    return res:status(502):send("redis: " .. tostring(err or line))
  end
  sock:setkeepalive(IDLE_MS)
  res:send(line:sub(2))
end)

-- An upload read piece by piece as it arrives (Content-Length or
-- chunked): answers the number of bytes and the sum of their values
-- modulo 2^16 (one character at a time would be slow; eight-byte steps
-- of string.byte keep it cheap).
app:post("/upload", function(req, res)
  local bytes, sum = 0, 0
  local byte = string.byte
  for piece in req:chunks() do
    local n = #piece
    bytes = bytes + n
    local i = 1
    while i + 7 <= n do
      local a, b, c, d, e, f, g, h = byte(piece, i, i + 7)
      sum = sum + a + b + c + d + e + f + g + h
      i = i + 8
    end
    for j = i, n do sum = sum + byte(piece, j) end
    sum = sum % 65536
  end
  res:send(bytes .. " " .. sum)
end)

return app
