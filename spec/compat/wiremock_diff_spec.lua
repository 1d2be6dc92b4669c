-- moonport's mock side by side with the real WireMock (the standalone jar
-- the npm package `wiremock` ships, fetched by spec/support/fetch_wiremock.sh).
--
-- One WireMock JVM and one `moonport --mock` run for the whole suite, each
-- on a root directory of its own. For every case of
-- spec/compat/wiremock_cases.lua, both are reset (`POST /__admin/reset`),
-- given the case's mappings through the admin API, and sent the same
-- requests in order; their answers must agree on the status, the
-- Content-Type, the headers the case's mappings set and the body (JSON
-- compared as JSON, after the case's `project` for admin answers, else
-- byte for byte). Body files (`files`) are written into both roots before
-- the servers start. A case marked `wiremock_404` runs against a second
-- mock started with --wiremock-404, and its unmatched requests' bodies
-- (WireMock's 404 page) are compared byte for byte too.
--
-- The differences the table names (its `global` list, and a case's
-- `differs`) are the only ones allowed: a case marked `differs` must still
-- differ where it says (`differ_in`), so a mark cannot outlive the
-- difference. README.md's "Differences from WireMock" is generated from
-- the same table (spec/support/wiremock_differences.lua) and checked here.
local helpers = require("spec.helpers")
local process = require("spec.support.process")
local differences = require("spec.support.wiremock_differences")
local json_compare = require("spec.support.json_compare")
local cjson = require("cjson")

local table_ = require("spec.compat.wiremock_cases")
local CASES = table_.cases

local JAR = (os.getenv("MOONPORT_WIREMOCK") or "build/wiremock") .. "/wiremock-standalone.jar"

-- Response headers never compared: the server's own, framing, and CORS
-- (moonport's default; see the table's global differences).
local NEVER = {
  date = true, server = true, ["matched-stub-id"] = true, ["matched-stub-name"] = true,
  ["transfer-encoding"] = true, ["content-length"] = true, vary = true, connection = true,
  ["keep-alive"] = true,
}

local function is_cors(name)
  return name:find("^access%-control%-") ~= nil
end

local function write(path, text)
  local dir = path:match("^(.*)/[^/]*$")
  os.execute("mkdir -p '" .. dir .. "'")
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

-- The same id for a case's mapping in both servers: WireMock takes UUIDs.
local function mapping_id(ci, mi)
  return ("00000000-0000-4000-8000-%06d%06d"):format(ci, mi)
end

local function header_values(resp, name)
  return helpers.header_values(resp, name)
end

-- A media type compared as such: case and spaces around `;` do not count.
local function media_type(v)
  if v == nil then return nil end
  return (v:lower():gsub("%s*;%s*", ";"):gsub("%s+$", ""))
end

-- JSON compared as JSON (arrays marked, so that [] and {} differ): the
-- first difference, or nil.
local function json_diff(a, b)
  return json_compare.diff(a, b, "WireMock", "moonport")
end

-- How a request for a fault ended: the client sees no answer, or bytes
-- that are not one.
local function fault_kind(err)
  err = tostring(err)
  if err:find("bad HTTP response", 1, true) then return "not HTTP" end
  return "no response"
end

local decode = json_compare.try_decode

local function send_once(port, r)
  local t0 = helpers.now()
  if r.own_host then
    -- Host names the server itself, port included (what a webhook's
    -- {{originalRequest.baseUrl}} calls back).
    local headers = { Host = "127.0.0.1:" .. port }
    for k, v in pairs(r.headers or {}) do headers[k] = v end
    r = setmetatable({ headers = headers }, { __index = r })
  end
  if r.fault then
    local ok, err = pcall(helpers.request, port, r.method or "GET", r.path, r.headers, r.body)
    return { fault = ok and "an answer" or fault_kind(err), error = not ok and tostring(err) or nil }
  end
  local status, _, body, resp = helpers.request(port, r.method or "GET", r.path, r.headers, r.body)
  resp.elapsed = helpers.now() - t0
  return resp
end

-- A request with `poll` (what happens after an answer: a webhook) is sent
-- again until poll(decoded JSON body) is true, up to `poll_s` seconds
-- (10), to each server on its own; the last answer is compared, and one
-- that never came fails the case.
local function send(port, r)
  if r.poll == nil then return send_once(port, r) end
  local last
  local done = helpers.eventually(function()
    last = send_once(port, r)
    local v = decode(last.body or "")
    return v ~= nil and r.poll(v)
  end, r.poll_s or 10)
  last.poll_failed = not done
  return last
end


-- Whether WireMock answered a request no stub matched (no stub id).
local function unmatched(r, wm)
  return wm.status == 404 and not r.path:find("^/__admin")
    and #header_values(wm, "matched-stub-id") == 0
end

-- The differences between WireMock's answer wm and moonport's mp to the
-- request r of case c: a list of {aspect, text}.
local function compare(c, r, wm, mp)
  local found = {}
  local function differ(aspect, text) found[#found + 1] = { aspect, text } end
  if r.fault then
    if wm.fault ~= mp.fault then
      differ("fault", ("%s (%s) vs %s (%s)"):format(wm.fault, tostring(wm.error), mp.fault, tostring(mp.error)))
    end
    return found
  end
  if wm.status ~= mp.status then
    differ("status", ("status %d vs %d"):format(wm.status, mp.status))
  end
  if r.compare_reason and wm.reason ~= mp.reason then
    differ("status", ("reason phrase %q vs %q"):format(wm.reason, mp.reason))
  end
  -- Content-Type, when WireMock sends one (when it sends none, moonport
  -- labels the body: a global difference).
  local wct = header_values(wm, "content-type")[1]
  if wct then
    local mct = header_values(mp, "content-type")[1]
    if media_type(wct) ~= media_type(mct) then
      differ("header:Content-Type", ("Content-Type %s vs %s"):format(wct, tostring(mct)))
    end
  end
  -- The headers the case's mappings set, and those it names.
  local names = {}
  for _, m in ipairs(c.mappings or {}) do
    for name in pairs(type(m.response) == "table" and m.response.headers or {}) do names[#names + 1] = name end
  end
  for _, name in ipairs(r.compare_headers or {}) do names[#names + 1] = name end
  for _, name in ipairs(names) do
    local l = name:lower()
    if not NEVER[l] and not is_cors(l) and l ~= "content-type" then
      local a = table.concat(header_values(wm, name), "\n")
      local b = table.concat(header_values(mp, name), "\n")
      if a ~= b then differ("header:" .. name, ("header %s: %q vs %q"):format(name, a, b)) end
    end
  end
  -- Bodies.
  if r.body_compare == false then return found end
  if unmatched(r, wm) and not c.wiremock_404 then
    -- Both 404, each with its own report (a global difference); moonport's
    -- must be its report, not a stub's 404.
    if mp.status == 404 and not mp.body:find("^No stub matched") then
      differ("body", "moonport's 404 is not its report of an unmatched request: " .. helpers.shorten(mp.body, 200))
    end
    return found
  end
  local a, b = wm.body, mp.body
  if r.transform then a, b = r.transform(a), r.transform(b) end
  local ja, jb = decode(a), decode(b)
  if r.project then
    if ja == nil or jb == nil then
      differ("body", ("body is not JSON: %s vs %s"):format(helpers.shorten(a, 300), helpers.shorten(b, 300)))
      return found
    end
    ja, jb = { r.project(ja) }, { r.project(jb) }
  end
  if ja ~= nil and jb ~= nil and type(ja) == "table" and type(jb) == "table" then
    local d = json_diff(ja, jb)
    if d then
      differ("body", "JSON body differs at " .. d .. "\nWireMock: " .. helpers.shorten(cjson.encode(ja), 600)
        .. "\nmoonport: " .. helpers.shorten(cjson.encode(jb), 600))
    end
  elseif a ~= b then
    -- Text of many lines (a 404 page): the first line that differs.
    local n, la, lb = 0, nil, nil
    local ia, ib = a:gmatch("([^\n]*)\n?"), b:gmatch("([^\n]*)\n?")
    repeat
      n, la, lb = n + 1, ia(), ib()
    until la ~= lb
    differ("body", ("body differs at line %d: %q vs %q\nWireMock's: %s\nmoonport's: %s"):format(n,
      tostring(la), tostring(lb), helpers.shorten(a, 300), helpers.shorten(b, 300)))
  end
  return found
end

describe("moonport's mock beside WireMock", function()
  local wm_dir, mp_dir, wiremock, moon, moon_404
  local wm_port

  setup(function()
    wm_dir, mp_dir = helpers.scratch_dir(), helpers.scratch_dir()
    -- Body files of every case, in both roots, before either starts.
    local files = {}
    for _, c in ipairs(CASES) do
      for name, text in pairs(c.files or {}) do
        assert(files[name] == nil or files[name] == text,
          "two cases give the body file " .. name .. " different contents")
        files[name] = text
      end
    end
    for _, dir in ipairs({ wm_dir, mp_dir }) do
      os.execute("mkdir -p '" .. dir .. "/mappings' '" .. dir .. "/__files'")
      for name, text in pairs(files) do write(dir .. "/__files/" .. name, text) end
    end
    wm_port = process.free_port()
    wiremock = process.spawn({ "java", "-Xmx256m", "-jar", JAR, "--port", tostring(wm_port),
      "--bind-address", "127.0.0.1", "--root-dir", wm_dir, "--disable-banner" })
    moon = process.start(mp_dir, nil, { mock = true })
    -- The cases of WireMock's 404 page go to a mock started with it.
    moon_404 = process.start(mp_dir, { "--wiremock-404" }, { mock = true })
    process.wait_port(wm_port, 120, wiremock)
  end)

  teardown(function()
    if wiremock then wiremock:stop() end
    if moon then moon:stop() end
    if moon_404 then moon_404:stop() end
    for _, dir in ipairs({ wm_dir, mp_dir }) do
      if dir then helpers.remove_dir(dir) end
    end
  end)

  it("has at least 150 cases, each named once", function()
    assert.is_true(#CASES >= 150, #CASES .. " cases")
    local seen = {}
    for _, c in ipairs(CASES) do
      assert.is_nil(seen[c.name], "two cases named " .. c.name)
      seen[c.name] = true
      assert.is_true(#c.requests > 0, c.name .. " sends nothing")
      if c.differs then assert.is_true(#(c.differ_in or {}) > 0, c.name .. ": differs where?") end
    end
  end)

  it("README.md lists the differences the table names", function()
    local f = assert(io.open(helpers.resolve("README.md")))
    local readme = f:read("*a")
    f:close()
    local text = differences.render(table_)
    assert.is_truthy(readme:find(text, 1, true),
      "README.md's \"Differences from WireMock\" is not what the table says; "
      .. "regenerate it with: luajit spec/support/wiremock_differences.lua\n" .. text)
  end)

  for ci, c in ipairs(CASES) do
    it(c.name, function()
      local mp_port = c.wiremock_404 and moon_404.port or moon.port
      local ports = { wm_port, mp_port }
      for si, port in ipairs(ports) do
        local status, _, body = helpers.request(port, "POST", "/__admin/reset")
        assert.equal(200, status, body)
        for mi, m in ipairs(c.mappings or {}) do
          local text = m
          if type(m) == "table" then
            local copy = {}
            for k, v in pairs(m) do copy[k] = v end
            if copy.id == nil and not c.no_ids then copy.id = mapping_id(ci, mi) end
            text = cjson.encode(copy)
          end
          status, _, body = helpers.request(port, "POST", "/__admin/mappings",
            { ["Content-Type"] = "application/json" }, text)
          assert.equal(201, status, (si == 1 and "WireMock" or "moonport")
            .. " refused mapping " .. mi .. ": " .. body)
        end
      end
      local excused = {}
      for _, aspect in ipairs(c.differ_in or {}) do excused[aspect] = false end
      local problems = {}
      for ri, r in ipairs(c.requests) do
        local wm = send(wm_port, r)
        local mp = send(mp_port, r)
        local what = ("request %d (%s %s)"):format(ri, r.method or "GET", r.path)
        if r.fault then
          assert.is_not.equal("an answer", wm.fault, what .. ": WireMock answered a fault")
        end
        for si, resp in ipairs({ wm, mp }) do
          assert.is_falsy(resp.poll_failed, ("%s: %s never gave the answer polled for: %s"):format(
            what, si == 1 and "WireMock" or "moonport", helpers.shorten(resp.body or "", 400)))
        end
        if r.status then
          assert.equal(r.status, wm.status, what .. ": WireMock's status is not the one the case "
            .. "is written for; body: " .. helpers.shorten(wm.body, 400))
        end
        if r.min_ms then
          for _, resp in ipairs({ wm, mp }) do
            assert.is_true(resp.elapsed * 1000 >= r.min_ms * 0.9,
              ("%s answered in %.0f ms, before its delay"):format(what, resp.elapsed * 1000))
          end
        end
        for _, d in ipairs(compare(c, r, wm, mp)) do
          if excused[d[1]] ~= nil then
            excused[d[1]] = true
          else
            problems[#problems + 1] = what .. ": " .. d[2]
          end
        end
      end
      assert.equal(0, #problems, table.concat(problems, "\n"))
      for aspect, seen in pairs(excused) do
        assert.is_true(seen, ("marked as differing in %s (%s), but it no longer does"):format(
          aspect, tostring(c.differs)))
      end
    end)
  end
end)
