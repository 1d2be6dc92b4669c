--- moonport.openapi: an OpenAPI 3.0 or 3.1 document as a mock server (as
-- Stoplight Prism serves one) and as a validator of an app's requests and
-- responses.
--
--     local openapi = require("moonport.openapi")   -- or moonport.openapi
--     -- A mock: the document answers what the app's stubs do not.
--     local app = require("moonport.mock").app()
--     openapi.mock(app, "openapi.yaml", { dynamic = false })
--     -- Validation in front of real handlers.
--     local app = require("moonport").app()
--     app:use(openapi.validate("openapi.yaml", { requests = true, responses = "log" }))
--
-- The pieces: moonport.openapi.doc loads the document (YAML or JSON,
-- $refs across files resolved into shared tables) and routes requests to
-- its operations; moonport.openapi.request checks a request against an
-- operation (Prism's violations); moonport.openapi.generate picks and
-- builds the answer of a mock; moonport.openapi.response (this module's
-- own) checks what a handler answered. This module ties them to apps.
--
-- Everything is done once per document and state: openapi.load compiles
-- a document (every operation's request check) the first time a path is
-- asked for, and the same compiled document serves every later call, so
-- `openapi.validate` and `openapi.mock` on one file share it. A reload
-- (the document or a file it $refs changed: every file read is tracked
-- for hot reload) compiles it again in the new state. A document that
-- does not load raises its error ("openapi.yaml:12: ..."), which fails the
-- app's load: a server keeps serving what it served before, as it does for
-- a broken script.
--
-- Per request, nothing is allocated here for a valid request: routing
-- and the request check are the doc and request modules' (which allocate
-- nothing for a valid request either); the answers to invalid requests and
-- the response checks build their text.
-- @module moonport.openapi

local core = require("moonport.core")
local json = require("moonport.json")
local response = require("moonport.core.response")
local worker = require("moonport.core.worker")
local crypto = require("moonport.core.crypto")

local type, error, tostring, ipairs, pairs, pcall, setmetatable = type, error, tostring, ipairs, pairs, pcall, setmetatable
local concat, sort = table.concat, table.sort
local find = string.find
local json_encode = json.encode
local log = core.log

local openapi = {}

-- Prism's problem types are URLs under this one.
local PRISM = "https://stoplight.io/prism/errors#"

-- Problems ---------------------------------------------------------------------

-- A list of violations as JSON, the members in Prism's order
-- (location, severity, code, message); prefix ("request", or nil) goes
-- in front of each location, as Prism writes sl-violations. A violation
-- of no place (a required body that is missing) has no location member,
-- as in Prism's problem bodies.
local function violations_json(list, prefix)
  local out = {}
  for i, v in ipairs(list) do
    local loc = {}
    if prefix then loc[1] = json_encode(prefix) end
    for _, part in ipairs(v.location or v.path or {}) do loc[#loc + 1] = json_encode(part) end
    local at = #loc > 0 and '"location":[' .. concat(loc, ",") .. '],' or ""
    out[i] = '{' .. at .. '"severity":' .. json_encode(v.severity or "Error")
      .. ',"code":' .. json_encode(v.code or "") .. ',"message":' .. json_encode(v.message or "") .. "}"
  end
  return "[" .. concat(out, ",") .. "]"
end
openapi._violations_json = violations_json

--- Answers an application/problem+json body as Prism writes one:
-- {"type": PRISM .. kind, "title", "status", "detail"} then the members
-- of extra (a list of {name, JSON text}), with headers (a list of
-- {name, value}) set first.
-- @usage openapi.problem(res, 404, "NO_PATH_MATCHED_ERROR", "Route not resolved, no path matched", detail)
function openapi.problem(res, status, kind, title, detail, extra, headers)
  res:status(status)
  res:header("Content-Type", "application/problem+json")
  for _, h in ipairs(headers or {}) do res:header(h[1], h[2]) end
  local more = {}
  for _, m in ipairs(extra or {}) do more[#more + 1] = "," .. json_encode(m[1]) .. ":" .. m[2] end
  res:send('{"type":' .. json_encode(PRISM .. kind) .. ',"title":' .. json_encode(title)
    .. ',"status":' .. status .. ',"detail":' .. json_encode(detail or "") .. concat(more) .. "}")
  return status
end
local problem = openapi.problem

-- The WWW-Authenticate challenges Prism sends when security is not met:
-- one per scheme of the operation's requirements that asks for an
-- Authorization header (http basic, bearer, digest; oauth2 and
-- openIdConnect as bearer tokens), in the requirements' order; the
-- request check's own tags when it gives them.
local CHALLENGE = { basic = 'Basic realm="*"', bearer = "Bearer",
                    digest = 'Digest realm="*", nonce="abc123"' }
local function challenges(op, doc, violations)
  local tags = {}
  for _, v in ipairs(violations) do
    for _, t in ipairs(v.tags or {}) do tags[#tags + 1] = t end
  end
  if #tags > 0 then return concat(tags, ",") end
  local schemes = doc.security_schemes or {}
  for _, requirement in ipairs(op.security or {}) do
    local names = {}
    for name in pairs(requirement) do names[#names + 1] = name end
    sort(names)
    for _, name in ipairs(names) do
      local s = schemes[name]
      local kind = type(s) == "table" and s.type
      if kind == "http" then
        local c = CHALLENGE[tostring(s.scheme or ""):lower()]
        if c then tags[#tags + 1] = c end
      elseif kind == "oauth2" then
        tags[#tags + 1] = "OAuth2"
      elseif kind == "openIdConnect" then
        tags[#tags + 1] = "OpenID"
      end
    end
  end
  if #tags == 0 then return nil end
  return concat(tags, ",")
end

--- Answers a request the document's operation op refuses, as Prism does
-- when the document has no response for it: 401 (security) with
-- WWW-Authenticate, 415 (content type), 400 (a body that does not parse),
-- 422 with every violation. Returns the status.
-- @usage return openapi.refuse(res, op, doc, violations, 422)
function openapi.refuse(res, op, doc, violations, status)
  if status == 401 then
    local challenge = challenges(op, doc, violations)
    local headers = challenge and { { "WWW-Authenticate", challenge } } or nil
    return problem(res, 401, "UNAUTHORIZED", "Invalid security scheme used",
      "Your request does not fullfil the security requirements and no HTTP unauthorized "
      .. "response was found in the spec, so Prism is generating this error for you.",
      headers and { { "headers", '{"WWW-Authenticate":' .. json_encode(challenge) .. "}" } }, headers)
  elseif status == 415 then
    local v = violations[1] or {}
    return problem(res, 415, "INVALID_CONTENT_TYPE", "Invalid content type", v.message)
  elseif status == 400 then
    -- Prism's body parser answers itself, before any validation.
    res:status(400)
    res:header("Content-Type", "application/json; charset=utf-8")
    res:send('{"error":{"code":"invalid_json","message":"Invalid JSON"}}')
    return 400
  end
  return problem(res, 422, "UNPROCESSABLE_ENTITY", "Invalid request",
    "Your request is not valid and no HTTP validation response was found in the spec, "
    .. "so Prism is generating this error for you.",
    { { "validation", violations_json(violations) } })
end

-- Documents ---------------------------------------------------------------------

local compiled = {} -- path -> { doc, checks = { [op] = request check } }

-- Logs the document's warnings (what it uses that moonport does not
-- serve) once: with --check, to the terminal; in a server, by the first
-- worker that loads this document with these warnings (a mark in the
-- mock's state store, which every worker sees and reloads keep), not by
-- the master's check of the app, whose log is not the server's.
local function report_warnings(path, warnings)
  if type(warnings) ~= "table" or #warnings == 0 then return end
  local settings = core.mock_settings()
  if not settings.check then
    if worker.id() == nil then return end
    local key = "openapi:warned:" .. path .. ":" .. crypto.crc32(concat(warnings, "\n"))
    local ok, first = pcall(core.mock_state.add, core.mock_state, key, true)
    if ok and not first then return end
  end
  for _, w in ipairs(warnings) do log("warn", "openapi: " .. w) end
end

--- The compiled document at path: { doc = moonport.openapi.doc's
-- document, checks = { [op] = its request check } }, made once per path
-- and state. Every file the document reads is tracked for hot reload;
-- its warnings are logged once. Raises the loader's error
-- ("openapi.yaml:12: ...") when it does not load.
-- @usage local doc = openapi.load("openapi.yaml").doc
function openapi.load(path)
  if type(path) ~= "string" or path == "" then error("openapi: path must be a file name", 2) end
  local c = compiled[path]
  if c then return c end
  -- Tracked before it loads, so that the fix of a broken file reloads.
  core.track_file(path)
  local doc, err = require("moonport.openapi.doc").load(path)
  if doc == nil then error(tostring(err), 0) end
  for _, f in ipairs(doc.files or {}) do core.track_file(f) end
  report_warnings(path, doc.warnings)
  local request = require("moonport.openapi.request")
  local checks = {}
  for _, op in ipairs(doc.operations) do checks[op] = request.compile(op, doc) end
  c = { doc = doc, checks = checks, path = path }
  compiled[path] = c
  return c
end

-- The mock -----------------------------------------------------------------------

-- Sends what moonport.openapi.generate chose: status, headers,
-- Content-Type and body (a string as it is, another value as JSON).
local function send_answer(res, answer, extra_header)
  res:status(answer.status)
  for _, h in ipairs(answer.headers or {}) do res:header(h[1], tostring(h[2])) end
  if extra_header then res:header(extra_header[1], extra_header[2]) end
  if answer.content_type then res:header("Content-Type", answer.content_type) end
  local body = answer.body
  if body == nil then return answer.status end
  if type(body) ~= "string" then body = json_encode(body) end
  res:send(body)
  return answer.status
end

-- Static answers are the same for the same operation, method, Accept and
-- Prefer fields: each is kept, its body encoded, so that a mock request
-- does not build and encode it again. At most ANSWERS_PER_OP kinds of
-- request per operation (distinct Accept and Prefer values); past that,
-- the operation's store starts over.
local ANSWERS_PER_OP = 64

local function encoded(answer)
  if answer.body ~= nil and type(answer.body) ~= "string" then answer.body = json_encode(answer.body) end
  return answer
end

-- The kept answer for req to op, the table to keep it in and its key (nil
-- when req asks for a dynamic answer, which is not kept).
local function kept_answer(answers, op, req)
  local prefer = req:header("prefer")
  if prefer and find(prefer, "dynamic", 1, true) then return nil end
  local qs = req.query_string
  if qs and find(qs, "__", 1, true) then return nil end -- Prism's __code, __dynamic, ...
  local by_op = answers[op]
  if by_op == nil then
    by_op = { n = 0 }
    answers[op] = by_op
  end
  local accept = req:header("accept") or ""
  local by_method = by_op[req.method]
  local by_accept = by_method and by_method[accept]
  local key = prefer or ""
  return by_accept and by_accept[key], by_op, accept, key
end

local function keep_answer(by_op, method, accept, key, answer)
  if by_op.n >= ANSWERS_PER_OP then
    for k in pairs(by_op) do by_op[k] = nil end
    by_op.n = 0
  end
  local by_method = by_op[method]
  if by_method == nil then by_method = {}; by_op[method] = by_method end
  local by_accept = by_method[accept]
  if by_accept == nil then by_accept = {}; by_method[accept] = by_accept end
  by_accept[key] = answer
  by_op.n = by_op.n + 1
end

-- The journal's stub id of a request the document answered: one per
-- operation ("open", "api" in hex), so /__admin/requests tells which
-- operation served it.
local function operation_id(i)
  return ("6f70656e-6170-4900-8000-%012x"):format(i)
end

--- Serves the document at path as Prism's mock does, below what app
-- serves otherwise: with a mock app (moonport.mock.app), for every
-- request its stubs (mappings, Lua stubs, __files) do not match, journaled
-- like theirs; with a plain app, through catch-all routes (`/*path`, every
-- method) below its own routes. A request no operation describes gets 404
-- (405 for another method), an invalid one 422, 400, 401 or 415 (the
-- document's answer for that status when it has one, with an
-- sl-violations header; Prism's problem otherwise), a valid one the
-- operation's answer: the lowest 2xx, or what the Prefer header asks for
-- (code=, example=, dynamic=true), its example or a value built from its
-- schema. opts: `dynamic` (random data valid against the schema instead
-- of examples, as --dynamic), `seed` (a number: every answer generated
-- with the same seed, as Prism's --seed). Raises when the document does
-- not load. Returns app.
-- @usage openapi.mock(app, "openapi.yaml", { dynamic = true, seed = 42 })
function openapi.mock(app, path, opts)
  if type(app) ~= "table" or type(app.route) ~= "function" then
    error("openapi.mock: app must be an app (moonport.app() or moonport.mock.app())", 2)
  end
  if type(path) ~= "string" or path == "" then error("openapi.mock: path must be a file name", 2) end
  if opts ~= nil and type(opts) ~= "table" then error("openapi.mock: opts must be a table", 2) end
  opts = opts or {}
  if opts.seed ~= nil and type(opts.seed) ~= "number" then error("openapi.mock: opts.seed must be a number", 2) end
  local c = openapi.load(path)
  local doc, checks = c.doc, c.checks
  local gen = require("moonport.openapi.generate")
  local ids = {}
  for i, op in ipairs(doc.operations) do ids[op] = operation_id(i) end
  local seed = opts.seed
  local shared_rng = seed == nil and gen.rng(nil) or nil
  local dynamic = opts.dynamic == true
  local answers = setmetatable({}, { __mode = "k" }) -- op -> kept static answers

  -- Answers req from the document; returns the status and the
  -- operation's journal id (nil when no operation took it).
  local function serve(req, res)
    local op, params, status = doc:route(req.method, req.path)
    if op == nil then
      if status == 405 then
        return problem(res, 405, "NO_METHOD_MATCHED_ERROR", "Route resolved, but no method matched",
          ("The route %s has been matched, but it does not have \"%s\" method defined"):format(
            req.path, req.method:lower()))
      end
      return problem(res, 404, "NO_PATH_MATCHED_ERROR", "Route not resolved, no path matched",
        ("The route %s hasn't been found in the specification file"):format(req.path))
    end
    local violations, vstatus = checks[op](req, params)
    local kept, by_op, accept, key
    if violations == nil and not dynamic then
      kept, by_op, accept, key = kept_answer(answers, op, req)
      if kept then return send_answer(res, kept), ids[op] end
    end
    -- As Prism's --seed, every generation starts from the seed.
    local gopts = { dynamic = dynamic, rng = shared_rng or gen.rng(seed), seed = seed }
    if violations ~= nil then
      -- A body that does not parse never reaches Prism's mocker: its
      -- server answers 400 itself, whatever the document says.
      local answer = vstatus ~= 400 and gen.for_invalid(op, vstatus, req, gopts)
      if answer then
        return send_answer(res, answer, { "sl-violations", violations_json(violations, "request") }), ids[op]
      end
      return openapi.refuse(res, op, doc, violations, vstatus), ids[op]
    end
    local answer, p = gen.respond(op, req, gopts)
    if answer == nil then
      p = p or { status = 500, type = "NO_RESPONSE_RESPONSE_DEFINED",
                 title = "No response defined for the selected operation" }
      return problem(res, p.status, p.type, p.title, p.detail), ids[op]
    end
    if by_op then
      answer = encoded(answer)
      keep_answer(by_op, req.method, accept, key, answer)
    end
    return send_answer(res, answer), ids[op]
  end

  if type(app.fallback) == "function" then
    app:fallback(serve)
  else
    local function handler(req, res) serve(req, res) end
    for _, m in ipairs({ "GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS" }) do
      app:route(m, "/*path", handler)
    end
  end
  return app
end

-- Validation for apps ---------------------------------------------------------

local RESPONSES = { log = true, enforce = true }

--- A middleware for app:use that checks requests, and optionally
-- responses, against the document at path. A request for an operation of
-- the document that violates it gets Prism's answer before the handler
-- runs (422 with every violation, 400 for a body that does not parse, 401
-- with WWW-Authenticate, 415); paths the document does not describe go on
-- untouched. opts: `requests` (default true), `responses`: nil (not
-- checked), "log" (a violating response goes out, and an error line says
-- why) or "enforce" (it is replaced by a 500 problem listing the
-- violations, for tests; a streamed body is only logged). Compiled once
-- per document. Raises when the document does not load or an option is
-- wrong.
-- @usage app:use(openapi.validate("openapi.yaml", { responses = "enforce" }))
function openapi.validate(path, opts)
  if type(path) ~= "string" or path == "" then error("openapi.validate: path must be a file name", 2) end
  if opts ~= nil and type(opts) ~= "table" then error("openapi.validate: opts must be a table", 2) end
  opts = opts or {}
  local requests = opts.requests ~= false
  local responses = opts.responses
  if responses == false then responses = nil end
  if responses ~= nil and not RESPONSES[responses] then
    error('openapi.validate: opts.responses must be "log" or "enforce"', 2)
  end
  local c = openapi.load(path)
  local doc, checks = c.doc, c.checks
  local held
  if responses then held = require("moonport.openapi.response").holder(c, responses == "enforce") end
  local hold = response.hold
  return function(req, res)
    local op, params = doc:route(req.method, req.path)
    if op == nil then return end
    if requests then
      local violations, status = checks[op](req, params)
      if violations ~= nil then return openapi.refuse(res, op, doc, violations, status) end
    end
    if held then hold(req, held) end
  end
end

return openapi
