--- moonport's mock server: stubs in Lua or in WireMock's JSON, request
-- matching, delays, faults, scenarios, a request journal and WireMock's
-- admin API, all on one app.
--
--     local mock = require("moonport.mock")
--     local app = mock.app()
--     app:stub{
--       request = { method = "GET", url_path = "/users/1" },
--       response = { status = 200, json_body = { id = 1, name = "Ada" } },
--     }
--     return app
--
-- Stubs written in the script (or read from mapping files) are the same in
-- every worker. Stubs added, changed or removed through the admin API, the
-- journal and scenario states live in moonport.shared, so every worker
-- sees them; each worker rebuilds its index when the version there moves.
--
-- @module moonport.mock

local moonport = require("moonport")
local core = require("moonport.core")
local json = require("moonport.json")
local json_encode, json_decode = json.encode, json.decode
local model = require("moonport.mock.model")
local match = require("moonport.mock.match")
local template = require("moonport.mock.template")

local type, pairs, ipairs, tostring, tonumber = type, pairs, ipairs, tostring, tonumber
local error, pcall, setmetatable = error, pcall, setmetatable
local concat, sort, floor = table.concat, table.sort, math.floor
local shared = moonport.shared
local sleep = moonport.sleep

-- Forked workers must not share one random sequence (UUIDs, delays).
math.randomseed(os.time() + (tonumber(tostring({}):match("0x(%x+)"), 16) or 0) % 2^31)

local mock = {}

local KEY_VERSION = "mock:version"    -- moves on every admin change
local KEY_ADMIN = "mock:admin"        -- JSON: {added = {id: mapping}, removed = {id: true}, order = [id]}
local KEY_SEQ = "mock:journal:seq"    -- the last journal entry's number
local KEY_JOURNAL = "mock:journal:"   -- .. n: one entry (JSON)
local KEY_JOURNAL_FIRST = "mock:journal:first" -- the first entry kept
local KEY_SCENARIO = "mock:scenario:" -- .. name: its state

local METHODS = { "GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS" }
-- Mappings are decoded keeping numbers as written, so that a jsonBody is
-- served and listed as it came (2.0 stays 2.0); model.from_wiremock turns
-- the numbers of our own fields into plain ones.
local MAPPING = { literals = true }
local JOURNAL_BODY_MAX = 64 * 1024

local App = core.App
local MockApp = setmetatable({}, { __index = App })
MockApp.__index = MockApp

-- Stubs --------------------------------------------------------------------

-- Completes a normalized stub: compiled request pattern, id, sequence.
local function prepare(self, stub, seq)
  local compiled, err = match.compile(stub.request)
  if compiled == nil then return nil, err end
  stub.compiled = compiled
  stub.seq = seq
  return stub
end

-- The stubs now in force: the script's, less those removed through the
-- admin API, plus those added there. Rebuilt when the version moves.
local function current(self)
  local version = shared:get(KEY_VERSION) or 0
  if version == self.version then return self.index, self.all end
  local doc = json_decode(shared:get(KEY_ADMIN) or "{}", MAPPING) or {}
  local removed, added = doc.removed or {}, doc.added or {}
  local all = {}
  for _, s in ipairs(self.script_stubs) do
    if not removed[s.id] and added[s.id] == nil then all[#all + 1] = s end
  end
  for i, id in ipairs(doc.order or {}) do
    local mapping = added[id]
    if mapping ~= nil then
      local stub = model.from_wiremock(mapping)
      local ok = model.normalize(stub)
      if ok then
        stub = ok
        stub.id = id
        if prepare(self, stub, 1e9 + i) then all[#all + 1] = stub end
      end
    end
  end
  sort(all, match.before)
  self.all = all
  self.index = match.index(all)
  self.version = version
  return self.index, self.all
end

local function admin_doc()
  local doc = json_decode(shared:get(KEY_ADMIN) or "{}", MAPPING) or {}
  doc.added = doc.added or {}
  doc.removed = doc.removed or {}
  doc.order = doc.order or json.array()
  return doc
end

local function save_admin(doc)
  shared:set(KEY_ADMIN, json_encode(doc))
  shared:incr(KEY_VERSION)
end

--- Adds a stub: `request` (what to match), `response` (a table, or a
-- function(req, res) with the whole API), `priority` (1 is highest,
-- default 5), `scenario = {name, required_state, new_state}`, `id`, `name`.
-- Keys are WireMock's in snake_case (`url_path`, `query_parameters`,
-- `json_body`, `fixed_delay_milliseconds`, ...). Returns the app.
-- @usage app:stub{ request = { url = "/ping" }, response = { body = "pong" } }
function MockApp:stub(spec)
  local stub, err = model.normalize(spec)
  if stub == nil then error("app:stub: " .. err, 2) end
  local n = #self.script_stubs + 1
  stub.id = stub.id or ("%08x-0000-4000-8000-%012x"):format(self.script_id, n)
  stub.lua = spec.lua ~= false and not spec.from_file
  stub.from_file = nil
  local ok
  ok, err = prepare(self, stub, n)
  if not ok then error("app:stub: " .. err, 2) end
  self.script_stubs[n] = stub
  return self
end

--- Adds a stub from WireMock's JSON mapping (a decoded table or JSON
-- text), as `moonport --mock` does for each mapping file. Returns the app.
-- @usage app:stub_wiremock(io.open("mapping.json"):read("*a"))
function MockApp:stub_wiremock(mapping, where)
  if type(mapping) == "string" then
    local decoded, err = json_decode(mapping, MAPPING)
    if decoded == nil then error((where or "mapping") .. ": not JSON: " .. tostring(err), 2) end
    mapping = decoded
  end
  local stub = model.from_wiremock(mapping)
  stub.from_file = true
  stub.lua = false
  local ok, err = pcall(self.stub, self, stub)
  if not ok then error((where or "mapping") .. ": " .. tostring(err):gsub("^app:stub: ", ""), 2) end
  return self
end

-- Requests -------------------------------------------------------------------

-- What matching needs to know about req, computed only when asked.
local function facts_of(req)
  local f = { method = req.method, path = req.path }
  local qs = req.query_string
  f.url = qs ~= "" and (f.path .. "?" .. qs) or f.path
  f.query = match.parse_query(qs)
  f.header = function(name) return req:header(name) end
  local cookies
  f.cookies = function()
    cookies = cookies or match.parse_cookies(req:header("cookie"))
    return cookies
  end
  local body
  f.body = function()
    if body == nil then body = req:body() or "" end
    return body
  end
  return f
end

-- The same facts for a journal entry's request.
local function facts_of_logged(r)
  local f = { method = r.method, url = r.url }
  f.path = r.url:match("^[^?]*")
  f.query = match.parse_query(r.url:match("%?(.*)$"))
  local headers = {}
  for k, v in pairs(r.headers or {}) do headers[k:lower()] = v end
  f.header = function(name) return headers[name:lower()] end
  f.cookies = function() return r.cookies or {} end
  f.body = function() return r.body or "" end
  return f
end

local function scenario_state(name)
  return shared:get(KEY_SCENARIO .. name) or "Started"
end

local function scenario_ok(stub)
  if stub.scenario_name == nil or stub.required_scenario_state == nil then return true end
  return scenario_state(stub.scenario_name) == stub.required_scenario_state
end

-- Finds the stub for facts: the best by priority, then the newest.
local function find(self, facts)
  return match.find(current(self), facts, scenario_ok)
end

local function describe_stub(stub)
  local r = stub.request
  local url = r.url or r.url_path or r.url_pattern or r.url_path_pattern or r.url_path_template or "any URL"
  return ("%s (%s %s)"):format(stub.name or stub.id, r.method or "ANY", url)
end

-- 404 for a request no stub matched: the closest stubs and what differed.
local function unmatched_report(self, facts)
  local _, all = current(self)
  local scored = {}
  for _, stub in ipairs(all) do
    local ok, why, failed = match.test(stub.compiled, facts, true)
    if ok then
      why, failed = { ("scenario %s is in state %s, not %s"):format(stub.scenario_name,
        scenario_state(stub.scenario_name), tostring(stub.required_scenario_state)) }, 1
    end
    scored[#scored + 1] = { stub = stub, why = why, failed = failed }
  end
  sort(scored, function(a, b)
    if a.failed ~= b.failed then return a.failed < b.failed end
    return match.before(a.stub, b.stub)
  end)
  local lines = { ("No stub matched %s %s"):format(facts.method, facts.url) }
  if #scored == 0 then
    lines[#lines + 1] = "There are no stubs."
  else
    lines[#lines + 1] = "Closest stubs:"
    for i = 1, math.min(3, #scored) do
      local s = scored[i]
      lines[#lines + 1] = ("  %d. %s: %s"):format(i, describe_stub(s.stub), concat(s.why, "; "))
    end
  end
  return concat(lines, "\n") .. "\n"
end

-- Journal ---------------------------------------------------------------------

local function iso_date(ms)
  return os.date("!%Y-%m-%dT%H:%M:%S", floor(ms / 1000)) .. (".%03dZ"):format(ms % 1000)
end

local function now_ms()
  return floor(core.now() * 1000)
end

-- A journal entry (WireMock's ServeEvent) for req. What can be derived
-- later (the body in base64, the stub's mapping) is, when the journal is
-- read: logging is on every request's path, reading is not.
local function log_request(self, req, facts, stub, status)
  local size = self.settings.journal_size
  local body = facts.body()
  local logged_body = #body > JOURNAL_BODY_MAX and body:sub(1, JOURNAL_BODY_MAX) or body
  local query = {}
  for k, values in pairs(facts.query) do query[k] = { key = k, values = values } end
  local ms = now_ms()
  -- The journal's sequence number makes the id: unique for the server's
  -- life, and cheaper than a random UUID.
  local n = shared:incr(KEY_SEQ)
  local entry = {
    id = ("6a6f7572-6e61-4c00-8000-%012x"):format(n),
    request = {
      url = facts.url, absoluteUrl = "http://" .. (req:header("host") or "localhost") .. facts.url,
      method = facts.method, clientIp = req.remote_addr, headers = req:headers(),
      cookies = facts.cookies(), body = logged_body,
      loggedDate = ms, loggedDateString = iso_date(ms), queryParams = query,
      browserProxyRequest = false,
    },
    responseDefinition = { status = status },
    wasMatched = stub ~= nil,
    stubId = stub and stub.id,
  }
  shared:set(KEY_JOURNAL .. n, json_encode(entry))
  if n > size then
    shared:delete(KEY_JOURNAL .. (n - size))
    shared:set(KEY_JOURNAL_FIRST, n - size + 1)
  end
end

local find_stub

-- Every journal entry kept, newest first, completed as WireMock shows it.
local function journal(self)
  local last = shared:get(KEY_SEQ) or 0
  local first = shared:get(KEY_JOURNAL_FIRST) or 1
  local out = {}
  for n = last, first, -1 do
    local text = shared:get(KEY_JOURNAL .. n)
    local e = text and json_decode(text)
    if e then
      e.request.bodyAsBase64 = model.base64_encode(e.request.body or "")
      local stub = e.stubId and find_stub(self, e.stubId)
      if stub then e.stubMapping = model.to_wiremock(stub) end
      e.stubId = nil
      out[#out + 1] = e
    end
  end
  return out
end

local function clear_journal()
  local last = shared:get(KEY_SEQ) or 0
  local first = shared:get(KEY_JOURNAL_FIRST) or 1
  for n = first, last do shared:delete(KEY_JOURNAL .. n) end
  shared:set(KEY_JOURNAL_FIRST, last + 1)
end

-- Responses -------------------------------------------------------------------

local function gaussian()
  local u1, u2 = math.random(), math.random()
  if u1 < 1e-12 then u1 = 1e-12 end
  return math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)
end

local function delay_of(r)
  local ms = tonumber(r.fixed_delay_milliseconds) or 0
  local d = r.delay_distribution
  if type(d) == "table" then
    if d.type == "uniform" then
      local lo, hi = tonumber(d.lower) or 0, tonumber(d.upper) or 0
      ms = ms + lo + math.random() * (hi - lo)
    elseif d.type == "lognormal" then
      local v = (tonumber(d.median) or 0) * math.exp((tonumber(d.sigma) or 0) * gaussian())
      if d.max_value then v = math.min(v, tonumber(d.max_value)) end
      ms = ms + v
    end
  end
  return ms
end

local function read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local text = f:read("*a")
  f:close()
  return text
end

-- What templates see of a request.
local function template_ctx(req, facts, base_url)
  local segments = {}
  for seg in facts.path:gmatch("[^/]+") do segments[#segments + 1] = seg end
  local query = {}
  for k, v in pairs(facts.query) do query[k] = #v == 1 and v[1] or v end
  return { request = {
    url = facts.url, path = facts.path, path_segments = segments,
    path_params = facts.path_params or {}, query = query, headers = req:headers(),
    body = facts.body(), method = facts.method, base_url = base_url,
  } }
end

local function templated(stub, r)
  if r.transformers == false then return false end
  if type(r.transformers) == "table" then
    for _, t in ipairs(r.transformers) do
      if t == "response-template" then return true end
    end
    return false
  end
  return stub.lua
end

local function respond(self, stub, req, res, facts)
  local r = stub.response
  if type(r) == "function" then return r(req, res) end
  local ms = delay_of(r)
  if ms > 0 then sleep(ms) end
  if r.fault ~= nil then return res:fault(r.fault) end
  local ctx = templated(stub, r) and template_ctx(req, facts, self.base_url or "")
  res:status(tonumber(r.status) or 200, r.status_message)
  local json = r.json_body ~= nil
  local has_type = false
  for name, value in pairs(r.headers or {}) do
    local list = type(value) == "table" and value or { value }
    for _, v in ipairs(list) do
      v = tostring(v)
      if ctx then v = template.render(v, ctx) end
      res:header(name, v)
    end
    if name:lower() == "content-type" then
      has_type = true
      json = json or tostring(list[1]):find("json", 1, true) ~= nil
    end
  end
  local body
  if r.json_body ~= nil then
    body = json_encode(r.json_body)
  elseif r.base64_body ~= nil then
    body = model.base64_decode(tostring(r.base64_body)) or ""
  elseif r.body_file_name ~= nil then
    local name = tostring(r.body_file_name)
    if ctx then name = template.render(name, ctx) end
    body = read_file(self.files_dir .. "/" .. name)
    if body == nil then
      res:status(500)
      return res:send("bodyFileName " .. name .. " not found in " .. self.files_dir .. "\n")
    end
    json = json or name:find("%.json$") ~= nil
  else
    body = r.body ~= nil and tostring(r.body) or ""
  end
  if ctx then
    -- A body that reads as JSON stays JSON whatever the values hold.
    body = template.render(body, ctx, { json = json or body:find("^%s*[%[{]") ~= nil })
  end
  if json and not has_type then res:header("Content-Type", "application/json") end
  local dribble = r.chunked_dribble_delay
  if type(dribble) == "table" and #body > 0 then
    local chunks = math.max(1, floor(tonumber(dribble.number_of_chunks) or 1))
    local total = tonumber(dribble.total_duration) or 0
    local size = math.ceil(#body / chunks)
    local pieces = math.ceil(#body / size)
    for i = 1, pieces do
      res:write(body:sub((i - 1) * size + 1, i * size))
      if i < pieces and total > 0 then sleep(total / pieces) end
    end
    return res:finish()
  end
  res:send(body)
end

local CONTENT_TYPES = {
  json = "application/json", html = "text/html; charset=utf-8", htm = "text/html; charset=utf-8",
  txt = "text/plain; charset=utf-8", xml = "application/xml", css = "text/css",
  js = "text/javascript", svg = "image/svg+xml", png = "image/png", jpg = "image/jpeg",
  jpeg = "image/jpeg", gif = "image/gif", pdf = "application/pdf",
}

-- As WireMock does, a GET no stub matches is answered from DIR/__files
-- when a file is there (a directory's index.html included). Returns true
-- when it answered.
local function static_file(self, facts, res)
  if not self.serve_files or (facts.method ~= "GET" and facts.method ~= "HEAD") then return false end
  local path = facts.path
  if path:find("..", 1, true) or path:find("%z") then return false end
  if path:sub(-1) == "/" then path = path .. "index.html" end
  local body = read_file(self.files_dir .. path)
  if body == nil then return false end
  local ext = path:match("%.(%w+)$")
  res:header("Content-Type", CONTENT_TYPES[ext and ext:lower() or ""] or "application/octet-stream")
  res:send(body)
  return true
end

-- The handler behind every path no route of the script takes.
local function serve(self, req, res)
  local facts = facts_of(req)
  local stub = find(self, facts)
  if stub == nil and static_file(self, facts, res) then return end
  if stub == nil then
    if self.settings.journal_size > 0 then log_request(self, req, facts, nil, 404) end
    res:status(404):header("Content-Type", "text/plain; charset=utf-8")
    return res:send(unmatched_report(self, facts))
  end
  if stub.scenario_name and stub.new_scenario_state then
    shared:set(KEY_SCENARIO .. stub.scenario_name, stub.new_scenario_state)
  end
  if self.settings.journal_size > 0 then
    local status = type(stub.response) == "table" and (tonumber(stub.response.status) or 200) or 200
    log_request(self, req, facts, stub, status)
  end
  return respond(self, stub, req, res, facts)
end

-- CORS ----------------------------------------------------------------------

local ALLOW_METHODS = "GET, POST, PUT, PATCH, DELETE, OPTIONS, HEAD"

local function cors(req, res)
  local origin = req:header("origin")
  if origin then
    res:header("Access-Control-Allow-Origin", origin)
    res:header("Access-Control-Allow-Credentials", "true")
    res:header("Vary", "Origin")
  else
    res:header("Access-Control-Allow-Origin", "*")
  end
end

-- A preflight is answered here, before stubs and routes see it.
local function preflight(req, res)
  if req.method ~= "OPTIONS" or req:header("access-control-request-method") == nil then
    return false
  end
  cors(req, res)
  res:status(204)
  res:header("Access-Control-Allow-Methods", ALLOW_METHODS)
  local asked = req:header("access-control-request-headers")
  if asked then res:header("Access-Control-Allow-Headers", asked) end
  res:header("Access-Control-Max-Age", "86400")
  res:send("")
  return true
end

-- Every handler of a mock app goes through here: CORS first.
local function wrap(self, handler)
  if not self.settings.cors then return handler end
  return function(req, res)
    if preflight(req, res) then return end
    cors(req, res)
    return handler(req, res)
  end
end

function MockApp:route(method, pattern, handler)
  return App.route(self, method, pattern, wrap(self, handler))
end
for _, m in ipairs(METHODS) do
  local name = m:lower()
  MockApp[name] = function(self, pattern, handler)
    return App[name](self, pattern, wrap(self, handler))
  end
end

-- The admin API ---------------------------------------------------------------

local function send_json(res, status, value)
  res:status(status):header("Content-Type", "application/json")
  res:send(json_encode(value))
end

local function not_found(res, what)
  send_json(res, 404, { errors = { { code = 10, title = what .. " not found" } } })
end

local function bad_request(res, detail)
  send_json(res, 422, { errors = { { code = 10, title = "Error parsing JSON", detail = detail } } })
end

local function decode_body(req)
  local v, err = json_decode(req:body() or "", MAPPING)
  if type(v) ~= "table" then return nil, tostring(err or "expected a JSON object") end
  return v
end

-- An admin stub checked before it is stored: it must normalize and compile.
local function check_mapping(self, mapping)
  local stub, err = model.normalize(model.from_wiremock(mapping))
  if stub == nil then return nil, err end
  local c, e = match.compile(stub.request)
  if c == nil then return nil, e end
  return stub
end

local function mappings_json(self)
  local _, all = current(self)
  local list = {}
  for i, s in ipairs(all) do list[i] = model.to_wiremock(s) end
  return json_encode({ mappings = json.array(list), meta = { total = #list } })
end

function find_stub(self, id)
  local _, all = current(self)
  for _, s in ipairs(all) do if s.id == id then return s end end
end

local function requests_json(list, key)
  return json_encode({ [key] = json.array(list), meta = { total = #list },
                       requestJournalDisabled = false })
end

local function compile_pattern(body)
  local stub, err = model.normalize(model.from_wiremock({ request = body }))
  if stub == nil then return nil, err end
  return match.compile(stub.request)
end

local function reset_scenarios()
  for _, key in ipairs(shared:keys(0)) do
    if key:sub(1, #KEY_SCENARIO) == KEY_SCENARIO then shared:delete(key) end
  end
end

local function admin_routes(self)
  local A = "/__admin"
  self:get(A .. "/mappings", function(req, res)
    res:header("Content-Type", "application/json")
    res:send(mappings_json(self))
  end)
  self:post(A .. "/mappings", function(req, res)
    local mapping, err = decode_body(req)
    if mapping == nil then return bad_request(res, err) end
    local ok
    ok, err = check_mapping(self, mapping)
    if ok == nil then return bad_request(res, err) end
    local id = mapping.id or mapping.uuid or model.uuid()
    mapping.id, mapping.uuid = id, id
    local doc = admin_doc()
    doc.added[id] = mapping
    doc.order[#doc.order + 1] = id
    save_admin(doc)
    send_json(res, 201, mapping)
  end)
  self:delete(A .. "/mappings", function(req, res)
    local doc = admin_doc()
    for _, s in ipairs(self.script_stubs) do doc.removed[s.id] = true end
    doc.added, doc.order = {}, json.array()
    save_admin(doc)
    send_json(res, 200, {})
  end)
  self:post(A .. "/mappings/reset", function(req, res)
    shared:delete(KEY_ADMIN)
    shared:incr(KEY_VERSION)
    send_json(res, 200, {})
  end)
  self:get(A .. "/mappings/:id", function(req, res)
    local s = find_stub(self, req.params.id)
    if s == nil then return not_found(res, "Stub mapping") end
    send_json(res, 200, model.to_wiremock(s))
  end)
  self:put(A .. "/mappings/:id", function(req, res)
    local id = req.params.id
    if find_stub(self, id) == nil then return not_found(res, "Stub mapping") end
    local mapping, err = decode_body(req)
    if mapping == nil then return bad_request(res, err) end
    local ok
    ok, err = check_mapping(self, mapping)
    if ok == nil then return bad_request(res, err) end
    mapping.id, mapping.uuid = id, id
    local doc = admin_doc()
    if doc.added[id] == nil then doc.order[#doc.order + 1] = id end
    doc.added[id] = mapping
    save_admin(doc)
    send_json(res, 200, mapping)
  end)
  self:delete(A .. "/mappings/:id", function(req, res)
    local id = req.params.id
    if find_stub(self, id) == nil then return not_found(res, "Stub mapping") end
    local doc = admin_doc()
    doc.added[id] = nil
    for i, o in ipairs(doc.order) do
      if o == id then table.remove(doc.order, i) break end
    end
    doc.removed[id] = true
    save_admin(doc)
    send_json(res, 200, {})
  end)
  self:post(A .. "/reset", function(req, res)
    shared:delete(KEY_ADMIN)
    shared:incr(KEY_VERSION)
    clear_journal()
    reset_scenarios()
    send_json(res, 200, {})
  end)
  self:get(A .. "/requests", function(req, res)
    res:header("Content-Type", "application/json")
    res:send(requests_json(journal(self), "requests"))
  end)
  self:delete(A .. "/requests", function(req, res)
    clear_journal()
    send_json(res, 200, {})
  end)
  local function matching(req, res)
    local pattern, err = decode_body(req)
    if pattern == nil then return nil, bad_request(res, err) end
    local c
    c, err = compile_pattern(pattern)
    if c == nil then return nil, bad_request(res, err) end
    local found = {}
    for _, e in ipairs(journal(self)) do
      if match.test(c, facts_of_logged(e.request)) then found[#found + 1] = e.request end
    end
    return found
  end
  self:post(A .. "/requests/count", function(req, res)
    local found = matching(req, res)
    if found then send_json(res, 200, { count = #found }) end
  end)
  self:post(A .. "/requests/find", function(req, res)
    local found = matching(req, res)
    if found then
      res:header("Content-Type", "application/json")
      res:send(requests_json(found, "requests"))
    end
  end)
  self:get(A .. "/requests/unmatched", function(req, res)
    local list = {}
    for _, e in ipairs(journal(self)) do
      if not e.wasMatched then list[#list + 1] = e.request end
    end
    res:header("Content-Type", "application/json")
    res:send(requests_json(list, "requests"))
  end)
  self:get(A .. "/scenarios", function(req, res)
    local _, all = current(self)
    local by_name, names = {}, {}
    for _, s in ipairs(all) do
      local name = s.scenario_name
      if name then
        local sc = by_name[name]
        if sc == nil then
          sc = { id = name, name = name, state = scenario_state(name), possibleStates = { "Started" }, seen = { Started = true } }
          by_name[name] = sc
          names[#names + 1] = name
        end
        for _, st in ipairs({ s.required_scenario_state, s.new_scenario_state }) do
          if st and not sc.seen[st] then
            sc.seen[st] = true
            sc.possibleStates[#sc.possibleStates + 1] = st
          end
        end
      end
    end
    sort(names)
    local list = {}
    for i, name in ipairs(names) do
      by_name[name].seen = nil
      list[i] = by_name[name]
    end
    res:header("Content-Type", "application/json")
    res:send(json_encode({ scenarios = json.array(list) }))
  end)
  self:post(A .. "/scenarios/reset", function(req, res)
    reset_scenarios()
    send_json(res, 200, {})
  end)
end

-- Apps ----------------------------------------------------------------------

--- A new mock app: stubs (`app:stub`, `app:stub_wiremock`), WireMock's
-- admin API under /__admin, a request journal, and CORS unless --no-cors.
-- Ordinary routes (`app:get`, ...) work beside the stubs and take
-- precedence over them.
-- @usage local app = require("moonport.mock").app()
function mock.app()
  local self = moonport.app()
  setmetatable(self, MockApp)
  self.settings = core.mock_settings()
  self.script_stubs = {}
  self.script_id = 0x6d6f636b -- "mock": ids of script stubs are the same in every worker
  self.files_dir = (self.settings.dir or ".") .. "/__files"
  admin_routes(self)
  local function handler(req, res) return serve(self, req, res) end
  for _, m in ipairs(METHODS) do self:route(m, "/*path", handler) end
  return self
end

--- Loads a WireMock root directory: every mapping under DIR/mappings (one
-- mapping per file, or {"mappings": [...]}), bodies from DIR/__files (also
-- served as they are to a GET no stub matches), and DIR/*.lua stub scripts
-- (each returns a function(app) or a list of stubs). Every file read is
-- watched for hot reload. Returns the app.
-- @usage app:load_dir("wiremock")
function MockApp:load_dir(dir)
  self.files_dir = dir .. "/__files"
  self.serve_files = true
  core.track_file(dir .. "/")
  local function walk(path)
    local entries = core.dir_list(path)
    if entries == nil then return end
    core.track_file(path .. "/")
    for _, e in ipairs(entries) do
      local full = path .. "/" .. e.name
      if e.dir then
        walk(full)
      elseif e.name:match("%.json$") then
        local text = read_file(full)
        local doc, err = json_decode(text or "", MAPPING)
        if type(doc) ~= "table" then error(full .. ": not JSON: " .. tostring(err), 0) end
        core.track_file(full)
        if doc.mappings ~= nil then
          for i, m in ipairs(doc.mappings) do self:stub_wiremock(m, full .. " mapping " .. i) end
        else
          self:stub_wiremock(doc, full)
        end
      end
    end
  end
  walk(dir .. "/mappings")
  for _, e in ipairs(core.dir_list(dir) or {}) do
    if not e.dir and e.name:match("%.lua$") then
      local result = dofile(dir .. "/" .. e.name)
      if type(result) == "function" then
        result(self)
      elseif type(result) == "table" then
        for _, s in ipairs(result) do self:stub(s) end
      end
    end
  end
  return self
end

return mock
