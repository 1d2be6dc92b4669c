-- WireMock cases of response templates: Handlebars blocks, sub-expressions,
-- hash arguments, WireMock's helpers, transformerParameters and HTML
-- escaping (spec/compat/wiremock_cases.lua loads this file; the fields
-- of a case are described there).
return function(add, h)
  local get, req = h.get, h.req

  local FORM = { ["Content-Type"] = "application/x-www-form-urlencoded" }
  local JSON = { ["Content-Type"] = "application/json" }

  -- A case of one templated stub under /h/, answering body.
  local function tpl(name, body, requests, extra)
    local response = { body = body, transformers = { "response-template" } }
    for k, v in pairs(extra or {}) do response[k] = v end
    add({ name = "templates: " .. name,
          mappings = { { request = { urlPathPattern = "/h/.*" }, response = response } },
          requests = requests })
  end

  local function post(path, body, headers)
    return req("POST", path, 200, headers or FORM, body)
  end

  -- Blocks --------------------------------------------------------------

  tpl("if/else on a query parameter", "{{#if request.query.a}}yes{{else}}no{{/if}}",
    { get("/h/if?a=1", 200), get("/h/if", 200), get("/h/if?a=", 200) })
  tpl("else if chain", "{{#if request.query.a}}A{{else if request.query.b}}B{{else}}C{{/if}}",
    { get("/h/ei?a=1", 200), get("/h/ei?b=1", 200), get("/h/ei", 200) })
  tpl("unless, with else", "{{#unless request.query.a}}none{{else}}some{{/unless}}",
    { get("/h/un", 200), get("/h/un?a=x", 200) })
  tpl("if: what is false", "{{#if ''}}a{{else}}b{{/if}} {{#if 'false'}}a{{else}}b{{/if}} "
    .. "{{#if 0}}a{{else}}b{{/if}} {{#if (array)}}a{{else}}b{{/if}} {{#if false}}a{{else}}b{{/if}}",
    { get("/h/falsy", 200) })
  tpl("each over a repeated query parameter, with @index, @first, @last",
    "{{#each request.query.id}}[{{this}} {{@index}} {{@first}} {{@last}}]{{/each}}",
    { get("/h/each?id=1&id=2&id=3", 200), get("/h/each?id=7", 200) })
  tpl("each with else when empty", "{{#each request.query.id}}[{{this}}]{{else}}empty{{/each}}",
    { get("/h/eache", 200), get("/h/eache?id=x", 200) })
  tpl("each over a JSON object, @key", "{{#each (jsonPath request.body '$.o')}}{{@key}}={{this}};{{/each}}",
    { req("POST", "/h/eacho", 200, JSON, '{"o":{"a":1,"b":"two"}}') })
  tpl("each over a JSON array of objects, this.x and x",
    "{{#each (jsonPath request.body '$.list')}}{{this.n}}:{{name}}{{#unless @last}},{{/unless}}{{/each}}",
    { req("POST", "/h/eacha", 200, JSON, '{"list":[{"n":1,"name":"a"},{"n":2,"name":"b"}]}') })
  tpl("nested each, @../index", "{{#each (array 1 2)}}{{#each (array 'a' 'b')}}{{this}}{{@../index}} {{/each}}{{/each}}",
    { get("/h/nest", 200) })
  tpl("each over the query, sorted by name", "{{#each request.query}}{{@key}}={{this}};{{/each}}",
    { get("/h/eachq?b=1&a=2&c=3", 200) })
  tpl("eq and neq blocks", "{{#eq request.query.a.[0] 'x'}}same{{else}}diff{{/eq}} "
    .. "{{#neq request.query.a.[0] 'x'}}ne{{else}}eq{{/neq}}",
    { get("/h/eq?a=x", 200), get("/h/eq?a=y", 200) })
  tpl("eq: a query parameter is a list, not a string",
    "{{#eq request.query.a 'x'}}same{{else}}diff{{/eq}} {{eq request.query.a 'x'}}",
    { get("/h/eql?a=x", 200) })
  tpl("eq: a number is not a string", "{{#eq 1 '1'}}s{{else}}d{{/eq}} {{#eq 'x' 'x'}}s{{else}}d{{/eq}}",
    { get("/h/eqn", 200) })
  tpl("contains block, no else when false",
    "[{{#contains request.query.a.[0] 'bc'}}has{{else}}no{{/contains}}]",
    { get("/h/ct?a=abcd", 200), get("/h/ct?a=xyz", 200) })
  tpl("contains on a list and as a value", "{{contains (array 'a' 'b') 'b'}} {{contains 'abc' 'z'}} "
    .. "{{#if (contains request.query.id '2')}}two{{/if}}",
    { get("/h/ctl?id=1&id=2", 200) })
  tpl("with, and its else", "{{#with request}}{{method}} {{path}}{{/with}} "
    .. "{{#with request.query.zz}}W{{else}}nothing{{/with}}",
    { get("/h/with", 200) })
  tpl("with a JSON object", "{{#with (jsonPath request.body '$.user')}}{{name}} is {{age}}{{/with}}",
    { req("POST", "/h/withj", 200, JSON, '{"user":{"name":"Ada","age":36}}') })
  tpl("comparison helpers as sub-expressions",
    "{{#if (gt 5 3)}}gt{{/if}} {{#if (lt 3 5)}}lt{{/if}} {{#if (gte 5 5)}}gte{{/if}} "
    .. "{{#if (lte 6 5)}}lte{{else}}not-lte{{/if}}",
    { get("/h/cmp", 200) })
  tpl("and, or, not", "{{#if (and true (or false true))}}T{{/if}} {{#if (not false)}}N{{/if}} "
    .. "{{#if (or (eq 1 2) (gt 5 3))}}yes{{/if}} {{#if (and (lt 1 2) (not (eq 'a' 'b')))}}ok{{/if}}",
    { get("/h/logic", 200) })
  tpl("comparison helpers as values", "{{eq 1 1}} {{eq 'a' 'b'}} {{gt 2 1}} {{and true false}} {{not true}} {{neq 1 2}}",
    { get("/h/cmpv", 200) })
  tpl("comparison on strings", "{{#if (gt request.query.a.[0] 'm')}}after{{else}}before{{/if}}",
    { get("/h/cmps?a=z", 200), get("/h/cmps?a=b", 200) })
  tpl("assign", "{{#assign 'v'}}hello {{request.query.n}}{{/assign}}[{{v}}]",
    { get("/h/assign?n=bob", 200) })

  -- Helpers -------------------------------------------------------------

  tpl("math, integers", "{{math 1 '+' 2}} {{math 7 '-' 9}} {{math 3 '*' 4}} {{math 3 'x' 4}} "
    .. "{{math 7 '/' 2}} {{math 10 '/' 4}} {{math 1 '/' 3}} {{math 7 '%' 3}}",
    { get("/h/math", 200) })
  tpl("math, decimals", "{{math 1.5 '+' 2}} {{math 1.5 '+' 1.5}} {{math 0.1 '+' 0.2}} {{math 2.5 '*' 2}}",
    { get("/h/mathd", 200) })
  tpl("math on request values and an unknown operator",
    "{{math request.query.a '*' 2}} {{math request.query.a '^' 2}} {{math 'x' '+' 1}}",
    { get("/h/mathr?a=21", 200) })
  tpl("val with default and or", "[{{val request.query.a default='d'}}] {{val request.query.b or='o'}} "
    .. "{{val request.query.n}} {{val 5}} {{val request.query.zz default=7}}",
    { get("/h/val?a=&n=3", 200), get("/h/val?a=q", 200) })
  tpl("val assign", "{{val request.query.a default='none' assign='x'}}[{{x}}]",
    { get("/h/vala?a=1", 200), get("/h/vala", 200) })
  tpl("size of strings, lists, the query, headers",
    "{{size 'abc'}} {{size (array 1 2 3)}} {{size (array)}} {{size request.query.id}}",
    { get("/h/size?id=1&id=2", 200) })
  tpl("array and range", "{{array 1 'b' 3}} {{array}} {{range 1 5}} {{range 0 2}} {{size (range 1 3)}} "
    .. "{{#each (range 1 3)}}{{this}}{{/each}} {{range 3}}",
    { get("/h/arr", 200) })
  tpl("join", "{{join (array 'a' 'b' 'c') ','}} {{join (array 'a' 'b') ', ' prefix='[' suffix=']'}} "
    .. "{{join request.query.id '-'}}",
    { get("/h/join?id=1&id=2", 200) })
  tpl("substring, replace, abbreviate, defaultIfEmpty",
    "{{substring 'abcdef' 1 3}} {{substring 'abcdef' 2}} {{replace 'aXbX' 'X' '-'}} "
    .. "{{abbreviate 'hello world' 8}} {{defaultIfEmpty '' 'dflt'}} {{defaultIfEmpty 'v' 'dflt'}}",
    { get("/h/str", 200) })
  tpl("capitalizeFirst and string helpers over sub-expressions",
    "{{capitalizeFirst 'hello world'}} {{upper (substring request.query.a.[0] 0 2)}} {{trim (val '  x  ')}}",
    { get("/h/cap?a=abc", 200) })
  tpl("toJson of a list", "{{toJson (array 1 'b' true)}}", { get("/h/tojson", 200) })
  tpl("toJson of the query", "{{toJson request.query}}", { get("/h/tojsonq?b=2&a=1", 200) })
  tpl("toJson of a JSON value", "{{toJson (jsonPath request.body '$.o')}}",
    { req("POST", "/h/tojsonj", 200, JSON, '{"o":{"a":[1,2],"b":{"c":null}}}') })
  tpl("formatJson and jsonMerge", "{{formatJson '{\"a\":1,\"b\":[1,2]}'}}", { get("/h/fmt", 200) })
  tpl("jsonMerge", "{{jsonMerge '{\"a\":1,\"n\":{\"x\":1}}' '{\"b\":2,\"n\":{\"y\":2}}'}}", { get("/h/merge", 200) })
  tpl("formatJson compact", "{{formatJson request.body format='compact'}}",
    { req("POST", "/h/fmtc", 200, JSON, '{ "a" : [ 1, 2 ] }') })
  tpl("pickRandom from one choice, and a list", "{{pickRandom 'only'}} {{pickRandom (array 'z')}} "
    .. "{{pickRandom request.query.id}}", { get("/h/pick?id=q", 200) })
  tpl("pickRandom among several", "{{pickRandom 'a' 'b' 'c'}}",
    { { method = "GET", path = "/h/pickn", status = 200,
        transform = function(b) return (b == "a" or b == "b" or b == "c") and "one of them" or b end } })
  tpl("regexExtract, first match", "{{regexExtract request.query.a '[0-9]+'}}",
    { get("/h/re?a=x42y7", 200) })
  tpl("regexExtract into a variable, groups", "{{regexExtract request.query.a '([a-z]+)=([0-9]+)' 'g'}}"
    .. "{{g.0}}|{{g.1}}|{{size g}}",
    { get("/h/reg?a=k%3D12", 200) })
  tpl("regexExtract, every match's groups", "{{regexExtract 'a1 b2 c3' '([a-z])([0-9])' 'p'}}"
    .. "{{#each p}}{{this}}.{{/each}}",
    { get("/h/regs", 200) })
  tpl("regexExtract, nothing matched", "[{{regexExtract 'abc' '[0-9]+'}}] [{{regexExtract 'abc' '[0-9]+' default='none'}}]",
    { get("/h/ren", 200) })
  tpl("regexExtract, a backslash class", "{{regexExtract request.query.a '\\d+'}}", { get("/h/red?a=ab123c", 200) })
  tpl("formData", "{{formData request.body 'f'}}{{f.a}} {{f.b}} {{f.b.1}} {{size f.b}}",
    { post("/h/form", "a=1&b=x&b=y%20z") })
  tpl("formData, urlDecode", "{{formData request.body 'f' urlDecode=true}}{{f.b.1}} {{f.c}}",
    { post("/h/formd", "a=1&b=x&b=y%20z&c=%C3%A9%26") })
  tpl("formData, each field", "{{formData request.body 'f'}}{{#each f}}{{@key}}={{this}};{{/each}}",
    { post("/h/forme", "x=1&y=2") })
  tpl("request.cookies", "{{request.cookies.session}} {{request.cookies.other}} [{{request.cookies.none}}]",
    { get("/h/cookie", 200, { Cookie = "session=abc123; other=x" }) })
  tpl("request.query by index and size", "{{request.query.id.[0]}} {{request.query.id.[1]}} "
    .. "[{{request.query.id.[2]}}] {{request.query.id}}",
    { get("/h/qidx?id=1&id=2", 200) })
  tpl("request.pathSegments as a whole renders the path", "{{request.pathSegments}} {{request.path}}",
    { get("/h/ps/x", 200) })
  tpl("request.clientIp", "{{request.clientIp}}", { get("/h/ip", 200) })
  tpl("lower, upper on a header", "{{lower request.headers.X-Name}} {{upper request.headers.x-name}}",
    { get("/h/hdr", 200, { ["X-Name"] = "MiXed" }) })

  -- Dates ---------------------------------------------------------------

  tpl("parseDate, ISO 8601 and others", "{{parseDate '2024-01-02T03:04:05Z'}} | "
    .. "{{parseDate '2024-01-02T03:04:05+02:00'}} | {{parseDate '2024-01-02T03:04:05.123Z'}} | "
    .. "{{parseDate 'Tue, 02 Jan 2024 03:04:05 GMT'}} | [{{parseDate '2024-01-02'}}]",
    { get("/h/pd", 200) })
  tpl("parseDate with a format, epoch and unix", "{{parseDate '02/01/2024' format='dd/MM/yyyy'}} | "
    .. "{{parseDate '1700000000' format='unix'}} | {{parseDate '1700000000000' format='epoch'}} | "
    .. "{{parseDate request.query.d format='yyyy-MM-dd HH:mm'}}",
    { get("/h/pdf?d=2023-05-06%2007:08", 200) })
  tpl("date and dateFormat", "{{date (parseDate '2024-01-02T03:04:05Z') format='yyyy/MM/dd'}} | "
    .. "{{dateFormat (parseDate '2024-01-02T03:04:05Z') 'yyyy'}} | "
    .. "{{date (parseDate '2024-01-02T03:04:05Z') offset='1 days'}} | "
    .. "{{date (parseDate '2024-02-29T10:00:00Z') offset='1 years'}} | "
    .. "{{date (parseDate '2024-01-02T03:04:05Z') format='epoch'}} | "
    .. "{{date (parseDate '2024-01-02T03:04:05Z') format='unix'}}",
    { get("/h/date", 200) })
  tpl("date formats: names and offsets", "{{date (parseDate '2024-01-02T15:04:05Z') "
    .. "format='EEE, dd MMM yyyy hh:mm a'}} | {{date (parseDate '2024-03-02T03:04:05Z') format='EEEE MMMM d'}} | "
    .. "{{date (parseDate '2024-01-02T03:04:05Z') format='HH:mm XXX' timezone='+05:30'}}",
    { get("/h/datef", 200) })
  tpl("now with a fixed time zone", "{{now timezone='UTC' format='XXX'}} {{now timezone='+02:00' format='Z'}}",
    { get("/h/nowtz", 200) })
  tpl("now with offsets in each unit", "{{now offset='1 years' format='yyyy'}}",
    { { method = "GET", path = "/h/nowo", status = 200,
        transform = function(b) return tostring(tonumber(b) - tonumber(os.date("!%Y"))) end } })
  tpl("now fed to date", "{{date (now) format='yyyy'}} {{date (now offset='-1 days') format='yyyy-MM-dd'}}",
    { { method = "GET", path = "/h/nowd", status = 200,
        transform = function(b) return (b:gsub("%d", "9")) end } })

  -- Random values -------------------------------------------------------

  local function shape(b) return (b:gsub("%d", "9"):gsub("%u", "A"):gsub("%l", "a")) end
  tpl("randomValue UUID and uppercase", "{{randomValue type='UUID'}} {{randomValue length=4 type='ALPHABETIC' uppercase=true}}",
    { { method = "GET", path = "/h/rnd", status = 200, transform = function(b)
        return (b:gsub("^%x%x%x%x%x%x%x%x%-%x%x%x%x%-4%x%x%x%-[89ab]%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x", "UUID")
          :gsub("%u%u%u%u$", "AAAA")) end } })
  tpl("randomValue ALPHANUMERIC_AND_SYMBOLS", "{{randomValue length=10 type='ALPHANUMERIC_AND_SYMBOLS'}}",
    { { method = "GET", path = "/h/rnds", status = 200,
        transform = function(b) return #b .. (b:find("^[!-~]+$") and "ok" or "?") end } })
  tpl("randomInt and randomDecimal", "{{randomInt lower=5 upper=6}} {{randomInt lower=1 upper=100}} "
    .. "{{randomDecimal lower=1 upper=2}}",
    { { method = "GET", path = "/h/rndn", status = 200, transform = function(b)
        local a, n, d = b:match("^(%d+) (%d+) ([%d%.]+)$")
        return a and (a .. " " .. tostring(tonumber(n) >= 1 and tonumber(n) < 100)
          .. " " .. tostring(tonumber(d) >= 1 and tonumber(d) < 2)) or b end } })
  tpl("randomValue with shape", "{{randomValue length=3 type='NUMERIC'}}-{{randomValue length=2 type='HEXADECIMAL'}}",
    { { method = "GET", path = "/h/rndh", status = 200, transform = function(b)
        return (shape(b):gsub("[9a]", "x")) end } })

  -- transformerParameters and escaping ------------------------------------

  tpl("transformerParameters", "{{parameters.name}} {{parameters.n}} {{parameters.nested.k}} "
    .. "{{math parameters.n '+' 1}} {{#each parameters.list}}{{this}}{{/each}}",
    { get("/h/params", 200) },
    { transformerParameters = { name = "px", n = 5, nested = { k = "v" }, list = { "a", "b" } } })
  tpl("no HTML escaping in a text body", "a{{request.query.v}}b {{{request.query.v}}}",
    { get("/h/esc?v=%3C%26%3E%22%27%60%3D", 200) })
  tpl("no HTML escaping in a JSON body outside strings", '{"v": {{request.body}} }',
    { req("POST", "/h/escj", 200, JSON, '{"h":"<b>&amp;</b>"}') }, { headers = JSON })
  tpl("no HTML escaping in a header", "x", { get("/h/esch?v=%3Ca%3E%26", 200) },
    { headers = { ["X-V"] = "{{request.query.v}}" } })
  tpl("no HTML escaping of helpers' output", "{{jsonPath request.body '$.h'}} {{upper request.query.v}}",
    { req("POST", "/h/esco?v=%3Cx%3E", 200, JSON, '{"h":"<b>&</b>"}') })
  add({ name = "templates: no HTML escaping in an .html body file",
    files = { ["esc.html"] = "<p>{{request.query.v}}</p>" },
    mappings = { { request = { urlPath = "/h/escf" },
      response = { bodyFileName = "esc.html", headers = { ["Content-Type"] = "text/html" },
                   transformers = { "response-template" } } } },
    requests = { get("/h/escf?v=%3Cb%3E%26", 200) } })
  add({ name = "templates: no HTML escaping in jsonBody",
    mappings = { { request = { urlPath = "/h/escjb" },
      response = { jsonBody = { v = "{{request.query.v}}", n = "{{math 1 '+' 1}}" },
                   transformers = { "response-template" } } } },
    requests = { get("/h/escjb?v=%3Cb%3E%26", 200) } })

  -- Blocks in JSON bodies -------------------------------------------------

  tpl("each building a JSON array", '{"items": [{{#each request.query.id}}{"id": {{this}} }'
    .. '{{#unless @last}},{{/unless}}{{/each}}]}',
    { get("/h/ja?id=1&id=2&id=3", 200), get("/h/ja", 200) }, { headers = JSON })
  tpl("if in a JSON body", '{"admin": {{#if (eq request.headers.X-Role.[0] \'admin\')}}true{{else}}false{{/if}} }',
    { get("/h/jif", 200, { ["X-Role"] = "admin" }), get("/h/jif", 200) }, { headers = JSON })
end
