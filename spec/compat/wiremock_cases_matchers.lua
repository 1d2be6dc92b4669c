-- WireMock cases of the XML, date and JSON Schema matchers (see
-- spec/compat/wiremock_cases.lua for the shape of a case).
return function(add, h)
  local req, get, matcher = h.req, h.get, h.matcher

  local function post(path, status, body, headers)
    return req("POST", path, status, headers, body)
  end

  -- A date in UTC, days from now, as ISO-8601.
  local function iso(days, fmt)
    return os.date(fmt or "!%Y-%m-%dT%H:%M:%SZ", os.time() + math.floor(days * 86400))
  end

  ----------------------------------------------------------------------------
  -- equalToXml
  ----------------------------------------------------------------------------

  matcher("xml: equalToXml ignores white space between elements", { urlPath = "/x1", method = "POST",
      bodyPatterns = { { equalToXml = "<order><id>1</id><item>pen</item></order>" } } },
    { post("/x1", 200, "<order>\n  <id>1</id>\n  <item>pen</item>\n</order>"),
      post("/x1", 404, "<order><id>2</id><item>pen</item></order>"),
      post("/x1", 404, "<order><id>1</id></order>"),
      post("/x1", 404, "not xml"), post("/x1", 404, "") })
  matcher("xml: equalToXml ignores attribute order", { urlPath = "/x2", method = "POST",
      bodyPatterns = { { equalToXml = '<a x="1" y="2"/>' } } },
    { post("/x2", 200, '<a y="2" x="1"/>'), post("/x2", 404, '<a x="1" y="3"/>'),
      post("/x2", 404, '<a x="1"/>'), post("/x2", 404, '<a x="1" y="2" z="3"/>') })
  matcher("xml: equalToXml ignores the order of differently named siblings", { urlPath = "/x3", method = "POST",
      bodyPatterns = { { equalToXml = "<r><a>1</a><b>2</b></r>" } } },
    { post("/x3", 200, "<r><b>2</b><a>1</a></r>"), post("/x3", 404, "<r><b>1</b><a>2</a></r>"),
      post("/x3", 404, "<r><a>1</a><b>2</b><c/></r>") })
  matcher("xml: equalToXml ignores comments, trims text", { urlPath = "/x4", method = "POST",
      bodyPatterns = { { equalToXml = "<a><b>text</b></a>" } } },
    { post("/x4", 200, "<!-- c --><a><!-- inner --><b>  text  </b></a>"),
      post("/x4", 200, '<?xml version="1.0" encoding="UTF-8"?><a><b>text</b></a>'),
      post("/x4", 404, "<a><b>te xt</b></a>") })
  matcher("xml: equalToXml namespaces by URI, not prefix", { urlPath = "/x5", method = "POST",
      bodyPatterns = { { equalToXml = '<p:a xmlns:p="urn:one"><p:b>1</p:b></p:a>' } } },
    { post("/x5", 200, '<q:a xmlns:q="urn:one"><q:b>1</q:b></q:a>'),
      post("/x5", 200, '<a xmlns="urn:one"><b>1</b></a>'),
      post("/x5", 404, '<p:a xmlns:p="urn:two"><p:b>1</p:b></p:a>'),
      post("/x5", 404, '<a><b>1</b></a>') })
  matcher("xml: equalToXml CDATA and entities are text", { urlPath = "/x6", method = "POST",
      bodyPatterns = { { equalToXml = "<a>x &amp; y</a>" } } },
    { post("/x6", 200, "<a>x &amp; y</a>"), post("/x6", 404, "<a>x and y</a>") })
  matcher("xml: equalToXml placeholders", { urlPath = "/x7", method = "POST",
      bodyPatterns = { { equalToXml = "<a><id>${xmlunit.ignore}</id><n>${xmlunit.isNumber}</n></a>",
                         enablePlaceholders = true } } },
    { post("/x7", 200, "<a><id>anything</id><n>12.5</n></a>"),
      post("/x7", 404, "<a><id>anything</id><n>twelve</n></a>"),
      post("/x7", 404, "<a><n>1</n></a>") })
  matcher("xml: equalToXml placeholder matchesRegex", { urlPath = "/x8", method = "POST",
      bodyPatterns = { { equalToXml = "<a><code>${xmlunit.matchesRegex([A-Z]{3})}</code></a>",
                         enablePlaceholders = true } } },
    { post("/x8", 200, "<a><code>ABC</code></a>"), post("/x8", 404, "<a><code>AB1</code></a>") })
  matcher("xml: equalToXml placeholder in an attribute", { urlPath = "/x9", method = "POST",
      bodyPatterns = { { equalToXml = '<a id="${xmlunit.ignore}">v</a>', enablePlaceholders = true } } },
    { post("/x9", 200, '<a id="77">v</a>'), post("/x9", 404, '<a id="77">w</a>') })
  matcher("xml: equalToXml custom placeholder delimiters", { urlPath = "/x10", method = "POST",
      bodyPatterns = { { equalToXml = "<a><b>[[xmlunit.ignore]]</b><c>${xmlunit.ignore}</c></a>",
                         enablePlaceholders = true,
                         placeholderOpeningDelimiterRegex = "\\[\\[",
                         placeholderClosingDelimiterRegex = "]]" } } },
    { post("/x10", 200, "<a><b>zz</b><c>${xmlunit.ignore}</c></a>"),
      post("/x10", 404, "<a><b>zz</b><c>other</c></a>") })
  matcher("xml: equalToXml placeholders off by default", { urlPath = "/x11", method = "POST",
      bodyPatterns = { { equalToXml = "<a>${xmlunit.ignore}</a>" } } },
    { post("/x11", 404, "<a>value</a>"), post("/x11", 200, "<a>${xmlunit.ignore}</a>") })
  matcher("xml: equalToXml exemptedComparisons", { urlPath = "/x12", method = "POST",
      bodyPatterns = { { equalToXml = '<a x="1"><b>1</b></a>',
                         exemptedComparisons = { "ATTR_VALUE", "TEXT_VALUE" } } } },
    { post("/x12", 200, '<a x="2"><b>9</b></a>'), post("/x12", 404, '<a y="2"><b>9</b></a>'),
      post("/x12", 404, '<a x="1"><c>1</c></a>') })
  matcher("xml: equalToXml exempting NAMESPACE_URI", { urlPath = "/x13", method = "POST",
      bodyPatterns = { { equalToXml = '<a xmlns="urn:x"><b>1</b></a>', exemptedComparisons = { "NAMESPACE_URI" } } } },
    { post("/x13", 200, "<a><b>1</b></a>"), post("/x13", 404, "<a><b>2</b></a>") })
  matcher("xml: equalToXml in a header", { urlPath = "/x14",
      headers = { ["X-Xml"] = { equalToXml = "<v>1</v>" } } },
    { get("/x14", 200, { ["X-Xml"] = "<v> 1 </v>" }), get("/x14", 404, { ["X-Xml"] = "<v>2</v>" }),
      get("/x14", 404) })

  ----------------------------------------------------------------------------
  -- matchesXPath
  ----------------------------------------------------------------------------

  matcher("xpath: an expression that must find nodes", { urlPath = "/p1", method = "POST",
      bodyPatterns = { { matchesXPath = "/order/item[@sku='A1']" } } },
    { post("/p1", 200, '<order><item sku="A1"/></order>'),
      post("/p1", 404, '<order><item sku="B2"/></order>'),
      post("/p1", 404, "{}"), post("/p1", 404, "") })
  matcher("xpath: text() with equalTo", { urlPath = "/p2", method = "POST",
      bodyPatterns = { { matchesXPath = { expression = "/a/b/text()", equalTo = "42" } } } },
    { post("/p2", 200, "<a><b>42</b></a>"), post("/p2", 404, "<a><b>43</b></a>"),
      post("/p2", 404, "<a><c>42</c></a>") })
  matcher("xpath: any of several nodes with contains", { urlPath = "/p3", method = "POST",
      bodyPatterns = { { matchesXPath = { expression = "//name/text()", contains = "bob" } } } },
    { post("/p3", 200, "<r><name>alice</name><name>bobby</name></r>"),
      post("/p3", 404, "<r><name>alice</name><name>carol</name></r>") })
  matcher("xpath: an attribute with matches", { urlPath = "/p4", method = "POST",
      bodyPatterns = { { matchesXPath = { expression = "/a/@id", matches = "[0-9]+" } } } },
    { post("/p4", 200, '<a id="123"/>'), post("/p4", 404, '<a id="x1"/>'), post("/p4", 404, "<a/>") })
  matcher("xpath: an element's text is the element as XML", { urlPath = "/p5", method = "POST",
      bodyPatterns = { { matchesXPath = { expression = "/a/b", contains = "<c>1</c>" } } } },
    { post("/p5", 200, "<a><b><c>1</c></b></a>"), post("/p5", 404, "<a><b><c>2</c></b></a>") })
  matcher("xpath: an element is written indented, ending in a newline", { urlPath = "/p5b", method = "POST",
      bodyPatterns = { { matchesXPath = { expression = "/a/b", equalTo = "<b>\n  <c>1</c>\n</b>\n" } } } },
    { post("/p5b", 200, "<a><b><c>1</c></b></a>"), post("/p5b", 404, "<a><b><c>2</c></b></a>"),
      post("/p5b", 404, "<a><b>1</b></a>") })
  matcher("xpath: namespaces", { urlPath = "/p6", method = "POST",
      bodyPatterns = { { matchesXPath = "/s:Envelope/s:Body/m:Get",
                         xPathNamespaces = { s = "http://schemas.xmlsoap.org/soap/envelope/",
                                             m = "urn:shop" } } } },
    { post("/p6", 200, '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/">'
        .. '<soap:Body><Get xmlns="urn:shop"/></soap:Body></soap:Envelope>'),
      post("/p6", 404, '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/">'
        .. '<soap:Body><Get xmlns="urn:other"/></soap:Body></soap:Envelope>') })
  matcher("xpath: namespaces with a sub-matcher", { urlPath = "/p7", method = "POST",
      bodyPatterns = { { matchesXPath = { expression = "//x:id/text()", equalTo = "9" },
                         xPathNamespaces = { x = "urn:ids" } } } },
    { post("/p7", 200, '<r xmlns:i="urn:ids"><i:id>9</i:id></r>'),
      post("/p7", 404, '<r xmlns:i="urn:ids"><i:id>8</i:id></r>'),
      post("/p7", 404, "<r><id>9</id></r>") })
  matcher("xpath: a number, formatted as Java does", { urlPath = "/p8", method = "POST",
      bodyPatterns = { { matchesXPath = { expression = "count(//b) * 1000 div 3", equalTo = "666.667" } } } },
    { post("/p8", 200, "<a><b/><b/></a>"), post("/p8", 404, "<a><b/></a>") })
  matcher("xpath: a count, grouped", { urlPath = "/p8b", method = "POST",
      bodyPatterns = { { matchesXPath = { expression = "count(//b) * 1000", equalTo = "2,000" } } } },
    { post("/p8b", 200, "<a><b/><b/></a>"), post("/p8b", 404, "<a><b/></a>") })
  matcher("xpath: a boolean, and a bare expression that is one", { urlPath = "/p8c", method = "POST",
      bodyPatterns = { { matchesXPath = "/a/b = 5" }, { matchesXPath = { expression = "/a/b = 5", equalTo = "true" } } } },
    { post("/p8c", 200, "<a><b>5</b></a>"), post("/p8c", 404, "<a><b>4</b></a>") })
  matcher("xpath: in a header", { urlPath = "/p9",
      headers = { ["X-Doc"] = { matchesXPath = "/v[text()='1']" } } },
    { get("/p9", 200, { ["X-Doc"] = "<v>1</v>" }), get("/p9", 404, { ["X-Doc"] = "<v>2</v>" }) })
  matcher("xpath: with absent under not", { urlPath = "/p10", method = "POST",
      bodyPatterns = { { matchesXPath = "/a/b" }, { ["not"] = { matchesXPath = "/a/c" } } } },
    { post("/p10", 200, "<a><b/></a>"), post("/p10", 404, "<a><b/><c/></a>") })

  ----------------------------------------------------------------------------
  -- Dates
  ----------------------------------------------------------------------------

  matcher("dates: before an ISO instant", { urlPath = "/d1",
      headers = { ["X-When"] = { before = "2021-06-14T12:00:00Z" } } },
    { get("/d1", 200, { ["X-When"] = "2021-06-14T11:59:59Z" }),
      get("/d1", 404, { ["X-When"] = "2021-06-14T12:00:00Z" }),
      get("/d1", 200, { ["X-When"] = "2021-06-14T13:00:00+02:00" }),
      get("/d1", 404, { ["X-When"] = "not a date" }), get("/d1", 404) })
  matcher("dates: after, zoned against local", { urlPath = "/d2",
      queryParameters = { since = { after = "2021-06-14T12:00:00" } } },
    { get("/d2?since=2021-06-14T12:00:01", 200), get("/d2?since=2021-06-14T11:00:00", 404),
      get("/d2?since=2021-06-14T13:00:00Z", 200), get("/d2?since=2021-06-15", 200),
      get("/d2?since=2021-06-13", 404) })
  matcher("dates: equalToDateTime across offsets", { urlPath = "/d3",
      headers = { ["X-When"] = { equalToDateTime = "2021-06-14T12:00:00Z" } } },
    { get("/d3", 200, { ["X-When"] = "2021-06-14T14:00:00+02:00" }),
      get("/d3", 200, { ["X-When"] = "2021-06-14T12:00:00.000Z" }),
      get("/d3", 404, { ["X-When"] = "2021-06-14T12:00:01Z" }) })
  matcher("dates: RFC 1123 and asctime values", { urlPath = "/d4",
      headers = { ["X-When"] = { equalToDateTime = "2021-06-14T12:00:00Z" } } },
    { get("/d4", 200, { ["X-When"] = "Mon, 14 Jun 2021 12:00:00 GMT" }),
      get("/d4", 200, { ["X-When"] = "Mon Jun 14 12:00:00 2021" }),
      get("/d4", 404, { ["X-When"] = "Mon, 14 Jun 2021 12:00:01 GMT" }) })
  matcher("dates: actualFormat", { urlPath = "/d5",
      queryParameters = { d = { equalToDateTime = "2021-06-14T00:00:00", actualFormat = "dd/MM/yyyy" } } },
    { get("/d5?d=14/06/2021", 200), get("/d5?d=15/06/2021", 404), get("/d5?d=2021-06-14", 404) })
  matcher("dates: actualFormat with a time and a zone", { urlPath = "/d6",
      headers = { ["X-When"] = { before = "2021-06-14T12:00:00Z", actualFormat = "yyyy/MM/dd HH:mm XXX" } } },
    { get("/d6", 200, { ["X-When"] = "2021/06/14 13:30 +02:00" }),
      get("/d6", 404, { ["X-When"] = "2021/06/14 12:30 +00:00" }) })
  matcher("dates: actualFormat unix and epoch", { urlPath = "/d7",
      queryParameters = { s = { after = "2021-01-01T00:00:00Z", actualFormat = "unix" },
                          ms = { before = "2021-01-01T00:00:00Z", actualFormat = "epoch" } } },
    { get("/d7?s=1700000000&ms=1500000000000", 200), get("/d7?s=1500000000&ms=1500000000000", 404),
      get("/d7?s=1700000000&ms=1700000000000", 404) })
  matcher("dates: before now", { urlPath = "/d8",
      headers = { ["X-When"] = { before = "now" } } },
    { get("/d8", 200, { ["X-When"] = iso(-1) }), get("/d8", 404, { ["X-When"] = iso(1) }) })
  matcher("dates: after now minus an offset", { urlPath = "/d9",
      headers = { ["X-When"] = { after = "now -7 days" } } },
    { get("/d9", 200, { ["X-When"] = iso(-6) }), get("/d9", 404, { ["X-When"] = iso(-8) }) })
  matcher("dates: now plus an offset, short form", { urlPath = "/d10",
      headers = { ["X-When"] = { before = "+2 hours" } } },
    { get("/d10", 200, { ["X-When"] = iso(1 / 24) }), get("/d10", 404, { ["X-When"] = iso(3 / 24) }) })
  matcher("dates: expectedOffset and expectedOffsetUnit", { urlPath = "/d11",
      headers = { ["X-When"] = { after = "now", expectedOffset = 1, expectedOffsetUnit = "months" } } },
    { get("/d11", 200, { ["X-When"] = iso(40) }), get("/d11", 404, { ["X-When"] = iso(20) }) })
  matcher("dates: truncateExpected first day of month", { urlPath = "/d12",
      headers = { ["X-When"] = { equalToDateTime = "now", truncateExpected = "first day of month" } } },
    { get("/d12", 200, { ["X-When"] = os.date("!%Y-%m-01T00:00:00Z") }),
      get("/d12", 404, { ["X-When"] = os.date("!%Y-%m-01T00:00:01Z") }) })
  matcher("dates: truncateExpected and truncateActual", { urlPath = "/d13",
      headers = { ["X-When"] = { equalToDateTime = "now", truncateExpected = "first hour of day",
                                 truncateActual = "first hour of day" } } },
    { get("/d13", 200, { ["X-When"] = os.date("!%Y-%m-%dT") .. "05:06:07Z" }),
      get("/d13", 404, { ["X-When"] = iso(-2) }) })
  matcher("dates: truncateExpected first day of next month", { urlPath = "/d14",
      headers = { ["X-When"] = { before = "now", truncateExpected = "first day of next month" } } },
    { get("/d14", 200, { ["X-When"] = iso(0) }), get("/d14", 404, { ["X-When"] = iso(32) }) })
  matcher("dates: truncateActual last day of month", { urlPath = "/d15",
      headers = { ["X-When"] = { equalToDateTime = "2021-02-28T00:00:00Z", truncateActual = "last day of month" } } },
    { get("/d15", 200, { ["X-When"] = "2021-02-03T10:00:00Z" }),
      get("/d15", 404, { ["X-When"] = "2021-03-03T10:00:00Z" }) })
  matcher("dates: truncateActual first minute of hour and first day of year", { urlPath = "/d16",
      headers = { ["X-A"] = { equalToDateTime = "2021-06-14T12:00:00Z", truncateActual = "first minute of hour" },
                  ["X-B"] = { equalToDateTime = "2021-01-01T00:00:00Z", truncateActual = "first day of year" } } },
    { get("/d16", 200, { ["X-A"] = "2021-06-14T12:34:56Z", ["X-B"] = "2021-09-09T09:09:09Z" }),
      get("/d16", 404, { ["X-A"] = "2021-06-14T13:00:00Z", ["X-B"] = "2021-09-09T09:09:09Z" }) })
  matcher("dates: in a JSON body through matchesJsonPath", { urlPath = "/d17", method = "POST",
      bodyPatterns = { { matchesJsonPath = { expression = "$.at", before = "2030-01-01T00:00:00Z" } } } },
    { post("/d17", 200, '{"at": "2024-05-01T10:00:00Z"}'), post("/d17", 404, '{"at": "2031-05-01T10:00:00Z"}') })

  ----------------------------------------------------------------------------
  -- matchesJsonSchema
  ----------------------------------------------------------------------------

  local person = {
    type = "object", required = { "name", "age" },
    properties = { name = { type = "string", minLength = 2, maxLength = 10 },
                   age = { type = "integer", minimum = 0, maximum = 150 },
                   email = { type = "string", pattern = "@" } },
    additionalProperties = false,
  }
  matcher("schema: an object's properties, required, additionalProperties", { urlPath = "/s1", method = "POST",
      bodyPatterns = { { matchesJsonSchema = person } } },
    { post("/s1", 200, '{"name": "ann", "age": 30}'),
      post("/s1", 200, '{"name": "ann", "age": 30, "email": "a@b"}'),
      post("/s1", 404, '{"name": "ann"}'), post("/s1", 404, '{"name": "a", "age": 30}'),
      post("/s1", 404, '{"name": "ann", "age": 30.5}'), post("/s1", 404, '{"name": "ann", "age": -1}'),
      post("/s1", 404, '{"name": "ann", "age": 3, "x": 1}'),
      post("/s1", 404, '{"name": "ann", "age": 3, "email": "nope"}'), post("/s1", 404, "[]") })
  matcher("schema: given as JSON text", { urlPath = "/s2", method = "POST",
      bodyPatterns = { { matchesJsonSchema = '{"type": "array", "items": {"type": "number"}, "minItems": 1, "uniqueItems": true}' } } },
    { post("/s2", 200, "[1, 2, 3]"), post("/s2", 404, "[]"), post("/s2", 404, "[1, 1]"),
      post("/s2", 404, '[1, "2"]'), post("/s2", 404, "{}") })
  matcher("schema: enum, const, anyOf, oneOf, not", { urlPath = "/s3", method = "POST",
      bodyPatterns = { { matchesJsonSchema = { type = "object", properties = {
        kind = { enum = { "a", "b" } }, v = { const = 7 },
        id = { anyOf = { { type = "string" }, { type = "integer" } } },
        n = { oneOf = { { multipleOf = 3 }, { multipleOf = 5 } } },
        t = { ["not"] = { type = "null" } } } } } } },
    { post("/s3", 200, '{"kind": "a", "v": 7, "id": "x", "n": 9, "t": 1}'),
      post("/s3", 404, '{"kind": "c"}'), post("/s3", 404, '{"v": 8}'), post("/s3", 404, '{"id": 1.5}'),
      post("/s3", 404, '{"n": 15}'), post("/s3", 404, '{"t": null}') })
  matcher("schema: $ref to $defs and allOf", { urlPath = "/s4", method = "POST",
      bodyPatterns = { { matchesJsonSchema = {
        ["$defs"] = { point = { type = "object", required = { "x", "y" },
                                properties = { x = { type = "number" }, y = { type = "number" } } } },
        type = "array", items = { allOf = { { ["$ref"] = "#/$defs/point" }, { maxProperties = 2 } } } } } } },
    { post("/s4", 200, '[{"x": 1, "y": 2}]'), post("/s4", 404, '[{"x": 1}]'),
      post("/s4", 404, '[{"x": 1, "y": 2, "z": 3}]') })
  matcher("schema: V4 definitions and boolean exclusiveMinimum", { urlPath = "/s5", method = "POST",
      bodyPatterns = { { matchesJsonSchema = {
        definitions = { pos = { type = "number", minimum = 0, exclusiveMinimum = true } },
        type = "object", properties = { p = { ["$ref"] = "#/definitions/pos" } } }, schemaVersion = "V4" } } },
    { post("/s5", 200, '{"p": 1}'), post("/s5", 404, '{"p": 0}') })
  matcher("schema: V7 numeric exclusiveMaximum", { urlPath = "/s6", method = "POST",
      bodyPatterns = { { matchesJsonSchema = { type = "number", exclusiveMaximum = 10 }, schemaVersion = "V7" } } },
    { post("/s6", 200, "9.5"), post("/s6", 404, "10") })
  matcher("schema: V201909 and V6", { urlPath = "/s7", method = "POST",
      bodyPatterns = { { matchesJsonSchema = { type = "object", minProperties = 1 }, schemaVersion = "V201909" },
                       { matchesJsonSchema = { type = "object", propertyNames = { pattern = "^[a-z]+$" } },
                         schemaVersion = "V6" } } },
    { post("/s7", 200, '{"ab": 1}'), post("/s7", 404, "{}"), post("/s7", 404, '{"A1": 1}') })
  matcher("schema: a string value that is not JSON", { urlPath = "/s8",
      queryParameters = { q = { matchesJsonSchema = { type = "string", maxLength = 3 } } } },
    { get("/s8?q=abc", 200), get("/s8?q=abcd", 404) })
  matcher("schema: a number in a header", { urlPath = "/s9",
      headers = { ["X-N"] = { matchesJsonSchema = { type = "integer", maximum = 10 } } } },
    { get("/s9", 200, { ["X-N"] = "7" }), get("/s9", 404, { ["X-N"] = "11" }), get("/s9", 404, { ["X-N"] = "x" }) })
  matcher("schema: format is not asserted", { urlPath = "/s10", method = "POST",
      bodyPatterns = { { matchesJsonSchema = { type = "object", properties = { e = { type = "string", format = "email" } } } } } },
    { post("/s10", 200, '{"e": "a@b.c"}'), post("/s10", 200, '{"e": "nope"}') })
  matcher("schema: if, then, else", { urlPath = "/s11", method = "POST",
      bodyPatterns = { { matchesJsonSchema = { type = "object",
        ["if"] = { properties = { kind = { const = "card" } }, required = { "kind" } },
        ["then"] = { required = { "number" } }, ["else"] = { required = { "iban" } } } } } },
    { post("/s11", 200, '{"kind": "card", "number": "4111"}'), post("/s11", 200, '{"kind": "bank", "iban": "DE1"}'),
      post("/s11", 404, '{"kind": "card", "iban": "DE1"}') })

  ----------------------------------------------------------------------------
  -- The xPath and soapXPath template helpers
  ----------------------------------------------------------------------------

  add({ name = "template: xPath", mappings = { { request = { urlPath = "/tx", method = "POST" },
      response = { body = "id={{xPath request.body '/order/id/text()'}} sku={{xPath request.body '/order/item/@sku'}}"
        .. " none=[{{xPath request.body '/order/nothing/text()'}}]", transformers = { "response-template" } } } },
    requests = { post("/tx", 200, '<order><id>17</id><item sku="A1"/></order>'), post("/tx", 200, "not xml") } })
  add({ name = "template: soapXPath", mappings = { { request = { urlPath = "/tsoap", method = "POST" },
      response = { body = "user={{soapXPath request.body '/GetUser/id/text()'}}", transformers = { "response-template" } } } },
    requests = { post("/tsoap", 200, '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/">'
      .. "<soap:Body><GetUser><id>5</id></GetUser></soap:Body></soap:Envelope>") } })
end
