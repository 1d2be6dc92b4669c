-- Many connections at once: a slowloris crowd that trickles request heads
-- must not hold up a normal client and must be cut off by
-- --header-timeout; and 10,000 keep-alive connections open together must
-- all be served, and stay usable.
--
-- Every loop here is bounded by a deadline, and every socket a test opens
-- is closed before the test ends, whatever happened. The checks are of
-- order and counts, which a loaded machine does not change; the normal
-- client's latency beside the crowd is a figure, measured by
-- bench/slowloris/run.
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local socket = require("socket")
local resource = require("posix.sys.resource")
local poll = require("posix.poll")
local dirent = require("posix.dirent")

local APP = "spec/fixtures/conformance.lua"
local GET_OK = "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n"

local function now() return helpers.now() end

-- Descriptors this process has open now.
local function open_fds()
  local ok, names = pcall(dirent.dir, "/proc/self/fd")
  if not ok or not names then return 64 end
  return #names - 2 -- "." and ".."
end

-- Opens a TCP connection to the server; returns the lua-socket object or
-- nil and the error.
local function open_socket(port, timeout)
  local sock = socket.tcp()
  if not sock then return nil, "socket() failed" end
  sock:settimeout(timeout or 5)
  local ok, err = sock:connect("127.0.0.1", port)
  if not ok then
    sock:close()
    return nil, err
  end
  sock:settimeout(0)
  return sock
end

local function close_all(list)
  for _, c in ipairs(list) do
    if c.sock then c.sock:close() end
    c.sock = nil
  end
end

-- Reads what `c.sock` holds now into `c.buf` (non-blocking). Sets `c.eof`
-- when the stream ended, `c.error` on another failure.
local function pull(c)
  local data, err, partial = c.sock:receive(65536)
  local chunk = data or partial
  if chunk and #chunk > 0 then c.buf = c.buf .. chunk end
  if err == "closed" then
    c.eof = true
  elseif err and err ~= "timeout" then
    c.eof, c.error = true, err
  end
end

describe("slowloris", function()
  local SLOW = 500        -- slow connections
  local HEADER_TIMEOUT = 2
  local TRICKLE = 0.5     -- seconds between two bytes of a slow head
  local NORMAL_FOR = 3    -- seconds the normal client keeps asking
  local BEFORE_ANY_END = 10 -- normal answers wanted while every slow one is open

  local server = support.serve(APP, { "--header-timeout", tostring(HEADER_TIMEOUT) })

  it(("serves a normal client while %d connections trickle heads, before any of those ends, "
      .. "and ends each of those with 408 or a close past --header-timeout"):format(SLOW), function()
    -- A head that never ends: the value of X-Slow goes on and on.
    local head = "GET /ok HTTP/1.1\r\nHost: x\r\nX-Slow: " .. ("a"):rep(200)
    local slow, by_sock = {}, {}
    local normal
    local ok, err = pcall(function()
      for i = 1, SLOW do
        local sock, why = open_socket(server.port)
        assert(sock, ("slow connection %d: connect failed: %s"):format(i, tostring(why)))
        sock:setoption("tcp-nodelay", true)
        slow[i] = { sock = sock, buf = "", sent = 0 }
        by_sock[sock] = slow[i]
      end
      normal = helpers.connect(server.port)

      local t0 = now()
      -- Spread the first bytes over one trickle interval.
      for i, c in ipairs(slow) do c.next_at = t0 + (i - 1) * TRICKLE / SLOW end
      local normal_until = t0 + NORMAL_FOR
      -- The last first byte goes out at t0 + TRICKLE; the server checks
      -- timeouts once a second; then ample slack for a busy machine (the
      -- loop ends as soon as every slow connection has ended).
      local deadline = t0 + TRICKLE + HEADER_TIMEOUT + 1 + 20
      -- Normal answers in all, and those that came while every slow
      -- connection was still open (a server held up by them would answer
      -- only once --header-timeout had cut them off).
      local answered, answered_early = 0, 0
      local open = SLOW

      -- Reads and sends what is due on the slow connections; waits up to
      -- `wait` seconds for one to become readable.
      local function service(wait)
        local readable = {}
        if open > 0 then
          local set = {}
          for _, c in ipairs(slow) do
            if not c.ended then set[#set + 1] = c.sock end
          end
          readable = socket.select(set, nil, wait) or {}
        elseif wait > 0 then
          socket.sleep(wait)
        end
        local t = now()
        for _, sock in ipairs(readable) do
          local c = by_sock[sock]
          if c and not c.ended then
            pull(c)
            local resp = c.buf ~= "" and helpers.parse_response(c.buf, c.eof)
            if resp or c.eof then
              c.ended, c.ended_at, c.status = true, t, resp and resp.status
              open = open - 1
            end
          end
        end
        for _, c in ipairs(slow) do
          if not c.ended and t >= c.next_at then
            local i = c.sent + 1
            local byte = i <= #head and head:sub(i, i) or "a"
            local sent, why = c.sock:send(byte)
            if sent then
              c.sent = i
              c.first_at = c.first_at or t
            elseif why ~= "timeout" then
              -- The server has gone from this connection (closed, reset):
              -- that is an end too.
              c.ended, c.ended_at, c.send_error = true, t, why
              open = open - 1
            end
            c.next_at = c.next_at + TRICKLE
          end
        end
      end

      while now() < deadline do
        if now() < normal_until then
          local resp = normal:request("GET", "/ok", nil, nil, { timeout = 20 })
          assert(resp.status == 200 and resp.body == "ok",
            ("the normal client got %d: %s"):format(resp.status, helpers.shorten(resp.body)))
          answered = answered + 1
          if open == SLOW then answered_early = answered_early + 1 end
          service(0)
        elseif open == 0 then
          break
        else
          service(0.05)
        end
      end

      -- The normal client was served while the crowd was there.
      assert(answered_early >= BEFORE_ANY_END,
        ("%d of %d normal requests answered before the first slow connection ended")
          :format(answered_early, answered))

      -- The slow ones: every one ended, with a 408 or a close, and none
      -- before its head had been on its way for --header-timeout.
      local other, early, still = {}, {}, 0
      for i, c in ipairs(slow) do
        if not c.ended then
          still = still + 1
        else
          if c.status and c.status ~= 408 then
            other[#other + 1] = ("#%d: %d"):format(i, c.status)
          end
          local lived = c.ended_at - (c.first_at or c.ended_at)
          -- The server's clock starts at the first byte it reads, a little
          -- after ours; allow for timer granularity all the same.
          if lived < HEADER_TIMEOUT - 0.25 then
            early[#early + 1] = ("#%d after %.2f s"):format(i, lived)
          end
        end
      end
      assert(still == 0, ("%d of %d slow connections still open %.1f s after the last first byte"):format(
        still, SLOW, deadline - t0 - TRICKLE))
      assert(#other == 0, "slow connections answered other than 408: " .. table.concat(other, ", ", 1, math.min(#other, 10)))
      assert(#early == 0, "slow connections ended before --header-timeout: "
        .. table.concat(early, ", ", 1, math.min(#early, 10)))

      -- And the server goes on serving.
      local status = helpers.request(server.port, "GET", "/ok")
      assert.equal(200, status)
    end)
    close_all(slow)
    if normal then normal:close() end
    if not ok then error(err, 0) end
  end)
end)

-- How many connections the next test can open: 10,000, or as many as the
-- open-file limit allows once raised as far as the hard limit lets us.
local WANT = 10000
local RESERVE = 8 -- descriptors kept free: a spare or two for busted and lua-socket
local function connection_budget()
  local lim = resource.getrlimit(resource.RLIMIT_NOFILE)
  local goal = 11000
  local inf = resource.RLIM_INFINITY
  if lim.rlim_cur ~= inf and lim.rlim_cur < goal then
    local to = goal
    if lim.rlim_max ~= inf and lim.rlim_max < to then to = lim.rlim_max end
    resource.setrlimit(resource.RLIMIT_NOFILE, { rlim_cur = to, rlim_max = lim.rlim_max })
    lim = resource.getrlimit(resource.RLIMIT_NOFILE)
  end
  local room = (lim.rlim_cur == inf) and WANT or (lim.rlim_cur - open_fds() - RESERVE)
  return math.min(WANT, room), lim.rlim_cur
end

local N, FD_LIMIT = connection_budget()

describe("many keep-alive connections", function()
  local SAMPLE = 100
  local LIMIT_S = 60

  local server = support.serve(APP)

  local name
  if N >= WANT then
    name = ("serves %d concurrent keep-alive connections, and %d of them again"):format(N, SAMPLE)
  else
    name = ("serves %d concurrent keep-alive connections (not %d: open-file limit %s), and %d of them again")
      :format(N, WANT, tostring(FD_LIMIT), SAMPLE)
  end

  it(name, function()
    assert(N >= 1000, ("the open-file limit (%s) leaves room for only %d connections, want at least 1000")
      :format(tostring(FD_LIMIT), N))
    local t0 = now()
    local deadline = t0 + LIMIT_S
    local conns = {}

    -- Sends `GET_OK` on each of `list` and reads one response from each,
    -- until `deadline`. Returns the number answered 200 "ok".
    local function round(list)
      for i, c in ipairs(list) do
        c.buf, c.resp, c.eof = "", nil, false
        local sent, why = c.sock:send(GET_OK)
        assert(sent == #GET_OK, ("connection %d: send failed: %s"):format(i, tostring(why)))
      end
      local pending = {}
      for i, c in ipairs(list) do pending[i] = c end
      while #pending > 0 do
        assert(now() < deadline, ("%d of %d answers still missing after %d s"):format(
          #pending, #list, LIMIT_S))
        local fds = {}
        for _, c in ipairs(pending) do fds[c.sock:getfd()] = { events = { IN = true } } end
        poll.poll(fds, 200)
        local left = {}
        for _, c in ipairs(pending) do
          local f = fds[c.sock:getfd()]
          if f.revents and (f.revents.IN or f.revents.HUP or f.revents.ERR) then pull(c) end
          local resp = c.buf ~= "" and helpers.parse_response(c.buf, c.eof)
          if resp then
            c.resp = resp
          elseif c.eof then
            error(("a connection closed before its answer (%s); %d bytes: %s"):format(
              tostring(c.error or "closed"), #c.buf, helpers.shorten(c.buf)), 0)
          else
            left[#left + 1] = c
          end
        end
        pending = left
      end
      local good = 0
      for _, c in ipairs(list) do
        if c.resp.status == 200 and c.resp.body == "ok" then good = good + 1 end
      end
      return good
    end

    local ok, err = pcall(function()
      for i = 1, N do
        assert(now() < deadline, ("only %d of %d connections open after %d s"):format(i - 1, N, LIMIT_S))
        local sock, why = open_socket(server.port, math.max(1, deadline - now()))
        assert(sock, ("connection %d: connect failed: %s"):format(i, tostring(why)))
        conns[i] = { sock = sock, buf = "" }
      end
      local t_open = now()

      local good = round(conns)
      assert(good == N, ("%d of %d connections answered 200 ok"):format(good, N))
      local t_first = now()

      -- Every connection is still there, and a spread-out sample of them
      -- serves a second request on the same connection.
      local sample = {}
      for k = 1, SAMPLE do sample[k] = conns[math.floor((k - 1) * N / SAMPLE) + 1] end
      for i, c in ipairs(sample) do
        assert(not c.eof, ("sampled connection %d was closed"):format(i))
      end
      local again = round(sample)
      assert(again == SAMPLE, ("%d of %d kept-alive connections answered a second request")
        :format(again, SAMPLE))
      print(("\n  keep-alive: %d connections opened in %.2f s, all answered in %.2f s, "
        .. "%d answered again in %.2f s"):format(N, t_open - t0, t_first - t_open, SAMPLE, now() - t_first))
    end)
    close_all(conns)
    if not ok then error(err, 0) end
    assert(now() - t0 < LIMIT_S, ("took %.1f s"):format(now() - t0))
  end)
end)
