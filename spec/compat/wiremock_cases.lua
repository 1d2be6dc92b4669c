-- The cases spec/compat/wiremock_diff_spec.lua runs against the real
-- WireMock and moonport's mock. Each case:
--   name      unique, says what is checked
--   mappings  WireMock JSON mappings (as Lua tables), loaded in order
--             through POST /__admin/mappings; an id is given to each
--             unless it has one (or the case says no_ids)
--   files     name -> contents, written under __files/ of both roots
--   requests  sent in order to both: method (GET), path, headers (a map,
--             or {name, value} pairs), body; status: what WireMock must
--             answer (the case is written for it); min_ms: neither may
--             answer sooner; project: function(decoded JSON body) -> what
--             is compared; transform: function(body) -> what is compared
--             (for values that change); compare_reason: the reason phrase
--             too; compare_headers: more header names to compare;
--             body_compare = false: the body is not compared (for an
--             admin call that is a step, not what the case checks);
--             fault = true: a fault, compared by how the exchange ends;
--             poll: function(decoded JSON body) -> true once the answer is
--             the one to compare (sent again until then, up to poll_s
--             seconds, 10: for what happens after an answer, a webhook);
--             own_host = true: Host names the server, with its port
--   wiremock_404  run against `moonport --mock --wiremock-404`: the 404
--             page of an unmatched request is compared byte for byte
--   differs   a deliberate difference, its reason (listed in README.md),
--             with differ_in: the aspects that differ ("status", "body",
--             "header:Name")
local T = { wiremock_version = "3.13.2" }

-- Differences that hold in every case, and that the runner allows.
T.global = {
  { what = "Unmatched requests",
    reason = "both answer 404, each with its own report in the body: WireMock's diff "
      .. "table, moonport's `No stub matched ...` with the three closest stubs "
      .. "(see [Matching](#matching)); with `--wiremock-404` moonport's is WireMock's page, "
      .. "compared byte for byte (see [WireMock's 404 page](#wiremocks-404-page))." },
  { what = "Content-Type when the mapping gives none",
    reason = "WireMock sends none; moonport's core labels every body: `text/plain; "
      .. "charset=utf-8`, or `application/json` for a `jsonBody` or a `.json` body file." },
  { what = "CORS",
    reason = "moonport answers stubs with `Access-Control-Allow-Origin` and answers "
      .. "preflights itself (see [CORS](#cors); `--no-cors` turns it off); "
      .. "WireMock sends no CORS headers unless started with `--enable-stub-cors`. "
      .. "CORS fields are not compared." },
  { what = "Server's own headers",
    reason = "`Date`, `Server`, framing (`Content-Length` or chunked), WireMock's "
      .. "`Matched-Stub-Id` and `Vary`, and moonport's validators on body files "
      .. "(`ETag`, `Last-Modified`, `Accept-Ranges`) are not compared." },
}

local cjson_null = require("cjson").null

local cases = {}
T.cases = cases

local function add(c) cases[#cases + 1] = c end

local function get(path, status, headers)
  return { method = "GET", path = path, status = status, headers = headers }
end

local function req(method, path, status, headers, body)
  return { method = method, path = path, status = status, headers = headers, body = body }
end

-- A case of one mapping answering "ok" when its request matches.
local function matcher(name, request, requests)
  add({ name = name, mappings = { { request = request, response = { status = 200, body = "ok" } } },
        requests = requests })
end

------------------------------------------------------------------------------
-- URLs
------------------------------------------------------------------------------

matcher("url: exact path", { method = "GET", url = "/exact" },
  { get("/exact", 200), get("/exact/", 404), get("/exact?x=1", 404), get("/other", 404) })

matcher("url: path and query string, exactly", { url = "/q?a=1&b=2" },
  { get("/q?a=1&b=2", 200), get("/q?b=2&a=1", 404), get("/q", 404) })
matcher("url: percent-encoded, as sent", { url = "/enc/a%20b" },
  { get("/enc/a%20b", 200), get("/enc/a+b", 404) })
matcher("urlPath: any query string", { urlPath = "/p" },
  { get("/p", 200), get("/p?x=1&y=2", 200), get("/p/", 404), get("/p/x", 404) })
matcher("urlPath: trailing slash is part of the path", { urlPath = "/slash/" },
  { get("/slash/", 200), get("/slash", 404) })
matcher("urlPattern: whole URL against a regex", { urlPattern = "/pat/[0-9]+" },
  { get("/pat/12", 200), get("/pat/ab", 404), get("/pat/12?x=1", 404), get("/pat/12/3", 404) })
matcher("urlPattern: query string in the pattern", { urlPattern = "/pq\\?a=[a-z]+" },
  { get("/pq?a=abc", 200), get("/pq?a=1", 404), get("/pq", 404) })
matcher("urlPattern: catch-all", { urlPattern = ".*" },
  { get("/", 200), get("/any/thing?x=y", 200), req("POST", "/p", 200, nil, "b") })
matcher("urlPathPattern: path only", { urlPathPattern = "/pp/[a-z]+" },
  { get("/pp/abc", 200), get("/pp/abc?x=1", 200), get("/pp/ABC", 404), get("/pp/abc/d", 404) })
matcher("urlPathPattern: alternation", { urlPathPattern = "/(cats|dogs)/[0-9]+" },
  { get("/cats/1", 200), get("/dogs/22", 200), get("/birds/1", 404) })
matcher("urlPathPattern: whole path, not a part", { urlPathPattern = "/part" },
  { get("/part", 200), get("/partial", 404), get("/x/part", 404) })
matcher("urlPathTemplate: one parameter", { urlPathTemplate = "/users/{id}" },
  { get("/users/1", 200), get("/users/abc?x=1", 200), get("/users/1/x", 404), get("/users", 404) })
matcher("urlPathTemplate: two parameters", { urlPathTemplate = "/orgs/{org}/repos/{repo}" },
  { get("/orgs/a/repos/b", 200), get("/orgs/a/repos", 404), get("/orgs/a/x/b", 404) })
matcher("pathParameters: equalTo", { urlPathTemplate = "/items/{id}", pathParameters = { id = { equalTo = "7" } } },
  { get("/items/7", 200), get("/items/8", 404) })
matcher("pathParameters: matches", { urlPathTemplate = "/items2/{id}", pathParameters = { id = { matches = "[0-9]+" } } },
  { get("/items2/42", 200), get("/items2/x", 404) })
matcher("pathParameters: doesNotMatch", { urlPathTemplate = "/items3/{id}", pathParameters = { id = { doesNotMatch = "[0-9]+" } } },
  { get("/items3/x", 200), get("/items3/4", 404) })
matcher("pathParameters: two, both must match", {
    urlPathTemplate = "/a/{x}/b/{y}", pathParameters = { x = { equalTo = "1" }, y = { contains = "z" } } },
  { get("/a/1/b/xzy", 200), get("/a/2/b/z", 404), get("/a/1/b/q", 404) })

------------------------------------------------------------------------------
-- Methods
------------------------------------------------------------------------------

matcher("method: GET only", { method = "GET", urlPath = "/m" },
  { get("/m", 200), req("POST", "/m", 404, nil, ""), req("DELETE", "/m", 404) })
matcher("method: ANY", { method = "ANY", urlPath = "/many" },
  { get("/many", 200), req("PUT", "/many", 200, nil, "x"), req("PATCH", "/many", 200, nil, "y") })
matcher("method: absent means any", { urlPath = "/mnone" },
  { get("/mnone", 200), req("DELETE", "/mnone", 200) })
matcher("method: POST", { method = "POST", urlPath = "/mpost" },
  { req("POST", "/mpost", 200, nil, "x"), get("/mpost", 404) })
matcher("method: PUT", { method = "PUT", urlPath = "/mput" },
  { req("PUT", "/mput", 200, nil, "x"), req("POST", "/mput", 404, nil, "x") })
matcher("method: DELETE", { method = "DELETE", urlPath = "/mdel" },
  { req("DELETE", "/mdel", 200), get("/mdel", 404) })
matcher("method: PATCH", { method = "PATCH", urlPath = "/mpatch" },
  { req("PATCH", "/mpatch", 200, nil, "{}"), req("PUT", "/mpatch", 404, nil, "{}") })
matcher("method: OPTIONS without a preflight", { method = "OPTIONS", urlPath = "/mopt" },
  { req("OPTIONS", "/mopt", 200), get("/mopt", 404) })

------------------------------------------------------------------------------
-- Query parameters
------------------------------------------------------------------------------

matcher("query: equalTo", { urlPath = "/qe", queryParameters = { a = { equalTo = "1" } } },
  { get("/qe?a=1", 200), get("/qe?a=1&b=2", 200), get("/qe?a=2", 404), get("/qe", 404) })
matcher("query: equalTo a decoded value", { urlPath = "/qd", queryParameters = { q = { equalTo = "a b/c" } } },
  { get("/qd?q=a%20b%2Fc", 200), get("/qd?q=a%20b", 404) })
matcher("query: contains", { urlPath = "/qc", queryParameters = { s = { contains = "ell" } } },
  { get("/qc?s=hello", 200), get("/qc?s=help", 404) })
matcher("query: matches", { urlPath = "/qm", queryParameters = { n = { matches = "[0-9]{3}" } } },
  { get("/qm?n=123", 200), get("/qm?n=1234", 404), get("/qm?n=12", 404) })
matcher("query: doesNotMatch", { urlPath = "/qn", queryParameters = { n = { doesNotMatch = "[0-9]+" } } },
  { get("/qn?n=abc", 200), get("/qn?n=12", 404) })
matcher("query: doesNotMatch is satisfied by a missing parameter", { urlPath = "/qn2", queryParameters = { n = { doesNotMatch = "x" } } },
  { get("/qn2?n=y", 200), get("/qn2", 200), get("/qn2?n=x", 404) })
matcher("query: absent", { urlPath = "/qa", queryParameters = { debug = { absent = true } } },
  { get("/qa", 200), get("/qa?other=1", 200), get("/qa?debug=1", 404) })
add({ name = "query: absent false",
  differs = "moonport reads `\"absent\": false` as \"present\"; WireMock treats any `absent` key as `absent: true`",
  differ_in = { "status", "body" },
  mappings = { { request = { urlPath = "/qp", queryParameters = { debug = { absent = false } } }, response = { body = "ok" } } },
  requests = { get("/qp?debug=1", 404), get("/qp", 200) } })
matcher("query: equalTo caseInsensitive", { urlPath = "/qi", queryParameters = { k = { equalTo = "Hello", caseInsensitive = true } } },
  { get("/qi?k=hello", 200), get("/qi?k=HELLO", 200), get("/qi?k=hell", 404) })
matcher("query: repeated parameter, any value matches", { urlPath = "/qr", queryParameters = { id = { equalTo = "2" } } },
  { get("/qr?id=1&id=2", 200), get("/qr?id=2&id=3", 200), get("/qr?id=1&id=3", 404) })
matcher("query: two parameters, both must match", {
    urlPath = "/q2", queryParameters = { a = { equalTo = "1" }, b = { equalTo = "2" } } },
  { get("/q2?a=1&b=2", 200), get("/q2?b=2&a=1", 200), get("/q2?a=1", 404), get("/q2?a=1&b=3", 404) })
matcher("query: empty value", { urlPath = "/qz", queryParameters = { e = { equalTo = "" } } },
  { get("/qz?e=", 200), get("/qz?e=1", 404) })
matcher("query: and", { urlPath = "/qand", queryParameters = { v = { ["and"] = {
    { matches = "[a-z]+" }, { contains = "b" } } } } },
  { get("/qand?v=abc", 200), get("/qand?v=acd", 404), get("/qand?v=ab1", 404) })
matcher("query: or", { urlPath = "/qor", queryParameters = { v = { ["or"] = {
    { equalTo = "x" }, { equalTo = "y" } } } } },
  { get("/qor?v=x", 200), get("/qor?v=y", 200), get("/qor?v=z", 404) })
matcher("query: with url pattern", { urlPathPattern = "/qpat/.*", queryParameters = { t = { equalTo = "1" } } },
  { get("/qpat/a?t=1", 200), get("/qpat/a?t=2", 404) })

------------------------------------------------------------------------------
-- Headers
------------------------------------------------------------------------------

matcher("header: equalTo", { urlPath = "/he", headers = { ["X-Key"] = { equalTo = "abc" } } },
  { get("/he", 200, { ["X-Key"] = "abc" }), get("/he", 404, { ["X-Key"] = "abd" }), get("/he", 404) })
matcher("header: name is case-insensitive", { urlPath = "/hn", headers = { ["x-lower"] = { equalTo = "v" } } },
  { get("/hn", 200, { ["X-LOWER"] = "v" }), get("/hn", 200, { ["X-Lower"] = "v" }) })
matcher("header: value is case-sensitive", { urlPath = "/hv", headers = { ["X-V"] = { equalTo = "Value" } } },
  { get("/hv", 200, { ["X-V"] = "Value" }), get("/hv", 404, { ["X-V"] = "value" }) })
matcher("header: equalTo caseInsensitive", { urlPath = "/hci", headers = { ["X-V"] = { equalTo = "Value", caseInsensitive = true } } },
  { get("/hci", 200, { ["X-V"] = "vALUE" }), get("/hci", 404, { ["X-V"] = "values" }) })
matcher("header: contains", { urlPath = "/hc", headers = { Accept = { contains = "json" } } },
  { get("/hc", 200, { Accept = "application/json" }), get("/hc", 200, { Accept = "text/html, application/json;q=0.9" }),
    get("/hc", 404, { Accept = "text/html" }) })
matcher("header: matches", { urlPath = "/hm", headers = { ["X-Id"] = { matches = "[A-F0-9]{4}" } } },
  { get("/hm", 200, { ["X-Id"] = "BEEF" }), get("/hm", 404, { ["X-Id"] = "beef" }), get("/hm", 404) })
matcher("header: doesNotMatch", { urlPath = "/hd", headers = { ["User-Agent"] = { doesNotMatch = ".*bot.*" } } },
  { get("/hd", 200, { ["User-Agent"] = "curl" }), get("/hd", 404, { ["User-Agent"] = "a bot" }) })
matcher("header: doesNotMatch is satisfied by a missing header", { urlPath = "/hd2", headers = { ["X-None"] = { doesNotMatch = "x" } } },
  { get("/hd2", 200, { ["X-None"] = "y" }), get("/hd2", 200), get("/hd2", 404, { ["X-None"] = "x" }) })
matcher("header: absent", { urlPath = "/ha", headers = { ["X-Debug"] = { absent = true } } },
  { get("/ha", 200), get("/ha", 404, { ["X-Debug"] = "1" }) })
add({ name = "header: absent false",
  differs = "moonport reads `\"absent\": false` as \"present\"; WireMock treats any `absent` key as `absent: true`",
  differ_in = { "status", "body" },
  mappings = { { request = { urlPath = "/hp", headers = { ["X-Debug"] = { absent = false } } }, response = { body = "ok" } } },
  requests = { get("/hp", 404, { ["X-Debug"] = "on" }), get("/hp", 200) } })
matcher("header: two headers", { urlPath = "/h2", headers = { ["X-A"] = { equalTo = "1" }, ["X-B"] = { equalTo = "2" } } },
  { get("/h2", 200, { ["X-A"] = "1", ["X-B"] = "2" }), get("/h2", 404, { ["X-A"] = "1" }) })
matcher("header: Content-Type of a POST", { method = "POST", urlPath = "/hct",
    headers = { ["Content-Type"] = { equalTo = "application/json" } } },
  { req("POST", "/hct", 200, { ["Content-Type"] = "application/json" }, "{}"),
    req("POST", "/hct", 404, { ["Content-Type"] = "text/plain" }, "{}") })
matcher("header: and", { urlPath = "/hand", headers = { ["X-T"] = { ["and"] = {
    { contains = "a" }, { contains = "b" } } } } },
  { get("/hand", 200, { ["X-T"] = "ab" }), get("/hand", 404, { ["X-T"] = "a" }) })
matcher("header: or", { urlPath = "/hor", headers = { ["X-T"] = { ["or"] = {
    { equalTo = "a" }, { matches = "b+" } } } } },
  { get("/hor", 200, { ["X-T"] = "a" }), get("/hor", 200, { ["X-T"] = "bbb" }), get("/hor", 404, { ["X-T"] = "c" }) })
matcher("header: Authorization bearer", { urlPath = "/hauth", headers = { Authorization = { equalTo = "Bearer t0k3n" } } },
  { get("/hauth", 200, { Authorization = "Bearer t0k3n" }), get("/hauth", 404, { Authorization = "Bearer other" }) })

------------------------------------------------------------------------------
-- Cookies
------------------------------------------------------------------------------

matcher("cookie: equalTo", { urlPath = "/ce", cookies = { session = { equalTo = "abc" } } },
  { get("/ce", 200, { Cookie = "session=abc" }), get("/ce", 404, { Cookie = "session=abd" }), get("/ce", 404) })
matcher("cookie: among several", { urlPath = "/cs", cookies = { b = { equalTo = "2" } } },
  { get("/cs", 200, { Cookie = "a=1; b=2; c=3" }), get("/cs", 404, { Cookie = "a=1; c=3" }) })
matcher("cookie: contains", { urlPath = "/cc", cookies = { s = { contains = "xy" } } },
  { get("/cc", 200, { Cookie = "s=axyb" }), get("/cc", 404, { Cookie = "s=ab" }) })
matcher("cookie: matches", { urlPath = "/cm", cookies = { n = { matches = "[0-9]+" } } },
  { get("/cm", 200, { Cookie = "n=123" }), get("/cm", 404, { Cookie = "n=12a" }) })
matcher("cookie: doesNotMatch", { urlPath = "/cd", cookies = { n = { doesNotMatch = "[0-9]+" } } },
  { get("/cd", 200, { Cookie = "n=abc" }), get("/cd", 404, { Cookie = "n=12" }) })
matcher("cookie: doesNotMatch needs the cookie", { urlPath = "/cd2", cookies = { n = { doesNotMatch = "x" } } },
  { get("/cd2", 200, { Cookie = "n=y" }), get("/cd2", 404), get("/cd2", 404, { Cookie = "n=x" }) })
matcher("cookie: absent", { urlPath = "/ca", cookies = { track = { absent = true } } },
  { get("/ca", 200), get("/ca", 200, { Cookie = "other=1" }), get("/ca", 404, { Cookie = "track=1" }) })
matcher("cookie: two cookies", { urlPath = "/c2", cookies = { a = { equalTo = "1" }, b = { equalTo = "2" } } },
  { get("/c2", 200, { Cookie = "b=2; a=1" }), get("/c2", 404, { Cookie = "a=1" }) })
matcher("cookie: equalTo caseInsensitive", { urlPath = "/cci", cookies = { t = { equalTo = "AbC", caseInsensitive = true } } },
  { get("/cci", 200, { Cookie = "t=abc" }), get("/cci", 404, { Cookie = "t=abd" }) })

------------------------------------------------------------------------------
-- Basic auth
------------------------------------------------------------------------------

matcher("basicAuth: right credentials", { urlPath = "/ba",
    basicAuthCredentials = { username = "user", password = "pass" } },
  { get("/ba", 200, { Authorization = "Basic dXNlcjpwYXNz" }),
    get("/ba", 404, { Authorization = "Basic dXNlcjp3cm9uZw==" }),
    get("/ba", 404) })
matcher("basicAuth: password with a colon", { urlPath = "/ba2",
    basicAuthCredentials = { username = "u", password = "p:w" } },
  { get("/ba2", 200, { Authorization = "Basic dTpwOnc=" }), get("/ba2", 404, { Authorization = "Basic dTpw" }) })
matcher("basicAuth: with a header matcher", { urlPath = "/ba3",
    basicAuthCredentials = { username = "a", password = "b" }, headers = { ["X-T"] = { equalTo = "1" } } },
  { get("/ba3", 200, { Authorization = "Basic YTpi", ["X-T"] = "1" }),
    get("/ba3", 404, { Authorization = "Basic YTpi" }) })

------------------------------------------------------------------------------
-- Bodies
------------------------------------------------------------------------------

local function post(path, body, status, headers)
  return req("POST", path, status, headers, body)
end
local JSON = { ["Content-Type"] = "application/json" }

matcher("body: equalTo", { method = "POST", urlPath = "/be", bodyPatterns = { { equalTo = "hello" } } },
  { post("/be", "hello", 200), post("/be", "hello!", 404), post("/be", "", 404) })
matcher("body: equalTo caseInsensitive", { method = "POST", urlPath = "/bei",
    bodyPatterns = { { equalTo = "Hello", caseInsensitive = true } } },
  { post("/bei", "HELLO", 200), post("/bei", "HELL", 404) })
matcher("body: contains", { method = "POST", urlPath = "/bc", bodyPatterns = { { contains = "needle" } } },
  { post("/bc", "hay needle hay", 200), post("/bc", "hay", 404) })
matcher("body: matches", { method = "POST", urlPath = "/bm", bodyPatterns = { { matches = "^id=[0-9]+$" } } },
  { post("/bm", "id=42", 200), post("/bm", "id=x", 404) })
matcher("body: matches across lines", { method = "POST", urlPath = "/bml", bodyPatterns = { { matches = "(?s)a.*b" } } },
  { post("/bml", "a\nx\nb", 200), post("/bml", "a\nx\nc", 404) })
matcher("body: doesNotMatch", { method = "POST", urlPath = "/bn", bodyPatterns = { { doesNotMatch = ".*secret.*" } } },
  { post("/bn", "public", 200), post("/bn", "a secret", 404) })
matcher("body: two patterns, both must match", { method = "POST", urlPath = "/b2",
    bodyPatterns = { { contains = "a" }, { contains = "b" } } },
  { post("/b2", "ab", 200), post("/b2", "a", 404) })
matcher("body: and", { method = "POST", urlPath = "/band",
    bodyPatterns = { { ["and"] = { { contains = "x" }, { matches = "[a-z]+" } } } } },
  { post("/band", "axb", 200), post("/band", "ax1", 404) })
matcher("body: or", { method = "POST", urlPath = "/bor",
    bodyPatterns = { { ["or"] = { { equalTo = "one" }, { equalTo = "two" } } } } },
  { post("/bor", "two", 200), post("/bor", "three", 404) })
matcher("body: equalToJson, same document", { method = "POST", urlPath = "/bj",
    bodyPatterns = { { equalToJson = '{"a": 1, "b": [1, 2]}' } } },
  { post("/bj", '{"b":[1,2],"a":1}', 200, JSON), post("/bj", '{"a":1,"b":[2,1]}', 404, JSON),
    post("/bj", '{"a":1,"b":[1,2],"c":3}', 404, JSON), post("/bj", "not json", 404) })
matcher("body: equalToJson as an object", { method = "POST", urlPath = "/bjo",
    bodyPatterns = { { equalToJson = { name = "x", tags = { "a" } } } } },
  { post("/bjo", '{"tags":["a"],"name":"x"}', 200, JSON), post("/bjo", '{"name":"y","tags":["a"]}', 404, JSON) })
matcher("body: equalToJson ignoreArrayOrder", { method = "POST", urlPath = "/bjao",
    bodyPatterns = { { equalToJson = '{"ids": [1, 2, 3]}', ignoreArrayOrder = true } } },
  { post("/bjao", '{"ids":[3,1,2]}', 200, JSON), post("/bjao", '{"ids":[3,1]}', 404, JSON),
    post("/bjao", '{"ids":[3,1,2,4]}', 404, JSON) })
matcher("body: equalToJson ignoreExtraElements", { method = "POST", urlPath = "/bjee",
    bodyPatterns = { { equalToJson = '{"a": 1}', ignoreExtraElements = true } } },
  { post("/bjee", '{"a":1,"b":2}', 200, JSON), post("/bjee", '{"b":2}', 404, JSON), post("/bjee", '{"a":2}', 404, JSON) })
matcher("body: equalToJson ignoreExtraElements, nested", { method = "POST", urlPath = "/bjeen",
    bodyPatterns = { { equalToJson = '{"user": {"id": 1}}', ignoreExtraElements = true } } },
  { post("/bjeen", '{"user":{"id":1,"name":"x"},"more":true}', 200, JSON), post("/bjeen", '{"user":{"id":2}}', 404, JSON) })
matcher("body: equalToJson both options", { method = "POST", urlPath = "/bjboth",
    bodyPatterns = { { equalToJson = '{"l": [{"k": 1}, {"k": 2}]}', ignoreArrayOrder = true, ignoreExtraElements = true } } },
  { post("/bjboth", '{"l":[{"k":2,"x":0},{"k":1}],"z":1}', 200, JSON), post("/bjboth", '{"l":[{"k":3},{"k":1}]}', 404, JSON) })
matcher("body: equalToJson numbers compare as numbers", { method = "POST", urlPath = "/bjnum",
    bodyPatterns = { { equalToJson = '{"n": 1.5, "i": 10}' } } },
  { post("/bjnum", '{"n":1.50,"i":10}', 200, JSON), post("/bjnum", '{"n":1.5,"i":"10"}', 404, JSON) })
matcher("body: equalToJson null and booleans", { method = "POST", urlPath = "/bjnull",
    bodyPatterns = { { equalToJson = '{"a": null, "b": true, "c": false}' } } },
  { post("/bjnull", '{"c":false,"b":true,"a":null}', 200, JSON), post("/bjnull", '{"a":null,"b":true}', 404, JSON) })
matcher("body: equalToJson an array", { method = "POST", urlPath = "/bjarr",
    bodyPatterns = { { equalToJson = '[1, "two", {"three": 3}]' } } },
  { post("/bjarr", '[1,"two",{"three":3}]', 200, JSON), post("/bjarr", '["two",1,{"three":3}]', 404, JSON) })
matcher("body: matchesJsonPath, something there", { method = "POST", urlPath = "/bjp",
    bodyPatterns = { { matchesJsonPath = "$.user.name" } } },
  { post("/bjp", '{"user":{"name":"ada"}}', 200, JSON), post("/bjp", '{"user":{}}', 404, JSON), post("/bjp", "x", 404) })
matcher("body: matchesJsonPath, array index", { method = "POST", urlPath = "/bjpi",
    bodyPatterns = { { matchesJsonPath = "$.items[1]" } } },
  { post("/bjpi", '{"items":[1,2]}', 200, JSON), post("/bjpi", '{"items":[1]}', 404, JSON) })
matcher("body: matchesJsonPath, filter", { method = "POST", urlPath = "/bjpf",
    bodyPatterns = { { matchesJsonPath = "$.things[?(@.kind == 'hat')]" } } },
  { post("/bjpf", '{"things":[{"kind":"shoe"},{"kind":"hat"}]}', 200, JSON),
    post("/bjpf", '{"things":[{"kind":"shoe"}]}', 404, JSON) })
matcher("body: matchesJsonPath, filter with &&", { method = "POST", urlPath = "/bjpf2",
    bodyPatterns = { { matchesJsonPath = "$.things[?(@.kind == 'hat' && @.size > 3)]" } } },
  { post("/bjpf2", '{"things":[{"kind":"hat","size":5}]}', 200, JSON),
    post("/bjpf2", '{"things":[{"kind":"hat","size":2}]}', 404, JSON) })
matcher("body: matchesJsonPath, numeric filter", { method = "POST", urlPath = "/bjpf3",
    bodyPatterns = { { matchesJsonPath = "$[?(@.price < 10)]" } } },
  { post("/bjpf3", '[{"price":5},{"price":20}]', 200, JSON), post("/bjpf3", '[{"price":20}]', 404, JSON) })
matcher("body: matchesJsonPath, deep scan", { method = "POST", urlPath = "/bjpd",
    bodyPatterns = { { matchesJsonPath = "$..id" } } },
  { post("/bjpd", '{"a":{"b":{"id":1}}}', 200, JSON), post("/bjpd", '{"a":{"b":{}}}', 404, JSON) })
matcher("body: matchesJsonPath with equalTo", { method = "POST", urlPath = "/bjpe",
    bodyPatterns = { { matchesJsonPath = { expression = "$.name", equalTo = "ada" } } } },
  { post("/bjpe", '{"name":"ada"}', 200, JSON), post("/bjpe", '{"name":"bob"}', 404, JSON) })
matcher("body: matchesJsonPath with equalTo a number", { method = "POST", urlPath = "/bjpen",
    bodyPatterns = { { matchesJsonPath = { expression = "$.n", equalTo = "42" } } } },
  { post("/bjpen", '{"n":42}', 200, JSON), post("/bjpen", '{"n":43}', 404, JSON) })
matcher("body: matchesJsonPath with contains", { method = "POST", urlPath = "/bjpc",
    bodyPatterns = { { matchesJsonPath = { expression = "$.msg", contains = "lo w" } } } },
  { post("/bjpc", '{"msg":"hello world"}', 200, JSON), post("/bjpc", '{"msg":"hello"}', 404, JSON) })
matcher("body: matchesJsonPath with matches", { method = "POST", urlPath = "/bjpm",
    bodyPatterns = { { matchesJsonPath = { expression = "$.code", matches = "[A-Z]{3}" } } } },
  { post("/bjpm", '{"code":"ABC"}', 200, JSON), post("/bjpm", '{"code":"AB1"}', 404, JSON) })
matcher("body: matchesJsonPath with doesNotMatch", { method = "POST", urlPath = "/bjpdn",
    bodyPatterns = { { matchesJsonPath = { expression = "$.code", doesNotMatch = "[0-9]+" } } } },
  { post("/bjpdn", '{"code":"x"}', 200, JSON), post("/bjpdn", '{"code":"12"}', 404, JSON) })
matcher("body: two matchesJsonPath", { method = "POST", urlPath = "/bjp2",
    bodyPatterns = { { matchesJsonPath = "$.a" }, { matchesJsonPath = "$.b" } } },
  { post("/bjp2", '{"a":1,"b":2}', 200, JSON), post("/bjp2", '{"a":1}', 404, JSON) })
matcher("body: binaryEqualTo", { method = "POST", urlPath = "/bbin",
    bodyPatterns = { { binaryEqualTo = "AAECAwQ=" } } },
  { post("/bbin", "\0\1\2\3\4", 200, { ["Content-Type"] = "application/octet-stream" }),
    post("/bbin", "\0\1\2\3", 404, { ["Content-Type"] = "application/octet-stream" }) })
matcher("body: binaryEqualTo text", { method = "POST", urlPath = "/bbint",
    bodyPatterns = { { binaryEqualTo = "aGVsbG8=" } } },
  { post("/bbint", "hello", 200), post("/bbint", "hellO", 404) })

------------------------------------------------------------------------------
-- Priorities
------------------------------------------------------------------------------

add({ name = "priority: the higher (lower number) wins",
  mappings = {
    { priority = 1, request = { urlPath = "/prio" }, response = { body = "first" } },
    { priority = 2, request = { urlPath = "/prio" }, response = { body = "second" } },
  },
  requests = { get("/prio", 200) } })
add({ name = "priority: wins though older",
  mappings = {
    { priority = 2, request = { urlPathPattern = "/prio2/.*" }, response = { body = "general" } },
    { priority = 1, request = { urlPath = "/prio2/special" }, response = { body = "special" } },
    { priority = 3, request = { urlPath = "/prio2/special" }, response = { body = "newest, lowest" } },
  },
  requests = { get("/prio2/special", 200), get("/prio2/other", 200) } })
add({ name = "priority: among equals the newest wins",
  mappings = {
    { request = { urlPath = "/newest" }, response = { body = "old" } },
    { request = { urlPath = "/newest" }, response = { body = "new" } },
  },
  requests = { get("/newest", 200) } })
add({ name = "priority: default is 5",
  mappings = {
    { priority = 5, request = { urlPath = "/p5" }, response = { body = "explicit 5" } },
    { request = { urlPath = "/p5" }, response = { body = "default" } },
    { priority = 6, request = { urlPath = "/p5" }, response = { body = "six" } },
  },
  requests = { get("/p5", 200) } })
add({ name = "priority: catch-all of low priority",
  mappings = {
    { priority = 10, request = { urlPattern = ".*" }, response = { status = 418, body = "fallback" } },
    { request = { method = "GET", urlPath = "/known" }, response = { body = "known" } },
  },
  requests = { get("/known", 200), get("/unknown", 418), req("POST", "/known", 418, nil, "") } })
add({ name = "priority: specific stub beats a pattern of equal priority when newer",
  mappings = {
    { request = { urlPathPattern = "/mix/.*" }, response = { body = "pattern" } },
    { request = { urlPath = "/mix/a" }, response = { body = "literal" } },
  },
  requests = { get("/mix/a", 200), get("/mix/b", 200) } })
add({ name = "priority: a newer pattern beats an older literal",
  mappings = {
    { request = { urlPath = "/mix2/a" }, response = { body = "literal" } },
    { request = { urlPathPattern = "/mix2/.*" }, response = { body = "pattern" } },
  },
  requests = { get("/mix2/a", 200) } })
add({ name = "priority: method-specific and ANY",
  mappings = {
    { request = { method = "GET", urlPath = "/mm" }, response = { body = "get" } },
    { request = { method = "ANY", urlPath = "/mm" }, response = { body = "any" } },
    { priority = 4, request = { method = "POST", urlPath = "/mm" }, response = { body = "post" } },
  },
  requests = { get("/mm", 200), req("POST", "/mm", 200, nil, ""), req("PUT", "/mm", 200, nil, "") } })

------------------------------------------------------------------------------
-- Scenarios
------------------------------------------------------------------------------

local function scenario_mappings(name, path)
  return {
    { scenarioName = name, requiredScenarioState = "Started", request = { method = "GET", urlPath = path },
      response = { body = "empty" } },
    { scenarioName = name, requiredScenarioState = "Started", newScenarioState = "Added",
      request = { method = "POST", urlPath = path }, response = { status = 201 } },
    { scenarioName = name, requiredScenarioState = "Added", request = { method = "GET", urlPath = path },
      response = { body = "one item" } },
  }
end

add({ name = "scenario: a POST moves it, the GET follows",
  mappings = scenario_mappings("todo", "/todo"),
  requests = { get("/todo", 200), req("POST", "/todo", 201, nil, "x"), get("/todo", 200), get("/todo", 200) } })
add({ name = "scenario: a state no stub answers from",
  mappings = scenario_mappings("todo2", "/todo2"),
  requests = { req("POST", "/todo2", 201, nil, "x"), req("POST", "/todo2", 404, nil, "x") } })
add({ name = "scenario: reset goes back to Started",
  mappings = scenario_mappings("todo3", "/todo3"),
  requests = { req("POST", "/todo3", 201, nil, "x"), get("/todo3", 200),
    { method = "POST", path = "/__admin/scenarios/reset", status = 200 },
    get("/todo3", 200) } })
add({ name = "scenario: a stub without a required state matches in any state",
  mappings = {
    { scenarioName = "free", newScenarioState = "Moved", request = { urlPath = "/free/move" }, response = { body = "moved" } },
    { scenarioName = "free", requiredScenarioState = "Moved", request = { urlPath = "/free/check" }, response = { body = "yes" } },
  },
  requests = { get("/free/check", 404), get("/free/move", 200), get("/free/check", 200), get("/free/move", 200) } })
add({ name = "scenario: three states in a row",
  mappings = {
    { scenarioName = "steps", requiredScenarioState = "Started", newScenarioState = "two",
      request = { urlPath = "/steps" }, response = { body = "1" } },
    { scenarioName = "steps", requiredScenarioState = "two", newScenarioState = "three",
      request = { urlPath = "/steps" }, response = { body = "2" } },
    { scenarioName = "steps", requiredScenarioState = "three",
      request = { urlPath = "/steps" }, response = { body = "3" } },
  },
  requests = { get("/steps", 200), get("/steps", 200), get("/steps", 200), get("/steps", 200) } })
add({ name = "scenario: two scenarios are independent",
  mappings = {
    { scenarioName = "s1", requiredScenarioState = "Started", newScenarioState = "done",
      request = { urlPath = "/s1" }, response = { body = "s1 first" } },
    { scenarioName = "s1", requiredScenarioState = "done", request = { urlPath = "/s1" }, response = { body = "s1 again" } },
    { scenarioName = "s2", requiredScenarioState = "Started", request = { urlPath = "/s2" }, response = { body = "s2 first" } },
  },
  requests = { get("/s1", 200), get("/s2", 200), get("/s1", 200), get("/s2", 200) } })
add({ name = "scenario: GET /__admin/scenarios",
  mappings = scenario_mappings("listed", "/listed"),
  requests = {
    req("POST", "/listed", 201, nil, "x"),
    { method = "GET", path = "/__admin/scenarios", status = 200, project = function(v)
      local out = {}
      for _, s in ipairs(v.scenarios) do
        local states = {}
        for _, st in ipairs(s.possibleStates) do states[#states + 1] = st end
        table.sort(states)
        out[#out + 1] = { name = s.name, state = s.state, possibleStates = states }
      end
      return out
    end },
  } })
add({ name = "scenario: reset by POST /__admin/reset",
  mappings = scenario_mappings("rst", "/rst"),
  requests = { req("POST", "/rst", 201, nil, "x"),
    { method = "POST", path = "/__admin/reset", status = 200, body_compare = false },
    get("/rst", 404) } })


------------------------------------------------------------------------------
-- Responses
------------------------------------------------------------------------------

local function answer(name, response, requests, extra)
  local c = { name = name, mappings = { { request = { urlPathPattern = "/r/.*" }, response = response } },
              requests = requests or { get("/r/x", response.status or 200) } }
  for k, v in pairs(extra or {}) do c[k] = v end
  add(c)
end

answer("response: status 201", { status = 201 })
answer("response: status 204, no body", { status = 204 })
answer("response: status 404 from a stub", { status = 404, body = "not here" })
answer("response: status 500", { status = 500, body = "boom" })
answer("response: status 503 with a body", { status = 503, body = "down", headers = { ["Retry-After"] = "5" } })
answer("response: status 302 with Location", { status = 302, headers = { Location = "/elsewhere" } })
answer("response: status default 200", { body = "default" })
answer("response: statusMessage", { status = 200, statusMessage = "Fine Thanks", body = "x" },
  { { method = "GET", path = "/r/x", status = 200, compare_reason = true } })
answer("response: statusMessage on an error", { status = 422, statusMessage = "Nope" },
  { { method = "GET", path = "/r/x", status = 422, compare_reason = true } })
answer("response: text body", { body = "plain text\nwith two lines" })
answer("response: empty body", { body = "" })
answer("response: UTF-8 body", { body = "héllo wörld ✓", headers = { ["Content-Type"] = "text/plain; charset=utf-8" } })
answer("response: one header", { body = "x", headers = { ["X-One"] = "1" } })
answer("response: several headers", { body = "x", headers = { ["X-One"] = "1", ["X-Two"] = "2", ["Cache-Control"] = "no-store" } })
answer("response: a header with several values", { body = "x", headers = { ["Set-Cookie"] = { "a=1", "b=2; Path=/" } } })
answer("response: Content-Type given", { body = "<p>hi</p>", headers = { ["Content-Type"] = "text/html" } })
answer("response: Content-Type with a charset", { body = "{}", headers = { ["Content-Type"] = "application/json; charset=utf-8" } })
answer("response: Content-Type for XML", { body = "<a>1</a>", headers = { ["Content-Type"] = "application/xml" } })
answer("response: body looking like JSON, with a JSON type", { body = '{"a": [1, 2, {"b": null}]}',
  headers = { ["Content-Type"] = "application/json" } })
answer("response: jsonBody object", { jsonBody = { id = 1, name = "Ada", tags = { "x", "y" }, nested = { ok = true } } })
answer("response: jsonBody array", { jsonBody = { 1, 2, 3 } })
answer("response: jsonBody with a Content-Type", { jsonBody = { a = 1 }, headers = { ["Content-Type"] = "application/vnd.api+json" } })
answer("response: jsonBody string", { jsonBody = "just a string" })
answer("response: jsonBody number", { jsonBody = 42 })
answer("response: jsonBody with null", { jsonBody = { a = cjson_null } })
answer("response: base64Body", { base64Body = "AAECA/+A" })
answer("response: base64Body text", { base64Body = "aGVsbG8gd29ybGQ=", headers = { ["Content-Type"] = "text/plain" } })
answer("response: base64Body with a Content-Type", { base64Body = "iVBORw0KGgo=", headers = { ["Content-Type"] = "image/png" } })
answer("response: fixedDelayMilliseconds", { fixedDelayMilliseconds = 150, body = "late" },
  { { method = "GET", path = "/r/x", status = 200, min_ms = 150 } })
answer("response: uniform delayDistribution", { delayDistribution = { type = "uniform", lower = 50, upper = 80 }, body = "late" },
  { { method = "GET", path = "/r/x", status = 200, min_ms = 50 } })
answer("response: fixed and uniform delays add up", { fixedDelayMilliseconds = 60,
    delayDistribution = { type = "uniform", lower = 40, upper = 50 }, body = "later" },
  { { method = "GET", path = "/r/x", status = 200, min_ms = 100 } })
answer("response: HEAD gets the head only", { body = "body", headers = { ["X-H"] = "h" } },
  { req("HEAD", "/r/x", 200) })

local FILES = {
  ["plain.txt"] = "a body file\n",
  ["data.json"] = '{"from": "file", "n": [1, 2]}',
  ["page.html"] = "<html><body>hi</body></html>",
  ["sub/deep.txt"] = "in a folder",
  ["tpl.txt"] = "file for {{request.path}}",
  ["tpl.json"] = '{"path": "{{request.path}}", "q": "{{request.query.q}}"}',
  ["bin.dat"] = "\0\1\2\255",
  ["static/hello.txt"] = "served as it is",
}

local function file_case(name, response, requests, extra)
  local c = { name = name, files = FILES,
              mappings = { { request = { urlPathPattern = "/f/.*" }, response = response } },
              requests = requests or { get("/f/x", response.status or 200) } }
  for k, v in pairs(extra or {}) do c[k] = v end
  add(c)
end

file_case("bodyFileName: text", { bodyFileName = "plain.txt", headers = { ["Content-Type"] = "text/plain" } })
file_case("bodyFileName: JSON", { bodyFileName = "data.json", headers = { ["Content-Type"] = "application/json" } })
file_case("bodyFileName: HTML", { bodyFileName = "page.html", headers = { ["Content-Type"] = "text/html" } })
file_case("bodyFileName: in a folder", { bodyFileName = "sub/deep.txt" })
file_case("bodyFileName: bytes", { bodyFileName = "bin.dat", headers = { ["Content-Type"] = "application/octet-stream" } })
file_case("bodyFileName: with a status", { status = 202, bodyFileName = "plain.txt" })
file_case("bodyFileName: templated name", { bodyFileName = "{{request.pathSegments.[1]}}.txt",
    transformers = { "response-template" } },
  { get("/f/plain", 200) })
file_case("bodyFileName: templated contents", { bodyFileName = "tpl.txt", transformers = { "response-template" } },
  { get("/f/templated", 200) })
file_case("bodyFileName: templated JSON contents", { bodyFileName = "tpl.json", transformers = { "response-template" },
    headers = { ["Content-Type"] = "application/json" } },
  { get("/f/j?q=abc", 200) })
file_case("bodyFileName: untemplated without the transformer", { bodyFileName = "tpl.txt" })
add({ name = "__files: a GET no stub matches is served from __files", files = FILES,
  mappings = { { request = { urlPath = "/unrelated" }, response = { body = "x" } } },
  requests = { get("/data.json", 200), get("/missing.txt", 404), req("POST", "/data.json", 404, nil, "") } })
add({ name = "__files: text files served for a GET no stub matches", files = FILES,
  differs = "served by the core's static files, whose types name the charset of text "
    .. "(`text/plain; charset=utf-8` where WireMock sends `text/plain`)",
  differ_in = { "header:Content-Type" },
  mappings = { { request = { urlPath = "/unrelated" }, response = { body = "x" } } },
  requests = { get("/plain.txt", 200), get("/static/hello.txt", 200), get("/page.html", 200) } })
add({ name = "__files: a stub wins over a file", files = FILES,
  mappings = { { request = { urlPath = "/plain.txt" }, response = { body = "from the stub" } } },
  requests = { get("/plain.txt", 200) } })

------------------------------------------------------------------------------
-- Templates
------------------------------------------------------------------------------

local function tpl(name, body, requests, extra)
  local response = { body = body, transformers = { "response-template" } }
  for k, v in pairs(extra or {}) do response[k] = v end
  add({ name = name, mappings = { { request = { urlPathPattern = "/t/.*" }, response = response } },
        requests = requests })
end

tpl("template: request.url", "{{request.url}}", { get("/t/a/b?x=1&y=2", 200) })
tpl("template: upper, lower", "{{upper request.query.a}} {{lower request.query.a}}", { get("/t/s?a=MiXeD%20Case", 200) })
tpl("template: capitalize, trim", "[{{capitalize request.query.a}}] [{{trim request.query.b}}]",
  { get("/t/s?a=hello%20big%20world&b=%20%20pad%20%20", 200) })
tpl("template: size of a repeated parameter and of a string", "{{size request.query.id}} {{size request.query.s}}",
  { get("/t/s?id=1&id=2&id=3&s=abcd", 200) })
tpl("template: base64 both ways", "{{base64 request.query.a}} {{base64 request.query.b decode=true}} {{base64 request.query.a padding=false}}",
  { get("/t/s?a=hello&b=d29ybGQ%3D", 200) })
tpl("template: urlEncode both ways", "{{urlEncode request.query.a}} {{urlEncode request.query.b decode=true}}",
  { get("/t/s?a=a%20b%26c%2Fd%3F%C3%A9&b=x%2By%20z%2520", 200) })
-- Each server's own port: compared without it.
tpl("template: request.baseUrl", "{{request.baseUrl}}/x", { { method = "GET", path = "/t/b", status = 200,
  transform = function(b) return (b:gsub(":%d+/x$", ":PORT/x")) end } })
tpl("template: request.path", "{{request.path}}", { get("/t/a/b?x=1", 200) })
tpl("template: request.pathSegments", "{{request.pathSegments.[0]}}|{{request.pathSegments.[1]}}|{{request.pathSegments.[2]}}",
  { get("/t/one/two", 200) })
tpl("template: request.path.[n]", "{{request.path.[1]}}", { get("/t/seg", 200) })
tpl("template: request.method", "{{request.method}}", { get("/t/m", 200), req("POST", "/t/m", 200, nil, "x"),
  req("DELETE", "/t/m", 200) })
tpl("template: request.query", "{{request.query.name}}", { get("/t/q?name=ada", 200), get("/t/q", 200) })
tpl("template: request.query, decoded", "{{request.query.text}}", { get("/t/q?text=a%20b", 200) })
tpl("template: request.query repeated, by index", "{{request.query.id.[0]}},{{request.query.id.[1]}}",
  { get("/t/q?id=1&id=2", 200) })
tpl("template: request.query repeated, first", "{{request.query.id}}", { get("/t/q?id=7", 200) })
tpl("template: request.headers", "{{request.headers.X-Name}}", { get("/t/h", 200, { ["X-Name"] = "bob" }) })
tpl("template: request.headers, name in brackets", "{{request.headers.[X-Name]}}",
  { get("/t/h", 200, { ["X-Name"] = "eve" }) })
tpl("template: request.headers, missing", "[{{request.headers.X-Missing}}]", { get("/t/h", 200) })
tpl("template: request.body", "got {{request.body}}", { req("POST", "/t/b", 200, nil, "payload") })
tpl("template: request.body JSON", '{"echo": {{request.body}} }', { req("POST", "/t/b", 200, JSON, '{"a":1}') },
  { headers = { ["Content-Type"] = "application/json" } })
tpl("template: jsonPath", "{{jsonPath request.body '$.user.name'}}",
  { req("POST", "/t/jp", 200, JSON, '{"user":{"name":"ada"}}') })
tpl("template: jsonPath, a number", "{{jsonPath request.body '$.n'}}", { req("POST", "/t/jp", 200, JSON, '{"n":42}') })
tpl("template: jsonPath, array element", "{{jsonPath request.body '$.items[1].id'}}",
  { req("POST", "/t/jp", 200, JSON, '{"items":[{"id":"a"},{"id":"b"}]}') })
tpl("template: jsonPath in JSON", '{"name": "{{jsonPath request.body \'$.name\'}}", "id": {{jsonPath request.body \'$.id\'}} }',
  { req("POST", "/t/jp", 200, JSON, '{"name":"x","id":5}') },
  { headers = { ["Content-Type"] = "application/json" } })
tpl("template: jsonPath, nothing there", "[{{jsonPath request.body '$.missing'}}]",
  { req("POST", "/t/jp", 200, JSON, '{"a":1}') })
tpl("template: in a header", "h", { get("/t/hdr?v=abc", 200) },
  { headers = { ["X-Echo"] = "{{request.query.v}}", Location = "/things/{{request.pathSegments.[1]}}" } })
tpl("template: in jsonBody", nil, { get("/t/jb?id=9", 200) },
  { jsonBody = { path = "{{request.path}}", id = "{{request.query.id}}" } })
tpl("template: several in one body", "{{request.method}} {{request.path}} {{request.query.a}}",
  { get("/t/multi?a=1", 200) })
tpl("template: literal text around", "before {{request.pathSegments.[1]}} after", { get("/t/mid", 200) })
tpl("template: comment", "a{{! not shown }}b", { get("/t/c", 200) })
tpl("template: now with a format", "{{now format='yyyy'}}", { get("/t/now", 200) })
tpl("template: now with an offset", "{{now offset='3 days' format='yyyy-MM'}}", { get("/t/now", 200) })
tpl("template: now as epoch", "{{now format='epoch'}}",
  { { method = "GET", path = "/t/now", status = 200, transform = function(b) return #b == 13 and b:sub(1, 8) or b end } })
tpl("template: now as unix", "{{now format='unix'}}",
  { { method = "GET", path = "/t/now", status = 200, transform = function(b) return #b == 10 and b:sub(1, 5) or b end } })
tpl("template: now, default format", "{{now}}",
  { { method = "GET", path = "/t/now", status = 200, transform = function(b)
      return (b:gsub("^(%d%d%d%d%-%d%d%-%d%dT)%d%d:%d%d:%d%d", "%1HH:MM:SS")) end } })
local function shape(b) return (b:gsub("%d", "9"):gsub("%u", "A"):gsub("%l", "a")) end
tpl("template: randomValue ALPHANUMERIC", "{{randomValue length=12 type='ALPHANUMERIC'}}",
  { { method = "GET", path = "/t/rnd", status = 200, transform = function(b) return #b .. (b:find("^%w+$") and "w" or "?") end } })
tpl("template: randomValue NUMERIC", "{{randomValue length=6 type='NUMERIC'}}",
  { { method = "GET", path = "/t/rnd", status = 200, transform = shape } })
tpl("template: randomValue ALPHABETIC", "{{randomValue length=5 type='ALPHABETIC'}}",
  { { method = "GET", path = "/t/rnd", status = 200, transform = function(b) return #b .. (b:find("^%a+$") and "a" or "?") end } })
tpl("template: randomValue HEXADECIMAL", "{{randomValue length=8 type='HEXADECIMAL'}}",
  { { method = "GET", path = "/t/rnd", status = 200, transform = function(b) return #b .. (b:find("^%x+$") and "x" or "?") end } })
tpl("template: randomValue UUID", "{{randomValue type='UUID'}}",
  { { method = "GET", path = "/t/rnd", status = 200, transform = function(b)
      return (b:gsub("^%x%x%x%x%x%x%x%x%-%x%x%x%x%-4%x%x%x%-[89ab]%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$", "uuid")) end } })
tpl("template: randomValue uppercase", "{{randomValue length=10 type='ALPHABETIC' uppercase=true}}",
  { { method = "GET", path = "/t/rnd", status = 200, transform = function(b) return #b .. (b:find("^%u+$") and "U" or "?") end } })
add({ name = "template: off without the transformer",
  mappings = { { request = { urlPath = "/t-off" }, response = { body = "{{request.path}}" } } },
  requests = { get("/t-off", 200) } })
tpl("template: the value is not HTML-escaped", "{{request.query.v}}", { get("/t/esc?v=%3Cb%3E%26", 200) })

------------------------------------------------------------------------------
-- Admin API: mappings
------------------------------------------------------------------------------

local function admin(method, path, body, project, status)
  return { method = method, path = "/__admin" .. path, status = status or 200, project = project,
           headers = body and JSON or nil, body = body }
end

local function ids_of(list)
  local out = {}
  for i, m in ipairs(list) do out[i] = m.id end
  return out
end

local ID1 = "11111111-1111-4111-8111-111111111111"
local ID2 = "22222222-2222-4222-8222-222222222222"

add({ name = "admin: POST /__admin/mappings answers 201 with the id", no_ids = true,
  requests = {
    admin("POST", "/mappings", '{"id": "' .. ID1 .. '", "request": {"urlPath": "/new"}, "response": {"body": "new"}}',
      function(v) return { id = v.id, uuid = v.uuid } end, 201),
    get("/new", 200),
  } })
add({ name = "admin: POST /__admin/mappings echoes the mapping with its defaults", no_ids = true,
  requests = {
    admin("POST", "/mappings", '{"id": "' .. ID2 .. '", "request": {"url": "/echoed"}, "response": {"body": "b"}}',
      nil, 201),
  } })
add({ name = "admin: an unknown mapping id and admin path get 404 with no body",
  requests = {
    { method = "GET", path = "/__admin/mappings/" .. ID1, status = 404 },
    { method = "DELETE", path = "/__admin/mappings/" .. ID1, status = 404 },
    { method = "GET", path = "/__admin/no-such-endpoint", status = 404 },
  } })
add({ name = "admin: POST /__admin/mappings without an id gets one", no_ids = true,
  requests = {
    admin("POST", "/mappings", '{"request": {"urlPath": "/gen"}, "response": {"body": "gen"}}',
      function(v) return { has_id = type(v.id) == "string" and #v.id == 36, same = v.id == v.uuid } end, 201),
    get("/gen", 200),
  } })
add({ name = "admin: GET /__admin/mappings lists them, newest first",
  mappings = {
    { request = { method = "GET", urlPath = "/one" }, response = { body = "1" } },
    { request = { method = "POST", url = "/two" }, response = { status = 201, body = "2" } },
  },
  requests = { admin("GET", "/mappings", nil, function(v) return { total = v.meta.total, mappings = v.mappings } end) } })
add({ name = "admin: GET /__admin/mappings shows priority, name and metadata",
  mappings = {
    { name = "named", priority = 3, metadata = { team = "a", tags = { "x" } },
      request = { urlPath = "/named" }, response = { body = "n" } },
  },
  requests = { admin("GET", "/mappings", nil, function(v) return v.mappings end) } })
add({ name = "admin: GET /__admin/mappings shows matchers as written",
  mappings = {
    { request = { method = "POST", urlPathPattern = "/w/.*",
        queryParameters = { a = { equalTo = "1" }, b = { matches = "[0-9]+" } },
        headers = { ["X-T"] = { contains = "t" } }, cookies = { c = { absent = true } },
        bodyPatterns = { { equalToJson = '{"a": 1}', ignoreExtraElements = true }, { matchesJsonPath = "$.a" } } },
      response = { status = 202, headers = { ["X-R"] = "r" }, jsonBody = { ok = true } } },
  },
  requests = { admin("GET", "/mappings", nil, function(v) return v.mappings end) } })
add({ name = "admin: GET /__admin/mappings/{id}",
  mappings = { { id = ID1, request = { urlPath = "/byid" }, response = { status = 200, body = "b" } } },
  requests = { admin("GET", "/mappings/" .. ID1) } })
add({ name = "admin: GET /__admin/mappings/{id} shows scenario fields",
  mappings = { { id = ID1, scenarioName = "sc", requiredScenarioState = "Started", newScenarioState = "next",
    request = { urlPath = "/scid" }, response = { body = "b" } } },
  requests = { admin("GET", "/mappings/" .. ID1) } })
add({ name = "admin: PUT /__admin/mappings/{id} replaces it",
  mappings = { { id = ID1, request = { urlPath = "/put" }, response = { body = "before" } } },
  requests = {
    get("/put", 200),
    admin("PUT", "/mappings/" .. ID1, '{"request": {"urlPath": "/put"}, "response": {"body": "after"}}',
      function(v) return { id = v.id, url = v.request.urlPath, body = v.response.body } end),
    get("/put", 200),
    admin("GET", "/mappings/" .. ID1, nil, function(v) return v.response end),
  } })
add({ name = "admin: PUT /__admin/mappings/{id} can move it",
  mappings = { { id = ID1, request = { urlPath = "/put-a" }, response = { body = "a" } } },
  requests = {
    admin("PUT", "/mappings/" .. ID1, '{"request": {"urlPath": "/put-b"}, "response": {"body": "b"}}',
      function(v) return v.id end),
    get("/put-a", 404), get("/put-b", 200),
  } })
add({ name = "admin: DELETE /__admin/mappings/{id}",
  mappings = {
    { id = ID1, request = { urlPath = "/del" }, response = { body = "first" } },
    { id = ID2, request = { urlPath = "/del" }, response = { body = "second" } },
  },
  requests = { get("/del", 200), admin("DELETE", "/mappings/" .. ID2), get("/del", 200),
    admin("DELETE", "/mappings/" .. ID1), get("/del", 404),
    admin("GET", "/mappings", nil, function(v) return v.meta end) } })
add({ name = "admin: DELETE /__admin/mappings",
  mappings = {
    { request = { urlPath = "/da1" }, response = { body = "1" } },
    { request = { urlPath = "/da2" }, response = { body = "2" } },
  },
  requests = { get("/da1", 200), admin("DELETE", "/mappings"), get("/da1", 404), get("/da2", 404),
    admin("GET", "/mappings", nil, function(v) return { total = v.meta.total, n = #v.mappings } end) } })
add({ name = "admin: POST /__admin/mappings/reset drops added mappings",
  mappings = { { request = { urlPath = "/mr" }, response = { body = "1" } } },
  requests = { get("/mr", 200), { method = "POST", path = "/__admin/mappings/reset", status = 200 },
    get("/mr", 404), admin("GET", "/mappings", nil, function(v) return v.meta end) } })
add({ name = "admin: POST /__admin/reset drops mappings and the journal",
  mappings = { { request = { urlPath = "/ar" }, response = { body = "1" } } },
  requests = { get("/ar", 200), { method = "POST", path = "/__admin/reset", status = 200 },
    get("/ar", 404), admin("GET", "/requests", nil, function(v)
      local urls = {}
      for i, e in ipairs(v.requests) do urls[i] = e.request.url end
      return urls
    end) } })
add({ name = "admin: a mapping added with a bad regex is refused", no_ids = true,
  requests = {
    admin("POST", "/mappings", '{"request": {"urlPathPattern": "/bad/(["}, "response": {"body": "x"}}',
      function(v) return type(v.errors) == "table" and #v.errors == 1 end, 422),
  } })

------------------------------------------------------------------------------
-- Admin API: the journal
------------------------------------------------------------------------------

-- A journal entry's request, as both show it.
local function logged(r)
  return { url = r.url, method = r.method, body = r.body, bodyAsBase64 = r.bodyAsBase64,
           cookies = r.cookies, queryParams = r.queryParams, clientIp = r.clientIp,
           absoluteUrl = r.absoluteUrl }
end
local function journal(v)
  local out = {}
  for i, e in ipairs(v.requests) do
    out[i] = { request = logged(e.request), wasMatched = e.wasMatched,
               status = e.responseDefinition.status,
               stub = e.wasMatched and e.stubMapping and e.stubMapping.id or nil }
  end
  return { total = v.meta.total, requests = out }
end
local function urls(v)
  local out = {}
  for i, e in ipairs(v.requests) do out[i] = (e.request or e).url end
  return out
end
local JOURNAL_MAPPINGS = {
  { request = { method = "GET", urlPath = "/j/a" }, response = { body = "a" } },
  { request = { method = "POST", urlPath = "/j/b" }, response = { status = 201, body = "b" } },
}

add({ name = "journal: GET /__admin/requests, newest first",
  mappings = JOURNAL_MAPPINGS,
  requests = { get("/j/a?x=1&x=2&y=z", 200), post("/j/b", "posted", 201), get("/j/none", 404),
    admin("GET", "/requests", nil, journal) } })
add({ name = "journal: a request's headers, as sent",
  mappings = JOURNAL_MAPPINGS,
  requests = { get("/j/a", 200, { ["X-Custom-Header"] = "v1", Accept = "text/plain" }),
    admin("GET", "/requests", nil, function(v)
      local h = v.requests[1].request.headers
      return { custom = h["X-Custom-Header"], accept = h.Accept, host = h.Host }
    end) } })
add({ name = "journal: cookies",
  mappings = JOURNAL_MAPPINGS,
  requests = { get("/j/a", 200, { Cookie = "a=1; b=two" }),
    admin("GET", "/requests", nil, function(v) return v.requests[1].request.cookies end) } })
add({ name = "journal: a body in base64 too",
  mappings = JOURNAL_MAPPINGS,
  requests = { post("/j/b", "hello body", 201),
    admin("GET", "/requests", nil, function(v) local r = v.requests[1].request
      return { body = r.body, b64 = r.bodyAsBase64 } end) } })
add({ name = "journal: a JSON body",
  mappings = JOURNAL_MAPPINGS,
  requests = { post("/j/b", '{"k": [1, 2]}', 201, JSON),
    admin("GET", "/requests", nil, function(v) local r = v.requests[1].request
      return { body = r.body, b64 = r.bodyAsBase64 } end) } })
add({ name = "journal: query parameters",
  mappings = JOURNAL_MAPPINGS,
  requests = { get("/j/a?one=1&many=a&many=b&enc=a%20b", 200),
    admin("GET", "/requests", nil, function(v) return v.requests[1].request.queryParams end) } })
add({ name = "journal: the stub each request matched",
  mappings = JOURNAL_MAPPINGS,
  requests = { get("/j/a", 200), post("/j/b", "", 201),
    admin("GET", "/requests", nil, function(v)
      local out = {}
      for i, e in ipairs(v.requests) do out[i] = { e.stubMapping.id, e.stubMapping.request, e.wasMatched } end
      return out
    end) } })
add({ name = "journal: loggedDate and loggedDateString",
  mappings = JOURNAL_MAPPINGS,
  requests = { get("/j/a", 200),
    admin("GET", "/requests", nil, function(v) local r = v.requests[1].request
      -- The fraction of a second in as many digits as each writes (Java
      -- drops trailing zeros).
      return { type(r.loggedDate), (r.loggedDateString:gsub("%.%d+Z$", ".fZ"):gsub("%d", "9")) } end) } })
add({ name = "journal: GET /__admin/requests?limit=n",
  mappings = JOURNAL_MAPPINGS,
  requests = { get("/j/a?n=1", 200), get("/j/a?n=2", 200), get("/j/a?n=3", 200),
    admin("GET", "/requests?limit=2", nil, urls) } })
add({ name = "journal: GET /__admin/requests?unmatched=true",
  mappings = JOURNAL_MAPPINGS,
  requests = { get("/j/a", 200), get("/j/none", 404), admin("GET", "/requests?unmatched=true", nil, urls) } })
add({ name = "journal: DELETE /__admin/requests",
  mappings = JOURNAL_MAPPINGS,
  requests = { get("/j/a", 200), admin("DELETE", "/requests"), get("/j/a?after", 200),
    admin("GET", "/requests", nil, urls) } })
add({ name = "journal: GET /__admin/requests/unmatched",
  mappings = JOURNAL_MAPPINGS,
  requests = { get("/j/a", 200), get("/j/none", 404), req("PUT", "/j/a", 404, nil, "x"),
    admin("GET", "/requests/unmatched", nil, function(v)
      local out = {}
      for i, r in ipairs(v.requests) do out[i] = logged(r) end
      return out
    end) } })
add({ name = "journal: the admin API is not journaled",
  mappings = JOURNAL_MAPPINGS,
  requests = { get("/j/a", 200), admin("GET", "/mappings", nil, function() return true end),
    admin("GET", "/requests", nil, urls) } })

local function count(pattern)
  return admin("POST", "/requests/count", pattern, function(v) return v end)
end
-- The requests found, in the order given: oldest first, in both.
local function find(pattern)
  return admin("POST", "/requests/find", pattern, function(v)
    local out = {}
    for i, r in ipairs(v.requests) do out[i] = logged(r) end
    return out
  end)
end
local function journaled(name, pattern)
  add({ name = name, mappings = JOURNAL_MAPPINGS,
    requests = {
      get("/j/a?x=1", 200, { ["X-Tag"] = "red" }), get("/j/a?x=2", 200, { ["X-Tag"] = "blue", Cookie = "s=1" }),
      post("/j/b", '{"kind": "hat", "size": 4}', 201, JSON), post("/j/b", "plain", 201),
      get("/j/none", 404), req("DELETE", "/j/a", 404),
      count(pattern), find(pattern),
    } })
end
journaled("journal: count and find by url", '{"url": "/j/a?x=1"}')
journaled("journal: count and find by urlPath", '{"urlPath": "/j/a"}')
journaled("journal: count and find by urlPath and method", '{"method": "GET", "urlPath": "/j/a"}')
journaled("journal: count and find by urlPattern", '{"urlPattern": "/j/.*"}')
journaled("journal: count and find by urlPathPattern", '{"urlPathPattern": "/j/[ab]"}')
journaled("journal: count and find by method", '{"method": "POST"}')
journaled("journal: count and find, any request", '{"method": "ANY"}')
journaled("journal: count and find by a header", '{"headers": {"X-Tag": {"equalTo": "blue"}}}')
journaled("journal: count and find by a missing header", '{"urlPath": "/j/a", "headers": {"X-Tag": {"absent": true}}}')
journaled("journal: count and find by a query parameter", '{"queryParameters": {"x": {"matches": "[12]"}}}')
journaled("journal: count and find by a cookie", '{"cookies": {"s": {"equalTo": "1"}}}')
journaled("journal: count and find by body contains", '{"bodyPatterns": [{"contains": "hat"}]}')
journaled("journal: count and find by equalToJson", '{"bodyPatterns": [{"equalToJson": "{\\"size\\": 4, \\"kind\\": \\"hat\\"}"}]}')
journaled("journal: count and find by matchesJsonPath", '{"bodyPatterns": [{"matchesJsonPath": "$[?(@.size > 3)]"}]}')
journaled("journal: count and find, none", '{"urlPath": "/nothing"}')

------------------------------------------------------------------------------
-- More matching
------------------------------------------------------------------------------

matcher("query: a plus sign", { urlPath = "/qplus", queryParameters = { q = { equalTo = "a+b" } } },
  { get("/qplus?q=a%2Bb", 200), get("/qplus?q=a%20b", 404) })
matcher("header: sent twice, any value matches", { urlPath = "/h2x", headers = { ["X-Multi"] = { equalTo = "b" } } },
  { get("/h2x", 200, { { "X-Multi", "a" }, { "X-Multi", "b" } }), get("/h2x", 404, { { "X-Multi", "a" } }) })
matcher("urlPathTemplate with query parameters", { urlPathTemplate = "/tq/{id}", queryParameters = { v = { equalTo = "1" } } },
  { get("/tq/5?v=1", 200), get("/tq/5?v=2", 404) })
matcher("body: equalToJson nested arrays in order", { method = "POST", urlPath = "/bjnest",
    bodyPatterns = { { equalToJson = '{"m": [[1, 2], [3]]}' } } },
  { post("/bjnest", '{"m":[[1,2],[3]]}', 200, JSON), post("/bjnest", '{"m":[[2,1],[3]]}', 404, JSON) })
matcher("body: equalToJson ignoreArrayOrder, nested", { method = "POST", urlPath = "/bjnest2",
    bodyPatterns = { { equalToJson = '{"m": [[1, 2], [3]]}', ignoreArrayOrder = true } } },
  { post("/bjnest2", '{"m":[[3],[2,1]]}', 200, JSON), post("/bjnest2", '{"m":[[3],[2,2]]}', 404, JSON) })
matcher("body: equalToJson an empty object", { method = "POST", urlPath = "/bjempty",
    bodyPatterns = { { equalToJson = "{}" } } },
  { post("/bjempty", "{}", 200, JSON), post("/bjempty", '{"a":1}', 404, JSON) })
matcher("body: matchesJsonPath, root array index", { method = "POST", urlPath = "/bjproot",
    bodyPatterns = { { matchesJsonPath = "$[0].id" } } },
  { post("/bjproot", '[{"id":1}]', 200, JSON), post("/bjproot", "[]", 404, JSON) })
matcher("body: matchesJsonPath, wildcard", { method = "POST", urlPath = "/bjpw",
    bodyPatterns = { { matchesJsonPath = "$.items[*].id" } } },
  { post("/bjpw", '{"items":[{"id":1}]}', 200, JSON), post("/bjpw", '{"items":[{"x":1}]}', 404, JSON) })
matcher("body: matchesJsonPath, slice", { method = "POST", urlPath = "/bjpsl",
    bodyPatterns = { { matchesJsonPath = "$.a[1:3]" } } },
  { post("/bjpsl", '{"a":[1,2,3]}', 200, JSON), post("/bjpsl", '{"a":[1]}', 404, JSON) })
matcher("body: matchesJsonPath, filter on a string field", { method = "POST", urlPath = "/bjpfs",
    bodyPatterns = { { matchesJsonPath = "$.users[?(@.role == 'admin')]" } } },
  { post("/bjpfs", '{"users":[{"role":"user"},{"role":"admin"}]}', 200, JSON),
    post("/bjpfs", '{"users":[{"role":"user"}]}', 404, JSON) })
matcher("body: matchesJsonPath, filter on existence", { method = "POST", urlPath = "/bjpfe",
    bodyPatterns = { { matchesJsonPath = "$.things[?(@.flag)]" } } },
  { post("/bjpfe", '{"things":[{"flag":true}]}', 200, JSON), post("/bjpfe", '{"things":[{"x":1}]}', 404, JSON) })
matcher("body: matchesJsonPath equalTo a boolean", { method = "POST", urlPath = "/bjpb",
    bodyPatterns = { { matchesJsonPath = { expression = "$.ok", equalTo = "true" } } } },
  { post("/bjpb", '{"ok":true}', 200, JSON), post("/bjpb", '{"ok":false}', 404, JSON) })
matcher("body: matchesJsonPath with equalTo caseInsensitive", { method = "POST", urlPath = "/bjpci",
    bodyPatterns = { { matchesJsonPath = { expression = "$.name", equalTo = "ADA", caseInsensitive = true } } } },
  { post("/bjpci", '{"name":"ada"}', 200, JSON), post("/bjpci", '{"name":"bob"}', 404, JSON) })
matcher("body: matchesJsonPath with absent", { method = "POST", urlPath = "/bjpab",
    bodyPatterns = { { matchesJsonPath = "$.x" }, { contains = "y" } } },
  { post("/bjpab", '{"x":"y"}', 200, JSON), post("/bjpab", '{"x":1}', 404, JSON) })
matcher("body: contains in a JSON body", { method = "PUT", urlPath = "/bcj", bodyPatterns = { { contains = '"id":1' } } },
  { req("PUT", "/bcj", 200, JSON, '{"id":1}'), req("PUT", "/bcj", 404, JSON, '{"id": 1}') })
matcher("body: equalTo a form body", { method = "POST", urlPath = "/bform",
    bodyPatterns = { { equalTo = "a=1&b=two" } } },
  { post("/bform", "a=1&b=two", 200, { ["Content-Type"] = "application/x-www-form-urlencoded" }),
    post("/bform", "b=two&a=1", 404, { ["Content-Type"] = "application/x-www-form-urlencoded" }) })
matcher("everything at once", { method = "POST", urlPathTemplate = "/all/{id}",
    pathParameters = { id = { matches = "[0-9]+" } }, queryParameters = { v = { equalTo = "1" } },
    headers = { ["X-T"] = { contains = "t" } }, cookies = { s = { equalTo = "k" } },
    basicAuthCredentials = { username = "a", password = "b" },
    bodyPatterns = { { matchesJsonPath = "$.ok" } } },
  { post("/all/3?v=1", '{"ok":1}', 200, { ["X-T"] = "at", Cookie = "s=k", Authorization = "Basic YTpi" }),
    post("/all/3?v=1", '{"ok":1}', 404, { ["X-T"] = "at", Cookie = "s=k" }),
    post("/all/x?v=1", '{"ok":1}', 404, { ["X-T"] = "at", Cookie = "s=k", Authorization = "Basic YTpi" }) })

------------------------------------------------------------------------------
-- More responses and templates
------------------------------------------------------------------------------

answer("response: lognormal delayDistribution", { delayDistribution = { type = "lognormal", median = 20, sigma = 0.1 },
  body = "late" })
answer("response: chunkedDribbleDelay", { body = "0123456789abcdef", chunkedDribbleDelay = { numberOfChunks = 4, totalDuration = 100 } },
  { { method = "GET", path = "/r/x", status = 200, min_ms = 60 } })
answer("response: headers and a JSON body together", { status = 201, headers = { Location = "/r/1", ["X-Id"] = "1" },
  jsonBody = { id = 1 } })
answer("response: fault EMPTY_RESPONSE", { fault = "EMPTY_RESPONSE" },
  { { method = "GET", path = "/r/x", fault = true } })
answer("response: fault CONNECTION_RESET_BY_PEER", { fault = "CONNECTION_RESET_BY_PEER" },
  { { method = "GET", path = "/r/x", fault = true } })
answer("response: fault RANDOM_DATA_THEN_CLOSE", { fault = "RANDOM_DATA_THEN_CLOSE" },
  { { method = "GET", path = "/r/x", fault = true } })
answer("response: fault MALFORMED_RESPONSE_CHUNK", { fault = "MALFORMED_RESPONSE_CHUNK" },
  { { method = "GET", path = "/r/x", fault = true } })
tpl("template: triple braces", "{{{request.query.v}}}", { get("/t/tb?v=x", 200) })
tpl("template: ampersand", "{{&request.query.v}}", { get("/t/amp?v=y", 200) })
tpl("template: whitespace control", "a  {{~request.query.v~}}  b", { get("/t/ws?v=z", 200) })
tpl("template: missing query parameter", "[{{request.query.nothing}}]", { get("/t/mq", 200) })
tpl("template: now with an offset in the past", "{{now offset='-2 years' format='yyyy'}}", { get("/t/now", 200) })
tpl("template: now with literal text", "{{now format=\"'year' yyyy\"}}", { get("/t/now", 200) })
tpl("template: JSON body with numbers from the path", '{"id": {{request.pathSegments.[1]}}, "ok": true}',
  { get("/t/77", 200) }, { headers = { ["Content-Type"] = "application/json" } })
tpl("template: header from a header", "x", { get("/t/hh", 200, { ["X-Request-Id"] = "abc-123" }) },
  { headers = { ["X-Request-Id"] = "{{request.headers.X-Request-Id}}" } })
tpl("template: status stays as written", "{{request.method}}", { req("PUT", "/t/s", 202, nil, "x") }, { status = 202 })
tpl("template: jsonPath over a nested array", "{{jsonPath request.body '$.a[0].b[1]'}}",
  { req("POST", "/t/jpn", 200, JSON, '{"a":[{"b":["x","y"]}]}') })
tpl("template: a value with a quote inside a JSON string", '{"v": "{{request.query.v}}"}',
  { get("/t/jq?v=a%22b", 200) }, { headers = { ["Content-Type"] = "application/json" } })
cases[#cases].differs = "moonport escapes a value placed inside a JSON string of a JSON body "
  .. "(`a\\\"b`), so the body stays JSON; WireMock inserts it as it is (`a\"b`, no longer JSON)"
cases[#cases].differ_in = { "body" }

------------------------------------------------------------------------------
-- More scenarios and journal
------------------------------------------------------------------------------

add({ name = "scenario: priorities within a state",
  mappings = {
    { scenarioName = "pri", requiredScenarioState = "Started", priority = 2,
      request = { urlPath = "/pri" }, response = { body = "low" } },
    { scenarioName = "pri", requiredScenarioState = "Started", priority = 1, newScenarioState = "x",
      request = { urlPath = "/pri" }, response = { body = "high" } },
    { scenarioName = "pri", requiredScenarioState = "x", request = { urlPath = "/pri" }, response = { body = "in x" } },
  },
  requests = { get("/pri", 200), get("/pri", 200) } })
add({ name = "scenario: a request that misses does not move it",
  mappings = scenario_mappings("miss", "/miss"),
  requests = { req("POST", "/miss/other", 404, nil, "x"), get("/miss", 200) } })
add({ name = "scenario: states listed after moves",
  mappings = {
    { scenarioName = "flow", requiredScenarioState = "Started", newScenarioState = "A",
      request = { urlPath = "/flow" }, response = { body = "1" } },
    { scenarioName = "flow", requiredScenarioState = "A", newScenarioState = "B",
      request = { urlPath = "/flow" }, response = { body = "2" } },
  },
  requests = { get("/flow", 200), get("/flow", 200),
    admin("GET", "/scenarios", nil, function(v) return { v.scenarios[1].name, v.scenarios[1].state } end) } })
add({ name = "journal: count of a scenario's requests",
  mappings = scenario_mappings("jsc", "/jsc"),
  requests = { get("/jsc", 200), req("POST", "/jsc", 201, nil, "x"), get("/jsc", 200),
    count('{"method": "GET", "urlPath": "/jsc"}') } })
add({ name = "journal: a binary body",
  mappings = { { request = { method = "POST", urlPath = "/jbin" }, response = { status = 200 } } },
  requests = { post("/jbin", "\0\1\2\255", 200, { ["Content-Type"] = "application/octet-stream" }),
    admin("GET", "/requests", nil, function(v) return v.requests[1].request.bodyAsBase64 end) } })
add({ name = "journal: responseDefinition status of a stub",
  mappings = { { request = { urlPath = "/jst" }, response = { status = 418, body = "tea" } } },
  requests = { get("/jst", 418),
    admin("GET", "/requests", nil, function(v) return v.requests[1].responseDefinition.status end) } })

------------------------------------------------------------------------------
-- CORS
------------------------------------------------------------------------------

add({ name = "CORS: a preflight",
  differs = "moonport answers a CORS preflight itself (204, before the stubs; see [CORS](#cors)); "
    .. "WireMock, without `--enable-stub-cors`, matches it against the stubs like any OPTIONS request",
  differ_in = { "status", "body" },
  mappings = { { request = { method = "ANY", urlPath = "/cors" }, response = { body = "stub" } } },
  requests = { { method = "OPTIONS", path = "/cors", status = 200,
    headers = { Origin = "http://app.test", ["Access-Control-Request-Method"] = "PUT" } } } })
add({ name = "CORS: a request with an Origin",
  mappings = { { request = { method = "GET", urlPath = "/cors2" }, response = { body = "stub", headers = { ["X-Stub"] = "s" } } } },
  requests = { get("/cors2", 200, { Origin = "http://app.test" }) } })

local CONTAINS_CI = "moonport honours `caseInsensitive` with `contains` (see [Matching](#matching)); "
  .. "WireMock ignores it there: its `contains` is always case-sensitive"
matcher("header: contains caseInsensitive", { urlPath = "/hcci", headers = { Accept = { contains = "JSON", caseInsensitive = true } } },
  { get("/hcci", 404, { Accept = "application/json" }), get("/hcci", 200, { Accept = "application/JSON" }),
    get("/hcci", 404, { Accept = "text/html" }) })
cases[#cases].differs, cases[#cases].differ_in = CONTAINS_CI, { "status" }
matcher("query: contains caseInsensitive", { urlPath = "/qcci", queryParameters = { s = { contains = "ABC", caseInsensitive = true } } },
  { get("/qcci?s=xabcx", 404), get("/qcci?s=xABCx", 200), get("/qcci?s=xabx", 404) })
cases[#cases].differs, cases[#cases].differ_in = CONTAINS_CI, { "status" }

matcher("body: absent", { urlPath = "/babs", bodyPatterns = { { absent = true } } },
  { get("/babs", 200), req("POST", "/babs", 404, nil, "something") })

-- not, and the matchers of every value: hasExactly, includes.
matcher("query: not equalTo", { urlPath = "/qnot", queryParameters = { s = { ["not"] = { equalTo = "bad" } } } },
  { get("/qnot?s=good", 200), get("/qnot?s=bad", 404) })
matcher("header: not contains", { urlPath = "/hnot", headers = { ["X-T"] = { ["not"] = { contains = "no" } } } },
  { get("/hnot", 200, { ["X-T"] = "yes" }), get("/hnot", 404, { ["X-T"] = "a no b" }) })
matcher("query: hasExactly", { urlPath = "/qhe", queryParameters = { id = { hasExactly = {
    { equalTo = "1" }, { equalTo = "2" } } } } },
  { get("/qhe?id=1&id=2", 200), get("/qhe?id=2&id=1", 200), get("/qhe?id=1", 404),
    get("/qhe?id=1&id=2&id=3", 404), get("/qhe", 404) })
matcher("query: includes", { urlPath = "/qin", queryParameters = { id = { includes = {
    { equalTo = "1" }, { matches = "[5-9]" } } } } },
  { get("/qin?id=1&id=7", 200), get("/qin?id=7&id=3&id=1", 200), get("/qin?id=1", 404), get("/qin", 404) })
matcher("header: hasExactly over repeated lines", { urlPath = "/hhe", headers = { ["X-V"] = { hasExactly = {
    { equalTo = "a" }, { equalTo = "b" } } } } },
  { { method = "GET", path = "/hhe", status = 200, headers = { { "X-V", "a" }, { "X-V", "b" } } },
    get("/hhe", 404, { ["X-V"] = "a" }) })
matcher("header: includes", { urlPath = "/hin", headers = { ["X-V"] = { includes = { { equalTo = "b" } } } } },
  { { method = "GET", path = "/hin", status = 200, headers = { { "X-V", "a" }, { "X-V", "b" } } },
    get("/hin", 404, { ["X-V"] = "a" }), get("/hin", 404) })

-- Cases of further features, a file each (spec/compat/wiremock_cases_<topic>.lua),
-- each returning function(add, h) where h holds the helpers above.
local topics = { "templates", "matchers", "webhooks", "not_matched" }
local h = { get = get, req = req, matcher = matcher, cases = cases, null = cjson_null }
for _, topic in ipairs(topics) do require("spec.compat.wiremock_cases_" .. topic)(add, h) end

return T
