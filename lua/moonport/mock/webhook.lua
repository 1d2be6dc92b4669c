--- Webhooks of mock stubs: WireMock's `webhook` serve event listener.
-- A stub whose mapping has
--
--     "serveEventListeners": [{ "name": "webhook", "parameters": {
--       "method": "POST", "url": "http://...", "headers": {...},
--       "body": "..." (or "base64Body"), "delay": {...} } }]
--
-- (or the older `postServeActions`, as a list of the same or as
-- `{"webhook": {parameters}}`) sends that request once its own response
-- has been sent, from a timer (moonport.timer) of the worker that served
-- it, with moonport.http. The URL, the header values and a text body are
-- templates (moonport.mock.template) over the request the stub answered,
-- named `originalRequest` as in WireMock (`request` works too). A webhook
-- that fails is logged; it never changes the stub's answer, which has
-- gone already. What was sent and what came back are added to the
-- serve event in the journal (`subEvents`, as WireMock lists them).
--
-- Nothing here runs for a stub without listeners.
--
--     local webhook = require("moonport.mock.webhook")
--     local hooks = assert(webhook.compile(stub))   -- nil when it has none
--     webhook.fire(hooks, { request = ... }, function(events) ... end)
--
-- @module moonport.mock.webhook

local moonport = require("moonport")
local core = require("moonport.core")
local template = require("moonport.mock.template")
local model = require("moonport.mock.model")

local type, pairs, ipairs, tostring, tonumber = type, pairs, ipairs, tostring, tonumber
local next, pcall = next, pcall
local floor, random, exp, log_, sqrt, cos, pi = math.floor, math.random, math.exp, math.log,
  math.sqrt, math.cos, math.pi
local log = core.log

local webhook = {}

-- The most a webhook may take, from connecting to the end of its
-- response, before it is given up (WireMock's client waits about as long).
local TIMEOUT_MS = 30000
-- The most webhooks a worker holds scheduled or in flight at once; past
-- it, a webhook is dropped and logged rather than kept, with its request,
-- in memory no per-request limit counts.
local PENDING_MAX = 1000
-- The longest delay a webhook may wait: a day.
local DELAY_MAX_MS = 86400000
-- The largest webhook response taken (the journal's own bound on a
-- response body); a longer one fails the webhook.
local RESPONSE_MAX = 1024 * 1024
local pending = 0

-- `originalRequest.x` inside a tag is the template engine's `request.x`;
-- text outside tags is left as it is.
local function as_request(text)
  return (text:gsub("{{(.-)}}", function(inner)
    return "{{" .. inner:gsub("%f[%w]originalRequest%f[^%w]", "request") .. "}}"
  end))
end

-- A value of the listener's parameters under its WireMock name or its
-- snake_case one (a stub written in Lua).
local function param(p, camel, snake)
  local v = p[camel]
  if v == nil and snake then v = p[snake] end
  return v
end

-- A number of a mapping: decoded as written (a literal), or a plain one.
local function num(v)
  if v == nil then return nil end
  return tonumber(tostring(v))
end

-- A delay as WireMock gives one: {type = "fixed", milliseconds},
-- {type = "uniform", lower, upper}, {type = "lognormal", median, sigma,
-- maxValue}. Returns a function() -> milliseconds, or nil and the reason.
local function delay_sampler(d)
  if d == nil then return function() return 0 end end
  if type(d) ~= "table" then return nil, "delay: an object with a type" end
  local kind = d.type
  if kind == "fixed" then
    local ms = num(d.milliseconds)
    if ms == nil or ms < 0 then return nil, "delay: fixed needs milliseconds (0 or more)" end
    return function() return ms end
  elseif kind == "uniform" then
    local lo, hi = num(d.lower), num(d.upper)
    if lo == nil or hi == nil or lo < 0 or hi < lo then
      return nil, "delay: uniform needs lower and upper (0 <= lower <= upper)"
    end
    return function() return lo + random() * (hi - lo) end
  elseif kind == "lognormal" then
    local median, sigma = num(d.median), num(d.sigma)
    local max = num(param(d, "maxValue", "max_value"))
    if median == nil or sigma == nil or median < 0 or sigma < 0 then
      return nil, "delay: lognormal needs median and sigma (0 or more)"
    end
    return function()
      local u1, u2 = random(), random()
      if u1 < 1e-12 then u1 = 1e-12 end
      local v = median * exp(sigma * sqrt(-2 * log_(u1)) * cos(2 * pi * u2))
      if max and v > max then v = max end
      return v
    end
  end
  return nil, "delay: type " .. tostring(kind) .. " is not fixed, uniform or lognormal"
end

-- Compiles one text as a template, originalRequest read as request.
local function compile_text(text, where)
  local t, err = template.compile(as_request(tostring(text)))
  if t == nil then return nil, where .. ": template: " .. err end
  return t
end

-- One webhook's parameters, checked and compiled.
local function compile_one(p)
  if type(p) ~= "table" then return nil, "webhook: parameters must be an object" end
  local hook = { method = tostring(p.method or "GET"):upper() }
  if not hook.method:find("^[%w!#$%%&'*+%-.^_`|~]+$") then
    return nil, "webhook: method " .. hook.method .. " is not a token"
  end
  if type(p.url) ~= "string" or p.url == "" then return nil, "webhook: url is required" end
  local err
  hook.url, err = compile_text(p.url, "webhook url")
  if not hook.url then return nil, err end
  hook.headers = {}
  if p.headers ~= nil and type(p.headers) ~= "table" then return nil, "webhook: headers must be an object" end
  for name, value in pairs(p.headers or {}) do
    if type(name) ~= "string" or not name:find("^[!#$%%&'*+%-.^_`|~%w]+$") then
      return nil, "webhook: header name " .. tostring(name) .. " is not a token"
    end
    local list = {}
    for i, v in ipairs(type(value) == "table" and value or { value }) do
      list[i], err = compile_text(v, "webhook header " .. name)
      if not list[i] then return nil, err end
    end
    hook.headers[#hook.headers + 1] = { name, list }
  end
  local b64 = param(p, "base64Body", "base64_body")
  if b64 ~= nil then
    hook.bytes = model.base64_decode(tostring(b64))
    if hook.bytes == nil then return nil, "webhook: base64Body is not base64" end
  elseif p.body ~= nil then
    local text = type(p.body) == "string" and p.body or require("moonport.json").encode(p.body)
    hook.body, err = compile_text(text, "webhook body")
    if not hook.body then return nil, err end
    hook.json = text:find("^%s*[%[{]") ~= nil
  end
  hook.delay, err = delay_sampler(p.delay)
  if not hook.delay then return nil, "webhook: " .. err end
  return hook
end

-- The listeners of a stub, as a list of {name, parameters}, from either
-- field and either form of postServeActions.
local function listeners_of(stub)
  local out = {}
  for _, field in ipairs({ "serve_event_listeners", "post_serve_actions" }) do
    local v = stub[field]
    if type(v) == "table" then
      if v[1] ~= nil or next(v) == nil then
        for _, l in ipairs(v) do out[#out + 1] = l end
      else
        -- {"webhook": {parameters}}: WireMock 2's form, still read.
        for name, p in pairs(v) do out[#out + 1] = { name = name, parameters = p } end
      end
    elseif v ~= nil then
      return nil, field .. " must be a list"
    end
  end
  return out
end

--- The webhooks of a stub (its `serve_event_listeners` and
-- `post_serve_actions`), checked and compiled: a list, or false when it
-- has none; nil and the reason when one cannot be sent as written (no
-- url, a template that does not compile, a bad delay). Listeners of
-- another name are WireMock extensions moonport does not have: refused.
-- @usage stub.webhooks = assert(webhook.compile(stub))
function webhook.compile(stub)
  local listeners, err = listeners_of(stub)
  if listeners == nil then return nil, err end
  if #listeners == 0 then return false end
  local hooks = {}
  for _, l in ipairs(listeners) do
    if type(l) ~= "table" or l.name ~= "webhook" then
      return nil, ("serve event listener %s: moonport has only webhook"):format(
        type(l) == "table" and tostring(l.name) or tostring(l))
    end
    local hook
    hook, err = compile_one(l.parameters or {})
    if not hook then return nil, err end
    hooks[#hooks + 1] = hook
  end
  return hooks
end

local function iso_date(ms)
  return os.date("!%Y-%m-%dT%H:%M:%S", floor(ms / 1000)) .. (".%03dZ"):format(ms % 1000)
end

-- WireMock's record of a request it sent (a LoggedRequest's fields).
local function request_event(method, url, headers, body)
  local http = require("moonport.http")
  local scheme, host, port, target = http.parse_url(url)
  local ms = floor(core.now() * 1000)
  local data = {
    url = target or url, absoluteUrl = url, method = method, headers = headers,
    browserProxyRequest = false, loggedDate = ms, loggedDateString = iso_date(ms),
    scheme = scheme, host = host, port = port, queryParams = {}, formParams = {},
  }
  local query = target and target:match("%?(.*)$")
  if query then
    for k, values in pairs(require("moonport.mock.match").parse_query(query)) do
      data.queryParams[k] = { key = k, values = values }
    end
  end
  if body then
    model.put_body(data, body)
    data.bodyAsBase64 = model.base64_encode(body)
  end
  return { type = "WEBHOOK_REQUEST", timeOffsetNanos = 0, data = data }
end

-- Sends one webhook now: renders it against ctx, sends it, logs what
-- happened, and hands the serve event's new sub-events to record.
local function send(hook, ctx, record)
  local http = require("moonport.http")
  local ok, url = pcall(template.render, hook.url, ctx)
  local events = {}
  local function fail(fmt, ...)
    local msg = fmt:format(...)
    log("warn", "mock: " .. msg)
    events[#events + 1] = { type = "ERROR", data = { message = msg } }
    if record then record(events) end
  end
  local method = hook.method
  if not ok then return fail("Failed to render webhook %s: %s", method, tostring(url)) end
  local headers, shown = {}, {}
  for _, h in ipairs(hook.headers) do
    local name, values = h[1], {}
    for i, t in ipairs(h[2]) do
      local rok, v = pcall(template.render, t, ctx)
      if not rok then
        return fail("Failed to render webhook %s %s: header %s: %s", method, url, name, tostring(v))
      end
      if v:find("[%z\r\n]") then
        return fail("Failed to fire webhook %s %s: header %s: CR, LF or NUL in its value", method, url, name)
      end
      values[i] = v
    end
    headers[name] = #values == 1 and values[1] or values
    shown[name] = #values == 1 and values[1] or table.concat(values, ", ")
  end
  local body = hook.bytes
  if hook.body then
    local rok, v = pcall(template.render, hook.body, ctx, { json = hook.json })
    if not rok then return fail("Failed to render webhook %s %s: body: %s", method, url, tostring(v)) end
    body = v
  end
  events[1] = request_event(hook.method, url, shown, body)
  local got, err = http.request({ method = hook.method, url = url, headers = headers, body = body,
                                  timeout = TIMEOUT_MS, max_body_size = RESPONSE_MAX })
  if not got then return fail("Failed to fire webhook %s %s: %s", method, url, tostring(err)) end
  log("info", ("mock: webhook %s %s: %d"):format(hook.method, url, got.status))
  local response = { status = got.status, headers = {} }
  for _, field in ipairs(got.headers:list()) do
    local seen = response.headers[field[1]]
    response.headers[field[1]] = seen and (seen .. ", " .. field[2]) or field[2]
  end
  model.put_body(response, got.body or "")
  if response.body ~= nil then response.bodyAsBase64 = model.base64_encode(got.body or "") end
  events[2] = { type = "WEBHOOK_RESPONSE", timeOffsetNanos = 0, data = response }
  if record then record(events) end
end

local function run(premature, hook, ctx, record)
  if premature then
    pending = pending - 1
    return
  end
  local ok, err = pcall(send, hook, ctx, record)
  pending = pending - 1
  if not ok then error(err, 0) end
end

--- Schedules the webhooks of a stub that has just answered: each after
-- its delay, in a timer of this worker. ctx is the template context of
-- the request answered ({request = ...}, plain data: the request itself
-- is over by then); record(events), when given, is called with each
-- webhook's sub-events (WireMock's WEBHOOK_REQUEST and WEBHOOK_RESPONSE,
-- or ERROR) once it has been sent or has failed. A webhook the worker
-- cannot schedule (it is stopping), or one past PENDING_MAX scheduled or
-- in flight in this worker, is logged and dropped; a delay is held to a
-- day, a response body to 1 MiB.
-- @usage webhook.fire(stub.webhooks, ctx, function(events) ... end)
function webhook.fire(hooks, ctx, record)
  for _, hook in ipairs(hooks) do
    if pending >= PENDING_MAX then
      log("warn", ("mock: webhook %s not sent: %d webhooks already pending in this worker")
        :format(hook.method, PENDING_MAX))
      if record then
        record({ { type = "ERROR", data = { message = "webhook not sent: too many pending" } } })
      end
    else
      local ms = hook.delay()
      ms = ms > 0 and ms or 0
      if ms > DELAY_MAX_MS then ms = DELAY_MAX_MS end
      local ok, err = moonport.timer.at(ms, run, hook, ctx, record)
      if ok then
        pending = pending + 1
      else
        log("warn", ("mock: webhook %s not sent: %s"):format(hook.method, tostring(err)))
      end
    end
  end
end

return webhook
