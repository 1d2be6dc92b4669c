-- moonport.openapi.request (lua/moonport/openapi/request.lua): Prism
-- 5.14.2's request validation. Every expected violation below is what
-- Prism printed for the same document (spec/fixtures/openapi/) and request.
require("spec.support.ffi_unit")
if not os.getenv("LUA_CPATH") then package.cpath = "build/lua/?.so;" .. package.cpath end
local json = require("moonport.json")

-- Until moonport.jsonschema lands (piece 1, branch oa-schema), a thin
-- stand-in with its contract, for the keywords these documents use.
if not pcall(require, "moonport.jsonschema") then
  package.loaded["moonport.jsonschema"] = nil
  local null, array_mt = json.null, json.array_mt
  local function jtype(v)
    if v == null then return "null" end
    local t = type(v)
    if t == "table" then return getmetatable(v) == array_mt and "array" or "object" end
    return t
  end
  local function is_type(v, t)
    local jt = jtype(v)
    if t == "integer" then return jt == "number" and v == math.floor(v) end
    return jt == t
  end
  local function check(s, v, path, out)
    if type(s) ~= "table" then return end
    local function add(code, message, params)
      local p = {}
      for i, k in ipairs(path) do p[i] = k end
      out[#out + 1] = { path = p, code = code, message = message, params = params or {} }
    end
    local types = s.type
    if types then
      if type(types) == "string" then types = { types } end
      local ok = s.nullable == true and v == null
      for _, t in ipairs(types) do if is_type(v, t) then ok = true end end
      if not ok then return add("type", "must be " .. table.concat(types, ",")) end
    end
    if s.enum then
      local ok = false
      for _, e in ipairs(s.enum) do if e == v then ok = true end end
      if not ok then add("enum", "must be equal to one of the allowed values", { allowedValues = s.enum }) end
    end
    if type(v) == "number" then
      if s.minimum and v < s.minimum then add("minimum", "must be >= " .. s.minimum) end
      if s.maximum and v > s.maximum then add("maximum", "must be <= " .. s.maximum) end
    elseif type(v) == "string" then
      if s.minLength and #v < s.minLength then
        add("minLength", "must NOT have fewer than " .. s.minLength .. " characters")
      end
      if s.pattern and not v:find(s.pattern) then add("pattern", 'must match pattern "' .. s.pattern .. '"') end
      if s.format == "date" then
        local y, m, d = v:match("^(%d%d%d%d)%-(%d%d)%-(%d%d)$")
        if not y or tonumber(m) > 12 or tonumber(m) < 1 or tonumber(d) > 31 then
          add("format", 'must match format "date"')
        end
      end
    elseif jtype(v) == "object" then
      for _, r in ipairs(s.required or {}) do
        if v[r] == nil then add("required", "must have required property '" .. r .. "'") end
      end
      local names = {}
      for k in pairs(s.properties or {}) do names[#names + 1] = k end
      table.sort(names)
      for _, k in ipairs(names) do
        if v[k] ~= nil then
          path[#path + 1] = k
          check(s.properties[k], v[k], path, out)
          path[#path] = nil
        end
      end
      if s.additionalProperties == false then
        for k in pairs(v) do
          if not (s.properties or {})[k] then
            add("additionalProperties", "must NOT have additional properties", { additionalProperty = k })
          end
        end
      end
    elseif jtype(v) == "array" and s.items then
      for i, x in ipairs(v) do
        path[#path + 1] = i - 1
        check(s.items, x, path, out)
        path[#path] = nil
      end
    end
    if s.oneOf then
      local n, errs = 0, {}
      for _, b in ipairs(s.oneOf) do
        local e = {}
        check(b, v, path, e)
        if #e == 0 then n = n + 1 end
        for _, x in ipairs(e) do errs[#errs + 1] = x end
      end
      if n ~= 1 then
        if n == 0 then for _, x in ipairs(errs) do out[#out + 1] = x end end
        add("oneOf", "must match exactly one schema in oneOf")
      end
    end
  end
  package.preload["moonport.jsonschema"] = function()
    return {
      compile = function(schema)
        return {
          valid = function(v) local out = {}; check(schema, v, {}, out); return #out == 0 end,
          errors = function(v) local out = {}; check(schema, v, {}, out); return out end,
        }
      end,
      coerce = function(text, schema)
        local t = type(schema) == "table" and schema.type
        if t == "integer" or t == "number" then
          local n = text ~= "" and tonumber(text)
          if n and (t == "number" or n == math.floor(n)) then return n end
        elseif t == "boolean" then
          if text == "true" then return true elseif text == "false" then return false end
        end
        return text
      end,
    }
  end
end

local oadoc = require("moonport.openapi.doc")
local oarequest = require("moonport.openapi.request")

local F = "spec/fixtures/openapi/"
local doc = assert(oadoc.load(F .. "api.yaml"))
local doc31 = assert(oadoc.load(F .. "v31.json"))

-- A request with moonport's request methods, from a table.
local function request(t)
  local headers = {}
  for k, v in pairs(t.headers or {}) do headers[k:lower()] = v end
  local body = t.body
  if body and not headers["content-length"] then headers["content-length"] = tostring(#body) end
  local qs = t.query or ""
  return {
    method = t.method or "GET", query_string = qs,
    header = function(_, name) return headers[name:lower()] end,
    query = function(_, name)
      for pair in (qs .. "&"):gmatch("([^&]*)&") do
        local k, v = pair:match("^([^=]*)=?(.*)$")
        if require("moonport.url").decode(k, true) == name then
          return require("moonport.url").decode(v, true)
        end
      end
    end,
    body = function() return body or "" end,
  }
end

-- check() on a routed request: violations (without severity "Error"
-- fields left out) and status.
local function run(d, method, path, t)
  t = t or {}
  t.method = method
  local op, params, status = d:route(method, path)
  assert.is_truthy(op, "no route: " .. tostring(status))
  local check = oarequest.compile(op, d)
  return check(request(t), params)
end

local function v(location, code, message, severity)
  return { location = location, severity = severity or "Error", code = code, message = message }
end

local function same(expected, got)
  local plain = {}
  for i, x in ipairs(got or {}) do
    plain[i] = { location = x.location, severity = x.severity, code = x.code, message = x.message }
  end
  assert.are.same(expected, plain)
end

describe("moonport.openapi.request", function()
  local key = { ["X-API-Key"] = "k" }

  it("passes a valid request (nil)", function()
    assert.is_nil(run(doc, "GET", "/pets", { query = "limit=5&status=sold", headers = { ["X-Trace"] = "ab" } }))
    assert.is_nil(run(doc, "GET", "/pets/12", { headers = key }))
  end)

  it("lists missing required headers, then each query parameter's errors, then deprecation warnings", function()
    local got, status = run(doc, "GET", "/pets",
      { query = "limit=abc&status=x&since=2020-13-01&old=1" })
    assert.equal(422, status)
    same({
      v({ "header" }, "required", "Request header must have required property 'x-trace'"),
      v({ "query", "limit" }, "type", "Request query parameter limit must be integer"),
      v({ "query", "status" }, "enum",
        "Request query parameter status must be equal to one of the allowed values: available, sold"),
      v({ "query", "since" }, "format", 'Request query parameter since must match format "date"'),
      v({ "query", "old" }, "deprecated", "Query param old is deprecated", "Warning"),
    }, got)
  end)

  it("takes a repeated scalar query parameter as a list (a type error), an empty one as absent", function()
    local got = run(doc, "GET", "/pets", { query = "limit=5&limit=abc", headers = { ["X-Trace"] = "ab" } })
    same({ v({ "query", "limit" }, "type", "Request query parameter limit must be integer") }, got)
    assert.is_nil(run(doc, "GET", "/pets", { query = "limit=", headers = { ["X-Trace"] = "ab" } }))
  end)

  it("coerces path and query parameters and reports path names in lower case", function()
    local got = run(doc, "GET", "/pets/0", { query = "verbose=maybe", headers = key })
    same({
      v({ "query", "verbose" }, "type", "Request query parameter verbose must be boolean"),
      v({ "path", "petid" }, "minimum", "Request path parameter petid must be >= 1"),
    }, got)
    same({ v({ "path" }, "required", "Request path must have required property 'petid'") },
      (run(doc, "GET", "/pets/", { headers = key })))
  end)

  it("deserializes styles: form explode=false lists, deepObject, headers, label", function()
    local got = run(doc, "GET", "/styles/x/.blue", {
      query = "csv=1,2,b&pipes=a|b&filter%5Bcolor%5D=red&filter%5Bsize%5D=big",
      headers = { Cookie = "session=ab", ["X-Count"] = "11" },
    })
    same({
      v({ "header", "x-count" }, "maximum", "Request header parameter x-count must be <= 10"),
      v({ "query", "csv", "2" }, "type", "Request query parameter csv.2 must be integer"),
      v({ "query", "filter", "size" }, "type", "Request query parameter filter.size must be integer"),
      v({ "path", "id" }, "type", "Request path parameter id must be integer"),
    }, got)
    assert.is_nil(run(doc, "GET", "/styles/1/.blue", { query = "csv=1", headers = { ["X-Count"] = "3" } }))
  end)

  it("checks JSON bodies against the schema, across files and through a cycle", function()
    local got, status = run(doc, "PUT", "/nodes", {
      headers = { ["Content-Type"] = "application/json" },
      body = '{"name":"a","children":[{"children":[{"name":[]}]}]}',
    })
    assert.equal(422, status)
    same({
      v({ "body", "children", "0", "children", "0", "name" }, "type",
        "Request body property children.0.children.0.name must be string"),
    }, got)
    assert.is_nil(run(doc, "PUT", "/nodes", {
      headers = { ["Content-Type"] = "application/merge-patch+json" }, body = '{"name":"a"}' }))
  end)

  it("answers 400 for invalid JSON, 415 for a media type the operation lacks", function()
    local got, status = run(doc, "POST", "/pets",
      { headers = { ["X-API-Key"] = "k", ["Content-Type"] = "application/json" }, body = '{"name":' })
    assert.equal(400, status)
    same({ v({}, "invalid_json", "Invalid JSON") }, got)
    got, status = run(doc, "POST", "/pets",
      { headers = { ["X-API-Key"] = "k", ["Content-Type"] = "text/plain" }, body = "hi" })
    assert.equal(415, status)
    same({ v({}, 415, "Supported content types: application/json") }, got)
    got, status = run(doc, "GET", "/pets/mine",
      { headers = { ["X-API-Key"] = "k", ["Content-Type"] = "text/plain" }, body = "x=1" })
    assert.equal(415, status)
    same({ v({}, 415, "No supported content types, but request included a non-empty body") }, got)
    -- The media type, matched once, picks the schema too (any case, with
    -- parameters).
    got, status = run(doc, "PUT", "/nodes",
      { headers = { ["Content-Type"] = "Application/JSON; charset=utf-8" }, body = '{"name":1}' })
    assert.equal(422, status)
    same({ v({ "body", "name" }, "type", "Request body property name must be string") }, got)
  end)

  it("wants a required body, and takes a falsy JSON body for none", function()
    same({ v({}, "required", "Body parameter is required") },
      (run(doc, "POST", "/pets", { headers = key })))
    same({ v({}, "required", "Body parameter is required") },
      (run(doc, "POST", "/pets", { headers = { ["X-API-Key"] = "k", ["Content-Type"] = "application/json" }, body = "false" })))
  end)

  it("checks form bodies with coercion", function()
    local ct = { ["Content-Type"] = "application/x-www-form-urlencoded" }
    -- In the schema's order, name before age, as Prism lists them.
    same({
      v({ "body", "name" }, "minLength", "Request body property name must NOT have fewer than 2 characters"),
      v({ "body", "age" }, "type", "Request body property age must be integer"),
    }, (run(doc, "POST", "/forms", { headers = ct, body = "name=a&age=x" })))
    same({ v({ "body" }, "required", "Request body must have required property 'name'") },
      (run(doc, "POST", "/forms", { headers = ct, body = "age=5" })))
    assert.is_nil(run(doc, "POST", "/forms", { headers = ct, body = "name=ab+c&age=5" }))
  end)

  local edge = assert(oadoc.load(F .. "edge.yaml"))

  it("leaves no global behind when it lists a request's errors", function()
    local got = run(edge, "GET", "/case", { query = "n=x" })
    same({ v({ "query", "n" }, "type", "Request query parameter n must be integer") }, got)
    assert.is_nil(rawget(_G, "values"))
  end)

  it("finds a query parameter whose name has capitals when the request spells it in lower case", function()
    same({ v({ "query", "limit" }, "type", "Request query parameter limit must be integer") },
      (run(edge, "GET", "/case", { query = "limit=abc" })))
    same({ v({ "query", "limit" }, "type", "Request query parameter limit must be integer") },
      (run(edge, "GET", "/case", { query = "limit=1&LIMIT=2" })))
    assert.is_nil(run(edge, "GET", "/case", { query = "limit=5&n=1" }))
  end)

  it("warns of a deprecated query parameter whose name has capitals, spelled as the document does", function()
    same({
      v({ "query", "n" }, "type", "Request query parameter n must be integer"),
      v({ "query", "Old" }, "deprecated", "Query param Old is deprecated", "Warning"),
    }, (run(edge, "GET", "/case", { query = "n=x&Old=1" })))
    same({ v({ "query", "n" }, "type", "Request query parameter n must be integer") },
      (run(edge, "GET", "/case", { query = "n=x&old=1" })))
  end)

  it("ends a deepObject walk at a recursive schema, which it takes as a leaf as Prism does", function()
    assert.is_nil(run(edge, "GET", "/tree", { query = "tree%5Bsize%5D=1" }))
    same({ v({ "query", "tree", "size" }, "type", "Request query parameter tree.size must be integer") },
      (run(edge, "GET", "/tree", { query = "tree%5Bsize%5D=x" })))
    same({ v({ "query", "tree", "child" }, "type", "Request query parameter tree.child must be object") },
      (run(edge, "GET", "/tree", { query = "tree%5Bchild%5D=5" })))
    assert.is_nil(run(edge, "GET", "/tree", { query = "tree%5Bchild%5D%5Bsize%5D=x" }))
    same({ v({ "query", "tree", "list", "0" }, "type", "Request query parameter tree.list.0 must be object") },
      (run(edge, "GET", "/tree", { query = "tree%5Blist%5D%5B0%5D%5Bsize%5D=x" })))
  end)

  it("splits label arrays on '.' when exploded, on ',' when not", function()
    assert.is_nil(run(edge, "GET", "/label/.1.2/.3,4"))
    same({
      v({ "path", "a", "0" }, "type", "Request path parameter a.0 must be integer"),
      v({ "path", "b", "0" }, "type", "Request path parameter b.0 must be integer"),
    }, (run(edge, "GET", "/label/.1,2/.3.4")))
  end)

  describe("security", function()
    it("answers 401 with the challenges, and lists the other violations too", function()
      local got, status = run(doc, "POST", "/pets")
      assert.equal(401, status)
      same({
        v({}, 401, "Invalid security scheme used"),
        v({}, "required", "Body parameter is required"),
      }, got)
    end)

    it("ORs requirements and ANDs the schemes of one", function()
      local got, status = run(doc, "DELETE", "/pets/3", { headers = { Authorization = "Bearer x" } })
      assert.equal(401, status)
      assert.same({ 'Basic realm="*"' }, got[1].tags)
      assert.is_nil(run(doc, "DELETE", "/pets/3", { headers = { Authorization = "Basic dTpw" } }))
      assert.is_nil(run(doc, "DELETE", "/pets/3",
        { headers = { Authorization = "Bearer x", ["X-API-Key"] = "k" } }))
      -- Decoded as Node decodes base64: to the first "=", other
      -- characters skipped, the URL alphabet too ("YTp_" is "a:").
      for _, token in ipairs({ "YT!pi", "YTpi=YWI6", "YTp_", "YTpiY" }) do
        assert.is_nil(run(doc, "DELETE", "/pets/3", { headers = { Authorization = "Basic " .. token } }))
      end
      got = run(doc, "DELETE", "/pets/3", { headers = { Authorization = "Basic bm9jb2xvbg==" } })
      assert.equal(401, got[1].code)
    end)

    it("takes a bearer token for oauth2 and openIdConnect; {} passes without Authorization only", function()
      local body = { ["Content-Type"] = "application/json" }
      local got, status = run(doc31, "POST", "/things", { headers = body, body = '{"name":"ab"}' })
      assert.equal(401, status)
      assert.same({ "Bearer", "OAuth2", "OpenID" }, got[1].tags)
      body.Authorization = "Bearer t"
      assert.is_nil(run(doc31, "POST", "/things", { headers = body, body = '{"name":"ab"}' }))
      assert.is_nil(run(doc31, "GET", "/opt"))
      assert.is_nil(run(doc31, "GET", "/opt", { headers = { Authorization = "x", Cookie = "a=1; sid=z" } }))
      got, status = run(doc31, "GET", "/opt", { headers = { Authorization = "x" } })
      assert.equal(401, status)
      assert.same({ "None" }, got[1].tags)
    end)
  end)
end)
