-- moonport.jsonschema (lua/moonport/jsonschema.lua): AJV 8's errors, as
-- Prism 5.14.2 prints them for the same schemas and bodies
-- (jsonschema_prism_cases.lua), OpenAPI's dialects, readOnly/writeOnly by
-- direction, cyclic schemas, coercion of parameter text, and a valid()
-- that allocates nothing.
require("spec.support.ffi_unit")
if not os.getenv("LUA_CPATH") then package.cpath = "build/lua/?.so;" .. package.cpath end
local json = require("moonport.json")
local jsonschema = require("moonport.jsonschema")

local null, decode = json.null, json.decode
local function arr(t) return setmetatable(t, json.array_mt) end

-- The document order of the objects the cases mark (o(t, keys)).
local ORDER = setmetatable({}, { __mode = "k" })
local function o(t, keys) ORDER[t] = keys return t end
local function order(t) return ORDER[t] end

-- { pointer, code, message } of each error.
local function brief(errors)
  local out = {}
  for i, e in ipairs(errors) do out[i] = { jsonschema.pointer(e.path), e.code, e.message } end
  return out
end

local function compile(schema, opts)
  opts = opts or {}
  if opts.dialect == nil then opts.dialect = "oas3.0" end
  if opts.formats == nil then opts.formats = true end
  opts.order = order
  return assert(jsonschema.compile(schema, opts))
end

local PET = { type = "object", required = arr({ "id", "name" }),
              properties = o({ id = { type = "integer", format = "int64" }, name = { type = "string" },
                               tag = { type = "string" } }, { "id", "name", "tag", "children" }) }
PET.properties.children = { type = "array", items = { ["$ref"] = "#/components/schemas/Pet" } }
local DOC = { components = { schemas = { Pet = PET } } }

describe("jsonschema", function()
  describe("errors as Prism prints them", function()
    local cases = require("spec.unit.jsonschema_prism_cases")(o, arr, null)
    for _, case in ipairs(cases) do
      it(case.dialect .. " " .. case.name, function()
        local opts = { dialect = case.dialect }
        if case.name == "ref" then opts.root = DOC end
        if case.name == "ro" or case.name == "roaddl" then opts.direction = "request" end
        local v = compile(case.schema, opts)
        for _, check in ipairs(case.checks) do
          local value = decode(check[1])
          local want = check[2]
          assert.equal(#want == 0, v.valid(value), check[1])
          local got = brief(v.errors(value))
          if case.name == "addl" then
            -- AJV follows the body's key order, which decoding loses: the
            -- additional keys come sorted.
            table.sort(want, function(a, b) return a[1] .. a[3] < b[1] .. b[3] end)
            table.sort(got, function(a, b) return a[1] .. a[3] < b[1] .. b[3] end)
          end
          assert.same(want, got, check[1])
        end
      end)
    end
  end)

  describe("params, as AJV gives them", function()
    it("names the allowed values, the additional property, the missing one", function()
      local v = compile({ type = "object", additionalProperties = false, required = arr({ "a" }),
                          properties = { e = { enum = arr({ 1, "x", null }) } } })
      local errs = v.errors(decode('{"e": 2, "zz": 1}'))
      assert.same({ missingProperty = "a" }, errs[1].params)
      assert.same({ additionalProperty = "zz" }, errs[2].params)
      assert.same({ 1, "x", null }, errs[3].params.allowedValues)
      assert.same({ "e" }, errs[3].path)
    end)

    it("gives array indexes as 0-based numbers in paths", function()
      local v = compile({ type = "array", items = { type = "object",
                          properties = { tags = { type = "array", items = { type = "string" } } } } })
      local errs = v.errors(decode('[{}, {"tags": ["a", 2]}]'))
      assert.same({ 1, "tags", 1 }, errs[1].path)
      assert.equal("must be string", errs[1].message)
    end)

    it("gives oneOf's passing schemas, uniqueItems' pair, limits and types", function()
      local v = compile({ oneOf = arr({ { type = "number" }, { type = "integer" } }) })
      assert.same({ passingSchemas = { 0, 1 } }, v.errors(1)[1].params)
      assert.same({ passingSchemas = null }, v.errors("x")[3].params)
      v = compile({ type = "array", uniqueItems = true })
      assert.same({ i = 2, j = 0 }, v.errors(decode('[{"a": 1}, 2, {"a": 1}]'))[1].params)
      v = compile({ type = "integer", minimum = 3 })
      assert.same({ comparison = ">=", limit = 3 }, v.errors(1)[1].params)
      assert.same({ type = "integer" }, v.errors("x")[1].params)
      v = compile({ type = "string", nullable = true })
      assert.same({ type = { "string", "null" } }, v.errors(1)[1].params)
    end)
  end)

  describe("OpenAPI 3.0", function()
    it("reads nullable as Prism does (a type, and an enum, take null)", function()
      -- What Prism answers for the same schema (3.0.3 document, POST body).
      local v = compile({ type = "object", properties = o({
        n = { type = "string", nullable = true }, m = { type = "string" },
        e = { type = "string", nullable = true, enum = arr({ "a" }) },
        o = { type = "object", nullable = true, required = arr({ "x" }) } }, { "n", "m", "e", "o" }) })
      assert.same({ { "/m", "type", "must be string" } },
        brief(v.errors(decode('{"n": null, "m": null, "e": null, "o": null}'))))
      assert.same({ { "/n", "type", "must be string,null" },
                    { "/e", "enum", "must be equal to one of the allowed values" },
                    { "/o", "required", "must have required property 'x'" } },
        brief(v.errors(decode('{"n": 1, "e": "b", "o": {}}'))))
    end)

    it("takes boolean exclusiveMinimum/Maximum, and ignores a false one", function()
      local v = compile({ type = "number", minimum = 1, exclusiveMinimum = true, maximum = 5, exclusiveMaximum = false })
      assert.same({ { "", "exclusiveMinimum", "must be > 1" } }, brief(v.errors(1)))
      assert.is_true(v.valid(5))
      assert.same({ { "", "maximum", "must be <= 5" } }, brief(v.errors(6)))
    end)

    it("merges allOf as Prism does before validating a body", function()
      -- Prism's answers to the same schemas, in its order.
      local v = compile({ type = "object", allOf = arr({ { properties = { a = { type = "string" } } },
        { properties = o({ a = { minLength = 3 }, b = { type = "integer" } }, { "a", "b" }) } }) })
      assert.same({ { "/a", "minLength", "must NOT have fewer than 3 characters" },
                    { "/b", "type", "must be integer" } }, brief(v.errors(decode('{"a": "x", "b": "y"}'))))
      assert.same({ { "/a", "type", "must be string" } }, brief(v.errors(decode('{"a": 1}'))))
      v = compile({ allOf = arr({ { ["$ref"] = "#/components/schemas/Pet" },
        { type = "object", required = arr({ "tag" }), properties = { tag = { maxLength = 2 } } } }) }, { root = DOC })
      assert.same({ { "", "required", "must have required property 'id'" },
                    { "/name", "type", "must be string" },
                    { "/tag", "maxLength", "must NOT have more than 2 characters" } },
        brief(v.errors(decode('{"name": 1, "tag": "xyz"}'))))
      -- Branches that conflict are left as they are, and so are their errors.
      v = compile({ allOf = arr({ { type = "object", properties = { a = { type = "string" } } }, { type = "array" } }) })
      assert.same({ { "/a", "type", "must be string" }, { "", "type", "must be array" } },
        brief(v.errors(decode('{"a": 1}'))))
      -- A schema that is its own branch is not merged either.
      local self = { type = "object", properties = { next = {} } }
      self.properties.next.allOf = { self }
      assert.is_false(compile(self).valid(decode('{"next": 1}')))
    end)

    it("ignores discriminator, xml and example", function()
      local v = compile({ type = "object", discriminator = { propertyName = "kind" }, xml = { name = "x" },
                          example = { kind = 1 } })
      assert.is_true(v.valid(decode('{"kind": 2}')))
    end)

    it("asserts formats only when asked", function()
      assert.is_true(compile({ type = "string", format = "email" }, { formats = false }).valid("nope"))
      assert.is_false(compile({ type = "string", format = "email" }).valid("nope"))
      assert.is_true(compile({ type = "string", format = "something" }).valid("x"))
    end)
  end)

  describe("OpenAPI 3.1 (JSON Schema 2020-12)", function()
    -- Prism validates a 3.1 document without jsonSchemaDialect with AJV's
    -- draft-07 class, so it ignores these keywords; moonport reads them.
    it("checks prefixItems, dependentRequired and minContains", function()
      local v = compile({ type = "array", prefixItems = arr({ { type = "string" } }), items = { type = "integer" } },
        { dialect = "oas3.1" })
      assert.same({ { "/0", "type", "must be string" }, { "/1", "type", "must be integer" } },
        brief(v.errors(decode('[1, "a"]'))))
      v = compile({ type = "object", dependentRequired = { a = arr({ "b" }) } }, { dialect = "oas3.1" })
      assert.same({ { "", "dependentRequired", "must have property b when property a is present" } },
        brief(v.errors(decode('{"a": 1}'))))
      v = compile({ type = "array", contains = { type = "string" }, minContains = 2 }, { dialect = "oas3.1" })
      assert.same({ { "/0", "type", "must be string" },
                    { "", "contains", "must contain at least 2 valid item(s)" } },
        brief(v.errors(decode('[1, "a"]'))))
      assert.is_true(v.valid(decode('["a", 1, "b"]')))
    end)

    it("takes type lists and numeric exclusive bounds", function()
      local v = compile({ type = arr({ "integer", "null" }), exclusiveMaximum = 3 }, { dialect = "oas3.1" })
      assert.is_true(v.valid(null))
      assert.same({ { "", "exclusiveMaximum", "must be < 3" } }, brief(v.errors(3)))
      assert.same({ { "", "type", "must be integer,null" } }, brief(v.errors("x")))
    end)
  end)

  describe("direction", function()
    local schema = { type = "object", required = arr({ "id", "name", "pw" }), properties = {
      id = { type = "integer", readOnly = true }, name = { type = "string" }, pw = { type = "string", writeOnly = true } } }

    it("leaves readOnly properties out of requests, writeOnly ones out of responses", function()
      local req = compile(schema, { direction = "request" })
      assert.same({ { "", "required", "must have required property 'name'" },
                    { "", "required", "must have required property 'pw'" } }, brief(req.errors({})))
      assert.is_true(req.valid(decode('{"id": "not checked", "name": "a", "pw": "p"}')))
      local res = compile(schema, { direction = "response" })
      assert.same({ { "", "required", "must have required property 'id'" },
                    { "", "required", "must have required property 'name'" } }, brief(res.errors({})))
      local both = compile(schema)
      assert.equal(3, #both.errors({}))
    end)

    it("follows a property's $ref to see readOnly", function()
      local root = { components = { schemas = { Id = { type = "integer", readOnly = true } } } }
      local v = compile({ type = "object", required = arr({ "id" }),
                          properties = { id = { ["$ref"] = "#/components/schemas/Id" } } },
        { direction = "request", root = root })
      assert.is_true(v.valid({}))
    end)
  end)

  describe("schemas as Lua tables", function()
    it("compiles a schema that contains itself once, and validates through the cycle", function()
      local node = { type = "object", required = arr({ "name" }), properties = { name = { type = "string" } } }
      node.properties.children = { type = "array", items = node }
      local v = compile(node)
      assert.is_true(v.valid(decode('{"name": "a", "children": [{"name": "b", "children": []}]}')))
      assert.same({ { "/children/0/children/0/name", "type", "must be string" } },
        brief(v.errors(decode('{"name": "a", "children": [{"name": "b", "children": [{"name": 1}]}]}'))))
    end)

    it("takes a $ref that is already a table, and #/ pointers into opts.root", function()
      local pet = { type = "object", required = arr({ "id" }) }
      assert.is_false(compile({ ["$ref"] = pet }).valid({}))
      local v = compile({ type = "array", items = { ["$ref"] = "#/components/schemas/Pet" } }, { root = DOC })
      assert.same({ { "/0", "required", "must have required property 'id'" } },
        brief(v.errors(decode('[{"name": "x"}]'))))
    end)

    it("shares compiled schemas between compiles through opts.memo", function()
      local memo = {}
      local a = compile({ type = "array", items = PET }, { memo = memo, root = DOC })
      local n = 0
      for _ in pairs(memo) do n = n + 1 end
      compile({ type = "object", properties = { pet = PET } }, { memo = memo, root = DOC })
      local m = 0
      for _ in pairs(memo) do m = m + 1 end
      assert.equal(n + 1, m) -- the new outer schema alone: PET's are shared
      assert.is_true(a.valid(decode('[{"id": 1, "name": "x"}]')))
    end)
  end)

  describe("schema errors", function()
    it("says what is wrong with a schema, and where", function()
      local function why(schema, opts)
        local v, err = jsonschema.compile(schema, opts)
        assert.is_nil(v)
        return err
      end
      assert.matches("strin is not a JSON Schema type", why({ type = "strin" }))
      assert.matches("names nothing", why({ properties = { a = { ["$ref"] = "#/$defs/missing" } } }))
      assert.matches("bad regular expression", why({ pattern = "([" }))
      assert.matches("#/minLength: is not a non%-negative integer", why({ minLength = -1 }))
      assert.matches("dialect 3 is not one of", why({}, { dialect = 3 }))
    end)
  end)

  describe("patterns", function()
    it("finds the pattern anywhere, with JavaScript's $ (no final newline)", function()
      local v = compile({ type = "string", pattern = "^[a-z]+$" })
      assert.is_true(v.valid("abc"))
      assert.is_false(v.valid("abc\n"))
      assert.is_true(compile({ type = "string", pattern = "\\d" }).valid("a1b"))
      assert.is_true(compile({ type = "string", pattern = "[$]x" }).valid("a$x"))
    end)
  end)

  describe("formats", function()
    local function ok(fmt, value) return compile({ format = fmt }).valid(value) end

    it("checks dates and times as ajv-formats and Prism's date-time do", function()
      assert.is_true(ok("date", "2024-02-29"))
      assert.is_false(ok("date", "2023-02-29"))
      assert.is_true(ok("time", "23:59:60"))
      assert.is_true(ok("time", "10:00:00"))
      assert.is_false(ok("time", "24:00:00"))
      assert.is_true(ok("date-time", "2024-01-01T10:00:00.5+05:30"))
      assert.is_true(ok("date-time", "2024-01-01 10:00:00+0530"))
      assert.is_true(ok("date-time", "2024-01-01t10:00:00+24"))
      assert.is_false(ok("date-time", "2024-01-01T10:00:00"))
      assert.is_false(ok("date-time", "2024-01-01T10:00:00+24:00"))
    end)

    it("checks the other string formats", function()
      assert.is_true(ok("email", "a.b@c.io"))
      assert.is_false(ok("email", "a@b"))
      assert.is_true(ok("uri", "urn:isbn:123"))
      assert.is_false(ok("uri", "a b"))
      assert.is_true(ok("uuid", "urn:uuid:123e4567-e89b-12d3-a456-426614174000"))
      assert.is_true(ok("ipv4", "10.0.0.255"))
      assert.is_false(ok("ipv4", "10.0.0.256"))
      assert.is_true(ok("ipv6", "fe80::1:2"))
      assert.is_true(ok("hostname", "a-b.example.com"))
      assert.is_false(ok("hostname", "a_b"))
      assert.is_true(ok("byte", "aGk="))
      assert.is_false(ok("byte", "aGk"))
      assert.is_true(ok("regex", "^a+$"))
      assert.is_false(ok("regex", "(a"))
      assert.is_true(ok("json-pointer", "/a/~1b"))
      assert.is_true(ok("duration", "P1DT2H"))
      assert.is_true(ok("url", "https://example.com/x"))
    end)

    it("bounds int32, int64, float and double as OpenAPI's converter does", function()
      local v = compile({ type = "integer", format = "int32", minimum = -5 })
      assert.same({ { "", "minimum", "must be >= -5" } }, brief(v.errors(-6)))
      assert.same({ { "", "maximum", "must be <= 2147483647" }, { "", "format", 'must match format "int32"' } },
        brief(v.errors(2147483648)))
      v = compile({ type = "number", format = "double" })
      assert.is_true(v.valid(1e308))
    end)
  end)

  describe("coerce", function()
    local coerce = jsonschema.coerce

    it("turns parameter text into the schema's type as AJV's coerceTypes does", function()
      assert.equal(5, coerce("5", { type = "integer" }))
      assert.equal(5, coerce(" 5 ", { type = "integer" }))
      assert.equal(16, coerce("0x10", { type = "integer" }))
      assert.equal(1000, coerce("1e3", { type = "integer" }))
      assert.equal("5.5", coerce("5.5", { type = "integer" }))
      assert.equal(5.5, coerce("5.5", { type = "number" }))
      assert.equal(-0.5, coerce("-.5", { type = "number" }))
      assert.equal(math.huge, coerce("Infinity", { type = "integer" }))
      assert.equal("abc", coerce("abc", { type = "integer" }))
      assert.equal("", coerce("", { type = "integer" }))
      assert.is_true(coerce("true", { type = "boolean" }))
      assert.is_false(coerce("false", { type = "boolean" }))
      assert.equal("1", coerce("1", { type = "boolean" }))
      assert.equal("TRUE", coerce("TRUE", { type = "boolean" }))
      assert.equal("", coerce("", { type = "string", nullable = true }))
      assert.equal(null, coerce("", { type = "null" }))
      assert.equal("x", coerce("x", { type = "string" }))
      assert.equal("x", coerce("x", {}))
    end)

    it("goes through items and properties", function()
      assert.same({ 1, "x", 3 }, coerce({ "1", "x", "3" }, { type = "array", items = { type = "integer" } }))
      assert.same({ a = 1, b = true }, coerce({ a = "1", b = "true" },
        { type = "object", properties = { a = { type = "number" }, b = { type = "boolean" } } }))
    end)

    it("puts the type error first with opts.coerce, as Prism's parameters show it", function()
      local schema = { type = "integer", enum = arr({ 1, 2 }) }
      local v = compile(schema, { coerce = true })
      assert.same({ { "", "type", "must be integer" },
                    { "", "enum", "must be equal to one of the allowed values" } },
        brief(v.errors(coerce("x", schema))))
      schema = { type = "string", minLength = 3, enum = arr({ "abcd" }) }
      assert.same({ "type", "enum" }, { compile(schema, { coerce = true }).errors(5)[1].code,
                                        compile(schema, { coerce = true }).errors(5)[2].code })
      assert.same({ "enum", "type" }, { compile(schema).errors(5)[1].code, compile(schema).errors(5)[2].code })
    end)
  end)

  describe("numbers in messages", function()
    it("are written as JavaScript writes them", function()
      local jsnum = jsonschema.jsnum
      assert.equal("3.402823669209385e+38", jsnum(2 ^ 128 - 1))
      assert.equal("0.1", jsnum(0.1))
      assert.equal("1e+21", jsnum(1e21))
      assert.equal("100000000000000000000", jsnum(1e20))
      assert.equal("1e-7", jsnum(1e-7))
      assert.equal("0.000001", jsnum(1e-6))
      assert.equal("-9007199254740991", jsnum(-9007199254740991))
      assert.equal("1.5", jsnum(1.5))
    end)
  end)

  describe("valid()", function()
    it("allocates nothing for a valid value", function()
      local schema = {
        type = "object", required = arr({ "id", "name", "items" }), additionalProperties = false,
        properties = {
          id = { type = "integer", format = "int64", minimum = 1 },
          name = { type = "string", minLength = 1, maxLength = 50, pattern = "^[A-Za-z ]+$" },
          email = { type = "string", format = "email" },
          at = { type = "string", format = "date-time" },
          kind = { type = "string", enum = arr({ "cat", "dog" }) },
          size = { oneOf = arr({ { type = "integer", maximum = 10 }, { type = "string", format = "uuid" } }) },
          tags = { type = "array", uniqueItems = true, items = { type = "string" } },
          items = { type = "array", minItems = 1, items = {
            type = "object", required = arr({ "sku" }),
            properties = { sku = { type = "string", pattern = "^[A-Z]{3}-\\d+$" },
                           qty = { type = "number", multipleOf = 0.5, exclusiveMinimum = 0 } },
            anyOf = arr({ { required = arr({ "qty" }) }, { required = arr({ "sku" }) } }) } },
          meta = { type = "object", nullable = true, additionalProperties = { type = "string" } },
        },
      }
      local v = compile(schema)
      local value = decode([[{"id": 7, "name": "Ann Lee", "email": "ann@example.com",
        "at": "2024-05-01T10:00:00Z", "kind": "cat", "size": "123e4567-e89b-12d3-a456-426614174000",
        "tags": ["a", "b", "c"], "items": [{"sku": "ABC-1", "qty": 1.5}, {"sku": "XYZ-22"}],
        "meta": {"a": "b"}}]])
      assert.is_true(v.valid(value))
      local valid = v.valid
      local function run(n) for _ = 1, n do valid(value) end end
      run(20000) -- traces compiled (their memory counts), formats' patterns too
      collectgarbage()
      collectgarbage("stop")
      local before = collectgarbage("count")
      run(10000)
      local after = collectgarbage("count")
      collectgarbage("restart")
      -- Under 0.2 bytes a validation: what a trace compiled late takes
      -- (the JIT's memory is the state's), not a table or string per
      -- validation (32 bytes and more each, 320 KiB here).
      assert.is_true((after - before) * 1024 < 2048, ("%.0f bytes over 10,000 validations"):format((after - before) * 1024))
    end)
  end)
end)
