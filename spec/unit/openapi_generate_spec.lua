-- moonport.openapi.generate (lua/moonport/openapi/generate.lua): the
-- response Prism 5.14.2 chooses and the bodies and headers it builds.
-- Every expected value below is what Prism served for the same schema or
-- document (prism mock on /tmp probes, Accept: application/json unless
-- the case says otherwise); spec/fixtures/openapi_generate.json is the
-- document of the response-choice cases, as JSON, its $refs resolved
-- below into shared tables as the OpenAPI loader does.
require("spec.support.ffi_unit")
local json = require("moonport.json")
if not os.getenv("LUA_CPATH") then package.cpath = "build/lua/?.so;" .. package.cpath end
local jsonschema = require("moonport.jsonschema")
local gen = require("moonport.openapi.generate")

local null, array_mt = json.null, json.array_mt

-- A value as canonical JSON text: object keys sorted, so that values
-- compare as JSON whatever order they were built in.
local function canon(v)
  if type(v) ~= "table" then return json.encode(v) end
  if getmetatable(v) == array_mt or (#v > 0 and next(v, #v) == nil) then
    local t = {}
    for i = 1, #v do t[i] = canon(v[i]) end
    return "[" .. table.concat(t, ",") .. "]"
  end
  local ks = {}
  for k in pairs(v) do ks[#ks + 1] = k end
  table.sort(ks)
  local t = {}
  for _, k in ipairs(ks) do t[#t + 1] = json.encode(k) .. ":" .. canon(v[k]) end
  return "{" .. table.concat(t, ",") .. "}"
end

local function same_json(want_text, got)
  assert.equal(canon(json.decode(want_text)), canon(got))
end

-- { name, schema, what Prism serves (for OpenAPI 3.0 and 3.1 alike) }
local SAMPLES = {
  { "string", [=[{"type":"string"}]=], [=["string"]=] },
  { "int", [=[{"type":"integer"}]=], [=[0]=] },
  { "int32", [=[{"type":"integer","format":"int32"}]=], [=[-2147483648]=] },
  { "int64", [=[{"type":"integer","format":"int64"}]=], [=[-9007199254740991]=] },
  { "float", [=[{"type":"number","format":"float"}]=], [=[-3.402823669209385e+38]=] },
  { "double", [=[{"type":"number","format":"double"}]=], [=[-1.7976931348623157e+308]=] },
  { "number", [=[{"type":"number"}]=], [=[0]=] },
  { "int32max", [=[{"type":"integer","format":"int32","maximum":10}]=], [=[-2147483648]=] },
  { "int32min", [=[{"type":"integer","format":"int32","minimum":5}]=], [=[5]=] },
  { "minimum", [=[{"type":"integer","minimum":3}]=], [=[3]=] },
  { "maximum", [=[{"type":"integer","maximum":7}]=], [=[7]=] },
  { "exclmin30", [=[{"type":"integer","minimum":3,"exclusiveMinimum":true}]=], [=[4]=] },
  { "exclmax30", [=[{"type":"integer","maximum":3,"exclusiveMaximum":true}]=], [=[2]=] },
  { "exclmin31", [=[{"type":"integer","exclusiveMinimum":3}]=], [=[4]=] },
  { "exclboth31", [=[{"type":"number","exclusiveMinimum":3,"exclusiveMaximum":5}]=], [=[4]=] },
  { "exclmax31", [=[{"type":"integer","exclusiveMaximum":3}]=], [=[2]=] },
  { "boolean", [=[{"type":"boolean"}]=], [=[true]=] },
  { "null", [=[{"type":"null"}]=], [=[null]=] },
  { "nullable", [=[{"type":"string","nullable":true}]=], [=["string"]=] },
  { "nullableenum", [=[{"type":"string","nullable":true,"enum":["a","b"]}]=], [=["a"]=] },
  { "enum", [=[{"type":"string","enum":["x","y"]}]=], [=["x"]=] },
  { "const", [=[{"const":"c"}]=], [=["c"]=] },
  { "default", [=[{"type":"string","default":"d","enum":["x","d"]}]=], [=["d"]=] },
  { "example30", [=[{"type":"string","example":"ex"}]=], [=["ex"]=] },
  { "examples", [=[{"type":"string","examples":["e1","e2"]}]=], [=["e1"]=] },
  { "minLength", [=[{"type":"string","minLength":15}]=], [=["stringstringstr"]=] },
  { "maxLength", [=[{"type":"string","maxLength":3}]=], [=["str"]=] },
  { "email", [=[{"type":"string","format":"email"}]=], [=["user@example.com"]=] },
  { "idnemail", [=[{"type":"string","format":"idn-email"}]=], [=["пользователь@пример.ру"]=] },
  { "password", [=[{"type":"string","format":"password","minLength":12}]=], [=["pa$$word_qwe"]=] },
  { "datetime", [=[{"type":"string","format":"date-time"}]=], [=["2019-08-24T14:15:22Z"]=] },
  { "date", [=[{"type":"string","format":"date"}]=], [=["2019-08-24"]=] },
  { "time", [=[{"type":"string","format":"time"}]=], [=["14:15:22Z"]=] },
  { "ipv4", [=[{"type":"string","format":"ipv4"}]=], [=["192.168.0.1"]=] },
  { "ipv6", [=[{"type":"string","format":"ipv6"}]=], [=["2001:0db8:85a3:0000:0000:8a2e:0370:7334"]=] },
  { "hostname", [=[{"type":"string","format":"hostname"}]=], [=["example.com"]=] },
  { "uri", [=[{"type":"string","format":"uri"}]=], [=["http://example.com"]=] },
  { "urireference", [=[{"type":"string","format":"uri-reference"}]=], [=["../dictionary"]=] },
  { "uritemplate", [=[{"type":"string","format":"uri-template"}]=], [=["http://example.com/{endpoint}"]=] },
  { "iri", [=[{"type":"string","format":"iri"}]=], [=["http://пример.ру"]=] },
  { "uuid", [=[{"type":"string","format":"uuid"}]=], [=["497f6eca-6276-4993-bfeb-53cbbbba6f08"]=] },
  { "uuidprop", [=[{"type":"object","properties":{"id":{"type":"string","format":"uuid"},"userId":{"type":"string","format":"uuid"},"x":{"type":"array","items":{"type":"string","format":"uuid"}}}}]=], [=[{"id":"497f6eca-6276-4993-bfeb-53cbbbba6f08","userId":"2c4a230c-5085-4924-a3e1-25fb4fc5965b","x":["497f6eca-6276-4993-bfeb-53cbbbba6f08"]}]=] },
  { "byte", [=[{"type":"string","format":"byte"}]=], [=["string"]=] },
  { "binary", [=[{"type":"string","format":"binary"}]=], [=["string"]=] },
  { "jsonpointer", [=[{"type":"string","format":"json-pointer"}]=], [=["/json/pointer"]=] },
  { "regex", [=[{"type":"string","format":"regex"}]=], [=["/regex/"]=] },
  { "unknownformat", [=[{"type":"string","format":"zzz","minLength":8}]=], [=["stringst"]=] },
  { "pattern", [=[{"type":"string","pattern":"^[a-z]+$"}]=], [=["string"]=] },
  { "array", [=[{"type":"array","items":{"type":"integer"}}]=], [=[[0]]=] },
  { "arraymin", [=[{"type":"array","minItems":3,"items":{"type":"string"}}]=], [=[["string","string","string"]]=] },
  { "arraymax0", [=[{"type":"array","maxItems":0,"items":{"type":"string"}}]=], [=[[]]=] },
  { "arraynoitems", [=[{"type":"array"}]=], [=[[]]=] },
  { "tuple", [=[{"type":"array","items":[{"type":"string"},{"type":"integer"}]}]=], [=[["string",0]]=] },
  { "object", [=[{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer","readOnly":true},"c":{"type":"boolean","writeOnly":true}},"required":["a"]}]=], [=[{"a":"string","b":0,"c":true}]=] },
  { "addprops", [=[{"type":"object","additionalProperties":{"type":"integer"}}]=], [=[{"property1":0,"property2":0}]=] },
  { "addpropstrue", [=[{"type":"object","additionalProperties":true}]=], [=[{}]=] },
  { "nested", [=[{"type":"object","properties":{"o":{"type":"object","properties":{"p":{"type":"array","items":{"type":"object","properties":{"q":{"type":"string","format":"date"}}}}}}}}]=], [=[{"o":{"p":[{"q":"2019-08-24"}]}}]=] },
  { "allof", [=[{"allOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"string","enum":["z"]}}}]}]=], [=[{"a":"z","b":0}]=] },
  { "allofnotype", [=[{"allOf":[{"properties":{"a":{"type":"string"}}},{"properties":{"b":{"type":"integer"}}}]}]=], [=[null]=] },
  { "allofstr", [=[{"allOf":[{"type":"string"},{"minLength":3},{"enum":["q"]}]}]=], [=["q"]=] },
  { "allofwithprops", [=[{"type":"object","properties":{"z":{"type":"number"}},"allOf":[{"properties":{"a":{"type":"string"}}}]}]=], [=[{"z":0,"a":"string"}]=] },
  { "oneof", [=[{"oneOf":[{"type":"integer"},{"type":"string"}]}]=], [=[0]=] },
  { "anyof", [=[{"anyOf":[{"type":"boolean"},{"type":"string"}]}]=], [=[true]=] },
  { "oneofanyof", [=[{"oneOf":[{"type":"integer"}],"anyOf":[{"type":"string"}]}]=], [=[0]=] },
  { "typearray", [=[{"type":["integer","string"]}]=], [=[0]=] },
  { "typearraynull", [=[{"type":["null","string"]}]=], [=[null]=] },
  { "infer", [=[{"minLength":2}]=], [=["string"]=] },
  { "inferobj", [=[{"properties":{"a":{"maximum":4}}}]=], [=[{"a":4}]=] },
  { "empty", [=[{}]=], [=[null]=] },
  { "ifthen", [=[{"if":{"properties":{"a":{"type":"string"}}},"then":{"properties":{"b":{"type":"integer"}}}}]=], [=[{"a":"string","b":0}]=] },
  { "nestedexample", [=[{"type":"object","properties":{"a":{"type":"string","example":"ae"},"b":{"type":"integer","example":5}}}]=], [=[{"a":"ae","b":5}]=] },
  { "exampleobj", [=[{"type":"object","properties":{"a":{"type":"string"}},"example":{"a":"whole"}}]=], [=[{"a":"whole"}]=] },
  { "contains", [=[{"type":"array","contains":{"type":"integer","minimum":2}}]=], [=[[2]]=] },
  { "multipleof", [=[{"type":"integer","multipleOf":5}]=], [=[0]=] },
  { "objnoprops", [=[{"type":"object"}]=], [=[{}]=] },
  { "notonly", [=[{"not":{"type":"string"}}]=], [=[null]=] },
  { "defaultobj", [=[{"type":"object","properties":{"a":{"type":"string"}},"default":{"a":"dflt"}}]=], [=[{"a":"dflt"}]=] },
  { "enumnull", [=[{"enum":[null,"x"]}]=], [=[null]=] },
  { "deep", [=[{"type":"object","properties":{"l1":{"type":"object","properties":{"l2":{"type":"object","properties":{"l3":{"type":"string"}}}}}}}]=], [=[{"l1":{"l2":{"l3":"string"}}}]=] },
  { "nullableint32", [=[{"type":"integer","format":"int32","nullable":true}]=], [=[-2147483648]=] },
  { "prefixitems", [=[{"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"integer"}}]=], [=[[0]]=] },
}

describe("gen.sample (json-schema-sampler's rules, as Prism serves them)", function()
  for _, case in ipairs(SAMPLES) do
    it("samples " .. case[1] .. " as Prism does", function()
      local schema = json.decode(case[2])
      same_json(case[3], gen.sample(schema, "3.0"))
      same_json(case[3], gen.sample(schema, "3.1"))
    end)
  end

  it("marks generated arrays, empty ones too, as arrays", function()
    local v = gen.sample({ type = "array", maxItems = 0, items = { type = "string" } }, "3.1")
    assert.equal(array_mt, getmetatable(v))
    assert.equal("[]", json.encode(v))
    v = gen.sample({ type = "object", properties = { a = { type = "array", items = { type = "integer" } } } })
    assert.equal(array_mt, getmetatable(v.a))
  end)

  it("leaves the schema it was given untouched", function()
    local schema = { type = "string", example = "x", nullable = true }
    assert.equal("x", gen.sample(schema, "3.0"))
    assert.equal("x", schema.example)
    assert.is_true(schema.nullable)
    assert.is_nil(schema.examples)
  end)

  it("gives up past Prism's 2,500 steps", function()
    local props = {}
    for i = 1, 3000 do props["p" .. i] = { type = "integer" } end
    local v, err = gen.sample({ type = "object", properties = props }, "3.1")
    assert.is_nil(v)
    assert.matches("too complex", err)
  end)
end)

-- The document of the response-choice cases, its $refs resolved.
local doc = json.decode(assert(io.open("spec/fixtures/openapi_generate.json")):read("*a"))
local function resolve(node, seen)
  if type(node) ~= "table" or seen[node] then return end
  seen[node] = true
  for k, v in pairs(node) do
    if type(v) == "table" and type(v["$ref"]) == "string" then
      node[k] = doc.components.schemas[v["$ref"]:match("^#/components/schemas/(.+)$")]
    end
    resolve(node[k], seen)
  end
end
resolve(doc, {})

local function op(path, method)
  method = method or "get"
  local raw = doc.paths[path][method]
  return { method = method:upper(), path = path, responses = raw.responses, raw = raw }
end

-- A request as gen reads it: headers, the query, the method.
local function req(headers, query, method)
  headers = headers or {}
  return {
    method = method or "GET",
    header = function(_, name) return headers[name] end,
    query = function(_, name) return query and query[name] end,
  }
end

local function header(answer, name)
  for _, h in ipairs(answer.headers) do
    if h[1] == name then return h[2] end
  end
end

describe("gen.respond (Prism's choice of response)", function()
  it("takes the lowest 2xx, its first media type without Accept, and the sample of its schema", function()
    local a = gen.respond(op("/multi"), req({}))
    assert.equal(200, a.status)
    assert.equal("text/csv", a.content_type)
    assert.equal("string", a.body)
    -- A deprecated operation says so.
    assert.equal("true", header(a, "deprecation"))
  end)

  it("serves the code Prefer asks for, the media type's example first, and the document's headers", function()
    local a = gen.respond(op("/multi"), req({ prefer = "code=201" }))
    assert.equal(201, a.status)
    assert.equal("application/json", a.content_type)
    same_json('{"id":7}', a.body)
    -- Examples of headers first (examples, then example), else samples
    -- of their schemas; what is no string or number prints as null.
    assert.equal("hdr-ex", header(a, "X-Ex"))
    assert.equal("first", header(a, "X-Exs"))
    assert.equal("-2147483648", header(a, "X-Rate"))
    assert.equal("e1", header(a, "X-Enum"))
    assert.equal("null", header(a, "X-Bool"))
    assert.equal("null", header(a, "X-Content"))
  end)

  it("serves the example Prefer names, by key; 'default' is the media type's example", function()
    same_json('{"id":2}', gen.respond(op("/multi"), req({ prefer = "code=201, example=two" })).body)
    same_json('{"id":7}', gen.respond(op("/multi"), req({ prefer = "code=201, example=default" })).body)
    -- Without Prefer, Prism reads __code and __example from the query.
    same_json('{"id":1}', gen.respond(op("/multi"), req({}, { __code = "201", __example = "one" })).body)
    -- The schema's example is "default"; named examples follow it.
    assert.equal("from-schema", gen.respond(op("/schemaexs"), req({})).body)
    assert.equal("from-examples", gen.respond(op("/schemaexs"), req({ prefer = "example=k1" })).body)
    -- A null example is a null body.
    assert.equal(null, gen.respond(op("/exnull"), req({})).body)
  end)

  it("answers 404 for an example that is not there, and 500 when a code was asked for too", function()
    local _, p = gen.respond(op("/multi"), req({ prefer = "example=two" }))
    assert.same({ status = 404, type = "NOT_FOUND", title = "The server cannot find the requested content",
      detail = "Response for contentType: text/csv and exampleKey: two does not exist." }, p)
    _, p = gen.respond(op("/multi"), req({ prefer = "code=201, example=nope" }))
    assert.equal(500, p.status)
    assert.equal("UNKNOWN", p.type)
    assert.equal("https://stoplight.io/prism/errors#NOT_FOUND: The server cannot find the requested content."
      .. " We tried default response, but we got https://stoplight.io/prism/errors#NOT_FOUND:"
      .. " The server cannot find the requested content", p.title)
    assert.equal("", p.detail)
  end)

  it("falls back to default (with the code asked for), or answers 404 when there is none", function()
    local a = gen.respond(op("/multi"), req({ prefer = "code=418" }))
    assert.equal(418, a.status)
    same_json('{"msg":"dm"}', a.body)
    same_json('{"err":"string"}', gen.respond(op("/multi"), req({ prefer = "code=404" })).body)
    local _, p = gen.respond(op("/nodefault"), req({ prefer = "code=418" }))
    assert.equal(404, p.status)
    assert.equal("Requested status code 418 is not defined in the document.", p.detail)
    a = gen.respond(op("/onlydefault"), req({}))
    assert.equal(200, a.status)
    assert.equal(503, gen.respond(op("/onlydefault"), req({ prefer = "code=503" })).status)
    a = gen.respond(op("/only404"), req({}))
    assert.equal(404, a.status)
    assert.equal("gone", a.body)
  end)

  it("sorts codes as text: 204 before 2XX; 2XX answers a code asked for in its range", function()
    local a = gen.respond(op("/range"), req({}))
    assert.equal(204, a.status)
    assert.equal("text/plain", a.content_type)
    assert.is_nil(a.body)
    a = gen.respond(op("/range"), req({ prefer = "code=250" }))
    assert.equal(250, a.status)
    assert.equal("string", a.body)
    -- code=000 decodes to 0, which Prism takes for no code at all.
    a = gen.respond(op("/multi"), req({ prefer = "code=000" }))
    assert.equal(200, a.status)
    a = gen.respond(op("/multi"), req({}, { __code = "000" }))
    assert.equal(200, a.status)
  end)

  it("refuses a Prefer header Prism's decoder refuses, with its message", function()
    local _, p = gen.respond(op("/multi"), req({ prefer = "code=20" }))
    assert.same({ status = 422, type = "UNPROCESSABLE_ENTITY", title = "Invalid request",
      detail = 'optional property "code"\n└─ cannot decode "20", should be a number' }, p)
    _, p = gen.respond(op("/multi"), req({ prefer = "dynamic" }))
    assert.equal('optional property "dynamic"\n└─ cannot decode true, should be string', p.detail)
    _, p = gen.respond(op("/multi"), req({ prefer = "dynamic=yes" }))
    assert.equal('optional property "dynamic"\n└─ cannot decode "yes", should be a boolean', p.detail)
    -- As JSON.stringify writes the value: quotes and control characters escaped.
    _, p = gen.respond(op("/multi"), req({}, { __code = '2"\n\1' }))
    assert.equal('optional property "code"\n└─ cannot decode "2\\"\\n\\u0001", should be a number', p.detail)
  end)

  it("prints a number example of a header as JavaScript does", function()
    local o = { method = "GET", responses = { ["200"] = { headers = {
      ["x-small"] = { schema = { type = "number" }, example = 1e-7 },
      ["x-zero"] = { schema = { type = "number" }, example = -0.0 },
      ["x-big"] = { schema = { type = "number" }, example = 1e21 } } } } }
    local a = gen.respond(o, req({}))
    assert.equal("1e-7", header(a, "x-small"))
    assert.equal("0", header(a, "x-zero"))
    assert.equal("1e+21", header(a, "x-big"))
  end)

  it("negotiates Accept as Prism: q-values, wildcards, parameters, 406", function()
    local function pick(accept, prefer)
      local a, p = gen.respond(op("/multi"), req({ accept = accept, prefer = prefer or "code=201" }))
      if not a then return p.status end
      return a.content_type, a.body
    end
    assert.same({ "application/xml", "<id>1</id>" }, { pick("application/xml") })
    assert.same({ "text/plain", "plain text" }, { pick("text/*;q=0.5, application/xml;q=0.4") })
    assert.equal("application/xml", (pick("application/json;q=0.1, application/xml;q=0.4")))
    assert.equal("application/xml", (pick("application/json;q=0, */*")))
    assert.equal("application/json", (pick("image/png, */*")))
    assert.equal("application/json", (pick("application/*")))
    assert.equal("application/json", (pick("application/*;q=0.9, application/xml;q=0.1")))
    assert.equal("text/plain", (pick("text/plain;q=0.9, application/json;q=0.9")))
    -- Parameters other than q must match, else they are dropped and
    -- the ranges tried once more.
    assert.equal("application/json", (pick("application/json;v=2")))
    assert.equal("text/plain", (pick("text/plain;format=x")))
    -- Nothing acceptable: 406, or, with a code asked for, the lowest 2xx
    -- tried instead (here text/csv serves), else Prism's wrapped 500.
    assert.equal(406, pick("image/png", ""))
    local _, p = gen.respond(op("/multi"), req({ accept = "image/png" }))
    assert.equal("Unable to find content for image/png", p.detail)
    local a = gen.respond(op("/multi"), req({ accept = "text/csv", prefer = "code=201" }))
    assert.equal(200, a.status)
    assert.equal(500, pick("image/png"))
    assert.equal(500, pick("text/plain; q=0"))
    -- The document's parameters stay in Content-Type.
    a = gen.respond(op("/charset"), req({ accept = "application/json;charset=latin1" }))
    assert.equal("application/json; charset=utf-8", a.content_type)
    assert.equal("cs", a.body)
  end)

  it("serves */* content as */* without Accept and as text/plain with one", function()
    assert.equal("*/*", gen.respond(op("/star"), req({})).content_type)
    assert.equal("text/plain", gen.respond(op("/star"), req({ accept = "*/*" })).content_type)
    assert.equal(406, select(2, gen.respond(op("/star"), req({ accept = "application/json" }))).status)
  end)

  it("serves no body for a response without content: text/plain without Accept, no type with one", function()
    local a = gen.respond(op("/nocontent"), req({}))
    assert.equal(200, a.status)
    assert.equal("text/plain", a.content_type)
    assert.is_nil(a.body)
    a = gen.respond(op("/nocontent"), req({ accept = "application/json" }))
    assert.is_nil(a.content_type)
    assert.is_nil(a.body)
    a = gen.respond(op("/noschema"), req({}))
    assert.equal("application/json", a.content_type)
    assert.is_nil(a.body)
    local _, p = gen.respond(op("/noschema"), req({ prefer = "dynamic=true" }))
    assert.same({ status = 500, type = "UNKNOWN", detail = "",
      title = "Tried to force a dynamic response for: application/json but schema is not defined." }, p)
  end)

  it("expands a schema that refers to itself once below the top, as Prism", function()
    same_json('{"name":"string","child":{"name":"string","child":{},"kids":[{}]},'
      .. '"kids":[{"name":"string","child":{},"kids":[{}]}]}', gen.respond(op("/recur"), req({})).body)
    same_json("[[[]]]", gen.respond(op("/recurarr"), req({})).body)
  end)

  it("generates with dynamic: from the schema even where an example exists, reproducibly by seed", function()
    local o = op("/multi")
    local a = gen.respond(o, req({ prefer = "code=201, dynamic=true" }), { rng = gen.rng(5) })
    local b = gen.respond(o, req({ prefer = "code=201" }), { dynamic = true, rng = gen.rng(5) })
    assert.equal(canon(a.body), canon(b.body))
    assert.equal(header(a, "X-Rate"), header(b, "X-Rate"))
    assert.is_true(jsonschema.compile(o.responses["201"].content["application/json"].schema).valid(a.body))
    -- Header examples still win; an example named still wins.
    assert.equal("hdr-ex", header(a, "X-Ex"))
    same_json('{"id":1}', gen.respond(o, req({ prefer = "code=201, dynamic=true, example=one" })).body)
    -- Prefer: seed= seeds this answer; dynamic=false overrides --dynamic.
    local s1 = gen.respond(op("/nodefault"), req({ prefer = "dynamic=true, seed=abc" }))
    local s2 = gen.respond(op("/nodefault"), req({ prefer = "dynamic=true, seed=abc" }))
    assert.equal(s1.body, s2.body)
    assert.equal(0, gen.respond(op("/nodefault"), req({ prefer = "dynamic=false" }), { dynamic = true }).body)
  end)

  it("serves headers and no content for HEAD", function()
    local a = gen.respond(op("/multi"), req({ prefer = "code=201" }, nil, "HEAD"))
    assert.equal(201, a.status)
    assert.is_nil(a.content_type)
    assert.is_nil(a.body)
    assert.equal("hdr-ex", header(a, "X-Ex"))
  end)
end)

describe("gen.for_invalid (the document's response to an invalid request)", function()
  it("takes 422, then 400, then default; the first content with examples", function()
    local a = gen.for_invalid(op("/inv", "post"), 422, req({}))
    assert.equal(400, a.status)
    assert.equal("text/plain", a.content_type)
    assert.equal("bad text", a.body)
    assert.equal("bh", header(a, "X-Bad"))
    a = gen.for_invalid(op("/inv2", "post"), 422, req({}))
    assert.equal(422, a.status)
    same_json('{"code":1}', a.body)
    a = gen.for_invalid(op("/inv3", "post"), 422, req({}))
    assert.equal(422, a.status)
    assert.is_nil(a.content_type)
    assert.is_nil(a.body)
    assert.equal(401, gen.for_invalid(op("/inv2", "post"), 401, req({})).status)
  end)

  it("serves the example Prefer names when its code is one of those", function()
    assert.equal("bad text 2", gen.for_invalid(op("/inv", "post"), 422, req({ prefer = "code=422, example=t2" })).body)
    assert.equal("bad text 2", gen.for_invalid(op("/inv", "post"), 422, req({ prefer = "code=400, example=t2" })).body)
    local a, p = gen.for_invalid(op("/inv", "post"), 422, req({ prefer = "code=400, example=zz" }))
    assert.is_nil(a)
    assert.equal(404, p.status)
    assert.equal("Response for contentType: text/plain and exampleKey: zz does not exist.", p.detail)
  end)

  it("is nil when the document has no such response", function()
    assert.is_nil(gen.for_invalid(op("/nodefault"), 422, req({})))
    assert.is_nil(gen.for_invalid(op("/inv", "post"), 401, req({})))
  end)
end)

-- Formats the mock's validator does not assert, checked here.
local FORMAT_CHECKS = {
  email = "^[%w._%%+-]+@[%w.-]+%.%a+$",
  uuid = "^%x%x%x%x%x%x%x%x%-%x%x%x%x%-[1-5]%x%x%x%-[89ab]%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$",
  ["date-time"] = "^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%dZ$",
  date = "^%d%d%d%d%-%d%d%-%d%d$",
  uri = "^https?://[%w.-]+/?%S*$",
  ipv4 = "^%d+%.%d+%.%d+%.%d+$",
}

local function check_formats(schema, v)
  if type(schema) ~= "table" then return end
  if schema.format and FORMAT_CHECKS[schema.format] and type(v) == "string" then
    assert.matches(FORMAT_CHECKS[schema.format], v)
  end
  if type(v) == "table" and schema.properties then
    for k, sv in pairs(v) do check_formats(schema.properties[k], sv) end
  end
  if type(v) == "table" and schema.items and getmetatable(v) == array_mt then
    for _, sv in ipairs(v) do check_formats(schema.items, sv) end
  end
end

local FAKE_31 = {
  { type = "string", format = "email" },
  { type = "string", format = "uuid" },
  { type = "string", format = "date-time" },
  { type = "string", format = "date" },
  { type = "string", format = "uri" },
  { type = "string", format = "ipv4" },
  { type = "string", minLength = 5, maxLength = 7 },
  { type = "string", pattern = "^[A-Z]{3}-\\d{2,4}$" },
  { type = "string", pattern = "^(red|green|blue)(-[a-z]+)?$" },
  { type = "string", pattern = "[a-f0-9]+", minLength = 8, maxLength = 8 },
  { type = "string", pattern = "^(?:\\+?1[-. ]?)?\\(?[0-9]{3}\\)?[-. ]?[0-9]{3}[-. ]?[0-9]{4}$" },
  { type = "integer", minimum = 10, maximum = 20 },
  { type = "integer", exclusiveMinimum = 0, exclusiveMaximum = 3 },
  { type = "integer", multipleOf = 7, minimum = 1 },
  { type = "number", minimum = 0.5, maximum = 0.75 },
  { type = "number", multipleOf = 0.25 },
  { type = "integer", format = "int32" },
  { type = { "string", "null" } },
  { enum = { "a", "b", 3 } },
  { const = "fixed" },
  { type = "array", items = { type = "integer" }, minItems = 2, maxItems = 4 },
  { type = "array", items = { type = "integer", minimum = 0, maximum = 5 }, minItems = 3, uniqueItems = true },
  { type = "array", prefixItems = { { type = "string" }, { type = "boolean" } }, items = false },
  { type = "array", contains = { type = "string", const = "x" }, items = { type = "string" } },
  { type = "object", required = { "id", "name" }, additionalProperties = false,
    properties = { id = { type = "integer", minimum = 1 }, name = { type = "string", minLength = 1 },
      tag = { type = "string" }, when = { type = "string", format = "date-time" } } },
  { type = "object", minProperties = 3, additionalProperties = { type = "boolean" } },
  { allOf = { { type = "object", required = { "a" }, properties = { a = { type = "string" } } },
    { type = "object", required = { "b" }, properties = { b = { type = "integer", maximum = 0 } } } } },
  { oneOf = { { type = "integer" }, { type = "number", multipleOf = 0.5 } } },
  { oneOf = { { type = "object", required = { "cat" }, properties = { cat = { type = "string" } } },
    { type = "object", required = { "dog" }, properties = { dog = { type = "string" } } } } },
  { anyOf = { { type = "string", maxLength = 2 }, { type = "integer" } } },
  { type = "string", ["not"] = { enum = { "lorem", "ipsum" } } },
  { type = "object", required = { "a" }, dependentRequired = { a = { "b" } },
    properties = { a = { type = "string" }, b = { type = "string" } } },
  { type = "object", properties = { secret = { type = "string", writeOnly = true } },
    additionalProperties = false, maxProperties = 0 },
}

describe("gen.fake (random data valid against the schema)", function()
  for i, schema in ipairs(FAKE_31) do
    it("generates valid values for schema " .. i .. " " .. canon(schema), function()
      local check = assert(jsonschema.compile(schema, { dialect = 2020, formats = true }))
      for seed = 1, 40 do
        local v = gen.fake(schema, gen.rng(seed), "3.1")
        local errs = not check.valid(v) and check.errors(v)
        assert(not errs, "seed " .. seed .. ": " .. json.encode(v) .. ": "
          .. (errs and errs[1] and (jsonschema.pointer(errs[1].path) .. " " .. errs[1].message) or ""))
        check_formats(schema, v)
      end
    end)
  end

  it("follows OpenAPI 3.0: nullable, boolean exclusive bounds, tuple-less items", function()
    local saw_null, saw_string = false, false
    for seed = 1, 60 do
      local v = gen.fake({ type = "string", nullable = true, maxLength = 3 }, gen.rng(seed), "3.0")
      if v == null then saw_null = true else
        saw_string = true
        assert.is_true(#v <= 3)
      end
      local n = gen.fake({ type = "integer", minimum = 1, maximum = 3, exclusiveMinimum = true,
        exclusiveMaximum = true }, gen.rng(seed), "3.0")
      assert.equal(2, n)
    end
    assert.is_true(saw_null and saw_string)
  end)

  it("marks arrays as arrays, empty ones too", function()
    local v = gen.fake({ type = "array", maxItems = 0 }, gen.rng(1), "3.1")
    assert.equal(array_mt, getmetatable(v))
    assert.equal("[]", json.encode(v))
  end)

  it("keeps to a recursion limit on cyclic schemas", function()
    local node = { type = "object", required = { "name" }, properties = { name = { type = "string" } } }
    node.properties.child = node
    node.properties.kids = { type = "array", items = node }
    local check = assert(jsonschema.compile({ ["$ref"] = "#/$defs/n", ["$defs"] = { n = {
      type = "object", required = { "name" }, properties = { name = { type = "string" },
        child = { ["$ref"] = "#/$defs/n" }, kids = { type = "array", items = { ["$ref"] = "#/$defs/n" } } } } } }))
    for seed = 1, 20 do
      assert.is_true(check.valid(gen.fake(node, gen.rng(seed), "3.1")))
    end
  end)

  it("gives the same value for the same seed, others for others", function()
    local schema = FAKE_31[25]
    local a = canon(gen.fake(schema, gen.rng(42), "3.1"))
    assert.equal(a, canon(gen.fake(schema, gen.rng(42), "3.1")))
    assert.equal(canon(gen.fake(schema, gen.rng("abc"), "3.1")), canon(gen.fake(schema, gen.rng("abc"), "3.1")))
    local differ = false
    for seed = 43, 50 do
      if canon(gen.fake(schema, gen.rng(seed), "3.1")) ~= a then differ = true end
    end
    assert.is_true(differ)
    -- One generator goes on: two draws differ.
    local r = gen.rng(7)
    assert.are_not.equal(r:random(), r:random())
  end)

  it("falls back to the schema's example where a pattern is beyond the generator", function()
    assert.is_nil(gen.from_pattern("(?<=a)b", gen.rng(1)))
    assert.is_nil(gen.from_pattern("^\\p{L}+$", gen.rng(1)))
    assert.equal("Zoë", gen.fake({ type = "string", pattern = "^\\p{L}+$", example = "Zoë" }, gen.rng(1), "3.1"))
  end)

  it("keeps random lengths near the minimum under a large maximum", function()
    for seed = 1, 20 do
      local v = gen.fake({ type = "array", maxItems = 1000000, items = { type = "string", maxLength = 1000000 } },
        gen.rng(seed), "3.1")
      assert(#v <= 10, "seed " .. seed .. ": " .. #v .. " items")
      for _, str in ipairs(v) do assert(#str <= 101, "seed " .. seed .. ": " .. #str .. " characters") end
      local n = #gen.fake({ type = "string", minLength = 1005, maxLength = 1000000 }, gen.rng(seed), "3.1")
      assert(n >= 1005 and n <= 1105, "seed " .. seed .. ": " .. n .. " characters")
    end
  end)

  it("gives up on a schema whose required parts recur, as Schema too complex", function()
    -- Two required self-references: 2^30 objects before the depth cut.
    local node = { type = "object", required = { "l", "r" }, properties = {} }
    node.properties.l, node.properties.r = node, node
    local v, err = gen.fake(node, gen.rng(1), "3.1")
    assert.is_nil(v)
    assert.matches("too complex", err)
    local o = { method = "GET", responses = { ["200"] = { content = {
      ["application/json"] = { schema = node } } } } }
    local _, p = gen.respond(o, req({ prefer = "dynamic=true" }))
    assert.equal(500, p.status)
    assert.equal("SCHEMA_TOO_COMPLEX", p.type)
    -- Its static sample stays Prism's (a recurring schema gives {}).
    assert.equal(200, (gen.respond(o, req({}))).status)
  end)
end)
