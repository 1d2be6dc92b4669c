-- wrk script of bench/soak/run: the steady load on the reference API.
--
--   wrk ... -s bench/soak/load.lua URL -- DELAY_MS
--
-- Each connection goes round the reference API's routes (scripts/api.lua:
-- GET /users/:id, GET /health, GET /search, POST /add) and waits DELAY_MS
-- before each request, so the load is a steady rate rather than all the
-- machine can give (connections / (DELAY_MS + latency) requests per second).
-- At the end one line for bench/soak/soak.py, as bench/wrk/measure.lua
-- prints it:
--
--   RESULT requests=N duration_us=N bytes=N connect=N read=N write=N
--          status=N timeout=N p50_us=N p99_us=N        (one line)

local pause = 0
local plan = {}
local i = 0

function init(args)
  pause = tonumber(args[1]) or 0
  for n = 1, 8 do
    plan[#plan + 1] = wrk.format("GET", "/users/" .. n * 37)
  end
  plan[#plan + 1] = wrk.format("GET", "/health")
  plan[#plan + 1] = wrk.format("GET", "/search?q=soak+test")
  plan[#plan + 1] = wrk.format("POST", "/add", { ["Content-Type"] = "application/json" },
    '{"a":40,"b":2}')
end

function delay()
  return pause
end

function request()
  i = i % #plan + 1
  return plan[i]
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d duration_us=%d bytes=%d connect=%d read=%d write=%d"
      .. " status=%d timeout=%d p50_us=%d p99_us=%d\n",
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
