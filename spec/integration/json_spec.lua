-- moonport.json in the server: res:json and req:json keep arrays arrays,
-- numbers come out exact, a WireMock jsonBody is served and listed as it
-- was written (from mapping files and from the admin API), and a decode
-- that the memory limit stops leaves the module as cheap as before.
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local cjson = require("cjson.safe")
local json_object_text = helpers.json_object_text

local function get(port, target, headers)
  local status, hdrs, body = helpers.request(port, "GET", target, headers)
  return status, body, hdrs
end

local function send(port, method, target, body)
  local status, hdrs, resp_body = helpers.request(port, method, target,
    { ["Content-Type"] = "application/json" }, body)
  return status, resp_body, hdrs
end

local NUMBERS = { '"results":[]', '"price":2.0', '"big":1234567890.12' }
local NUMBERS_TEXT = '{"results": [], "price": 2.0, "big": 1234567890.12}'
local NESTED = '[{"empty":[]},[],{},1.50,1E+2,-0,null,[[2.0]]]'

-- The "jsonBody" of a mapping in a JSON text, as it was written there.
local function json_body_in(text)
  return text:match('"jsonBody":(%b{})') or text:match('"jsonBody":(%b[])')
end

describe("moonport.json in handlers", function()
  local server = support.serve("spec/fixtures/json.lua", { "--debug", "--request-memory-limit", "1m" })

  it("answers res:json({results = moonport.json.empty_array}) with {\"results\":[]}", function()
    local status, body, headers = get(server.port, "/empty")
    assert.equal(200, status)
    assert.equal('{"results":[]}', body)
    assert.matches("^application/json", headers["content-type"])
    assert.equal("[]", (select(2, get(server.port, "/array"))))
  end)

  it("gives back what req:json() read, empty arrays and objects alike", function()
    local status, body = send(server.port, "POST", "/echo", '{"a":[],"b":{}}')
    assert.equal(200, status)
    assert.is_true(json_object_text({ '"a":[]', '"b":{}' }, body))
    status, body = send(server.port, "POST", "/echo", '[[],{"x":[{}]},[[]]]')
    assert.equal(200, status)
    assert.equal('[[],{"x":[{}]},[[]]]', body)
  end)

  it("writes integers to 2^53 exactly and other numbers in their shortest form", function()
    local _, body = get(server.port, "/numbers")
    assert.equal("[0.1,9007199254740992,-9007199254740992,1234567890.12,0.3333333333333333,2.0,null]", body)
  end)

  it("answers req:json() on a bad body with nil and where it went wrong", function()
    local status, body = send(server.port, "POST", "/echo", '{"a":[1,]}')
    assert.equal(400, status)
    assert.same({ error = "invalid JSON: expected a value at byte 8, found ']'" }, cjson.decode(body))
  end)

  it("fails a handler whose res:json value cannot be JSON, naming where", function()
    local status, body = get(server.port, "/function")
    assert.equal(500, status)
    assert.matches("res:json: cannot encode a function at value.list%[2%]", body)
  end)

  it("makes no Lua string for a res:json body", function()
    local bytes, size
    for _ = 1, 5 do
      local _, body, headers = get(server.port, "/large")
      size = #body
      bytes = tonumber((headers["x-moonport-alloc"] or ""):match("^(%d+) "))
    end
    assert.is_true(size > 25000, size)
    assert.truthy(bytes, "no X-Moonport-Alloc")
    assert.is_true(bytes < 1024, ("%d Lua bytes for a %d-byte body"):format(bytes, size))
  end)

  it("keeps JSON as cheap after a decode that the memory limit stopped", function()
    local function lua_bytes()
      local _, _, headers = get(server.port, "/small")
      return tonumber((headers["x-moonport-alloc"] or ""):match("^(%d+) "))
    end
    -- The least of ten requests: a request that happens to run a step of
    -- the garbage collector (which the megabyte /explode left behind) is
    -- charged what that step allocates, such as a smaller string table.
    local function least()
      local n = math.huge
      for _ = 1, 10 do n = math.min(n, lua_bytes()) end
      return n
    end
    for _ = 1, 5 do lua_bytes() end
    local before = least()
    assert.truthy(before < math.huge, "no X-Moonport-Alloc")
    assert.equal(500, (get(server.port, "/explode")))
    assert.truthy(helpers.eventually(function()
      return server:stderr():find("GET /explode: handler failed: request memory limit exceeded", 1, true)
    end), server:stderr())
    for _ = 1, 5 do lua_bytes() end
    assert.equal(before, least())
    assert.equal('{"ok":true}', (select(2, get(server.port, "/small"))))
  end)
end)

describe("moonport.json in the mock server", function()
  local server = support.serve("spec/fixtures/wiremock-json", nil, { mock = true })
  before_each(function() helpers.request(server.port, "POST", "/__admin/reset") end)

  it("serves a mapping file's jsonBody as written: [] stays [], 2.0 stays 2.0", function()
    local status, body, headers = get(server.port, "/numbers")
    assert.equal(200, status)
    assert.equal("application/json", headers["content-type"])
    assert.is_true(json_object_text(NUMBERS, body))
    status, body = get(server.port, "/nested")
    assert.equal(203, status)
    assert.equal(NESTED, body)
  end)

  it("lists a mapping file's jsonBody unchanged in GET /__admin/mappings", function()
    local _, body = get(server.port, "/__admin/mappings")
    assert.equal(3, #assert(cjson.decode(body)).mappings)
    local numbers, nested = 0, 0
    for piece in body:gmatch('"jsonBody":(%b{})') do
      if json_object_text(NUMBERS, piece) then numbers = numbers + 1 end
    end
    for piece in body:gmatch('"jsonBody":(%b[])') do
      if piece == NESTED then nested = nested + 1 end
    end
    assert.equal(1, numbers, body)
    assert.equal(1, nested, body)
  end)

  it("gives a mapping's own numbers their values, and keeps its empty arrays", function()
    local status, body = send(server.port, "POST", "/match", '{"list":[],"n":1}')
    assert.equal(201, status)
    assert.equal("matched", body)
    assert.equal(404, (send(server.port, "POST", "/match", '{"list":[],"n":2}')))
    local _, listing = get(server.port, "/__admin/mappings")
    local doc = cjson.decode(listing)
    for _, m in ipairs(doc.mappings) do
      if m.request.url == "/match" then
        assert.equal(1, m.priority)
        assert.equal(201, m.response.status)
      end
    end
    assert.truthy(listing:find('"transformers":[]', 1, true), listing)
  end)

  it("serves and lists a jsonBody added through the admin API as written", function()
    local mapping = '{"request": {"method": "GET", "url": "/posted"}, "response": {"status": 200, "jsonBody": '
      .. NUMBERS_TEXT .. "}}"
    local status, created = send(server.port, "POST", "/__admin/mappings", mapping)
    assert.equal(201, status)
    assert.is_true(json_object_text(NUMBERS, json_body_in(created)))
    local id = assert(cjson.decode(created)).id

    local body
    status, body = get(server.port, "/posted")
    assert.equal(200, status)
    assert.is_true(json_object_text(NUMBERS, body))

    local _, one = get(server.port, "/__admin/mappings/" .. id)
    assert.is_true(json_object_text(NUMBERS, json_body_in(one)))
    local _, all = get(server.port, "/__admin/mappings")
    local seen = 0
    for piece in all:gmatch('"jsonBody":(%b{})') do
      if json_object_text(NUMBERS, piece) then seen = seen + 1 end
    end
    assert.equal(2, seen) -- the file's and the posted one

    -- Replaced through PUT, the new body is kept as written too.
    local replaced = '{"request": {"method": "GET", "url": "/posted"}, "response": {"jsonBody": {"list": [1.0, []]}}}'
    status = send(server.port, "PUT", "/__admin/mappings/" .. id, replaced)
    assert.equal(200, status)
    assert.equal('{"list":[1.0,[]]}', (select(2, get(server.port, "/posted"))))
  end)

  it("answers admin lists that are empty with [] (mappings, requests, scenarios)", function()
    assert.equal(200, (helpers.request(server.port, "DELETE", "/__admin/mappings")))
    local _, body = get(server.port, "/__admin/mappings")
    assert.truthy(body:find('"mappings":[]', 1, true), body)
    helpers.request(server.port, "DELETE", "/__admin/requests")
    _, body = get(server.port, "/__admin/requests")
    assert.truthy(body:find('"requests":[]', 1, true), body)
    _, body = get(server.port, "/__admin/scenarios")
    assert.equal('{"scenarios":[]}', body)
    _, body = get(server.port, "/__admin/requests/unmatched")
    assert.truthy(body:find('"requests":[]', 1, true), body)
  end)
end)
