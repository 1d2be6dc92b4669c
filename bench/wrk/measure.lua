-- wrk script for every benchmark run.
--
--   wrk ... -s bench/wrk/measure.lua URL -- [DEPTH]
--
-- DEPTH > 1 pipelines: each write carries DEPTH copies of the request and
-- wrk waits for all DEPTH responses before the next write (wrk then records
-- one latency sample per batch, not per request). At the end one line is
-- printed for bench/lib/throughput.sh to parse:
--
--   RESULT requests=N duration_us=N bytes=N connect=N read=N write=N
--          status=N timeout=N p50_us=N p99_us=N        (one line)

local depth = 1

function init(args)
  depth = tonumber(args[1]) or 1
  if depth > 1 then
    local batch = {}
    for i = 1, depth do
      batch[i] = wrk.format()
    end
    local payload = table.concat(batch)
    -- Defined only when pipelining: without a request() function wrk sends
    -- its prebuilt request, the cheapest path for the load generator.
    request = function()
      return payload
    end
  end
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
