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
-- every worker. Stubs added, changed or removed through the admin API and
-- scenario states live in the mock's state store (core.mock_state), which
-- nothing evicts, and the journal in a store of its own
-- (core.mock_journal), which drops its oldest entries when full: neither
-- can push out the other, nor what scripts keep in moonport.shared. Every
-- worker sees both, and rebuilds its index when the version there moves.
-- With --mock-store (or mock.app{store = URL}) both are in Redis instead
-- (moonport.mock.store), shared by every instance that names it.
--
-- Every file the mock reads for a response is confined to the root's
-- __files directory (core.confine): after templating, percent-decoding and
-- symbolic links, a path that leads elsewhere is refused and logged.
--
-- The admin API under /__admin answers only requests whose Host names a
-- loopback address, localhost, the address moonport listens on or an
-- --admin-host, and (unless --admin-cors) no web page of another origin.
--
-- @module moonport.mock

local moonport = require("moonport")
local core = require("moonport.core")
local json = require("moonport.json")
local json_encode, json_decode = json.encode, json.decode
local model = require("moonport.mock.model")
local match = require("moonport.mock.match")
local template = require("moonport.mock.template")
local record = require("moonport.mock.record")
local webhook = require("moonport.mock.webhook")
local diff = require("moonport.mock.diff")
local store = require("moonport.mock.store")
local core_request = require("moonport.core.request")
local header_fields, put_header_lines = core_request.header_fields, core_request.put_header_lines
local runner = require("moonport.core.runner")
local string_buffer = require("string.buffer")

local type, pairs, ipairs, tostring, tonumber = type, pairs, ipairs, tostring, tonumber
local error, pcall, setmetatable = error, pcall, setmetatable
local concat, sort, floor = table.concat, table.sort, math.floor
local find, byte, char, gsub, lower, sub = string.find, string.byte, string.char, string.gsub, string.lower, string.sub
local state = core.mock_state
local journal_store = core.mock_journal
-- The Redis store when the mock's state is shared across instances
-- (--mock-store), else nil; then state and journal_store are its.
local remote
local log = core.log
local sleep = moonport.sleep

local mock = {}

-- In the state store:
local KEY_VERSION = "version"         -- moves on every admin change
local KEY_MAPPING = "mapping:"        -- .. id: "<seq>\n<mapping JSON>"
local KEY_MAPPING_SEQ = "seq:mapping" -- the last admin mapping's seq
local KEY_REMOVED = "removed:"        -- .. id: a script stub removed
local KEY_SCENARIO = "scenario:"      -- .. name: its state
local KEY_SEQ = "seq:journal"         -- the last journal entry's number
local KEY_JOURNAL_FIRST = "journal:first" -- the first entry kept
local KEY_RECORDING = "recording"     -- the recorder's state (JSON)
local KEY_RECORDED = "recorded:"      -- .. digest: --record-mappings wrote it
local KEY_SETTINGS = "settings"       -- /__admin/settings as given (JSON)
local KEY_FILE = "file:"              -- .. id: its file under mappings/
-- In the journal store:
local KEY_ENTRY = "entry:"            -- .. n: one entry (journal_text)

local METHODS = { "GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS" }
-- Mappings are decoded keeping numbers as written, so that a jsonBody is
-- served and listed as it came (2.0 stays 2.0); model.from_wiremock turns
-- the numbers of our own fields into plain ones.
local MAPPING = { literals = true }
local JOURNAL_BODY_MAX = 64 * 1024
-- A proxied response's body is journaled (for recording) up to this, the
-- most one entry of the journal's store holds.
local JOURNAL_RESPONSE_MAX = 1024 * 1024
local LIST_PIECE = 64 * 1024 -- and admin lists

local App = core.App
local MockApp = setmetatable({}, { __index = App })
MockApp.__index = MockApp

local function starts_with(s, prefix)
  return find(s, prefix, 1, true) == 1
end

-- Whether path is /__admin or under it.
local function is_admin_path(path)
  return starts_with(path, "/__admin") and (#path == 8 or byte(path, 9) == 47) -- '/'
end

-- Stubs --------------------------------------------------------------------

local FAULTS = { CONNECTION_RESET_BY_PEER = true, EMPTY_RESPONSE = true,
                 MALFORMED_RESPONSE_CHUNK = true, RANDOM_DATA_THEN_CLOSE = true }

-- Fields the core owns: a stub's value would break the framing or the date.
local FRAMING = { date = true, ["transfer-encoding"] = true, ["content-length"] = true }

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

-- What a response would serve wrong, or not at all: refused when its stub
-- is loaded, with the reason. Returns true, or nil and the reason.
local function check_response(stub)
  local r = stub.response
  if type(r) ~= "table" then return true end
  if r.proxy_base_url ~= nil then
    local base = tostring(r.proxy_base_url)
    if not require("moonport.http").parse_url(base) then
      return nil, "proxyBaseUrl " .. base .. ": not an http or https URL"
    end
    for _, key in ipairs({ "additional_proxy_request_headers", "remove_proxy_request_headers" }) do
      if r[key] ~= nil and type(r[key]) ~= "table" then
        return nil, model.camel(key) .. ": a " .. (key:find("^add") and "map of headers" or "list of names")
      end
    end
  end
  if r.status ~= nil then
    local status = tonumber(r.status)
    if status == nil or status % 1 ~= 0 or status < 200 or status > 599 then
      return nil, ("status %s: a response is 200 to 599 (1xx are interim, not answers)")
        :format(tostring(r.status))
    end
  end
  if r.status_message ~= nil then
    local msg = tostring(r.status_message)
    if #msg == 0 or #msg > 63 or msg:find("[%z\1-\8\10-\31\127]") then
      return nil, "statusMessage: 1 to 63 characters, no control characters"
    end
  end
  if r.fault ~= nil and not FAULTS[r.fault] then
    return nil, "fault " .. tostring(r.fault) .. ": not one of CONNECTION_RESET_BY_PEER, "
      .. "EMPTY_RESPONSE, MALFORMED_RESPONSE_CHUNK, RANDOM_DATA_THEN_CLOSE"
  end
  if r.headers ~= nil and type(r.headers) ~= "table" then return nil, "headers: not an object" end
  local texts = {}
  for name, value in pairs(r.headers or {}) do
    if type(name) ~= "string" or not name:find("^[!#$%%&'*+%-.^_`|~%w]+$") then
      return nil, "header name " .. tostring(name) .. ": not a token"
    end
    for _, v in ipairs(type(value) == "table" and value or { value }) do
      v = tostring(v)
      if v:find("[%z\r\n]") then return nil, "header " .. name .. ": CR, LF or NUL in its value" end
      texts[#texts + 1] = { "header " .. name, v }
    end
  end
  if templated(stub, r) then
    if r.json_body ~= nil then
      local ok, text = pcall(json_encode, r.json_body)
      if not ok then return nil, "jsonBody: " .. text end
      texts[#texts + 1] = { "jsonBody", text }
    end
    if type(r.body) == "string" then texts[#texts + 1] = { "body", r.body } end
    if r.body_file_name ~= nil then texts[#texts + 1] = { "bodyFileName", tostring(r.body_file_name) } end
    for _, t in ipairs(texts) do
      local ok, err = template.compile(t[2])
      if not ok then return nil, t[1] .. ": template: " .. err end
    end
  end
  return true
end

-- Completes a normalized stub: compiled request pattern, checked response,
-- sequence.
local function prepare(self, stub, seq)
  local compiled, err = match.compile(stub.request)
  if compiled == nil then return nil, err end
  local ok
  ok, err = check_response(stub)
  if not ok then return nil, err end
  stub.webhooks, err = webhook.compile(stub)
  if stub.webhooks == nil then return nil, err end
  stub.compiled = compiled
  stub.seq = seq
  return stub
end

-- The admin API's mappings and the script stubs it removed, from the state
-- store: a list of {id, seq, mapping} in the order they were added, and a
-- set of ids.
local function admin_state()
  local added, removed = {}, {}
  local keys = state:keys(0)
  -- Redis: every mapping in one round trip.
  local values = remote and remote:get_many(keys)
  for i, key in ipairs(keys) do
    if starts_with(key, KEY_MAPPING) then
      local text
      if values then text = values[i] else text = state:get(key) end
      local seq, doc = (text or ""):match("^(%d+)\n(.*)$")
      local mapping = doc and json_decode(doc, MAPPING)
      if type(mapping) == "table" then
        added[#added + 1] = { id = key:sub(#KEY_MAPPING + 1), seq = tonumber(seq), mapping = mapping }
      end
    elseif starts_with(key, KEY_REMOVED) then
      removed[key:sub(#KEY_REMOVED + 1)] = true
    end
  end
  sort(added, function(a, b) return a.seq < b.seq end)
  return added, removed
end

-- The global delay /__admin/settings set, from the state store: nil, or
-- {fixed = ms or nil, distribution = a delay distribution (snake_case
-- keys, as a stub's) or nil}.
local function global_delay()
  local text = state:get(KEY_SETTINGS)
  local s = text and json_decode(text)
  if type(s) ~= "table" then return nil end
  local d = s.delayDistribution
  if type(d) == "table" then
    d = { type = d.type, lower = d.lower, upper = d.upper, median = d.median,
          sigma = d.sigma, max_value = d.maxValue }
  else
    d = nil
  end
  local fixed = tonumber(s.fixedDelay)
  if fixed == nil and d == nil then return nil end
  return { fixed = fixed, distribution = d }
end

-- The stubs now in force: the script's, less those removed or replaced
-- through the admin API, plus those added there. Rebuilt when the version
-- moves.
local function current(self)
  local version = state:get(KEY_VERSION) or 0
  if version == self.version then return self.index, self.all end
  local added, removed = admin_state()
  local replaced = {}
  for _, a in ipairs(added) do replaced[a.id] = true end
  local all = {}
  for _, s in ipairs(self.script_stubs) do
    if not removed[s.id] and not replaced[s.id] then all[#all + 1] = s end
  end
  for _, a in ipairs(added) do
    local stub = model.normalize(model.from_wiremock(a.mapping))
    if stub then
      stub.id = a.id
      if prepare(self, stub, 1e9 + a.seq) then all[#all + 1] = stub end
    end
  end
  sort(all, match.before)
  local by_id = {}
  for _, s in ipairs(all) do by_id[s.id] = s end
  self.all, self.by_id = all, by_id
  self.index = match.index(all)
  self.global_delay = global_delay()
  self.version = version
  return self.index, self.all
end

--- Adds a stub: `request` (what to match), `response` (a table, or a
-- function(req, res) with the whole API), `priority` (1 is highest,
-- default 5), `scenario = {name, required_state, new_state}`, `id`, `name`.
-- Keys are WireMock's in snake_case (`url_path`, `query_parameters`,
-- `json_body`, `fixed_delay_milliseconds`, ...). A response it cannot serve
-- as given (a status outside 200..599, proxying, a template helper it does
-- not implement) raises. Returns the app.
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

-- What matching needs to know about a request (match.lua's facts): the
-- fields it reads on every request, and methods for the rest, each worked
-- out when first asked. Methods on a metatable, not closures: making a
-- function per request would keep this path out of the JIT.
-- The query of a request without one, and other empty parts; never written.
local EMPTY = setmetatable({}, { __newindex = function() error("EMPTY is read-only", 2) end })

local Facts = {}
local FACTS = { __index = Facts }

local function facts_of(req)
  local path, qs = req.path, req.query_string
  local f = setmetatable({ req = req, method = req.method, path = path }, FACTS)
  if qs == "" then
    f.url, f.query = path, EMPTY
  else
    f.url, f.query = path .. "?" .. qs, match.parse_query(qs)
  end
  return f
end

function Facts.header(f, name) return f.req:header(name) end

function Facts.header_values(f, name)
  local names, values = header_fields(f.req)
  local out, l = {}, lower(name)
  for i = 1, #names do
    if lower(names[i]) == l then out[#out + 1] = values[i] end
  end
  return out
end

function Facts.cookies(f)
  local cookies = f.cookie_jar
  if cookies == nil then
    cookies = match.parse_cookies(f.req:header("cookie"))
    f.cookie_jar = cookies
  end
  return cookies
end

function Facts.body(f)
  local body = f.body_text
  if body == nil then
    body = f.req:body() or ""
    f.body_text = body
  end
  return body
end

-- The same facts for a journal entry's request.
local Logged = {}
local LOGGED = { __index = Logged }

local function facts_of_logged(r)
  local f = setmetatable({ method = r.method, url = r.url, logged = r }, LOGGED)
  f.path = r.url:match("^[^?]*")
  f.query = match.parse_query(r.url:match("%?(.*)$"))
  local headers = {}
  for k, v in pairs(r.headers or {}) do headers[k:lower()] = v end
  f.headers = headers
  return f
end

function Logged.header(f, name) return f.headers[name:lower()] end
function Logged.cookies(f) return f.logged.cookies or {} end
function Logged.body(f) return model.logged_body(f.logged) end

local function scenario_state(name)
  return state:get(KEY_SCENARIO .. name) or "Started"
end

local function scenario_ok(stub)
  if stub.scenario_name == nil or stub.required_scenario_state == nil then return true end
  return scenario_state(stub.scenario_name) == stub.required_scenario_state
end

local function describe_stub(stub)
  local r = stub.request
  local url = r.url or r.url_path or r.url_pattern or r.url_path_pattern or r.url_path_template or "any URL"
  return ("%s (%s %s)"):format(stub.name or stub.id, r.method or "ANY", url)
end

-- A stub whose matcher could not decide (a regular expression given up at
-- its limits) is passed over; each such stub is logged once.
local function on_match_error(stub, err)
  if stub.error_logged then return end
  stub.error_logged = true
  log("warn", ("mock: stub %s passed over: %s"):format(describe_stub(stub), err))
end

local remote_find

-- Finds the stub for facts: the best by priority, then the newest. With
-- a shared store, also moves the stub's scenario (remote_find).
local function find_for(self, facts)
  if remote then return remote_find(self, facts) end
  return match.find(current(self), facts, scenario_ok, on_match_error)
end

-- The stubs ranked by how far the request is from each (match.near),
-- closest first, each {stub, why, d}.
local function closest(self, facts)
  local _, all = current(self)
  local scored = {}
  for _, stub in ipairs(all) do
    local d, why = match.near(stub.compiled, facts)
    if d == 0 then
      why = { ("scenario %s is in state %s, not %s"):format(stub.scenario_name,
        scenario_state(stub.scenario_name), tostring(stub.required_scenario_state)) }
    end
    scored[#scored + 1] = { stub = stub, why = why, d = d }
  end
  sort(scored, function(a, b)
    if a.d ~= b.d then return a.d < b.d end
    return match.before(a.stub, b.stub)
  end)
  return scored
end

-- 404 for a request no stub matched: the closest stubs, and what differed.
local function unmatched_report(self, facts)
  local scored = closest(self, facts)
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

-- WireMock's 404 page instead (--wiremock-404): its diff of the closest
-- stub (moonport.mock.diff), as wide as X-WireMock-Console-Width asks.
local function wiremock_report(self, req, facts)
  local scored = closest(self, facts)
  if #scored == 0 then return diff.NO_STUBS end
  local stub = scored[1].stub
  local width = tonumber(req:header("x-wiremock-console-width"))
  if width and (width < 20 or width > 1000 or width % 1 ~= 0) then width = nil end
  return diff.render(stub, facts, stub.scenario_name and scenario_state(stub.scenario_name), width)
end

-- Journal ---------------------------------------------------------------------

local function iso_date(ms)
  return os.date("!%Y-%m-%dT%H:%M:%S", floor(ms / 1000)) .. (".%03dZ"):format(ms % 1000)
end

local function now_ms()
  return floor(core.now() * 1000)
end

-- Journal entries are stored raw: the request as it came, with what the
-- journal alone knows (the time, the status, the stub), and nothing
-- derived. Logging is on every request's path, reading is not: WireMock's
-- ServeEvent (headers by name, cookies, query parameters, the dates, the
-- body or its base64) is worked out when the journal is read
-- (journal_read). An entry is these fields, each followed by "\0":
--
--   loggedDate (ms) | the status answered | the stub's id, or nothing |
--   method | url | client address | Host | "1" when the body was cut at
--   JOURNAL_BODY_MAX, "2" when the headers and body were dropped (too
--   large to keep; the header lines then hold the Cookie fields only),
--   else nothing | the header lines as sent ("Name: value\r\n" each) |
--   for a proxied exchange, the target's response (JSON: base, status,
--   headers, body or bodyAsBase64, or bodyTruncated), else nothing |
--   the length of the request's body as kept
--
-- then that body, which may hold any byte, then what was added to the
-- entry later (journal_amend), a JSON object of further ServeEvent fields,
-- or nothing. Header names, values, a URL and an address hold no NUL, nor
-- does JSON text.
local ENTRY_WHOLE, ENTRY_CUT, ENTRY_DROPPED = "", "1", "2"

-- Where an entry is put together: one buffer, reused.
local entry_buf = string_buffer.new()

-- The target's response of a proxied exchange as an entry keeps it; its
-- body is left out (bodyTruncated) past JOURNAL_RESPONSE_MAX unless whole,
-- or when bodyless.
local function proxied_text(proxied, whole, bodyless)
  local r = { base = proxied.base, status = proxied.status, headers = proxied.headers }
  if not bodyless and (whole or #proxied.body <= JOURNAL_RESPONSE_MAX) then
    model.put_body(r, proxied.body)
  else
    r.bodyTruncated = true
  end
  return json_encode(r)
end

-- Puts req's journal entry together (see above), the body cut unless
-- whole; how = ENTRY_DROPPED leaves the headers (but the Cookie fields)
-- and the body out, and proxied_bodyless the proxied response's body.
-- Returns the text.
local function journal_text(req, facts, stub, status, proxied, whole, how, proxied_bodyless)
  local body = facts:body()
  if how == nil then
    how = ENTRY_WHOLE
    if not whole and #body > JOURNAL_BODY_MAX then how = ENTRY_CUT end
  end
  local b = entry_buf:reset()
  b:put(now_ms(), "\0", status, "\0", stub and stub.id or "", "\0", facts.method, "\0", facts.url, "\0",
        req.remote_addr or "", "\0", req:header("host") or "", "\0", how, "\0")
  if how == ENTRY_DROPPED then
    local cookie = req:header("cookie")
    if cookie then b:put("Cookie: ", cookie, "\r\n") end
  else
    put_header_lines(req, b)
  end
  b:put("\0")
  if proxied then b:put(proxied_text(proxied, whole, proxied_bodyless)) end
  if how == ENTRY_CUT then
    b:put("\0", JOURNAL_BODY_MAX, "\0", sub(body, 1, JOURNAL_BODY_MAX))
  elseif how == ENTRY_WHOLE then
    b:put("\0", #body, "\0", body)
  else
    b:put("\0", 0, "\0")
  end
  return b:tostring()
end

local function entry_id(n)
  return ("6a6f7572-6e61-4c00-8000-%012x"):format(n)
end

-- The request's headers with their names as sent, as WireMock journals
-- them; a name sent again (in any case) has its values joined by ", "
-- under its first spelling. Also returns the Cookie fields' value (joined
-- likewise), or nil.
local function sent_headers(lines)
  local out, spelled = {}, {}
  for name, value in lines:gmatch("([^\r\n:]*): ([^\r\n]*)\r\n") do
    local l = lower(name)
    local first = spelled[l]
    if first then
      out[first] = out[first] .. ", " .. value
    else
      spelled[l] = name
      out[name] = value
    end
  end
  local cookie = spelled.cookie
  return out, cookie and out[cookie]
end

-- A stored entry (journal_text's) as WireMock's ServeEvent, its id made
-- from n (nil: none). What refers to the stub's mapping (stubMapping),
-- and the request body's base64 when it is text, are added when shown
-- (complete).
local function journal_read(text, n)
  local f, p = {}, 1
  for i = 1, 11 do
    local z = find(text, "\0", p, true)
    if z == nil then return nil end
    f[i], p = sub(text, p, z - 1), z + 1
  end
  local ms, how = tonumber(f[1]), f[8]
  local url = f[5]
  local headers, cookie = sent_headers(f[9])
  local query = {}
  for k, values in pairs(match.parse_query(url:match("%?(.*)$"))) do query[k] = { key = k, values = values } end
  local entry = {
    id = n and entry_id(n),
    request = {
      url = url, absoluteUrl = "http://" .. (f[7] ~= "" and f[7] or "localhost") .. url,
      method = f[4], clientIp = f[6] ~= "" and f[6] or nil, headers = headers,
      cookies = match.parse_cookies(cookie), bodyTruncated = how ~= ENTRY_WHOLE or nil,
      loggedDate = ms, loggedDateString = iso_date(ms), queryParams = query,
      browserProxyRequest = false,
    },
    responseDefinition = { status = tonumber(f[2]) },
    wasMatched = f[3] ~= "",
    stubId = f[3] ~= "" and f[3] or nil,
  }
  local body_end = p + (tonumber(f[11]) or 0) - 1
  if how == ENTRY_DROPPED then
    entry.request.headers = {}
    entry.request.body = ""
  else
    model.put_body(entry.request, sub(text, p, body_end))
  end
  if f[10] ~= "" then
    local r = json_decode(f[10])
    entry.responseDefinition.proxyBaseUrl = r.base
    r.base = nil
    entry.response = r
  end
  if body_end < #text then
    local extra = json_decode(sub(text, body_end + 1))
    if type(extra) == "table" then
      for k, v in pairs(extra) do entry[k] = v end
    end
  end
  return entry
end

-- A stored entry as WireMock's ServeEvent: Redis keeps that JSON.
local function entry_of(text, n)
  if remote then return json_decode(text) end
  return journal_read(text, n)
end

--- Changes what journal entry n holds besides the request: amend(extra)
-- gets a table of further ServeEvent fields (subEvents, ...; empty at
-- first) and changes it in place. Does nothing when the entry is no
-- longer kept. Returns true when stored, or false and why. (Redis keeps
-- the whole ServeEvent: amend gets that.)
local function journal_amend(n, amend)
  local key = KEY_ENTRY .. n
  local text = journal_store:get(key)
  if text == nil then return false, "gone" end
  if remote then
    local e = json_decode(text)
    amend(e)
    return journal_store:set(key, json_encode(e))
  end
  local p = 1
  for _ = 1, 10 do p = find(text, "\0", p, true) + 1 end
  local z = find(text, "\0", p, true)
  local body_end = z + tonumber(sub(text, p, z - 1))
  local extra = body_end < #text and json_decode(sub(text, body_end + 1)) or {}
  amend(extra)
  return journal_store:set(key, sub(text, 1, body_end) .. json_encode(extra))
end

local function log_request(self, req, facts, stub, status, proxied)
  local size = self.settings.journal_size
  -- Redis keeps WireMock's JSON (the store gives the id): a round trip
  -- costs far more than the encoding.
  if remote then
    return remote:append(json_encode(journal_read(journal_text(req, facts, stub, status, proxied))), size)
  end
  -- The journal's sequence number makes the id: unique for the server's
  -- life, and cheaper than a random UUID.
  local n = state:incr(KEY_SEQ)
  if n == nil then return end
  local key = KEY_ENTRY .. n
  if not journal_store:set(key, journal_text(req, facts, stub, status, proxied)) then
    -- Larger than the journal's largest block: keep the entry, without
    -- the response's body, then without the request's headers and body.
    if not (proxied and journal_store:set(key, journal_text(req, facts, stub, status, proxied, false, nil, true))) then
      journal_store:set(key, journal_text(req, facts, stub, status, proxied, false, ENTRY_DROPPED, true))
    end
  end
  if n > size then
    journal_store:delete(KEY_ENTRY .. (n - size))
    state:set(KEY_JOURNAL_FIRST, n - size + 1)
  end
  return n
end

-- Adds sub-events (a webhook's) to journal entry n, if it is still kept.
local function add_sub_events(n, events)
  local ok, err = journal_amend(n, function(extra)
    local list = extra.subEvents or json.array({})
    for _, ev in ipairs(events) do list[#list + 1] = ev end
    extra.subEvents = list
  end)
  if not ok and err ~= "gone" then
    log("warn", "mock: a webhook's record does not fit in the journal (--journal-memory)")
  end
end

-- A function(events) that adds sub-events to journal entry n; nil when
-- there is no entry. A store that fails (Redis gone) costs the record
-- only, logged.
local function sub_event_adder(n)
  if n == nil then return nil end
  return function(events)
    local ok, err = pcall(add_sub_events, n, events)
    if not ok then log("warn", "mock: a webhook's record was not kept: " .. tostring(err)) end
  end
end

local find_stub

-- Calls fn(entry) for every journal entry kept, newest first (oldest
-- first with oldest_first), as stored; stops when fn returns false.
local function each_entry(fn, oldest_first)
  if remote then return remote:each_entry(fn, oldest_first, json_decode) end
  local last = state:get(KEY_SEQ) or 0
  local first = state:get(KEY_JOURNAL_FIRST) or 1
  local from, to, step = last, first, -1
  if oldest_first then from, to, step = first, last, 1 end
  for n = from, to, step do
    local text = journal_store:get(KEY_ENTRY .. n)
    local e = text and journal_read(text, n)
    if e and fn(e) == false then return end
  end
end

-- A stored entry completed as WireMock shows it.
local function complete(self, e)
  for _, r in ipairs({ e.request, e.response }) do
    if r.body ~= nil then r.bodyAsBase64 = model.base64_encode(r.body) end
  end
  local stub = e.stubId and find_stub(self, e.stubId)
  if stub then e.stubMapping = model.to_wiremock(stub) end
  e.stubId = nil
  return e
end

local function clear_journal()
  local last = state:get(KEY_SEQ) or 0
  journal_store:flush_all()
  state:set(KEY_JOURNAL_FIRST, last + 1)
end

-- Responses -------------------------------------------------------------------

local function gaussian()
  local u1, u2 = math.random(), math.random()
  if u1 < 1e-12 then u1 = 1e-12 end
  return math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)
end

-- A response's delay in milliseconds. As WireMock does, the global
-- settings (global_delay) stand in for what the stub does not say: its
-- own fixed delay replaces the global one, its own distribution the
-- global distribution, and the fixed and random parts add up.
local function delay_of(r, global)
  local fixed = r.fixed_delay_milliseconds
  local ms = tonumber(fixed) or 0
  local d = r.delay_distribution
  if global then
    if fixed == nil then ms = global.fixed or 0 end
    if d == nil then d = global.distribution end
  end
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

-- Sends the file at path (already confined) as the body, from the core
-- (res:send_file): its Content-Length, and with status 200 its validators,
-- conditionals and ranges. Returns true, or nil when the file cannot be
-- opened (nothing sent).
local function stream_file(res, path, size)
  local _ = size
  local ok, err = res:send_file(path)
  if ok or err == "closed" then return true end
  return nil
end

-- Resolves name inside the app's __files directory (core.confine). Returns
-- the path and size; or nil, the status to answer (403 for a name that
-- leads outside, 404 for no such file) and a message, which is logged.
local function find_file(self, name)
  local path, size = core.confine(self.files_dir, name)
  if path then return path, size end
  local status, msg
  if size == "not found" then
    status, msg = 404, ("%q: no such file in %s"):format(name, self.files_dir)
  else
    status, msg = 403, ("%q: refused, it leads outside %s"):format(name, self.files_dir)
  end
  log("warn", "mock: " .. msg)
  return nil, status, msg
end

local function unescape_path(s)
  return (gsub(s, "%%(%x%x)", function(h) return char(tonumber(h, 16)) end))
end

--- The contents of a file under the app's `__files` directory, or nil and
-- why: `name` is resolved, `..` and symbolic links included, and a file
-- outside `__files` is refused (and logged), as for `bodyFileName`.
-- @usage local text = assert(app:read_file("users.json"))
function MockApp:read_file(name)
  if type(name) ~= "string" then error("app:read_file: name must be a string", 2) end
  local path, _, msg = find_file(self, name)
  if path == nil then return nil, msg end
  local text = read_file(path)
  if text == nil then return nil, ("%q: cannot be read"):format(name) end
  return text
end

--- Answers res with a file under the app's `__files` directory, streamed
-- with its Content-Length (and `content_type`, when given); a file outside
-- `__files` or missing gets 403 or 404 instead, as for `bodyFileName`.
-- @usage app:stub{ request = { url_path = "/report" },
--   response = function(req, res) app:send_file(res, "report.pdf", "application/pdf") end }
function MockApp:send_file(res, name, content_type)
  if type(name) ~= "string" then error("app:send_file: name must be a string", 2) end
  local path, size, msg = find_file(self, name)
  if path ~= nil then
    if content_type ~= nil then res:header("Content-Type", content_type) end
    if stream_file(res, path, size) then return res end
    size, msg = 404, ("%q: cannot be read"):format(name)
  end
  res:status(size):header("Content-Type", "text/plain; charset=utf-8")
  return res:send(msg .. "\n")
end

-- What templates see of a request (ctx.request): the parts that cost
-- nothing to hand over, and the rest (REQUEST_PARTS) worked out when a
-- template first reads them, so that one that reads the path alone builds
-- no table of headers; and the response's transformerParameters
-- (templates' `parameters`).
local FACTS, SELF = {}, {} -- a view's own keys, no template's
local REQUEST_PARTS = {}

function REQUEST_PARTS.path_segments(view)
  local segments, path, n, i = {}, view.path, 0, 1
  while true do
    local a, b = find(path, "[^/]+", i)
    if a == nil then return segments end
    n = n + 1
    segments[n] = sub(path, a, b)
    i = b + 1
  end
end

function REQUEST_PARTS.query(view)
  local query = {}
  for k, v in pairs(view[FACTS].query) do query[k] = #v == 1 and v[1] or v end
  return query
end

function REQUEST_PARTS.headers(view) return view.req:headers() end

function REQUEST_PARTS.body(view) return view[FACTS]:body() end

-- request.baseUrl: the scheme and authority the client used, as WireMock
-- has it (the Host field; the address listened on without one).
function REQUEST_PARTS.base_url(view)
  return "http://" .. (view.req:header("host") or view[SELF].settings.listen_host or "localhost")
end

local REQUEST_VIEW = { __index = function(view, key)
  local part = REQUEST_PARTS[key]
  if part == nil then return nil end
  local value = part(view)
  rawset(view, key, value)
  return value
end }

local function template_ctx(self, req, facts, parameters)
  return { request = setmetatable({ url = facts.url, path = facts.path, method = facts.method,
    path_params = facts.path_params or EMPTY, req = req, [FACTS] = facts, [SELF] = self },
    REQUEST_VIEW), parameters = parameters }
end

-- template_ctx with every part worked out now, for templates rendered
-- once the request is over (a webhook's).
local function template_ctx_now(self, req, facts, parameters)
  local ctx = template_ctx(self, req, facts, parameters)
  local view = ctx.request
  for key in pairs(REQUEST_PARTS) do
    local _ = view[key]
  end
  return ctx
end

-- Renders a template, or raises {template = message} when it does not
-- compile (a body file's text, read at request time).
local function render(text, ctx, where, opts)
  local compiled, err = template.compile(text)
  if compiled == nil then error({ template = where .. ": " .. err }) end
  return template.render(compiled, ctx, opts)
end

-- The body a stub's response sends, as text (rendered when ctx), or, for an
-- untemplated body file, the file to stream: nil, path, size. Raises
-- {status, message} when the file is refused or missing.
local function body_of(self, r, ctx, json)
  local body
  if r.json_body ~= nil then
    body = json_encode(r.json_body)
  elseif r.base64_body ~= nil then
    -- Bytes, never a template.
    return model.base64_decode(tostring(r.base64_body)) or "", json
  elseif r.body_file_name ~= nil then
    local name = tostring(r.body_file_name)
    if ctx then name = render(name, ctx, "bodyFileName") end
    local path, size, msg = find_file(self, name)
    if path == nil then error({ status = size, message = "bodyFileName " .. msg }) end
    json = json or name:find("%.json$") ~= nil
    if not ctx and type(r.chunked_dribble_delay) ~= "table" then return nil, json, path, size end
    body = read_file(path)
    if body == nil then error({ status = 404, message = ("bodyFileName %q: cannot be read"):format(name) }) end
  else
    body = r.body ~= nil and tostring(r.body) or ""
  end
  if ctx then
    -- A body that reads as JSON stays JSON whatever the values hold.
    body = render(body, ctx, "body", { json = json or body:find("^%s*[%[{]") ~= nil })
  end
  return body, json
end

local function send_body(res, r, body)
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

-- CORS (moonport.cors) ---------------------------------------------------

local ALLOW_METHODS = "GET, POST, PUT, PATCH, DELETE, OPTIONS, HEAD"

-- The mock's CORS is moonport.cors, as apps have it: any origin, echoed
-- with credentials; preflights for every method, the headers asked for,
-- cached a day. A page may read the headers front ends need most; a
-- stub's own headers are added to the list where it answers
-- (plan_of).
local EXPOSE = { "Location", "ETag", "Last-Modified", "Link", "Content-Disposition",
  "Retry-After", "X-Request-Id", "X-Total-Count" }
local mock_cors = require("moonport.cors"){
  origins = "*", credentials = true, methods = ALLOW_METHODS, max_age = 86400,
  expose = EXPOSE,
}
local cors = mock_cors.first

-- Names a page reads without being told (the CORS-safelisted response
-- headers) or that EXPOSE names already.
local EXPOSED = { ["cache-control"] = true, ["content-language"] = true,
  ["content-length"] = true, ["content-type"] = true, ["expires"] = true,
  ["pragma"] = true }
for _, name in ipairs(EXPOSE) do EXPOSED[lower(name)] = true end

-- What answering with a stub's response table takes that is the same on
-- every request, worked out on its first: whether it is templated, its
-- status, its header fields (names, values as text and, when templated,
-- compiled), whether it is JSON and says its Content-Type, the
-- Access-Control-Expose-Headers it adds for a cross-origin request (a
-- stub's own headers are exposed to the page, as CORS is on for stubs),
-- and its body when that is fixed (a file's is read when served). Kept by
-- stub: an admin change makes new stubs, and no response changes once
-- loaded. Raises {template = message} as render does.
local plans = setmetatable({}, { __mode = "k" })
local RENDER_JSON = { json = true }

local function compiled_template(text, where)
  local compiled, err = template.compile(text)
  if compiled == nil then error({ template = where .. ": " .. err }) end
  return compiled
end

-- Sets the header fields names[i..] to values[i..] on res, and renders
-- templates[i..] against ctx into values[i..]: chains of calls, not loops,
-- which would make JIT traces of their own on every request's path.
local function header_setter(names, i)
  local name = names[i]
  if name == nil then return function() end end
  local rest = header_setter(names, i + 1)
  return function(res, values)
    res:header(name, values[i])
    rest(res, values)
  end
end

local function header_renderer(templates, i)
  local tpl = templates[i]
  if tpl == nil then return function() end end
  local rest = header_renderer(templates, i + 1)
  return function(ctx, values)
    values[i] = template.render(tpl, ctx)
    rest(ctx, values)
  end
end

local function plan_of(stub, r)
  local plan = plans[stub]
  if plan ~= nil then return plan end
  local tpl = templated(stub, r) and true or false
  local names, values, compiled = {}, {}, {}
  local json, has_type = r.json_body ~= nil, false
  local exposed, seen = {}, {}
  for name, value in pairs(r.headers or {}) do
    local lname = lower(name)
    if not FRAMING[lname] then
      local list = type(value) == "table" and value or { value }
      for _, v in ipairs(list) do
        local n = #names + 1
        names[n], values[n] = name, tostring(v)
        if tpl then compiled[n] = compiled_template(values[n], "header " .. name) end
        if not EXPOSED[lname] and not seen[lname] then
          seen[lname] = true
          exposed[#exposed + 1] = name
        end
      end
      if lname == "content-type" then
        has_type = true
        json = json or tostring(list[1]):find("json", 1, true) ~= nil
      end
    end
  end
  plan = { templated = tpl, status = tonumber(r.status) or 200, values = values,
           set_headers = header_setter(names, 1), render_headers = tpl and header_renderer(compiled, 1),
           json = json, has_type = has_type, expose = #exposed > 0 and concat(exposed, ", ") or nil }
  local body
  if r.json_body ~= nil then
    body = json_encode(r.json_body)
  elseif r.base64_body ~= nil then
    -- Bytes, never a template.
    plan.body = model.base64_decode(tostring(r.base64_body)) or ""
  elseif r.body_file_name == nil then
    body = r.body ~= nil and tostring(r.body) or ""
  end
  if body ~= nil and tpl then
    plan.body_template = compiled_template(body, "body")
    -- A body that reads as JSON stays JSON whatever the values hold.
    plan.body_opts = (json or body:find("^%s*[%[{]")) and RENDER_JSON or nil
  elseif body ~= nil then
    plan.body = body
  end
  plans[stub] = plan
  return plan
end

-- Answers from a stub's response table. Everything that may fail (a
-- template, a body file) is worked out before the first res call, so that
-- an answer about the failure carries none of the stub's headers.
local function respond_with(self, stub, r, req, res, facts)
  local plan = plan_of(stub, r)
  local ctx = plan.templated and template_ctx(self, req, facts, r.transformer_parameters)
  local values = plan.values
  if ctx and values[1] ~= nil then
    values = {}
    plan.render_headers(ctx, values)
  end
  local body, json, path, size = plan.body, plan.json, nil, nil
  if plan.body_template then
    body = template.render(plan.body_template, ctx, plan.body_opts)
  elseif body == nil then
    body, json, path, size = body_of(self, r, ctx, json)
  end
  res:status(plan.status, r.status_message)
  plan.set_headers(res, values)
  if plan.expose and self.settings.cors and req:header("origin") ~= nil then
    res:header("Access-Control-Expose-Headers", plan.expose)
  end
  if json and not plan.has_type then res:header("Content-Type", "application/json") end
  if path then
    if not stream_file(res, path, size) then
      error(("bodyFileName %q: cannot be read"):format(tostring(r.body_file_name)), 0)
    end
    return
  end
  send_body(res, r, body)
end

-- Request headers a proxy does not pass on: the connection's own and the
-- framing, which the outbound request makes anew.
local HOP_BY_HOP = {
  connection = true, ["keep-alive"] = true, ["proxy-connection"] = true, te = true,
  trailer = true, ["transfer-encoding"] = true, upgrade = true, host = true,
  ["content-length"] = true, expect = true,
}
-- Response headers it does not pass back: the server sets its own.
local HOP_BACK = {
  connection = true, ["keep-alive"] = true, ["transfer-encoding"] = true,
  ["content-length"] = true, date = true, server = true,
}

local record_exchange

-- Forwards the request to the stub's proxyBaseUrl (WireMock's proxying):
-- the method, the URL (less proxyUrlPrefixToRemove), the headers (less
-- removeProxyRequestHeaders, plus additionalProxyRequestHeaders) and the
-- body; answers with the target's status, headers and body, or 502 with
-- the reason when it cannot be reached. The exchange is journaled once it
-- is over, with the target's response (what recording reads), and with
-- --record-mappings recorded.
local function proxy(self, stub, r, req, res, facts)
  local journaled = self.settings.journal_size > 0
  local url = facts.url
  local prefix = r.proxy_url_prefix_to_remove
  if type(prefix) == "string" and prefix ~= "" and url:sub(1, #prefix) == prefix then
    url = url:sub(#prefix + 1)
    if url:sub(1, 1) ~= "/" then url = "/" .. url end
  end
  local removed = {}
  for _, name in ipairs(r.remove_proxy_request_headers or {}) do removed[lower(tostring(name))] = true end
  local headers = {}
  for name, value in pairs(req:headers()) do
    local lname = lower(name)
    if not HOP_BY_HOP[lname] and not removed[lname] then headers[name] = value end
  end
  for name, value in pairs(r.additional_proxy_request_headers or {}) do
    for k in pairs(headers) do
      if lower(k) == lower(name) then headers[k] = nil end
    end
    headers[name] = tostring(value)
  end
  local body = req:body()
  local got, err = require("moonport.http").request({
    method = facts.method, url = tostring(r.proxy_base_url):gsub("/+$", "") .. url,
    headers = headers, body = body ~= "" and body or nil,
  })
  if not got then
    log("warn", ("mock: proxy to %s failed: %s"):format(tostring(r.proxy_base_url), err))
    if journaled then log_request(self, req, facts, stub, 502) end
    res:status(502):header("Content-Type", "text/plain; charset=utf-8")
    return res:send("proxy to " .. tostring(r.proxy_base_url) .. " failed: " .. err .. "\n")
  end
  res:status(got.status)
  local kept = {}
  for _, field in ipairs(got.headers:list()) do
    local name, value = field[1], field[2]
    if not HOP_BACK[lower(name)] then
      res:header(name, value)
      local seen = kept[name]
      if seen == nil then kept[name] = value
      elseif type(seen) == "table" then seen[#seen + 1] = value
      else kept[name] = { seen, value } end
    end
  end
  local proxied = { base = tostring(r.proxy_base_url), status = got.status, headers = kept, body = got.body }
  if journaled then log_request(self, req, facts, stub, got.status, proxied) end
  if self.settings.record_mappings then record_exchange(self, req, facts, stub, proxied) end
  res:send(got.body)
end

-- --record-mappings: the first answer to each distinct request (method,
-- URL, body) is written to DIR/mappings, its body to DIR/__files when
-- bytes or over 10 KiB, as WireMock's recorder writes them; the reload
-- that follows serves it. A request recorded before is not again.
function record_exchange(self, req, facts, stub, proxied)
  local spec = self.record_defaults
  local mapping, key = record.mapping(journal_read(journal_text(req, facts, stub, proxied.status, proxied, true)), spec)
  local claim = KEY_RECORDED .. record.digest(key)
  local ok, err = state:add(claim, true)
  if not ok then
    if err ~= "exists" then log("warn", "mock: --record-mappings: " .. err .. " in the mock's state store") end
    return
  end
  ok, err = record.extract(mapping, spec, self.root)
  if ok then ok, err = record.write(mapping, self.root) end
  if not ok then
    state:delete(claim)
    log("warn", ("mock: --record-mappings: %s %s not recorded: %s"):format(facts.method, facts.url, err))
  end
end

local NO_RESPONSE = {}

local function respond(self, stub, req, res, facts)
  local r = stub.response
  local global = self.global_delay
  if type(r) == "function" then
    if global then
      local ms = delay_of(NO_RESPONSE, global)
      if ms > 0 then sleep(ms) end
    end
    return r(req, res)
  end
  local ms = delay_of(r, global)
  if ms > 0 then sleep(ms) end
  if r.fault ~= nil then return res:fault(r.fault) end
  if r.proxy_base_url ~= nil then return proxy(self, stub, r, req, res, facts) end
  local ok, err = pcall(respond_with, self, stub, r, req, res, facts)
  if ok then return end
  if type(err) ~= "table" then error(err, 0) end
  -- A template that does not render, or a body file refused or missing:
  -- the reason, never the raw template or another file.
  local status = err.status or 500
  if err.template then
    err.message = "response template failed: " .. err.template
    log("warn", ("mock: stub %s: %s"):format(describe_stub(stub), err.message))
  end
  res:status(status):header("Content-Type", "text/plain; charset=utf-8")
  res:send(err.message .. "\n")
end

-- As WireMock does, a GET no stub matches is answered from DIR/__files
-- when a file is there (a directory's index.html included). The path is
-- percent-decoded and confined like any file name. Returns true when it
-- answered.
local function static_file(self, facts, res)
  if not self.serve_files or (facts.method ~= "GET" and facts.method ~= "HEAD") then return false end
  -- The core decodes and confines the name (server/handlers/static.c).
  local ok, err = res:send_file(facts.path,
    { root = self.files_dir, index = true, dotfiles = true })
  if ok or err == "closed" then return true end
  if err == "refused" then
    log("warn", ("mock: %q: refused, it leads outside %s"):format(unescape_path(facts.path), self.files_dir))
  end
  return false
end

local function send_json(res, status, value)
  res:status(status):header("Content-Type", "application/json")
  res:send(json_encode(value))
end

local function admin_error(res, status, title, detail)
  send_json(res, status, { errors = { { code = 10, title = title, detail = detail } } })
end

-- An admin resource that is not there: 404 with an empty body, as
-- WireMock answers (what is missing goes to the log at info level).
local function not_found(res, what)
  log("info", "mock: " .. what .. " not found")
  res:status(404):send("")
end

-- The handler behind every path no route of the script takes.
local function serve(self, req, res)
  -- /__admin belongs to the admin API: what it does not know is not a stub.
  local facts = facts_of(req)
  if is_admin_path(facts.path) then return not_found(res, "Admin endpoint " .. facts.path) end
  -- Matching must not yield (match.find keeps its place in module state),
  -- and reading a body may: read it first.
  -- A request with neither field has no body: nothing to read then.
  if req:header("content-length") or req:header("transfer-encoding") then facts:body() else facts.body_text = "" end
  local stub = find_for(self, facts)
  if stub == nil and static_file(self, facts, res) then return end
  -- Below the stubs and files: what app:fallback added (an OpenAPI
  -- document), journaled once it has answered, under its own id.
  local below = self.below
  if stub == nil and below ~= nil then
    local status, id = below(req, res)
    if status ~= nil then
      if self.settings.journal_size > 0 then log_request(self, req, facts, id and { id = id } or nil, status) end
      return
    end
  end
  if stub == nil then
    if self.settings.journal_size > 0 then log_request(self, req, facts, nil, 404) end
    res:status(404):header("Content-Type", "text/plain; charset=utf-8")
    if self.wiremock_404 then return res:send(wiremock_report(self, req, facts)) end
    return res:send(unmatched_report(self, facts))
  end
  if stub.scenario_name and stub.new_scenario_state and not remote then
    if not state:set(KEY_SCENARIO .. stub.scenario_name, stub.new_scenario_state) then
      log("warn", ("mock: scenario %s cannot move to %s: the mock's state store is full "
        .. "(--mock-state-size)"):format(stub.scenario_name, stub.new_scenario_state))
    end
  end
  local r = stub.response
  local n
  -- A proxied exchange is journaled when it is over (proxy).
  if self.settings.journal_size > 0 and not (type(r) == "table" and r.proxy_base_url ~= nil and r.fault == nil) then
    n = log_request(self, req, facts, stub, type(r) == "table" and (tonumber(r.status) or 200) or 200)
  end
  local hooks = stub.webhooks
  if not hooks then return respond(self, stub, req, res, facts) end
  -- Webhooks go once the answer has: their templates see the request as
  -- plain data, taken now, while it is there.
  local ctx = template_ctx_now(self, req, facts)
  respond(self, stub, req, res, facts)
  webhook.fire(hooks, ctx, sub_event_adder(n))
end

-- The admin API's guard ---------------------------------------------------

-- The host of an authority ("Host" or an origin's), lowercase, without
-- brackets, and its port or nil.
local function split_authority(authority)
  authority = lower(authority)
  local v6, rest = authority:match("^%[([^%]]*)%](.*)$")
  if v6 then return v6, rest:match("^:(%d+)$") end
  local host, port = authority:match("^([^:]*):(%d*)$")
  if host then return host, port ~= "" and port or nil end
  return authority, nil
end

local function loopback(host)
  return host == "localhost" or host == "::1" or host:find("^127%.%d+%.%d+%.%d+$") ~= nil
end

-- The Host names /__admin answers besides loopback ones: the address
-- moonport listens on and every --admin-host.
local function admin_hosts(settings)
  local hosts = { [lower(settings.listen_host or "")] = true }
  for name in (settings.admin_hosts or ""):gmatch("[^,%s]+") do
    hosts[(split_authority(name))] = true
  end
  return hosts
end

-- Whether a browser sent req from a page of another origin: its Origin
-- (or Sec-Fetch-Site) names another scheme, host or port than Host.
local function cross_origin(req)
  local site = req:header("sec-fetch-site")
  if site == "cross-site" or site == "same-site" then return true end
  local origin = req:header("origin")
  if origin == nil then return false end
  local scheme, authority = origin:match("^(%a[%w+.-]*)://([^/]+)$")
  if scheme == nil then return true end -- "null", or not an origin
  local ohost, oport = split_authority(authority)
  local hhost, hport = split_authority(req:header("host") or "")
  return ohost ~= hhost or (oport or (lower(scheme) == "https" and "443" or "80")) ~= (hport or "80")
end

-- Why /__admin refuses req, or nil: a Host that names none of its own
-- addresses (a DNS rebinding page), or a page of another origin.
local function admin_refusal(self, req)
  local host = req:header("host")
  if host ~= nil then
    local name = split_authority(host)
    if not loopback(name) and not self.admin_hosts[name] then
      return ("/__admin answers only requests for a loopback address, localhost or %s, "
        .. "not Host %s (--admin-host NAME allows another)"):format(self.settings.listen_host, host)
    end
  end
  if not self.settings.admin_cors and cross_origin(req) then
    return ("/__admin refuses requests from web pages of other origins (Origin %s; "
      .. "--admin-cors allows them)"):format(tostring(req:header("origin") or req:header("sec-fetch-site")))
  end
end

local remote_guard

-- Every handler of a mock app goes through here. A stub or route gets CORS
-- (unless --no-cors); /__admin (admin, or a path under it) gets its guard,
-- and CORS only with --admin-cors. With --mock-store, remote_guard comes
-- first.
local function wrap(self, handler, admin)
  local settings = self.settings
  if remote then handler = remote_guard(handler, admin) end
  return function(req, res)
    if admin or is_admin_path(req.path) then
      local why = admin_refusal(self, req)
      if why then
        log("warn", "mock: " .. why)
        return admin_error(res, 403, "Forbidden", why)
      end
      if not settings.admin_cors then return handler(req, res) end
    elseif not settings.cors then
      return handler(req, res)
    end
    -- A preflight is answered here, before stubs and routes see it.
    if cors(req, res) then return end
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

local function bad_request(res, detail)
  admin_error(res, 422, "Error parsing JSON", detail)
end

local function decode_body(req)
  local v, err = json_decode(req:body() or "", MAPPING)
  if type(v) ~= "table" then return nil, tostring(err or "expected a JSON object") end
  return v
end

-- An admin mapping checked before it is stored: it must normalize, compile
-- and be servable as given.
local function check_mapping(self, mapping)
  local stub, err = model.normalize(model.from_wiremock(mapping))
  if stub == nil then return nil, err end
  return prepare(self, stub, 0)
end

-- Writes {"<key>": [items], <tail>} in pieces, so that a list of any
-- length costs about one piece of memory. produce(emit) calls emit(item)
-- for each item, until emit returns false (the client has gone), and
-- returns a function(total) giving what goes after the list.
local function stream_list(res, key, produce)
  res:status(200):header("Content-Type", "application/json")
  local buf, size, n = { '{"' .. key .. '":[' }, 0, 0
  local tail = produce(function(item)
    local text = json_encode(item)
    if n > 0 then buf[#buf + 1] = "," end
    buf[#buf + 1] = text
    size, n = size + #text, n + 1
    if size >= LIST_PIECE then
      if not res:write(concat(buf)) then return false end
      buf, size = {}, 0
    end
    return true
  end)
  buf[#buf + 1] = "]"
  buf[#buf + 1] = tail(n)
  res:write(concat(buf))
  res:finish()
end

-- Streams journal entries that keep(entry) takes, shown by show(entry).
local function stream_requests(self, res, keep, show, limit, oldest_first)
  local disabled = self.settings.journal_size == 0
  stream_list(res, "requests", function(emit)
    local n = 0
    each_entry(function(e)
      if limit and n >= limit then return false end
      if keep(e) then
        n = n + 1
        return emit(show(e))
      end
    end, oldest_first)
    return function(total)
      return (',"meta":{"total":%d},"requestJournalDisabled":%s}'):format(total, tostring(disabled))
    end
  end)
end

function find_stub(self, id)
  current(self)
  return self.by_id[id]
end

local function compile_pattern(self, body)
  local stub, err = model.normalize(model.from_wiremock({ request = body }))
  if stub == nil then return nil, err end
  return match.compile(stub.request)
end

-- Keys of the state store that start with one of prefixes.
local function state_keys(...)
  local prefixes, found = { ... }, {}
  for _, key in ipairs(state:keys(0)) do
    for _, p in ipairs(prefixes) do
      if starts_with(key, p) then
        found[#found + 1] = key
        break
      end
    end
  end
  return found
end

local function delete_keys(keys)
  for _, key in ipairs(keys) do state:delete(key) end
end

local function changed()
  state:incr(KEY_VERSION)
end

local function no_room(res, what)
  admin_error(res, 507, "Insufficient storage", what .. ": the mock's state store is full "
    .. "(--mock-state-size sets its size); nothing was changed")
end

-- Stores an admin mapping under id, keeping its place when it replaces
-- one. Returns true, or nil, the status to answer and why.
local function put_mapping(id, mapping)
  local ok, text = pcall(json_encode, mapping)
  if not ok then return nil, 422, "the mapping cannot be stored: " .. text end
  local old = state:get(KEY_MAPPING .. id)
  local seq = old and old:match("^(%d+)\n")
  if seq == nil then
    local n = state:incr(KEY_MAPPING_SEQ)
    if n == nil then return nil, 507 end
    seq = ("%d"):format(n)
  end
  if not state:set(KEY_MAPPING .. id, seq .. "\n" .. text) then return nil, 507 end
  state:delete(KEY_REMOVED .. id)
  changed()
  return true
end

local function reset_mappings()
  delete_keys(state_keys(KEY_MAPPING, KEY_REMOVED))
  changed()
end

local function reset_scenarios()
  delete_keys(state_keys(KEY_SCENARIO))
end

-- Recording -------------------------------------------------------------------

-- The recorder's state: nil (never started), or {status = "Recording" or
-- "Stopped", spec = the record spec as given (JSON text), first = the
-- first journal entry it covers, proxy = the id of the proxy mapping it
-- added}.
local function recorder()
  local text = state:get(KEY_RECORDING)
  return text and json_decode(text)
end

-- The journal entries numbered first to last that are kept, oldest first;
-- logs how many the journal no longer holds.
local function entries_between(first, last)
  local list, lost = {}, 0
  for n = first, last do
    local text = journal_store:get(KEY_ENTRY .. n)
    local e = text and entry_of(text, n)
    if e then list[#list + 1] = e else lost = lost + 1 end
  end
  if lost > 0 then
    log("warn", ("mock: recording: %d requests are no longer in the journal "
      .. "(--journal-size, --journal-memory) and are not recorded"):format(lost))
  end
  return list
end

local function test_logged(compiled, e)
  return match.test(compiled, facts_of_logged(e.request)) == true
end

-- Makes stub mappings from entries as spec asks, adds them (and, with
-- persist, writes them to the mock's directory), and answers with them
-- ({"mappings": [...]}, or {"ids": [...]} for outputFormat IDS).
local function take_recording(self, res, spec, entries)
  local wanted = {}
  for _, e in ipairs(entries) do
    if record.wanted(e, spec, test_logged) then
      if e.request.bodyTruncated or (e.response and e.response.bodyTruncated) then
        log("warn", ("mock: recording: %s %s is not recorded: its body was too large to journal"):format(
          e.request.method, e.request.url))
      else
        wanted[#wanted + 1] = e
      end
    end
  end
  local mappings, ids = record.mappings(wanted, spec), {}
  for i, m in ipairs(mappings) do
    local ok, err = record.extract(m, spec, self.root)
    if not ok then return admin_error(res, 500, "Recording not written", err) end
    record.clean(m)
    local code
    ok, code = put_mapping(m.id, m)
    if not ok then
      return code == 507 and no_room(res, "recorded mapping " .. m.id)
        or admin_error(res, 500, "Recording not stored", tostring(code))
    end
    if spec.persist then
      ok, err = record.write(m, self.root)
      if not ok then return admin_error(res, 500, "Recording not written", err) end
    end
    ids[i] = m.id
  end
  if spec.ids_only then return send_json(res, 200, { ids = json.array(ids) }) end
  send_json(res, 200, { mappings = json.array(mappings) })
end

-- WireMock's recorder: start (a proxy mapping to targetBaseUrl, and the
-- journal's place), stop (mappings from what the journal took since),
-- status, and snapshot (mappings from the whole journal).
local function recording_routes(self, admin)
  local function spec_of(req, res)
    local text = req:body() or ""
    local body, err = {}, nil
    if text:find("%S") then
      body, err = decode_body(req)
      if body == nil then return nil, bad_request(res, err) end
    end
    local spec
    spec, err = record.spec(body, function(p) return compile_pattern(self, p) end)
    if spec == nil then return nil, admin_error(res, 422, "Invalid record spec", err) end
    if self.settings.journal_size == 0 then
      return nil, admin_error(res, 422, "Recording needs the journal",
        "the mock records from its journal, which --journal-size 0 turns off")
    end
    return spec, body
  end
  admin("POST", "/recordings/start", function(req, res)
    local spec, body = spec_of(req, res)
    if spec == nil then return end
    local rec = recorder()
    if rec and rec.status == "Recording" then return send_json(res, 200, {}) end
    rec = { status = "Recording", spec = json_encode(body), first = (state:get(KEY_SEQ) or 0) + 1 }
    if spec.target then
      rec.proxy = model.uuid()
      local ok, code = put_mapping(rec.proxy, { id = rec.proxy, uuid = rec.proxy,
        request = { method = "ANY" }, response = { proxyBaseUrl = spec.target } })
      if not ok then return code == 507 and no_room(res, "the recording's proxy mapping")
        or admin_error(res, 500, "Recording not started", tostring(code)) end
    end
    if not state:set(KEY_RECORDING, json_encode(rec)) then
      if rec.proxy then
        state:delete(KEY_MAPPING .. rec.proxy)
        changed()
      end
      return no_room(res, "the recorder's state")
    end
    log("info", "mock: recording started" .. (spec.target and (" (proxying to " .. spec.target .. ")") or ""))
    send_json(res, 200, {})
  end)
  admin("POST", "/recordings/stop", function(req, res)
    local rec = recorder()
    if rec == nil or rec.status ~= "Recording" then
      return admin_error(res, 400, "Not currently recording.")
    end
    local last = state:get(KEY_SEQ) or 0
    state:set(KEY_RECORDING, json_encode({ status = "Stopped" }))
    if rec.proxy then
      state:delete(KEY_MAPPING .. rec.proxy)
      changed()
    end
    local spec = record.spec(json_decode(rec.spec, MAPPING), function(p) return compile_pattern(self, p) end)
    spec.ids = nil -- filters.ids are for snapshots
    take_recording(self, res, spec, entries_between(rec.first, last))
  end)
  admin("GET", "/recordings/status", function(req, res)
    local rec = recorder()
    send_json(res, 200, { status = rec and rec.status or "NeverStarted" })
  end)
  admin("POST", "/recordings/snapshot", function(req, res)
    local spec = spec_of(req, res)
    if spec == nil then return end
    take_recording(self, res, spec, entries_between(state:get(KEY_JOURNAL_FIRST) or 1, state:get(KEY_SEQ) or 0))
  end)
end

-- Persistent mappings ---------------------------------------------------------

-- WireMock's safe name (SafeNames.makeSafeName): white space as dashes,
-- nothing but ASCII letters, digits, "_", "." and "-", at most 200
-- characters, lower case.
local function safe_name(s)
  s = gsub(gsub(s, "%s", "-"), "[^%w_.%-]", "")
  return lower(s:sub(1, 200))
end

-- The file name WireMock gives a mapping it saves: its name, or else its
-- method, a dash and its URL (of whichever kind; "always" when it has
-- none), made safe, then a dash and its id.
local function mapping_file_name(mapping)
  local base = mapping.name
  if type(base) ~= "string" or base == "" then
    local r = type(mapping.request) == "table" and mapping.request or {}
    local url = r.url or r.urlPath or r.urlPattern or r.urlPathPattern or r.urlPathTemplate or "always"
    base = tostring(r.method or "ANY") .. "-" .. tostring(url)
  end
  return safe_name(base) .. "-" .. mapping.id .. ".json"
end

-- Why a mapping's id cannot name a file, or nil: it goes into the file's
-- name as it is, so only letters, digits, "-" and "_" (a UUID's).
local function unsafe_id(id)
  if id:find("[^%w_%-]") then
    return "id " .. id .. ": a persistent mapping's id has only letters, digits, \"-\" and \"_\""
  end
end

-- The file under mappings/ that holds mapping id, or nil: one the admin
-- API wrote, or the file a persistent mapping was loaded from.
local function file_of(self, id)
  return state:get(KEY_FILE .. id) or self.stub_files[id]
end

-- Writes a persistent mapping to the mock directory's mappings/, over its
-- own file when it has one, else under WireMock's name for it: whole
-- under a hidden name, then renamed (record.write), so a reload or a
-- restart reads all of it or none. Returns true, or nil and why.
local function persist(self, mapping)
  local id = mapping.id
  local bad = unsafe_id(id)
  if bad then return nil, bad end
  local name = file_of(self, id) or mapping_file_name(mapping)
  mapping.persistent = true
  local ok, err = record.write(mapping, self.root, name)
  if not ok then return nil, err end
  if not state:set(KEY_FILE .. id, name) then
    return nil, "its file's name: the mock's state store is full (--mock-state-size)"
  end
  return true
end

-- Removes the file of a persistent mapping, when it has one.
local function unpersist(self, id)
  local name = file_of(self, id)
  if name == nil then return end
  local ok, err = os.remove(self.root .. "/mappings/" .. name)
  if not ok then log("warn", ("mock: mapping %s: its file not removed: %s"):format(id, tostring(err))) end
  state:delete(KEY_FILE .. id)
  self.stub_files[id] = nil
end

-- Removes a stub by id: an admin mapping, a script stub (marked removed)
-- and a persistent mapping's file. Returns true, or nil when the state
-- store has no room for the mark.
local function remove_stub(self, id)
  state:delete(KEY_MAPPING .. id)
  unpersist(self, id)
  for _, s in ipairs(self.script_stubs) do
    if s.id == id and not state:set(KEY_REMOVED .. id, true) then return nil end
  end
  return true
end

-- Checks a mapping from the admin API and gives it its id (id, else its
-- own, else a new one). Returns true, or nil and why.
local function admit_mapping(self, mapping, id)
  if type(mapping) ~= "table" then return nil, "a stub mapping is a JSON object" end
  local ok, err = check_mapping(self, mapping)
  if ok == nil then return nil, err end
  id = id or mapping.id or mapping.uuid or model.uuid()
  if type(id) ~= "string" or #id == 0 or #id > 200 then
    return nil, "id: a string of 1 to 200 characters"
  end
  mapping.id, mapping.uuid = id, id
  if mapping.persistent == true then
    local bad = unsafe_id(id)
    if bad then return nil, bad end
  end
  return true
end

-- Stores an admitted mapping, and writes it to mappings/ when it is
-- persistent. Returns true, or nil, the status to answer and why.
local function store_mapping(self, mapping)
  local ok, code, err = put_mapping(mapping.id, mapping)
  if not ok then return nil, code, err end
  if mapping.persistent == true then
    ok, err = persist(self, mapping)
    if not ok then return nil, 500, "mapping " .. mapping.id .. " not written: " .. err end
  end
  return true
end

local function answer_store_error(res, id, code, err)
  if code == 507 then return no_room(res, "mapping " .. id) end
  if code == 500 then return admin_error(res, 500, "Mapping not written", err) end
  admin_error(res, 422, "Invalid stub mapping", err)
end

-- Settings --------------------------------------------------------------------

-- Checks a body for /__admin/settings: fixedDelay (milliseconds) and
-- delayDistribution (uniform: lower, upper; lognormal: median, sigma,
-- maxValue) as a stub's. Returns nil, or why it is refused.
local function settings_error(s)
  local fixed = s.fixedDelay
  if fixed ~= nil and (type(fixed) ~= "number" or fixed < 0 or fixed ~= fixed or fixed == math.huge) then
    return "fixedDelay: a number of milliseconds, 0 or more"
  end
  local d = s.delayDistribution
  if d == nil then return nil end
  if type(d) ~= "table" then return "delayDistribution: an object" end
  local fields = d.type == "uniform" and { "lower", "upper" }
    or d.type == "lognormal" and { "median", "sigma" }
  if not fields then return "delayDistribution.type: uniform or lognormal" end
  for _, k in ipairs(fields) do
    local v = d[k]
    if type(v) ~= "number" or v < 0 or v ~= v or v == math.huge then
      return ("delayDistribution.%s: a number, 0 or more"):format(k)
    end
  end
  if d.maxValue ~= nil and type(d.maxValue) ~= "number" then return "delayDistribution.maxValue: a number" end
end

-- Near misses -----------------------------------------------------------------

-- match.near weighs the URL 10, the method 3 and each other part 1;
-- WireMock also weighs the scheme (3), host (10) and port (10), which a
-- pattern without them always matches, and reports the weighted mean over
-- 39: dividing by the same gives WireMock's figure where the URL and the
-- method differ, and keeps every partial match between 0 and 1.
local NEAR_WEIGHT = 39
-- As WireMock, the nearest three.
local NEAR_MISSES = 3

local function by_distance(a, b)
  if a.distance ~= b.distance then return a.distance < b.distance end
  return (a.order or 0) < (b.order or 0)
end

-- The stubs nearest to facts, nearest first: a list of {stub, distance}.
local function nearest_stubs(self, facts)
  local _, all = current(self)
  local list = {}
  for i, stub in ipairs(all) do
    list[i] = { stub = stub, distance = match.near(stub.compiled, facts) / NEAR_WEIGHT, order = i }
  end
  sort(list, by_distance)
  for i = #list, NEAR_MISSES + 1, -1 do list[i] = nil end
  return list
end

-- The facts of a request as near-misses/request takes it (WireMock's
-- LoggedRequest: url, method, headers, cookies, body or bodyAsBase64).
local function facts_of_given(r)
  local copy = {}
  for k, v in pairs(r) do copy[k] = v end
  copy.url = type(r.url) == "string" and r.url or "/"
  copy.method = type(r.method) == "string" and r.method:upper() or "GET"
  if type(copy.headers) ~= "table" then copy.headers = nil end
  if type(copy.cookies) ~= "table" then copy.cookies = nil end
  if copy.body ~= nil and type(copy.body) ~= "string" then copy.body = json_encode(copy.body) end
  return facts_of_logged(copy)
end

-- The journal's entry number in one of its ids, or nil.
local function entry_number(id)
  local hex = id:match("^6a6f7572%-6e61%-4c00%-8000%-(%x+)$")
  return hex and tonumber(hex, 16)
end

local UUID = "^%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$"

-- The names of the files under dir, recursively, as "sub/name".
local function file_names(dir, prefix, out)
  local entries = core.dir_list(dir)
  for _, e in ipairs(entries or {}) do
    if e.dir then
      file_names(dir .. "/" .. e.name, prefix .. e.name .. "/", out)
    else
      out[#out + 1] = prefix .. e.name
    end
  end
  return out
end

local function send_empty(res)
  res:status(200)
  res:send("")
end

-- /__admin/settings and /__admin/scenarios/{name}/state.
local function settings_routes(self, admin)
  local function settings_answer(res)
    local text = state:get(KEY_SETTINGS)
    res:status(200):header("Content-Type", "application/json")
    res:send('{"settings":' .. (text or '{"proxyPassThrough":true}') .. "}")
  end
  local function set_settings(req, res)
    local body, err = json_decode(req:body() or "")
    if type(body) ~= "table" then return bad_request(res, tostring(err or "expected a JSON object")) end
    err = settings_error(body)
    if err then return admin_error(res, 422, "Invalid settings", err) end
    -- As WireMock keeps it: a field not given is false.
    if body.proxyPassThrough == nil then body.proxyPassThrough = false end
    if not state:set(KEY_SETTINGS, json_encode(body)) then return no_room(res, "settings") end
    changed()
    send_empty(res)
  end
  admin("GET", "/settings", function(req, res) settings_answer(res) end)
  admin("POST", "/settings", set_settings)
  admin("PUT", "/settings", set_settings)

  admin("PUT", "/scenarios/:name/state", function(req, res)
    local name = req.params.name
    local _, all = current(self)
    local possible = { Started = true }
    local known = false
    for _, s in ipairs(all) do
      if s.scenario_name == name then
        known = true
        if s.required_scenario_state then possible[s.required_scenario_state] = true end
        if s.new_scenario_state then possible[s.new_scenario_state] = true end
      end
    end
    if not known then
      return send_json(res, 404, { errors = { { code = 404, title = "Scenario " .. name .. " does not exist" } } })
    end
    local to = "Started"
    if (req:body() or ""):find("%S") then
      local body, err = json_decode(req:body())
      if type(body) ~= "table" then return bad_request(res, tostring(err or "expected a JSON object")) end
      to = body.state
      if type(to) ~= "string" or not possible[to] then
        return send_json(res, 422, { errors = { { code = 11, title = ("Scenario %s does not support state %s")
          :format(name, to == nil and "null" or json_encode(to):gsub('^"(.*)"$', "%1")) } } })
      end
    end
    if not state:set(KEY_SCENARIO .. name, to) then return no_room(res, "scenario " .. name) end
    send_json(res, 200, {})
  end)
end

-- /__admin/mappings/import and /__admin/mappings/save.
local function mapping_set_routes(self, admin)
  admin("POST", "/mappings/import", function(req, res)
    local body, err = decode_body(req)
    if body == nil then return bad_request(res, err) end
    local list, opts = body.mappings, body.importOptions
    if type(list) ~= "table" then return bad_request(res, "mappings: a list of stub mappings") end
    if opts ~= nil and type(opts) ~= "table" then return bad_request(res, "importOptions: an object") end
    opts = opts or {}
    local policy = opts.duplicatePolicy or "OVERWRITE"
    if policy ~= "OVERWRITE" and policy ~= "IGNORE" then
      return bad_request(res, "importOptions.duplicatePolicy: OVERWRITE or IGNORE")
    end
    -- Every mapping is checked before any is stored.
    local ids = {}
    for i, m in ipairs(list) do
      local ok
      ok, err = admit_mapping(self, m)
      if not ok then return admin_error(res, 422, "Invalid stub mapping", ("mappings[%d]: %s"):format(i - 1, err)) end
      ids[m.id] = true
    end
    current(self)
    local existing = {}
    for id in pairs(self.by_id) do existing[id] = true end
    if opts.deleteAllNotInImport == true then
      for id in pairs(existing) do
        if not ids[id] then
          if not remove_stub(self, id) then
            changed()
            return no_room(res, "removing stub " .. id)
          end
          existing[id] = nil
        end
      end
      changed()
    end
    -- The last first, so that the first of the list is the newest, as
    -- WireMock imports them: it wins among equals.
    for i = #list, 1, -1 do
      local m = list[i]
      if not (policy == "IGNORE" and existing[m.id]) then
        local ok, code
        ok, code, err = store_mapping(self, m)
        if not ok then return answer_store_error(res, m.id, code, err) end
      end
    end
    send_empty(res)
  end)

  admin("POST", "/mappings/save", function(req, res)
    local added = admin_state()
    for _, a in ipairs(added) do
      local bad = unsafe_id(a.id)
      if bad then return admin_error(res, 422, "Mapping not written", bad .. "; nothing was written") end
    end
    for _, a in ipairs(added) do
      local m = a.mapping
      m.id, m.uuid = a.id, a.id
      local was = m.persistent
      local ok, err = persist(self, m)
      if not ok then return admin_error(res, 500, "Mapping not written", "mapping " .. a.id .. ": " .. err) end
      if was ~= true then
        local code
        ok, code, err = put_mapping(a.id, m)
        if not ok then return answer_store_error(res, a.id, code, err) end
      end
    end
    send_empty(res)
  end)
end

-- WireMock's near misses: for unmatched requests, a request given, or a
-- request pattern against the journal.
local function near_miss_routes(self, admin)
  local function stream_near(res, produce)
    stream_list(res, "nearMisses", function(emit)
      produce(emit)
      return function() return "}" end
    end)
  end
  local function miss(request, stub, distance)
    return { request = request, stubMapping = model.to_wiremock(stub), matchResult = { distance = distance } }
  end
  admin("GET", "/requests/unmatched/near-misses", function(req, res)
    stream_near(res, function(emit)
      each_entry(function(e)
        if e.wasMatched then return true end
        local request = complete(self, e).request
        for _, n in ipairs(nearest_stubs(self, facts_of_logged(e.request))) do
          if not emit(miss(request, n.stub, n.distance)) then return false end
        end
      end)
    end)
  end)
  admin("POST", "/near-misses/request", function(req, res)
    local body, err = decode_body(req)
    if body == nil then return bad_request(res, err) end
    local facts = facts_of_given(body)
    stream_near(res, function(emit)
      for _, n in ipairs(nearest_stubs(self, facts)) do
        if not emit(miss(body, n.stub, n.distance)) then return end
      end
    end)
  end)
  admin("POST", "/near-misses/request-pattern", function(req, res)
    local pattern, err = decode_body(req)
    if pattern == nil then return bad_request(res, err) end
    local c
    c, err = compile_pattern(self, pattern)
    if c == nil then return bad_request(res, err) end
    local list = {}
    each_entry(function(e)
      list[#list + 1] = { entry = e, distance = match.near(c, facts_of_logged(e.request)) / NEAR_WEIGHT,
                          order = #list }
    end)
    sort(list, by_distance)
    stream_near(res, function(emit)
      for i = 1, math.min(NEAR_MISSES, #list) do
        local n = list[i]
        if not emit({ request = complete(self, n.entry).request, requestPattern = pattern,
                      matchResult = { distance = n.distance } }) then return end
      end
    end)
  end)
end

-- Removing journal entries, and the list of body files.
local function journal_and_file_routes(self, admin, matching)
  admin("DELETE", "/requests/:id", function(req, res)
    local id = req.params.id
    if not id:find(UUID) then
      return send_json(res, 400, { errors = { { code = 10, title = id .. " is not a valid UUID" } } })
    end
    local n = entry_number(id)
    if n then journal_store:delete(KEY_ENTRY .. n) end
    send_json(res, 200, {})
  end)
  admin("POST", "/requests/remove", function(req, res)
    local test = matching(req, res)
    if test == nil then return end
    stream_list(res, "serveEvents", function(emit)
      each_entry(function(e)
        if test(e) then
          local n = entry_number(e.id or "")
          if n then journal_store:delete(KEY_ENTRY .. n) end
          emit(complete(self, e))
        end
      end)
      return function() return "}" end
    end)
  end)

  admin("GET", "/files", function(req, res)
    local names = file_names(self.files_dir, "", {})
    res:status(200):header("Content-Type", "application/json")
    res:send(json_encode(json.array(names)))
  end)
end

local function admin_routes(self)
  local function admin(method, path, handler)
    App.route(self, method, "/__admin" .. path, wrap(self, handler, true))
  end
  -- Adds (id nil) or replaces a mapping from the request's body; a
  -- persistent one is written to mappings/ too.
  local function save(req, res, id, status)
    local mapping, err = decode_body(req)
    if mapping == nil then return bad_request(res, err) end
    local ok, code
    ok, err = admit_mapping(self, mapping, id)
    if not ok then return admin_error(res, 422, "Invalid stub mapping", err) end
    ok, code, err = store_mapping(self, mapping)
    -- Echoed as WireMock does, with its defaults filled in.
    if ok then
      local stub = model.normalize(model.from_wiremock(mapping))
      return send_json(res, status, stub and model.to_wiremock(stub) or mapping)
    end
    answer_store_error(res, mapping.id, code, err)
  end

  admin("GET", "/mappings", function(req, res)
    local _, all = current(self)
    stream_list(res, "mappings", function(emit)
      for _, s in ipairs(all) do
        if not emit(model.to_wiremock(s)) then break end
      end
      return function(total) return (',"meta":{"total":%d}}'):format(total) end
    end)
  end)
  admin("POST", "/mappings", function(req, res) save(req, res, nil, 201) end)
  admin("DELETE", "/mappings", function(req, res)
    -- Persistent mappings' files go with them, as in WireMock.
    current(self)
    for id in pairs(self.by_id) do unpersist(self, id) end
    for _, key in ipairs(state_keys(KEY_FILE)) do unpersist(self, key:sub(#KEY_FILE + 1)) end
    delete_keys(state_keys(KEY_MAPPING))
    for _, s in ipairs(self.script_stubs) do
      if not state:set(KEY_REMOVED .. s.id, true) then
        changed()
        return no_room(res, "removing stub " .. s.id)
      end
    end
    changed()
    send_json(res, 200, {})
  end)
  admin("POST", "/mappings/reset", function(req, res)
    reset_mappings()
    res:status(200):send("") -- WireMock's answer: no body
  end)
  admin("GET", "/mappings/:id", function(req, res)
    local s = find_stub(self, req.params.id)
    if s == nil then return not_found(res, "Stub mapping") end
    send_json(res, 200, model.to_wiremock(s))
  end)
  admin("PUT", "/mappings/:id", function(req, res)
    local id = req.params.id
    if find_stub(self, id) == nil then return not_found(res, "Stub mapping") end
    save(req, res, id, 200)
  end)
  admin("DELETE", "/mappings/:id", function(req, res)
    local id = req.params.id
    local stub = find_stub(self, id)
    if stub == nil then return not_found(res, "Stub mapping") end
    if not remove_stub(self, id) then
      changed()
      return no_room(res, "removing stub " .. id)
    end
    changed()
    send_json(res, 200, {})
  end)
  admin("POST", "/reset", function(req, res)
    reset_mappings()
    clear_journal()
    reset_scenarios()
    res:status(200):send("") -- WireMock's answer: no body
  end)
  admin("GET", "/requests", function(req, res)
    local unmatched = req:query("unmatched") == "true"
    local limit = tonumber(req:query("limit"))
    stream_requests(self, res, function(e) return not (unmatched and e.wasMatched) end,
      function(e) return complete(self, e) end, limit)
  end)
  admin("DELETE", "/requests", function(req, res)
    clear_journal()
    send_json(res, 200, {})
  end)
  -- A test of journal entries against the request pattern in the body;
  -- nil when it answered 422 instead.
  local function matching(req, res)
    local pattern, err = decode_body(req)
    if pattern == nil then return nil, bad_request(res, err) end
    local c
    c, err = compile_pattern(self, pattern)
    if c == nil then return nil, bad_request(res, err) end
    return function(e) return match.test(c, facts_of_logged(e.request)) == true end
  end
  admin("POST", "/requests/count", function(req, res)
    local test = matching(req, res)
    if test == nil then return end
    local n = 0
    each_entry(function(e) if test(e) then n = n + 1 end end)
    send_json(res, 200, { count = n, requestJournalDisabled = self.settings.journal_size == 0 })
  end)
  admin("POST", "/requests/find", function(req, res)
    local test = matching(req, res)
    if test == nil then return end
    -- Oldest first, as WireMock lists what it found.
    stream_requests(self, res, test, function(e) return complete(self, e).request end, nil, true)
  end)
  admin("GET", "/requests/unmatched", function(req, res)
    stream_requests(self, res, function(e) return not e.wasMatched end,
      function(e) return complete(self, e).request end)
  end)
  admin("GET", "/scenarios", function(req, res)
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
  admin("POST", "/scenarios/reset", function(req, res)
    reset_scenarios()
    send_json(res, 200, {})
  end)
  recording_routes(self, admin)
  settings_routes(self, admin)
  mapping_set_routes(self, admin)
  near_miss_routes(self, admin)
  journal_and_file_routes(self, admin, matching)
end

-- Mock state across instances (--mock-store) -------------------------------

-- What the Redis store calls the mock's keys.
local STORE_KEYS = {
  version = KEY_VERSION, scenario = KEY_SCENARIO, journal_seq = KEY_SEQ,
  journal_first = KEY_JOURNAL_FIRST, entry = KEY_ENTRY,
  entry_id = "6a6f7572-6e61-4c00-8000-", -- log_request's ids, less the number
}
-- How often one request matches again after other requests (of any
-- instance) moved the scenario of the stub it matched.
local ADVANCE_TRIES = 32

-- find_for with the state in Redis: the version and the scenario states
-- in one round trip (the admin mappings are read again only when the
-- version moved), matching without yielding on that snapshot, then the
-- stub's scenario moved atomically from the state it was matched in; a
-- request that lost that race to another matches again. Redis out of
-- reach: the stubs this worker last loaded (the script's and the files'
-- alone if it never reached Redis), the scenario states last read, no
-- move (store.advance logs it).
function remote_find(self, facts)
  for _ = 1, ADVANCE_TRIES do
    remote:refresh()
    local ok, index = pcall(current, self)
    if not ok then
      if not store.unavailable(index) then error(index, 0) end
      if self.index == nil then
        remote:without_network(function() current(self) end)
        self.version = -1 -- what refresh gives until Redis answers
      end
      index = self.index
    end
    local stub = match.find(index, facts, scenario_ok, on_match_error)
    if stub == nil or stub.scenario_name == nil or stub.new_scenario_state == nil then return stub end
    if remote:advance(stub.scenario_name, stub.required_scenario_state, stub.new_scenario_state) ~= false then
      return stub
    end
  end
  log("warn", ("mock: %s %s: its scenario kept moving under %d tries; answered as unmatched")
    :format(facts.method, facts.url, ADVANCE_TRIES))
  return nil
end

local function store_unavailable(res, err)
  log("warn", "mock: " .. tostring(err))
  res:status(503):header("Retry-After", "1")
  send_json(res, 503, { errors = { { code = 10, title = "Mock store unavailable", detail = tostring(err) } } })
end

-- Keeps store.Unavailable as it is, and gives other errors their
-- traceback, as the runner would.
local function guard_error(e)
  if store.unavailable(e) then return e end
  local trace = runner.on_error(e)
  if trace == runner.EXIT then return trace end
  return runner.traced(trace)
end

local function guarded(res, ok, ...)
  if ok then return ... end
  local err = ...
  if not store.unavailable(err) then error(err, 0) end
  if res:started() then
    log("warn", "mock: " .. tostring(err) .. " (the response had begun: cut short)")
    pcall(res.finish, res)
    return
  end
  return store_unavailable(res, err)
end

-- Every handler of a mock app with the state in Redis: an admin call reads
-- the version and scenario states first, and answers 503 when Redis cannot
-- be reached, as any handler does when a store call fails (json-db).
function remote_guard(handler, admin)
  return function(req, res)
    if admin then
      local ok, err = remote:refresh()
      if not ok then return store_unavailable(res, err) end
    end
    return guarded(res, xpcall(handler, guard_error, req, res))
  end
end

-- Chooses the app's stores: Redis for opts.store or --mock-store, else
-- the in-process ones. One choice for the process: the last app made sets
-- it.
local function use_store(self, opts)
  local url = opts and opts.store
  if url == nil then url = self.settings.store end
  if url == nil then
    remote, state, journal_store = nil, core.mock_state, core.mock_journal
    return
  end
  local st, jr = store.new(url, STORE_KEYS)
  if st == nil then error(("mock.app: mock store %s: %s"):format(tostring(url), jr), 3) end
  remote, state, journal_store = st, st, jr
  self.mock_store = st
end

-- Apps ----------------------------------------------------------------------

--- A new mock app: stubs (`app:stub`, `app:stub_wiremock`), WireMock's
-- admin API under /__admin, a request journal, and CORS unless --no-cors.
-- Ordinary routes (`app:get`, ...) work beside the stubs and take
-- precedence over them. opts.store: a Redis URL
-- (`redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`, `unix:/PATH`) that keeps the
-- admin mappings, scenarios, journal and json-db data, shared with other
-- instances (as --mock-store, which it overrides); a URL it cannot use
-- raises.
-- `opts.wiremock_404 = true` answers a request no stub matched with
-- WireMock's 404 page (as --wiremock-404 does) instead of moonport's
-- report.
-- @usage local app = require("moonport.mock").app()
-- @usage local app = mock.app{ store = "redis://127.0.0.1:6379/0" }
-- @usage local app = require("moonport.mock").app{ wiremock_404 = true }
function mock.app(opts)
  if opts ~= nil and type(opts) ~= "table" then error("mock.app: opts must be a table", 2) end
  local self = moonport.app()
  setmetatable(self, MockApp)
  self.settings = core.mock_settings()
  self.wiremock_404 = self.settings.wiremock_404 or (opts ~= nil and opts.wiremock_404 == true)
  use_store(self, opts)
  self.admin_hosts = admin_hosts(self.settings)
  self.script_stubs = {}
  self.stub_files = {} -- id -> file under mappings/, for persistent ones
  self.script_id = 0x6d6f636b -- "mock": ids of script stubs are the same in every worker
  -- Where bodyFileName is read and recordings are written.
  self.root = self.settings.dir or "."
  self.files_dir = self.root .. "/__files"
  self.record_defaults = record.spec({})
  -- The counters exist from the start, so that moving them never needs
  -- room the state store might not have.
  if not remote then
    for _, key in ipairs({ KEY_VERSION, KEY_MAPPING_SEQ, KEY_SEQ }) do state:add(key, 0) end
    state:add(KEY_JOURNAL_FIRST, 1)
  end
  admin_routes(self)
  local function handler(req, res) return serve(self, req, res) end
  for _, m in ipairs(METHODS) do self:route(m, "/*path", handler) end
  return self
end

--- Loads a WireMock root directory: every mapping under DIR/mappings (one
-- mapping per file, or {"mappings": [...]}), bodies from DIR/__files (also
-- served as they are to a GET no stub matches), and DIR/*.lua stub scripts
-- (each returns a function(app) or a list of stubs). Every file read is
-- watched for hot reload. A directory that is not there, or a mapping that
-- cannot be served as written, raises naming the file. Returns the app.
-- @usage app:load_dir("wiremock")
function MockApp:load_dir(dir)
  local top, err = core.dir_list(dir)
  if top == nil then error("cannot load the mock directory " .. err, 0) end
  self.root = dir
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
        local doc, derr = json_decode(text or "", MAPPING)
        if type(doc) ~= "table" then error(full .. ": not JSON: " .. tostring(derr), 0) end
        core.track_file(full)
        if doc.mappings ~= nil then
          for i, m in ipairs(doc.mappings) do self:stub_wiremock(m, full .. " mapping " .. i) end
        else
          self:stub_wiremock(doc, full)
          -- A persistent mapping's file goes when the mapping is removed.
          if doc.persistent == true then
            self.stub_files[self.script_stubs[#self.script_stubs].id] = full:sub(#dir + #"/mappings/" + 1)
          end
        end
      end
    end
  end
  walk(dir .. "/mappings")
  for _, e in ipairs(top) do
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

--- Serves, below the stubs, what none of them matches (and no file of
-- DIR/__files answers): fn(req, res) answers and returns the status it
-- answered and an id the journal gives as the request's stubId (nil:
-- unmatched), or returns nil to leave the request to the mock's 404.
-- One function per app; a later call replaces it (moonport.openapi.mock
-- uses it). Returns the app.
-- @usage app:fallback(function(req, res) res:status(418):send("tea") return 418 end)
function MockApp:fallback(fn)
  if type(fn) ~= "function" then error("app:fallback: fn must be a function", 2) end
  self.below = fn
  return self
end

--- json-server mode: adds json-server 0.17's routes over the JSON file at
-- path to app (see moonport.mock.json_db); opts.stubs = false: paths of no
-- resource get 404 {} rather than the stubs; json-server's options:
-- opts.routes (a routes file, or a list of {from, to} rules), static (a
-- folder), id, foreign_key_suffix, read_only, delay (ms). Returns app.
-- @usage mock.json_db(app, "db.json", { routes = "routes.json" })
function mock.json_db(app, path, opts) return require("moonport.mock.json_db").attach(app, path, opts) end
MockApp.serve_stubs = serve -- what json_db hands a path that names no resource

return mock
