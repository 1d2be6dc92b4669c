-- moonport's json-server mode (`--json-db`) side by side with the real
-- json-server 0.17.4 (installed from spec/support/json-server's lockfile
-- by spec/support/fetch_json_server.sh).
--
-- For every case of spec/compat/json_server_cases.lua, a scratch folder
-- of the case's files (db.json, routes.json, a static folder) for each
-- server, json-server and `moonport --json-db` started on them with the
-- same options, and the case's requests sent to both in order; their
-- answers must agree on the status, the Content-Type, the headers the
-- table names (`compared_headers`), and the body (JSON compared as JSON,
-- after the request's `project`), and, after a case that writes, on
-- db.json (as JSON; json-server writes it after answering, so it is
-- waited for). Cases that only read and run on the same files and
-- options share one pair of servers; a case that writes gets its own.
--
-- The differences the table names (its `global` list, and a case's
-- `differs`) are the only ones allowed: a case marked `differs` must still
-- differ where it says (`differ_in`), so a mark cannot outlive the
-- difference. README.md's "Differences from json-server" is generated from
-- the same table (spec/support/json_server_differences.lua) and checked
-- here.
local helpers = require("spec.helpers")
local process = require("spec.support.process")
local differences = require("spec.support.json_server_differences")
local jc = require("spec.support.json_compare")
local cjson = require("cjson")

local table_ = require("spec.compat.json_server_cases")
local CASES = table_.cases

local install = os.getenv("MOONPORT_JSON_SERVER") or "build/json-server"
if install:sub(1, 1) ~= "/" then install = process.root .. "/" .. install end
local BIN = install .. "/node_modules/json-server/lib/cli/bin.js"

-- The Host every request names, so that Link and Location read the same.
local HOST = "api.test:3000"

local function write(path, text)
  local dir = path:match("^(.*)/[^/]*$")
  os.execute("mkdir -p '" .. dir .. "'")
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

-- A routes file's text, its rules in order.
local function routes_text(rules)
  local parts = {}
  for i, r in ipairs(rules) do parts[i] = ("  %s: %s"):format(cjson.encode(r[1]), cjson.encode(r[2])) end
  return "{\n" .. table.concat(parts, ",\n") .. "\n}\n"
end

-- The command-line options of the case for each server: json-server's
-- names, then moonport's.
local function options(c)
  local o = c.options or {}
  local js, mp = {}, {}
  local function both(a, b, v)
    js[#js + 1] = a
    mp[#mp + 1] = b
    if v ~= nil then
      js[#js + 1] = tostring(v)
      mp[#mp + 1] = tostring(v)
    end
  end
  if c.routes then both("--routes", "--routes", "routes.json") end
  if o.static then both("--static", "--static", o.static) end
  if o.id then both("--id", "--id", o.id) end
  if o.fks then both("--foreignKeySuffix", "--foreign-key-suffix", o.fks) end
  if o.read_only then both("--read-only", "--read-only") end
  -- json-server 0.17.4 reads `--no-cors` as `--cors false` (yargs'
  -- negation) and keeps CORS on; its alias `--nc` turns it off.
  if o.no_cors then both("--nc", "--no-cors") end
  if o.delay then both("--delay", "--delay", o.delay) end
  return js, mp
end

-- What makes two cases' servers the same.
local function setup_key(c)
  return cjson.encode({ c.db or table_.DB, c.routes or false, c.files or false, c.options or false })
end

local function writes(c)
  for _, r in ipairs(c.requests) do
    local m = r.method or "GET"
    if m ~= "GET" and m ~= "HEAD" then return true end
  end
  return false
end

-- A pair of servers on fresh copies of the case's files.
local Pair = {}
Pair.__index = Pair

local function start_pair(c)
  local self = setmetatable({ dirs = {}, key = setup_key(c) }, Pair)
  local js_args, mp_args = options(c)
  for _, who in ipairs({ "json-server", "moonport" }) do
    local dir = helpers.scratch_dir()
    self.dirs[who] = dir
    write(dir .. "/db.json", c.db or table_.DB)
    if c.routes then write(dir .. "/routes.json", routes_text(c.routes)) end
    for name, text in pairs(c.files or {}) do write(dir .. "/" .. name, text) end
  end
  self.js_port, self.mp_port = process.free_port(), process.free_port()
  local argv = { "node", BIN, "--port", tostring(self.js_port), "--host", "127.0.0.1", "--quiet" }
  for _, a in ipairs(js_args) do argv[#argv + 1] = a end
  argv[#argv + 1] = "db.json"
  self.js = process.spawn(argv, { cwd = self.dirs["json-server"] })
  argv = { process.bin, "--listen", "127.0.0.1:" .. self.mp_port }
  for _, a in ipairs(mp_args) do argv[#argv + 1] = a end
  argv[#argv + 1] = "--json-db"
  argv[#argv + 1] = "db.json"
  self.mp = process.spawn(argv, { cwd = self.dirs.moonport })
  process.wait_port(self.mp_port, 10, self.mp)
  process.wait_port(self.js_port, 30, self.js)
  return self
end

function Pair:stop()
  if self.js then self.js:stop() end
  if self.mp then self.mp:stop() end
  for _, dir in pairs(self.dirs) do helpers.remove_dir(dir) end
end

-- A media type compared as such: case and spaces around `;` do not count.
local function media_type(v)
  if v == nil then return nil end
  return (v:lower():gsub("%s*;%s*", ";"):gsub("%s+$", ""))
end

local function send(port, r)
  local headers = { { "Host", HOST } }
  for k, v in pairs(r.headers or {}) do
    if type(k) == "number" then headers[#headers + 1] = v else headers[#headers + 1] = { k, v } end
  end
  local body = r.body
  if r.json ~= nil then
    body = type(r.json) == "string" and r.json or cjson.encode(r.json)
    headers[#headers + 1] = { "Content-Type", "application/json" }
  end
  if body ~= nil then headers[#headers + 1] = { "Content-Length", tostring(#body) } end
  local t0 = helpers.now()
  local _, _, _, resp = helpers.request(port, r.method or "GET", r.path, headers, body)
  resp.elapsed = helpers.now() - t0
  return resp
end

local function values(resp, name)
  return table.concat(helpers.header_values(resp, name), "\n")
end

-- The differences between json-server's answer js and moonport's mp to
-- the request r of case c: a list of {aspect, text}.
local function compare(c, r, js, mp)
  local found = {}
  local function differ(aspect, text) found[#found + 1] = { aspect, text } end
  if js.status ~= mp.status then
    differ("status", ("status %d vs %d"):format(js.status, mp.status))
  end
  local jct, mct = values(js, "content-type"), values(mp, "content-type")
  if media_type(jct) ~= media_type(mct) then
    differ("header:Content-Type", ("Content-Type %q vs %q"):format(jct, mct))
  end
  local names = {}
  for _, n in ipairs(table_.compared) do names[#names + 1] = n end
  if c.options and c.options.no_cors then
    for _, n in ipairs(table_.compared_without_cors) do names[#names + 1] = n end
  end
  for _, n in ipairs(r.compare_headers or {}) do names[#names + 1] = n end
  for _, n in ipairs(names) do
    local a, b = values(js, n), values(mp, n)
    if r.header_project then a, b = r.header_project(n, a), r.header_project(n, b) end
    if a ~= b then differ("header:" .. n, ("%s %q vs %q"):format(n, a, b)) end
  end
  if r.body_compare == false or (r.method or "GET") == "HEAD" then return found end
  local a, b = js.body, mp.body
  if r.transform then a, b = r.transform(a), r.transform(b) end
  local ja, jb = jc.try_decode(a), jc.try_decode(b)
  if r.project then
    if ja == nil or jb == nil then
      differ("body", ("body is not JSON: %s vs %s"):format(helpers.shorten(a, 300), helpers.shorten(b, 300)))
      return found
    end
    ja, jb = r.project(ja), r.project(jb)
  end
  if ja ~= nil and jb ~= nil then
    local d = jc.diff(ja, jb, "json-server", "moonport")
    if d then
      differ("body", "JSON body differs at " .. d .. "\njson-server: " .. helpers.shorten(jc.encode(ja), 600)
        .. "\nmoonport: " .. helpers.shorten(jc.encode(jb), 600))
    end
  elseif a ~= b then
    differ("body", ("body %s vs %s"):format(helpers.shorten(a, 600), helpers.shorten(b, 600)))
  end
  return found
end

-- db.json of both, as JSON, once json-server's (written after its answer)
-- has settled: the difference, or nil.
local function compare_files(c, pair)
  local deadline = helpers.now() + 10
  local d
  repeat
    local a = jc.try_decode(helpers.read_file(pair.dirs["json-server"] .. "/db.json") or "")
    local b = jc.try_decode(helpers.read_file(pair.dirs.moonport .. "/db.json") or "")
    if a == nil or b == nil then
      d = "db.json is not JSON"
    else
      if c.project_db then a, b = c.project_db(a), c.project_db(b) end
      d = jc.diff(a, b, "json-server", "moonport")
    end
    if d == nil then return nil end
    process.nap(0.05)
  until helpers.now() >= deadline
  return "db.json differs at " .. d
end

describe("moonport's json-server mode beside json-server", function()
  local pair

  teardown(function()
    if pair then pair:stop() end
  end)

  it("has at least 60 cases, each named once", function()
    assert.is_true(#CASES >= 60, #CASES .. " cases")
    local seen = {}
    for _, c in ipairs(CASES) do
      assert.is_nil(seen[c.name], "two cases named " .. c.name)
      seen[c.name] = true
      assert.is_true(#c.requests > 0, c.name .. " sends nothing")
      if c.differs then assert.is_true(#(c.differ_in or {}) > 0, c.name .. ": differs where?") end
    end
  end)

  it("README.md lists the differences the table names", function()
    local readme = helpers.read_file(helpers.resolve("README.md"))
    local text = differences.render(table_)
    assert.is_truthy(readme:find(text, 1, true),
      "README.md's \"Differences from json-server\" is not what the table says; "
      .. "regenerate it with: luajit spec/support/json_server_differences.lua\n" .. text)
  end)

  for _, c in ipairs(CASES) do
    it(c.name, function()
      local key = setup_key(c)
      if pair and (pair.key ~= key or pair.dirty or writes(c)) then
        pair:stop()
        pair = nil
      end
      pair = pair or start_pair(c)
      pair.dirty = writes(c)
      local excused = {}
      for _, aspect in ipairs(c.differ_in or {}) do excused[aspect] = false end
      local problems = {}
      local function note(what, d)
        if excused[d[1]] ~= nil then
          excused[d[1]] = true
        else
          problems[#problems + 1] = what .. ": " .. d[2]
        end
      end
      for ri, r in ipairs(c.requests) do
        local js = send(pair.js_port, r)
        local mp = send(pair.mp_port, r)
        local what = ("request %d (%s %s)"):format(ri, r.method or "GET", r.path)
        if r.status then
          assert.equal(r.status, js.status, what .. ": json-server's status is not the one the case "
            .. "is written for; body: " .. helpers.shorten(js.body, 400))
        end
        if r.min_ms then
          for _, resp in ipairs({ js, mp }) do
            assert.is_true(resp.elapsed * 1000 >= r.min_ms * 0.9,
              ("%s answered in %.0f ms, before its delay"):format(what, resp.elapsed * 1000))
          end
        end
        for _, d in ipairs(compare(c, r, js, mp)) do note(what, d) end
      end
      if writes(c) and c.compare_db ~= false then
        local d = compare_files(c, pair)
        if d then note("after the requests", { "db", d }) end
      end
      assert.equal(0, #problems, table.concat(problems, "\n"))
      for aspect, seen in pairs(excused) do
        assert.is_true(seen, ("marked as differing in %s (%s), but it no longer does"):format(
          aspect, tostring(c.differs)))
      end
    end)
  end
end)
