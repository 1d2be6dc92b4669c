-- The figures of every worker at once: GET /__moonport/metrics (--metrics)
-- read by the reference Prometheus text parser (Debian's
-- python3-prometheus-client, through spec/support/prom_parse.py), its
-- counts held to the requests sent over many connections to 4 workers, its
-- histograms to their rules, a scrape right after a response counting it
-- whichever worker answers, the address rule (loopback, --metrics-allow);
-- and /__moonport/stats's `workers` and `total`.
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local socket = require("socket")

local APP = "spec/fixtures/metrics.lua"
local PYTHON = "/usr/bin/python3" -- Debian's, which has prometheus_client

-- The families the reference parser reads in `text`, by name.
local function parse(text)
  local path = os.tmpname()
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
  local p = assert(io.popen(PYTHON .. " spec/support/prom_parse.py < " .. path .. " 2>&1"))
  local out = p:read("*a")
  local ok = p:close()
  os.remove(path)
  assert(ok, "the Prometheus parser refused the exposition: " .. out)
  local families = {}
  for _, fam in ipairs(helpers.json(out)) do
    assert.is_nil(families[fam.name], "family " .. fam.name .. " twice")
    families[fam.name] = fam
  end
  return families
end

-- GET /__moonport/metrics on a new connection; the families.
local function scrape(port)
  local status, headers, body = helpers.request(port, "GET", "/__moonport/metrics")
  assert.equal(200, status, body)
  assert.equal("text/plain; version=0.0.4; charset=utf-8", headers["content-type"])
  return parse(body), body
end

-- The value of the sample `name` with exactly `labels` in family fam, or
-- nil.
local function value(fam, name, labels)
  for _, s in ipairs(fam.samples) do
    if s.name == name then
      local same = true
      for k, v in pairs(labels) do if s.labels[k] ~= v then same = false end end
      for k, v in pairs(s.labels) do if labels[k] ~= v then same = false end end
      if same then return s.value end
    end
  end
  return nil
end

local function requests_of(fams, route, method, code)
  return value(fams.moonport_http_requests, "moonport_http_requests_total",
    { route = route, method = method, code = code }) or 0
end

describe("GET /__moonport/metrics", function()
  local server = support.serve(APP, { "--workers", "4", "--metrics", "--stats" })

  -- What the spec sent, by "route method code".
  local sent = {}
  local function count(route, method, code)
    local k = route .. " " .. method .. " " .. code
    sent[k] = (sent[k] or 0) + 1
  end

  it("counts every request by route, method and status class, summed over workers", function()
    local before = scrape(server.port)
    local pids = {}
    -- 48 connections, each a few keep-alive requests: the kernel spreads
    -- the connections over the 4 workers.
    for i = 1, 48 do
      local c = helpers.connect(server.port)
      for j = 1, 3 do
        local resp = c:request("GET", "/users/" .. (i * 10 + j))
        assert.equal(200, resp.status)
        pids[resp.body] = true
        count("/users/:id", "GET", "2xx")
      end
      local resp = c:request("POST", "/items", { ["Content-Type"] = "text/plain" }, "x")
      assert.equal(201, resp.status)
      count("/items", "POST", "2xx")
      if i % 2 == 0 then
        assert.equal(302, c:request("GET", "/old").status)
        count("/old", "GET", "3xx")
      end
      if i % 3 == 0 then
        assert.equal(503, c:request("GET", "/fail").status)
        count("/fail", "GET", "5xx")
      end
      if i % 4 == 0 then
        assert.equal(404, c:request("GET", "/no/such/path/" .. i).status)
        count("(unmatched)", "GET", "4xx")
        assert.equal(405, c:request("DELETE", "/items").status)
        count("(unmatched)", "DELETE", "4xx")
      end
      if i % 8 == 0 then
        assert.equal(200, c:request("GET", "/slow").status)
        count("/slow", "GET", "2xx")
      end
      c:close()
    end
    -- Heads that fail to parse count under (invalid), with no method.
    for _ = 1, 3 do
      local c = helpers.connect(server.port)
      c:send("GET /users/1 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")
      assert.equal(400, c:read_response().status)
      count("(invalid)", "NONE", "4xx")
      c:close()
    end
    local n = 0
    for _ in pairs(pids) do n = n + 1 end
    assert.is_true(n >= 2, "48 connections all went to one worker")

    local after = scrape(server.port)
    for k, want in pairs(sent) do
      local route, method, code = k:match("^(%S+) (%S+) (%S+)$")
      local got = requests_of(after, route, method, code) - requests_of(before, route, method, code)
      assert.equal(want, got, k)
    end
    -- Raw paths are never labels: every route label is a pattern or a
    -- fixed label.
    for _, s in ipairs(after.moonport_http_requests.samples) do
      assert.is_nil(s.labels.route:find("/no/such", 1, true), s.labels.route)
      assert.is_nil(s.labels.route:find("^/users/%d"), s.labels.route)
    end
  end)

  it("has histograms whose buckets are cumulative and whose count matches", function()
    local fams = scrape(server.port)
    local hist = fams.moonport_http_request_duration_seconds
    assert.equal("histogram", hist.type)
    -- Per (route, method): buckets in rising `le`, counts never falling,
    -- +Inf equal to _count, _count equal to the requests counted.
    local series = {}
    for _, s in ipairs(hist.samples) do
      local key = s.labels.route .. " " .. s.labels.method
      series[key] = series[key] or { buckets = {} }
      local t = series[key]
      if s.name:match("_bucket$") then
        t.buckets[#t.buckets + 1] = { le = s.labels.le, n = s.value }
      elseif s.name:match("_count$") then
        t.count = s.value
      elseif s.name:match("_sum$") then
        t.sum = s.value
      end
    end
    local checked = 0
    for key, t in pairs(series) do
      local route, method = key:match("^(%S+) (%S+)$")
      assert.is_true(#t.buckets >= 2, key)
      assert.equal("+Inf", t.buckets[#t.buckets].le, key)
      for i = 2, #t.buckets do
        local a, b = t.buckets[i - 1], t.buckets[i]
        assert.is_true(b.le == "+Inf" or tonumber(b.le) > tonumber(a.le), key)
        assert.is_true(b.n >= a.n, key .. ": buckets fall at le=" .. b.le)
      end
      assert.equal(t.buckets[#t.buckets].n, t.count, key)
      assert.is_true(t.sum >= 0, key)
      if route:sub(1, 1) == "/" then
        local total = 0
        for _, code in ipairs({ "1xx", "2xx", "3xx", "4xx", "5xx" }) do
          total = total + requests_of(fams, route, method, code)
        end
        assert.equal(total, t.count, key)
        checked = checked + 1
      end
    end
    assert.is_true(checked >= 5, "the app's routes have histograms")
    -- /slow waits 30 ms: none of its requests is in the 25 ms bucket.
    local slow = series["/slow GET"]
    for _, b in ipairs(slow.buckets) do
      if b.le == "0.025" then assert.equal(0, b.n) end
    end
    assert.is_true(slow.sum >= 0.03 * slow.count)
  end)

  it("names every family by the conventions, with help, and each series once", function()
    local fams, text = scrape(server.port)
    for name, fam in pairs(fams) do
      assert.truthy(name:match("^moonport_[a-z_]+$"), name)
      assert.truthy(fam.documentation ~= "", name .. " has no HELP")
      if fam.type == "counter" then
        -- The parser drops _total from a counter's family name; the
        -- samples keep it.
        for _, s in ipairs(fam.samples) do
          assert.truthy(s.name:match("_total$") or s.name:match("_created$"), s.name)
        end
      end
      local seen = {}
      for _, s in ipairs(fam.samples) do
        local keys = {}
        for k, v in pairs(s.labels) do keys[#keys + 1] = k .. "=" .. v end
        table.sort(keys)
        local id = s.name .. "{" .. table.concat(keys, ",") .. "}"
        assert.is_nil(seen[id], "series twice: " .. id)
        seen[id] = true
      end
    end
    -- Summed over workers or per worker, never both: only the Lua heap
    -- has a worker label, and on every one of its samples.
    for name, fam in pairs(fams) do
      for _, s in ipairs(fam.samples) do
        assert.equal(name == "moonport_lua_heap_bytes", s.labels.worker ~= nil, s.name)
      end
    end
    for _, name in ipairs({
      "moonport_http_requests", "moonport_http_request_duration_seconds",
      "moonport_http_request_received_bytes", "moonport_http_response_sent_bytes",
      "moonport_http_request_lua_allocated_bytes",
      "moonport_http_request_c_allocated_bytes", "moonport_http_connections_open",
      "moonport_http_connections_accepted", "moonport_worker_restarts",
      "moonport_reloads", "moonport_reload_failures",
      "moonport_shared_store_used_bytes", "moonport_shared_store_capacity_bytes",
      "moonport_upstream_connections_idle", "moonport_pg_connections",
      "moonport_lua_heap_bytes", "moonport_workers",
    }) do
      assert.truthy(fams[name], name .. " is missing")
    end
    assert.equal(4, fams.moonport_workers.samples[1].value)
    assert.equal(4, #fams.moonport_lua_heap_bytes.samples)
    assert.truthy(text:find("# TYPE moonport_http_requests_total counter\n", 1, true))
    -- The bytes of the requests the spec sent: /users/:id answered with a
    -- pid, so every response sent bytes.
    assert.is_true(value(fams.moonport_http_response_sent_bytes,
      "moonport_http_response_sent_bytes_total", { route = "/users/:id", method = "GET" }) > 0)
    assert.is_true(value(fams.moonport_http_request_received_bytes,
      "moonport_http_request_received_bytes_total", { route = "/items", method = "POST" }) > 0)
  end)

  it("counts a response in a scrape that follows it, whichever worker answers", function()
    for i = 1, 30 do
      -- The response on one keep-alive connection, the scrape on another,
      -- which another worker may take.
      local c = helpers.connect(server.port)
      local was = requests_of(scrape(server.port), "/users/:id", "GET", "2xx")
      assert.equal(200, c:request("GET", "/users/" .. i).status)
      local now = requests_of(scrape(server.port), "/users/:id", "GET", "2xx")
      assert.equal(was + 1, now, "scrape " .. i)
      c:close()
    end
  end)

  it("adds every worker's figures in /__moonport/stats: total is the sum of workers", function()
    local doc = helpers.stats(server.port)
    assert.equal(4, #doc.workers)
    assert.equal(4, doc.total.workers)
    local sum = { requests = 0, accepted = 0, open = 0, heap = 0, mallocs = 0, restarts = 0 }
    local answered = 0
    for i, w in ipairs(doc.workers) do
      assert.equal(i, w.id)
      assert.is_true(w.pid > 0)
      sum.requests = sum.requests + w.requests
      sum.accepted = sum.accepted + w.connections.accepted
      sum.open = sum.open + w.connections.open
      sum.heap = sum.heap + w.lua_heap_bytes
      sum.mallocs = sum.mallocs + w.mallocs
      sum.restarts = sum.restarts + w.restarts
      if w.requests > 0 then answered = answered + 1 end
      -- The answering worker's own object, as it always was.
      if w.id == doc.worker.id then
        assert.equal(doc.worker.pid, w.pid)
        assert.equal(doc.worker.requests, w.requests)
      end
    end
    assert.is_true(answered >= 2, "more than one worker has answered")
    assert.equal(sum.requests, doc.total.requests)
    assert.equal(sum.accepted, doc.total.connections.accepted)
    assert.equal(sum.open, doc.total.connections.open)
    assert.equal(sum.heap, doc.total.lua_heap_bytes)
    assert.equal(sum.mallocs, doc.total.mallocs)
    assert.equal(sum.restarts, doc.total.restarts)
    -- Every request the spec made so far is in the total (the stats
    -- request itself is counted once it is answered).
    local fams = scrape(server.port)
    local routed = 0
    for _, s in ipairs(fams.moonport_http_requests.samples) do
      if s.labels.route:sub(1, 1) == "/" then routed = routed + s.value end
    end
    assert.is_true(doc.total.requests >= routed)
  end)
end)

describe("a worker replaced", function()
  it("keeps its counters: summed totals never go back", function()
    local server = support.start(APP, { "--workers", "2", "--metrics", "--stats" })
    for i = 1, 20 do
      assert.equal(200, (helpers.request(server.port, "GET", "/users/" .. i)))
    end
    local before = scrape(server.port)
    local users = requests_of(before, "/users/:id", "GET", "2xx")
    assert.equal(20, users)
    local pids = server:workers()
    local signal = require("posix.signal")
    signal.kill(pids[1], signal.SIGKILL)
    local fams = helpers.eventually(function()
      -- A scrape on the killed worker's socket waits for its replacement.
      local ok, f = pcall(scrape, server.port)
      if not ok then return false end
      local restarts = f.moonport_worker_restarts.samples[1].value
      local p = server:workers()
      return restarts == 1 and #p == 2 and f
    end, 20)
    assert.truthy(fams, "the worker was replaced and counted")
    assert.equal(users, requests_of(fams, "/users/:id", "GET", "2xx"))
    local doc = helpers.stats(server.port)
    assert.equal(1, doc.total.restarts)
    assert.is_true(doc.total.requests >= 20)
  end)
end)

describe("who may scrape", function()
  -- This machine's address on its default route, or nil when it has none
  -- other than loopback.
  local function outside_address()
    local u = socket.udp()
    local ok = u:setpeername("192.0.2.1", 9)
    local ip = ok and u:getsockname()
    u:close()
    if ip == nil or ip:match("^127%.") or ip == "0.0.0.0" then return nil end
    return ip
  end

  local function get_from(ip, port, target)
    local sock = assert(socket.tcp())
    sock:settimeout(helpers.timeout)
    assert(sock:connect(ip, port))
    sock:send(helpers.build_request("GET", target))
    local buf = ""
    while not buf:find("\r\n\r\n", 1, true) do
      local data, err, partial = sock:receive(1)
      buf = buf .. (data or partial or "")
      if err then break end
    end
    sock:close()
    return tonumber(buf:match("^HTTP/1%.1 (%d+)"))
  end

  it("answers loopback clients only, by default; others get the app's 404", function()
    local ip = outside_address()
    if ip == nil then
      pending("this machine has no address but loopback")
      return
    end
    -- Listening on that address only (loopback clients are served in the
    -- specs above).
    local server = support.start(APP, { "--listen", ip .. ":0", "--metrics", "--stats" })
    assert.equal(404, get_from(ip, server.port, "/__moonport/metrics"))
    -- The app still answers that client.
    assert.equal(200, get_from(ip, server.port, "/users/1"))
  end)

  it("answers clients that --metrics-allow covers", function()
    local ip = outside_address()
    if ip == nil then
      pending("this machine has no address but loopback")
      return
    end
    local other = ip:match("^(%d+)%.") == "10" and "11.0.0.0/8" or "10.0.0.0/8"
    local server = support.start(APP, { "--listen", ip .. ":0", "--metrics",
      "--metrics-allow", other, "--metrics-allow", ip .. "/32" })
    assert.equal(200, get_from(ip, server.port, "/__moonport/metrics"))
    local narrow = support.start(APP, { "--listen", ip .. ":0", "--metrics",
      "--metrics-allow", other })
    assert.equal(404, get_from(ip, narrow.port, "/__moonport/metrics"))
  end)

  it("is not there without --metrics", function()
    local server = support.start(APP, { "--stats" })
    assert.equal(404, (helpers.request(server.port, "GET", "/__moonport/metrics")))
  end)
end)
