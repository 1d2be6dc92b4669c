-- Response templating of the mock server (lua/moonport/mock/template.lua):
-- the Handlebars subset WireMock's response-template transformer offers.
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path

local cjson = require("cjson")
local template = require("moonport.mock.template")

local BODY = [[{"name":"Bob","age":42,"ratio":1.5,"ok":true,"none":null,]]
  .. [["pets":[{"type":"dog","age":3},{"type":"cat","age":5}],"big":12345678901234}]]

local function context()
  return {
    request = {
      url = "/users/7/orders?x=1&x=2&y=z",
      path = "/users/7/orders",
      path_segments = { "users", "7", "orders" },
      path_params = { id = "7" },
      query = { x = { "1", "2" }, y = "z" },
      headers = {
        ["content-type"] = "application/json",
        ["x-quote"] = 'say "hi" \\ back\nslash\t\1',
        ["x-html"] = '<a href="x">&amp;</a>',
      },
      body = BODY,
      method = "POST",
      base_url = "http://127.0.0.1:8080",
    },
  }
end

local function render(text, opts)
  local out, err = template.render(text, context(), opts)
  if err then error(err, 2) end
  return out
end

-- 2024-02-29T13:04:05Z, a leap day.
local T = 1709211845

describe("template", function()
  describe("request values", function()
    it("renders the url, path, method, body and base url", function()
      assert.equal("/users/7/orders?x=1&x=2&y=z", render("{{request.url}}"))
      assert.equal("/users/7/orders", render("{{request.path}}"))
      assert.equal("POST", render("{{request.method}}"))
      assert.equal(BODY, render("{{request.body}}"))
      assert.equal("http://127.0.0.1:8080", render("{{request.baseUrl}}"))
    end)

    it("keeps the literal text around expressions", function()
      assert.equal("<POST /users/7/orders>", render("<{{request.method}} {{request.path}}>"))
    end)

    it("renders path segments from 0", function()
      assert.equal("users|7|orders", render(
        "{{request.pathSegments.[0]}}|{{request.pathSegments.[1]}}|{{request.pathSegments.[2]}}"))
      assert.equal("", render("{{request.pathSegments.[3]}}"))
    end)

    it("renders a path template parameter by name, and a segment by index", function()
      assert.equal("7", render("{{request.path.id}}"))
      assert.equal("orders", render("{{request.path.[2]}}"))
      assert.equal("", render("{{request.path.nope}}"))
    end)

    it("renders the first value of a repeated query parameter, or the nth", function()
      assert.equal("1", render("{{request.query.x}}"))
      assert.equal("1", render("{{request.query.x.[0]}}"))
      assert.equal("2", render("{{request.query.x.[1]}}"))
      assert.equal("", render("{{request.query.x.[2]}}"))
      assert.equal("z", render("{{request.query.y}}"))
      assert.equal("z", render("{{request.query.y.[0]}}"))
      assert.equal("", render("{{request.query.y.[1]}}"))
      assert.equal("z", render("{{request.query.[y]}}"))
    end)

    it("looks headers up whatever their case, dotted or bracketed", function()
      assert.equal("application/json", render("{{request.headers.content-type}}"))
      assert.equal("application/json", render("{{request.headers.Content-Type}}"))
      assert.equal("application/json", render("{{request.headers.[Content-Type]}}"))
      assert.equal("application/json", render("{{request.headers.CONTENT-TYPE.[0]}}"))
    end)

    it("finds headers stored with other cases, and the nth repeat", function()
      local ctx = { request = { headers = { ["X-Mixed"] = "m", accept = { "a", "b" } } } }
      assert.equal("m", template.render("{{request.headers.x-mixed}}", ctx))
      assert.equal("a", template.render("{{request.headers.Accept}}", ctx))
      assert.equal("b", template.render("{{request.headers.Accept.[1]}}", ctx))
    end)

    it("renders missing request values as empty strings", function()
      assert.equal("[][][][][]", render(
        "[{{request.nope}}][{{request.query.nope}}][{{request.headers.nope}}]"
        .. "[{{request.path.id.deeper}}][{{request}}]"))
      assert.equal("[]", template.render("[{{request.url}}]", {}))
      assert.equal("[]", template.render("[{{request.url}}]"))
    end)

    it("tolerates whitespace inside the braces", function()
      assert.equal("7/POST", render("{{ request.path.id }}/{{  request.method\t}}"))
    end)

    it("renders {{{triple}}} braces like double ones", function()
      assert.equal("7", render("{{{request.path.id}}}"))
      assert.equal("{ 7 }", render("{ {{{request.path.id}}} }"))
    end)

    it("never escapes HTML", function()
      assert.equal('<a href="x">&amp;</a>', render("{{request.headers.x-html}}"))
      assert.equal('<a href="x">&amp;</a>', render("{{{request.headers.x-html}}}"))
    end)
  end)

  describe("Handlebars syntax", function()
    it("drops comments", function()
      assert.equal("ab", render("a{{! a comment }}b"))
      assert.equal("ab", render("a{{! 'an open quote }}b"))
      assert.equal("ab", render("a{{!-- has }} inside --}}b"))
    end)

    it("takes ~ off a tag and keeps the whitespace beside it, as WireMock does", function()
      assert.equal("a  POST \n b", render("a  {{~request.method~}} \n b"))
      assert.equal("a POST  b", render("a {{request.method~}}  b"))
    end)

    it("refuses what it does not implement, naming it, instead of rendering it wrong", function()
      for tpl, what in pairs({
        ["{{#if request.method}}in"] = "'#if' is never closed",
        ["{{#if request.method}}in{{/each}}"] = "'#if' is never closed",
        ["{{/if}}"] = "closes no block",
        ["{{else}}"] = "{{else}} outside a block",
        ["{{^x}}"] = "inverted sections and partials",
        ["{{> partial}}"] = "inverted sections and partials",
        ["{{#lookup request.query}}x{{/lookup}}"] = "'#lookup' is not a block",
        ["{{#if request.path}}1{{else}}2{{else}}3{{/if}}"] = "a second {{else}}",
        ["{{#if request.method}}1{{else nope x}}2{{/if}}"] = "'else nope' is not a condition",
        -- Found by spec/fuzz/fuzz_template.c: compiled, then raised rendering.
        ["{{#if request.query.nope}}A{{else if}}B{{/if}}"] = "'else if' takes one argument",
        ["{{#if request.method}}A{{else unless a b}}B{{/if}}"] = "'else unless' takes one argument",
        ["{{nope}}"] = "'nope' is not a helper",
        ["{{truncateDate (now) 'x'}}"] = "'truncateDate' is not a helper",
        ["{{upper (nope 1)}}"] = "'nope' is not a helper",
        ["{{reqest.path}}"] = "'reqest.path' is not a helper or value",
        ["{{now timezone='Europe/Paris'}}"] = "time zone 'Europe/Paris'",
        ["{{upper (request.path)}}"] = "does not start with a helper's name",
        ["{{upper (trim 'x'}}"] = "is never closed",
      }) do
        local compiled, err = template.compile(tpl)
        assert.is_nil(compiled, tpl)
        assert.truthy(err:find(what, 1, true), tpl .. ": " .. err)
      end
      assert.truthy(select(2, template.compile("{{request.url 'x'}}")):find("takes no arguments", 1, true))
    end)

    it("reads {{&x}} as {{x}}", function()
      assert.equal("7", render("{{& request.path.id}}"))
    end)
  end)

  describe("in JSON mode", function()
    it("escapes values inside string literals so the output stays valid JSON", function()
      local out = render('{"q": "{{request.headers.x-quote}}"}', { json = true })
      assert.equal('say "hi" \\ back\nslash\t\1', cjson.decode(out).q)
      assert.truthy(out:find('\\"hi\\"', 1, true))
      assert.truthy(out:find("\\u0001", 1, true))
    end)

    it("leaves values outside string literals as they are", function()
      local out = render('{"id": {{request.path.id}}, "name": "{{request.path.id}}"}', { json = true })
      assert.equal('{"id": 7, "name": "7"}', out)
      local doc = cjson.decode(out)
      assert.equal(7, doc.id)
      assert.equal("7", doc.name)
    end)

    it("inserts a JSON value from jsonPath as JSON outside string literals", function()
      local out = render('{"pet": {{jsonPath request.body \'$.pets[0]\'}}}', { json = true })
      assert.same({ type = "dog", age = 3 }, cjson.decode(out).pet)
    end)

    it("follows escaped quotes and braces inside the literal text", function()
      local out = render('{"a": "x\\"{{request.headers.x-quote}}", "b": {"c": {{request.path.id}}}}',
        { json = true })
      local doc = cjson.decode(out)
      assert.equal('x"say "hi" \\ back\nslash\t\1', doc.a)
      assert.equal(7, doc.b.c)
    end)

    it("does not escape without opts.json", function()
      local out = render('{"q": "{{request.headers.x-quote}}"}')
      assert.equal('{"q": "say "hi" \\ back\nslash\t\1"}', out)
    end)
  end)

  describe("jsonPath", function()
    it("renders a string as it is", function()
      assert.equal("Bob", render("{{jsonPath request.body '$.name'}}"))
    end)

    it("renders integers without a fraction and other numbers in full", function()
      assert.equal("42", render("{{jsonPath request.body '$.age'}}"))
      assert.equal("1.5", render("{{jsonPath request.body '$.ratio'}}"))
      assert.equal("12345678901234", render("{{jsonPath request.body '$.big'}}"))
    end)

    it("renders booleans and null as JSON literals", function()
      assert.equal("true", render("{{jsonPath request.body '$.ok'}}"))
      assert.equal("null", render("{{jsonPath request.body '$.none'}}"))
    end)

    it("renders objects and arrays as JSON", function()
      assert.same({ type = "cat", age = 5 },
        cjson.decode(render("{{jsonPath request.body '$.pets[1]'}}")))
      assert.same({ { type = "dog", age = 3 }, { type = "cat", age = 5 } },
        cjson.decode(render("{{jsonPath request.body '$.pets'}}")))
    end)

    it("renders several results as a JSON array", function()
      assert.equal('["dog","cat"]', render("{{jsonPath request.body '$.pets[*].type'}}"))
    end)

    it("evaluates filters", function()
      assert.equal("5", render("{{jsonPath request.body \"$.pets[?(@.type == 'cat')].age\"}}"))
    end)

    it("renders nothing, or the default, when nothing matches", function()
      assert.equal("[]", render("[{{jsonPath request.body '$.missing'}}]"))
      assert.equal("[d]", render("[{{jsonPath request.body '$.missing' default='d'}}]"))
    end)

    it("renders nothing when the body is not JSON", function()
      local ctx = { request = { body = "not json" } }
      assert.equal("[]", template.render("[{{jsonPath request.body '$.a'}}]", ctx))
    end)

    it("rejects a bad path when compiling", function()
      local compiled, err = template.compile("{{jsonPath request.body '$.a['}}")
      assert.is_nil(compiled)
      assert.truthy(err:find("invalid JSONPath", 1, true))
    end)

    it("decodes a body used twice in one render once, with the same results", function()
      assert.equal("Bob/42", render("{{jsonPath request.body '$.name'}}/{{jsonPath request.body '$.age'}}"))
    end)
  end)

  describe("now", function()
    it("renders UTC ISO 8601 by default", function()
      assert.equal("2024-02-29T13:04:05Z", template.render("{{now}}", {}, { now = T }))
    end)

    it("reads the clock when opts.now is not given", function()
      local before = os.date("!%Y-%m-%dT%H:%M:%SZ")
      local out = template.render("{{now}}", {})
      local after = os.date("!%Y-%m-%dT%H:%M:%SZ")
      assert.truthy(out:match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%dZ$"), out)
      assert.truthy(out == before or out == after, out)
    end)

    it("formats with yyyy MM dd HH mm ss tokens and quoted text", function()
      local opts = { now = T }
      assert.equal("2024-02-29", template.render("{{now format='yyyy-MM-dd'}}", {}, opts))
      assert.equal("13:04:05", template.render("{{now format='HH:mm:ss'}}", {}, opts))
      assert.equal("29/02/24", template.render("{{now format='dd/MM/yy'}}", {}, opts))
      assert.equal("2024-02-29T13", template.render([[{{now format="yyyy-MM-dd'T'HH"}}]], {}, opts))
    end)

    it("renders epoch milliseconds and unix seconds", function()
      local opts = { now = T }
      assert.equal("1709211845000", template.render("{{now format='epoch'}}", {}, opts))
      assert.equal("1709211845", template.render("{{now format='unix'}}", {}, opts))
    end)

    it("applies an offset", function()
      local opts = { now = T }
      assert.equal("2024-03-03T13:04:05Z", template.render("{{now offset='3 days'}}", {}, opts))
      assert.equal("2024-02-29T11:04:05Z", template.render("{{now offset='-2 hours'}}", {}, opts))
      assert.equal("2025-02-28", template.render("{{now offset='1 years' format='yyyy-MM-dd'}}", {}, opts))
      assert.equal("2024-01-29", template.render("{{now offset='-1 months' format='yyyy-MM-dd'}}", {}, opts))
    end)
  end)

  describe("randomValue", function()
    local function check(tag, pattern, length)
      local out = template.render(tag, {})
      assert.equal(length, #out, tag)
      assert.truthy(out:match(pattern), tag .. " -> " .. out)
      return out
    end

    it("draws each type from its alphabet at the given length", function()
      check("{{randomValue length=40 type='ALPHANUMERIC'}}", "^[%w]+$", 40)
      check("{{randomValue length=40 type='ALPHABETIC'}}", "^[%a]+$", 40)
      check("{{randomValue length=40 type='NUMERIC'}}", "^[%d]+$", 40)
      check("{{randomValue length=40 type='HEXADECIMAL'}}", "^[0-9a-f]+$", 40)
      check("{{randomValue length=7}}", "^[%w]+$", 7)
    end)

    it("uses both cases and digits for ALPHANUMERIC", function()
      local out = template.render("{{randomValue length=400 type='ALPHANUMERIC'}}", {})
      assert.truthy(out:find("%l") and out:find("%u") and out:find("%d"), out)
    end)

    it("upper-cases with uppercase=true", function()
      local out = check("{{randomValue length=400 type='ALPHABETIC' uppercase=true}}", "^[%u]+$", 400)
      assert.is_nil(out:find("%l"))
      check("{{randomValue length=40 type='HEXADECIMAL' uppercase=true}}", "^[0-9A-F]+$", 40)
    end)

    it("renders a version 4 UUID, ignoring length", function()
      local pattern = "^%x%x%x%x%x%x%x%x%-%x%x%x%x%-4%x%x%x%-[89ab]%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$"
      local a = check("{{randomValue type='UUID'}}", pattern, 36)
      local b = check("{{randomValue length=5 type='UUID'}}", pattern, 36)
      assert.are_not.equal(a, b)
    end)

    it("differs from one render to the next", function()
      local tag = "{{randomValue length=32}}"
      assert.are_not.equal(template.render(tag, {}), template.render(tag, {}))
    end)

    it("renders nothing for an unknown type", function()
      assert.equal("[]", template.render("[{{randomValue length=4 type='NOPE'}}]", {}))
    end)
  end)

  describe("blocks", function()
    it("chooses if, else if and else branches by Handlebars truth", function()
      local t = "{{#if request.query.nope}}A{{else if (eq request.method 'POST')}}B{{else}}C{{/if}}"
      assert.equal("B", render(t))
      assert.equal("b b b a", render("{{#if ''}}a{{else}}b{{/if}} {{#if 0}}a{{else}}b{{/if}} "
        .. "{{#if (array)}}a{{else}}b{{/if}} {{#if 'false'}}a{{else}}b{{/if}}"))
      assert.equal("none", render("{{#unless request.query.nope}}none{{/unless}}"))
    end)

    it("iterates lists and objects with this, @index, @key, @first and @last", function()
      assert.equal("[1 0 first ][2 1  last]",
        render("{{#each request.query.x}}[{{this}} {{@index}} {{@first}} {{@last}}]{{/each}}"))
      assert.equal("dog:3,cat:5", render(
        "{{#each (jsonPath request.body '$.pets')}}{{type}}:{{this.age}}{{#unless @last}},{{/unless}}{{/each}}"))
      assert.equal("age=42;", render("{{#each (jsonPath request.body '$')}}"
        .. "{{#if (eq @key 'age')}}{{@key}}={{this}};{{/if}}{{/each}}"))
      assert.equal("a0b0a1b1", render("{{#each (array 1 2)}}{{#each (array 'a' 'b')}}{{this}}{{@../index}}{{/each}}{{/each}}"))
      assert.equal("empty", render("{{#each request.query.nope}}x{{else}}empty{{/each}}"))
    end)

    it("compares as Java's equals: a query parameter is a list, 1 is not '1'", function()
      assert.equal("diff same d", render("{{#eq request.query.y 'z'}}same{{else}}diff{{/eq}} "
        .. "{{#eq request.query.y.[0] 'z'}}same{{else}}diff{{/eq}} {{#eq 1 '1'}}s{{else}}d{{/eq}}"))
      assert.equal("true false true true", render("{{gt 2 1}} {{lt 'b' 'a'}} {{and 1 'x'}} {{or 0 (not false)}}"))
    end)

    it("renders contains' body when true and nothing, not its else, when false", function()
      assert.equal("has|", render("{{#contains 'abcd' 'bc'}}has{{/contains}}|{{#contains 'abcd' 'z'}}has{{else}}no{{/contains}}"))
      assert.equal("true", render("{{contains request.query.x '2'}}"))
    end)

    it("changes the context with with, and assigns variables", function()
      assert.equal("POST /users/7/orders", render("{{#with request}}{{method}} {{path}}{{/with}}"))
      assert.equal("[hi POST]", render("{{#assign 'v'}}hi {{request.method}}{{/assign}}[{{v}}]"))
      assert.equal("x", render("{{val request.query.nope default='x' assign='w'}}{{w}}"))
    end)

    it("escapes values inside JSON strings within blocks too", function()
      assert.equal('["say \\"hi\\" \\\\ back\\nslash\\t\\u0001"]', render(
        '[{{#if request.method}}"{{request.headers.x-quote}}"{{/if}}]', { json = true }))
    end)
  end)

  describe("helpers", function()
    it("does math as Java's BigDecimal", function()
      assert.equal("3 4 3 3.0 0.3 14 1", render("{{math 1 '+' 2}} {{math 7 '/' 2}} {{math 10 '/' 4}} "
        .. "{{math 1.5 '+' 1.5}} {{math 0.1 '+' 0.2}} {{math 7 'x' 2}} {{math 7 '%' 3}}"))
      assert.equal("[ERROR: ^ is not a valid mathematical operator]", render("{{math 2 '^' 3}}"))
    end)

    it("builds and joins lists", function()
      assert.equal("[1, b, 3] [1, 2, 3] a,b 2 3", render("{{array 1 'b' 3}} {{range 1 3}} "
        .. "{{join (array 'a' 'b') ','}} {{size request.query.x}} {{size 'abc'}}"))
    end)

    it("parses, moves and formats dates", function()
      assert.equal("2024-01-02T03:04:05+02:00 2024/01/03 1704164645", render(
        "{{parseDate '2024-01-02T03:04:05+02:00'}} {{date (parseDate '2024-01-02T03:04:05Z') "
        .. "offset='1 days' format='yyyy/MM/dd'}} {{date (parseDate '2024-01-02T03:04:05Z') format='unix'}}"))
      assert.equal("Thu, 29 Feb 2024 06:34 PM +0530", template.render(
        "{{now format='EEE, dd MMM yyyy hh:mm a Z' timezone='+05:30'}}", {}, { now = T }))
      assert.equal("2024-02-29T00:00:00Z", render("{{parseDate '29/02/2024' format='dd/MM/yyyy'}}"))
    end)

    it("renders toJson as Jackson's pretty printer, without null fields", function()
      assert.equal('{\n  "a" : [ 1, 2 ]\n}', render("{{toJson (jsonPath '{\"a\":[1,2],\"b\":null}' '$')}}"))
    end)

    it("reads forms and regular expression groups into variables", function()
      local ctx = context()
      ctx.request.body = "a=1&b=x&b=y%20z"
      assert.equal("1 x y z", template.render("{{formData request.body 'f' urlDecode=true}}{{f.a}} {{f.b}} {{f.b.1}}", ctx))
    end)

    it("renders transformer parameters", function()
      assert.equal("px 5", template.render("{{parameters.x}} {{parameters.n}}", { parameters = { x = "px", n = 5 } }))
    end)
  end)

  describe("compile and render", function()
    it("returns nil and an error for an unclosed {{", function()
      local compiled, err = template.compile("abc {{request.url")
      assert.is_nil(compiled)
      assert.equal("unclosed '{{' at position 5", err)
      assert.equal("unclosed '{{{' at position 1", select(2, template.compile("{{{x}}")))
    end)

    it("renders a string that does not compile as itself, with the error", function()
      local out, err = template.render("a {{request.url", { request = { url = "/" } })
      assert.equal("a {{request.url", out)
      assert.equal("unclosed '{{' at position 3", err)
    end)

    it("returns nil and an error for an unterminated quote", function()
      local compiled, err = template.compile("{{now format='yyyy}}")
      assert.is_nil(compiled)
      assert.truthy(err:find("unterminated string", 1, true))
    end)

    it("caches compiled templates by their text", function()
      local a = assert(template.compile("cached {{request.url}}"))
      assert.equal(a, template.compile("cached {{request.url}}"))
    end)

    it("renders a compiled template", function()
      local compiled = assert(template.compile("{{request.method}} {{request.path.id}}"))
      assert.equal("POST 7", template.render(compiled, context()))
      assert.equal("POST 7", template.render(compiled, context(), { json = true }))
    end)

    it("renders text without expressions unchanged", function()
      assert.equal('{"plain": "text"}', template.render('{"plain": "text"}', {}))
      assert.equal("", template.render("", {}))
    end)

    it("raises for arguments of the wrong type", function()
      assert.has_error(function() template.compile(1) end, "template must be a string")
      assert.has_error(function() template.render(1, {}) end,
        "template must be a string or a compiled template")
      assert.has_error(function() template.render("x", "ctx") end, "ctx must be a table")
      assert.has_error(function() template.render("x", {}, true) end, "opts must be a table")
    end)
  end)
end)
