-- WireMock's 404 page for a request no stub matched (`--wiremock-404`),
-- compared byte for byte: the diff of the closest stub, for each kind of
-- field and mismatch. Mappings go as JSON text with their keys in name
-- order, the order in which moonport lists fields of one kind (it does
-- not keep a mapping's JSON order; README.md says so).
return function(add, h)
  local cjson = require("cjson")

  local function ordered(v)
    if type(v) ~= "table" then return cjson.encode(v) end
    if v[1] ~= nil then
      local items = {}
      for i, x in ipairs(v) do items[i] = ordered(x) end
      return "[" .. table.concat(items, ",") .. "]"
    end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys)
    local members = {}
    for i, k in ipairs(keys) do members[i] = cjson.encode(k) .. ":" .. ordered(v[k]) end
    return "{" .. table.concat(members, ",") .. "}"
  end

  local function page(name, mappings, requests)
    local texts = {}
    for i, m in ipairs(mappings) do
      if m.response == nil then m.response = { status = 200 } end
      texts[i] = ordered(m)
    end
    add({ name = "404 page: " .. name, wiremock_404 = true, no_ids = true, mappings = texts,
          requests = requests })
  end
  local get, req = h.get, h.req

  page("no stubs at all", {}, { get("/nothing", 404) })
  page("the method", { { request = { method = "POST", url = "/m" } } }, { get("/m", 404) })
  page("a named stub, the URL, a header and a query parameter", { { name = "Get user", request = {
      method = "GET", urlPath = "/users/1", headers = { Accept = { equalTo = "application/json" } },
      queryParameters = { q = { matches = "[0-9]+" } } } } },
    { get("/users/2?q=abc", 404, { Accept = "text/html" }) })
  page("a URL regex", { { request = { method = "GET", urlPattern = "/p/[0-9]+" } } }, { get("/p/x", 404) })
  page("a path regex with an unescaped ?", { { request = { urlPathPattern = "/p/[a-z]+?x" } } },
    { get("/p/1", 404) })
  page("a regex with an unescaped ? that matches, and a header that does not", { { request = {
      urlPattern = "/a?", headers = { X = { equalTo = "1" } } } } }, { get("/a", 404) })
  page("a URL without its leading slash", { { request = { url = "abc" } } }, { get("/abc", 404) })
  page("any URL", { { request = { method = "POST" } } }, { get("/m?x=1", 404) })
  page("a path template's parameters", { { request = { urlPathTemplate = "/u/{id}/x/{n}",
      pathParameters = { id = { matches = "[0-9]+" }, n = { equalTo = "a" } } } } },
    { get("/u/ab/x/a", 404), get("/u/12/y/a", 404) })
  page("a path template with one parameter matched", { { request = { urlPathTemplate = "/u/{id}/x/{n}",
      pathParameters = { n = { equalTo = "a" } } } } }, { get("/u/ab/x/b", 404) })
  page("headers: contains, absent, caseInsensitive, doesNotMatch", { { request = { urlPath = "/h",
      headers = { ["X-A"] = { contains = "abc" }, ["X-B"] = { absent = true },
                  ["X-C"] = { equalTo = "c", caseInsensitive = true }, ["X-D"] = { doesNotMatch = "z.*" } } } } },
    { get("/h", 404, { ["X-B"] = "b", ["X-D"] = "zz" }) })
  page("query: equalTo, hasExactly, includes, absent", { { request = { urlPath = "/q", queryParameters = {
      a = { equalTo = "1" }, b = { hasExactly = { { equalTo = "1" }, { equalTo = "2" } } },
      c = { includes = { { equalTo = "x" } } }, d = { absent = true } } } } },
    { get("/q?a=2&b=1&b=3&d=4", 404) })
  page("query and header: and, or, not, caseInsensitive", { { request = { urlPath = "/l",
      queryParameters = { a = { ["and"] = { { contains = "1" }, { contains = "2" } } },
        b = { ["or"] = { { equalTo = "1" }, { absent = true } } }, c = { ["not"] = { equalTo = "x" } } },
      headers = { H = { equalTo = "a", caseInsensitive = true } } } } },
    { get("/l?a=1&c=x", 404, { H = "B" }) })
  page("multi-value matchers over several matchers", { { request = { urlPath = "/mq",
      queryParameters = { b = { hasExactly = { { contains = "1" }, { matches = "2+" },
        { doesNotMatch = "x" }, { equalTo = "Q", caseInsensitive = true } } } },
      headers = { H = { includes = { { contains = "a" } } } } } } },
    { get("/mq?b=1", 404, { H = "b" }) })
  page("cookies", { { request = { urlPath = "/c", cookies = { s = { equalTo = "1" }, t = { matches = "a+" } } } } },
    { get("/c", 404, { Cookie = "s=2" }) })
  page("bodies: equalTo and contains", { { request = { method = "POST", urlPath = "/b",
      bodyPatterns = { { equalTo = "hello" }, { contains = "x" } } } } },
    { req("POST", "/b", 404, nil, "hullo") })
  page("bodies: equalToJson pretty printed, matchesJsonPath plain and with a matcher", { { request = {
      method = "POST", urlPath = "/j", bodyPatterns = {
        { equalToJson = '{"a": 1, "b": [1, 2], "o": {"e": [], "f": {}, "p": [{"q": 1}, {}]}}' },
        { matchesJsonPath = "$.c" }, { matchesJsonPath = { expression = "$.a", equalTo = "2" } } } } } },
    { req("POST", "/j", 404, nil, '{"z":"q","a":1,"b":[1,3],"o":{"p":[{"q":2},{}],"e":[],"f":{"g":null}}}') })
  page("bodies: jsonPath matchers and a missing value", { { request = { method = "POST", urlPath = "/jp",
      bodyPatterns = { { matchesJsonPath = { expression = "$.a", contains = "zz" } },
        { matchesJsonPath = { expression = "$.b", matches = "[0-9]+" } },
        { matchesJsonPath = { expression = "$.missing", equalTo = "1" } },
        { matchesJsonPath = { expression = "$.arr", contains = "7" } },
        { matchesJsonPath = { expression = "$.o.p", contains = "zz" } } } } } },
    { req("POST", "/jp", 404, nil, '{"a":"x","b":"q","arr":[1,2],"o":{"p":[{"q":1},{}],"e":[],"f":{}}}') })
  page("bodies: absent, and none sent", { { request = { method = "POST", urlPath = "/ba",
      bodyPatterns = { { absent = true } } } }, { request = { method = "POST", urlPath = "/bn",
      bodyPatterns = { { equalTo = "x" }, { matchesJsonPath = "$.a" }, { equalToJson = '{"a":1}' } } } } },
    { req("POST", "/ba", 404, nil, "x"), req("POST", "/bn", 404) })
  page("bodies: equalToJson against a body that is not JSON", { { request = { method = "POST", urlPath = "/ji",
      bodyPatterns = { { equalToJson = '{"a":1}' } } } } }, { req("POST", "/ji", 404, nil, "not json") })
  page("basic auth", { { request = { urlPath = "/ba", basicAuthCredentials = { username = "u", password = "p" } } } },
    { get("/ba", 404), get("/ba", 404, { Authorization = "Basic eDp5" }) })
  page("a scenario in another state", { { name = "S1", scenarioName = "sc", requiredScenarioState = "two",
      request = { urlPath = "/s" } } }, { get("/s", 404) })
  page("long values wrapped: a URL cut, a header on spaces, a body's lines", {
      { request = { url = "/a/very/long/path/that/goes/on/and/on/and/on/beyond/fifty/seven/characters/surely" } },
      { request = { urlPath = "/lh", headers = { ["X-Long"] = {
        equalTo = "aaa bbb ccc ddd eee fff ggg hhh iii jjj kkk lll mmm nnn ooo ppp qqq" } } } },
      { request = { method = "POST", urlPath = "/lb", bodyPatterns = { { equalTo =
        "line one\nthe second line is much longer than fifty seven characters for sure yes\nthree" } } } } },
    { get("/a/very/long/path/that/goes/on/and/on/and/on/beyond/fifty/seven/characters/surely/not", 404),
      get("/lh", 404, { ["X-Long"] = "aaa bbb ccc ddd eee fff ggg hhh iii jjj kkk lll mmm nnn ooo ppp qqZ" }),
      req("POST", "/lb", 404, nil, "line one\nsecond") })
  page("the closest of several stubs", { { request = { urlPath = "/one" } },
      { request = { method = "GET", urlPath = "/two" } } }, { get("/twx", 404) })
  page("fields that match are shown too", { { request = { method = "GET", urlPath = "/ok",
      headers = { ["X-A"] = { equalTo = "a" } }, queryParameters = { q = { equalTo = "1" } } } } },
    { get("/ok?q=1", 404, { ["X-A"] = "b" }) })
  page("a narrower console", { { request = { method = "GET", urlPath = "/narrow" } } },
    { get("/wide", 404, { ["X-WireMock-Console-Width"] = "80" }) })
  page("a body that is bytes (binaryEqualTo)", { { request = { method = "POST", urlPath = "/bb",
      bodyPatterns = { { binaryEqualTo = "AQID" } } } } }, { req("POST", "/bb", 404, nil, "abc") })
  h.cases[#h.cases].differs = "for a `binaryEqualTo`, moonport's 404 page shows the request's body in "
    .. "base64; WireMock prints a Java array's identity there (`[B@35ef2ec7`)"
  h.cases[#h.cases].differ_in = { "body" }
end
