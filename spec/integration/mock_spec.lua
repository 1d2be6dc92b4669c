-- The mock server over real sockets: every matcher, response field, fault
-- (seen on the wire), delay, scenario and admin endpoint; WireMock mapping
-- directories; the journal bound; CORS; admin data that nothing evicts and
-- that is refused, never lost, when it cannot be stored; the journal at its
-- largest; regular expressions under limits; the ranking of near misses;
-- responses WireMock serves; features it does not have, refused at load.
local helpers = require("spec.helpers")
local support = require("spec.support.server")
local cjson = require("cjson.safe")
local psocket = require("posix.sys.socket")
local unistd = require("posix.unistd")
local errno = require("posix.errno")

local function req(port, method, target, headers, body)
  local status, hdrs, resp_body, resp = helpers.request(port, method, target, headers, body)
  return status, resp_body, hdrs, resp
end

local function body_of(port, method, target, headers, body)
  local status, b = req(port, method, target, headers, body)
  return b, status
end

local function json(port, method, target, body)
  local status, b = req(port, method, target, body and { ["Content-Type"] = "application/json" }, body)
  return status, cjson.decode(b), b
end

describe("mock stubs in Lua", function()
  local server = support.serve("spec/fixtures/mock.lua", { "--workers", "2" })
  before_each(function() req(server.port, "POST", "/__admin/reset") end)

  describe("match URLs", function()
    it("by url, with its query, exactly", function()
      assert.equal("url", body_of(server.port, "GET", "/exact?a=1"))
      assert.equal(404, select(2, body_of(server.port, "GET", "/exact?a=2")))
    end)
    it("by url_path, whatever the query", function()
      assert.equal("url_path", body_of(server.port, "GET", "/path-only?x=y"))
    end)
    it("by url_pattern over the whole URL, and url_path_pattern over the path", function()
      assert.equal("url_pattern", body_of(server.port, "GET", "/pattern/abc?x=12"))
      assert.equal(404, select(2, body_of(server.port, "GET", "/pattern/abc?x=12&more")))
      assert.equal("url_path_pattern", body_of(server.port, "GET", "/path-pattern/42?anything"))
      assert.equal(404, select(2, body_of(server.port, "GET", "/path-pattern/42x")))
    end)
    it("by url_path_template, with path parameter matchers", function()
      assert.equal("7-hat", body_of(server.port, "GET", "/tpl/7/items/hat"))
      assert.equal(404, select(2, body_of(server.port, "GET", "/tpl/7/items/HAT1")))
    end)
    it("any method with ANY, the given method otherwise", function()
      assert.equal("any", body_of(server.port, "DELETE", "/any"))
      assert.equal("any", body_of(server.port, "PATCH", "/any"))
      assert.equal(404, select(2, body_of(server.port, "POST", "/path-only")))
    end)
  end)

  describe("match query parameters, headers, cookies and credentials", function()
    it("with equalTo, contains, matches, doesNotMatch and caseInsensitive", function()
      assert.equal("q-equal", body_of(server.port, "GET", "/q?a=x"))
      assert.equal("q-contains", body_of(server.port, "GET", "/q?b=amidst"))
      assert.equal("q-matches", body_of(server.port, "GET", "/q?c=123"))
      assert.equal(404, select(2, body_of(server.port, "GET", "/q?c=1234")))
      assert.equal("q-not-matches", body_of(server.port, "GET", "/qd?d=yes"))
      assert.equal(404, select(2, body_of(server.port, "GET", "/qd?d=nope")))
      assert.equal("q-ci", body_of(server.port, "GET", "/q?e=abc"))
    end)
    it("with doesNotMatch satisfied by a missing header or query parameter, not a missing cookie, as in WireMock", function()
      assert.equal("q-not-matches", body_of(server.port, "GET", "/qd"))
      assert.equal("h-not-matches", body_of(server.port, "GET", "/hd"))
      assert.equal(404, select(2, body_of(server.port, "GET", "/hd", { ["X-D"] = "nope" })))
      assert.equal(404, select(2, body_of(server.port, "GET", "/cd")))
      assert.equal("c-not-matches", body_of(server.port, "GET", "/cd", { Cookie = "d=yes" }))
    end)
    it("a header sent on several lines when one of them matches, as in WireMock", function()
      assert.equal("h-lines", body_of(server.port, "GET", "/h-lines", { { "X-Multi", "a" }, { "X-Multi", "b" } }))
      assert.equal(404, select(2, body_of(server.port, "GET", "/h-lines", { { "X-Multi", "a, b" } })))
      assert.equal(404, select(2, body_of(server.port, "GET", "/h-lines", { { "X-Multi", "a" }, { "X-Multi", "c" } })))
    end)
    it("headers with equalTo, and absent", function()
      assert.equal("h-equal", body_of(server.port, "GET", "/h", { ["X-Token"] = "t1" }))
      assert.equal("h-absent", body_of(server.port, "GET", "/h"))
      assert.equal(404, select(2, body_of(server.port, "GET", "/h", { ["X-Gone"] = "here" })))
    end)
    it("cookies", function()
      assert.equal("cookie", body_of(server.port, "GET", "/c", { Cookie = "x=1; session=s-99" }))
      assert.equal(404, select(2, body_of(server.port, "GET", "/c", { Cookie = "session=other" })))
    end)
    it("with the logical matchers and and or", function()
      assert.equal("logic", body_of(server.port, "GET", "/logic?v=cab&w=y"))
      assert.equal(404, select(2, body_of(server.port, "GET", "/logic?v=ca&w=y")))
      assert.equal(404, select(2, body_of(server.port, "GET", "/logic?v=ab&w=z")))
    end)
    it("basic auth", function()
      assert.equal("authed", body_of(server.port, "GET", "/auth", { Authorization = "Basic YWRhOnNlY3JldA==" }))
      assert.equal(404, select(2, body_of(server.port, "GET", "/auth", { Authorization = "Basic YWRhOndyb25n" })))
    end)
  end)

  describe("match bodies", function()
    it("with equalTo, contains and matches", function()
      assert.equal("b-equal", body_of(server.port, "POST", "/b", nil, "exact body"))
      assert.equal("b-contains", body_of(server.port, "POST", "/b", nil, "hay needle hay"))
      assert.equal("b-matches", body_of(server.port, "POST", "/b", nil, "num=42"))
      assert.equal(404, select(2, body_of(server.port, "POST", "/b", nil, "num=4x")))
    end)
    it("with equalToJson, its options and without them", function()
      assert.equal("json-loose", body_of(server.port, "POST", "/json", nil, '{"n":1,"tags":["b","a","c"],"extra":true}'))
      assert.equal(404, select(2, body_of(server.port, "POST", "/json", nil, '{"n":2,"tags":["a","b"]}')))
      assert.equal("json-strict", body_of(server.port, "POST", "/json-strict", nil, '{"tags":["a","b"],"n":1}'))
      assert.equal(404, select(2, body_of(server.port, "POST", "/json-strict", nil, '{"tags":["b","a"],"n":1}')))
      assert.equal(404, select(2, body_of(server.port, "POST", "/json-strict", nil, '{"tags":["a","b"],"n":1,"x":0}')))
    end)
    it("with matchesJsonPath: a path, an index, a filter, an expression with a matcher", function()
      assert.equal("jp-path", body_of(server.port, "POST", "/jp", nil, '{"a":{"b":false}}'))
      assert.equal("jp-index", body_of(server.port, "POST", "/jp", nil, '{"list":["x"]}'))
      assert.equal("jp-filter", body_of(server.port, "POST", "/jp", nil, '{"things":[{"kind":"shoe"},{"kind":"hat"}]}'))
      assert.equal("jp-equal", body_of(server.port, "POST", "/jp", nil, '{"name":"Ada"}'))
      assert.equal(404, select(2, body_of(server.port, "POST", "/jp", nil, '{"name":"Bob","list":[]}')))
    end)
  end)

  describe("choose among stubs", function()
    it("by priority, 1 first", function()
      assert.equal("high", body_of(server.port, "GET", "/prio"))
    end)
    it("the newest among equal priorities", function()
      assert.equal("newer", body_of(server.port, "GET", "/newest"))
    end)
    it("leave ordinary routes to the script", function()
      assert.equal("route", body_of(server.port, "GET", "/plain"))
    end)
  end)

  describe("respond", function()
    it("with a status and a reason phrase of its own", function()
      local status, _, _, resp = req(server.port, "GET", "/r/status")
      assert.equal(418, status)
      assert.equal("Short And Stout", resp.reason)
    end)
    it("with headers, a list repeating one", function()
      local _, _, _, resp = req(server.port, "GET", "/r/headers")
      assert.same({ "1" }, helpers.header_values(resp, "X-One"))
      assert.same({ "a", "b" }, helpers.header_values(resp, "X-Many"))
    end)
    it("with a JSON body, typed as JSON", function()
      local _, b, h = req(server.port, "GET", "/r/json")
      assert.same({ ok = true, n = 3 }, cjson.decode(b))
      assert.equal("application/json", h["content-type"])
    end)
    it("with a base64 body", function()
      assert.equal("hello base64", body_of(server.port, "GET", "/r/base64"))
    end)
    it("after a fixed delay, without holding up other requests", function()
      local slow = helpers.connect(server.port)
      support.defer(function() slow:close() end)
      local t0 = helpers.now()
      slow:send(helpers.build_request("GET", "/r/delay"))
      assert.equal("url_path", body_of(server.port, "GET", "/path-only"))
      -- Answered while the delayed one (1 s) still waits.
      slow:read_available()
      assert.equal("", slow.buf, "the other request was answered only after the delay")
      assert.equal("late", slow:read_response().body)
      assert.is_true(helpers.now() - t0 >= 1.0)
    end)
    -- Each delay is at least what the stub asks, and in milliseconds, not
    -- seconds (the upper bound leaves a busy machine room).
    it("after uniform and lognormal delays", function()
      local t0 = helpers.now()
      assert.equal("u", body_of(server.port, "GET", "/r/uniform"))
      local took = helpers.now() - t0
      assert.is_true(took >= 0.1 and took < 5, tostring(took))
      t0 = helpers.now()
      assert.equal("l", body_of(server.port, "GET", "/r/lognormal"))
      took = helpers.now() - t0
      assert.is_true(took >= 0.04 and took < 5, tostring(took))
    end)
    it("dribbling the body in chunks over the given time", function()
      local c = helpers.connect(server.port)
      support.defer(function() c:close() end)
      local t0 = helpers.now()
      c:send(helpers.build_request("GET", "/r/dribble"))
      -- The first chunk comes before the last: when body bytes are first
      -- seen, the body is not whole yet (the chunks are 200 ms apart).
      local deadline = t0 + 10
      local head_end
      repeat
        c:fill(deadline)
        head_end = c.buf:find("\r\n\r\n", 1, true)
      until (head_end and #c.buf > head_end + 3) or c.eof or helpers.now() >= deadline
      assert.truthy(head_end, "no response head")
      assert.is_nil(c.buf:find("\r\n0\r\n\r\n", 1, true), "the whole body came at once")
      local resp = c:read_response()
      local total = helpers.now() - t0
      assert.equal("abcdefghij", resp.body)
      assert.equal("chunked", resp.headers["transfer-encoding"])
      assert.same({ 2, 2, 2, 2, 2 }, resp.chunk_sizes)
      assert.is_true(total >= 0.75, "the body came in less than its duration: " .. total)
    end)
    it("from templates, staying valid JSON when values hold quotes", function()
      local status, doc, raw = json(server.port, "POST", "/r/template?q=say%20%22hi%22", '{"name":"A \\"quoted\\" name"}')
      assert.equal(200, status)
      assert.truthy(doc, "not JSON: " .. tostring(raw))
      assert.equal("/r/template", doc.path)
      assert.equal("template", doc.seg)
      assert.equal('say "hi"', doc.q)
      assert.equal('A "quoted" name', doc.name)
      assert.equal('{"name":"A \\"quoted\\" name"}', doc.body)
      assert.truthy(doc.now:match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d"))
      assert.truthy(doc.rand:match("^%w+$") and #doc.rand == 12)
      assert.equal("{{request.path}}", body_of(server.port, "GET", "/r/no-template"))
    end)
    it("from a Lua function with state shared by the workers", function()
      local seen = {}
      for i = 1, 20 do
        local _, doc = json(server.port, "POST", "/counter")
        seen[#seen + 1] = doc.n
      end
      table.sort(seen)
      for i = 1, 20 do assert.equal(seen[1] + i - 1, seen[i]) end
    end)
  end)

  describe("faults, as the client sees them", function()
    -- Everything the server sends, and the errno that ended the stream
    -- (nil for an orderly close): lua-socket reports a reset as "closed".
    local function raw(target)
      local fd = assert(psocket.socket(psocket.AF_INET, psocket.SOCK_STREAM, 0))
      assert(psocket.connect(fd, { family = psocket.AF_INET, addr = "127.0.0.1", port = server.port }))
      assert(psocket.send(fd, helpers.build_request("GET", target)))
      local chunks, code = {}, nil
      while true do
        local data, _, e = psocket.recv(fd, 65536)
        if data == nil then code = e break end
        if data == "" then break end
        chunks[#chunks + 1] = data
      end
      unistd.close(fd)
      return table.concat(chunks), code
    end
    it("CONNECTION_RESET_BY_PEER: a reset, no bytes", function()
      local data, code = raw("/fault/CONNECTION_RESET_BY_PEER")
      assert.equal("", data)
      assert.equal(errno.ECONNRESET, code)
    end)
    it("EMPTY_RESPONSE: closed without a byte", function()
      local data, code = raw("/fault/EMPTY_RESPONSE")
      assert.equal("", data)
      assert.is_nil(code)
    end)
    it("MALFORMED_RESPONSE_CHUNK: a chunked head, then a bad chunk, then close", function()
      local data = raw("/fault/MALFORMED_RESPONSE_CHUNK")
      assert.truthy(data:find("^HTTP/1%.1 200 OK\r\nTransfer%-Encoding: chunked\r\n\r\n"), data)
      assert.is_nil(data:find("0\r\n\r\n$"))
      local ok = pcall(helpers.parse_response, data, true)
      local parsed = ok and select(2, pcall(helpers.parse_response, data, true))
      assert.is_falsy(parsed and parsed.status == 200 and parsed.body, "the body parsed cleanly")
    end)
    it("RANDOM_DATA_THEN_CLOSE: bytes that are not HTTP", function()
      local data = raw("/fault/RANDOM_DATA_THEN_CLOSE")
      assert.is_true(#data > 0)
      assert.is_nil(data:find("^HTTP/"))
    end)
  end)

  describe("scenarios", function()
    it("move from Started through states, for every worker, and reset", function()
      assert.equal("[]", body_of(server.port, "GET", "/todo"))
      assert.equal(201, select(2, body_of(server.port, "POST", "/todo")))
      for _ = 1, 6 do assert.equal('["milk"]', body_of(server.port, "GET", "/todo")) end
      local _, doc = json(server.port, "GET", "/__admin/scenarios")
      assert.equal("todo", doc.scenarios[1].name)
      assert.equal("added", doc.scenarios[1].state)
      assert.same({ "Started", "added" }, doc.scenarios[1].possibleStates)
      req(server.port, "POST", "/__admin/scenarios/reset")
      assert.equal("[]", body_of(server.port, "GET", "/todo"))
    end)
  end)

  describe("when nothing matches", function()
    it("answers 404 naming the closest stubs and what differed", function()
      local b, status = body_of(server.port, "GET", "/q?a=y")
      assert.equal(404, status)
      assert.truthy(b:find("No stub matched GET /q%?a=y"), b)
      assert.truthy(b:find('query parameter a is "y", not "x"', 1, true), b)
    end)
  end)

  describe("the admin API", function()
    it("lists mappings in WireMock's JSON", function()
      local status, doc = json(server.port, "GET", "/__admin/mappings")
      assert.equal(200, status)
      assert.is_true(doc.meta.total > 40)
      local found
      for _, m in ipairs(doc.mappings) do
        if m.request.urlPathTemplate == "/tpl/{id}/items/{item}" then found = m end
      end
      assert.truthy(found, "the template stub is not listed in camelCase")
      assert.same({ item = { matches = "[a-z]+" } }, found.request.pathParameters)
    end)
    it("creates, reads, replaces and deletes a mapping, seen by every worker", function()
      local status, created = json(server.port, "POST", "/__admin/mappings",
        '{"request":{"method":"GET","url":"/made"},"response":{"status":200,"body":"made"}}')
      assert.equal(201, status)
      assert.truthy(created.id)
      for _ = 1, 6 do assert.equal("made", body_of(server.port, "GET", "/made")) end
      local _, got = json(server.port, "GET", "/__admin/mappings/" .. created.id)
      assert.equal("/made", got.request.url)
      status = json(server.port, "PUT", "/__admin/mappings/" .. created.id,
        '{"request":{"method":"GET","url":"/made"},"response":{"status":200,"body":"remade"}}')
      assert.equal(200, status)
      for _ = 1, 6 do assert.equal("remade", body_of(server.port, "GET", "/made")) end
      assert.equal(200, (json(server.port, "DELETE", "/__admin/mappings/" .. created.id)))
      for _ = 1, 6 do assert.equal(404, select(2, body_of(server.port, "GET", "/made"))) end
      assert.equal(404, (json(server.port, "GET", "/__admin/mappings/" .. created.id)))
    end)
    it("refuses a mapping it cannot use", function()
      local status = json(server.port, "POST", "/__admin/mappings", '{"request":{"urlPattern":"(["}}')
      assert.equal(422, status)
      assert.equal(422, (json(server.port, "POST", "/__admin/mappings", "not json")))
    end)
    it("deletes every mapping, and resets to the script's", function()
      assert.equal(200, (json(server.port, "DELETE", "/__admin/mappings")))
      assert.equal(404, select(2, body_of(server.port, "GET", "/prio")))
      assert.equal(0, select(2, json(server.port, "GET", "/__admin/mappings")).meta.total)
      assert.equal(200, (json(server.port, "POST", "/__admin/mappings/reset")))
      assert.equal("high", body_of(server.port, "GET", "/prio"))
    end)
    it("keeps a journal: list, count, find, unmatched, clear", function()
      body_of(server.port, "GET", "/path-only?x=1", { ["X-Mixed-Case"] = "a", ["x-mixed-case"] = "b" })
      body_of(server.port, "POST", "/b", nil, "hay needle")
      body_of(server.port, "GET", "/nothing-here")
      local _, doc = json(server.port, "GET", "/__admin/requests")
      assert.equal(3, doc.meta.total)
      assert.equal("/nothing-here", doc.requests[1].request.url)
      assert.is_false(doc.requests[1].wasMatched)
      local logged = doc.requests[1].request.loggedDate / 1000
      assert.is_true(math.abs(logged - os.time()) < 5, "loggedDate is not now")
      assert.equal("hay needle", doc.requests[2].request.body)
      assert.equal("aGF5IG5lZWRsZQ==", doc.requests[2].request.bodyAsBase64)
      assert.equal("/b", doc.requests[2].stubMapping.request.urlPath)
      assert.is_nil(doc.requests[1].stubMapping)
      -- Header names as sent, as WireMock journals them.
      assert.same({ Host = "127.0.0.1", ["X-Mixed-Case"] = "a, b" }, doc.requests[3].request.headers)
      local _, count = json(server.port, "POST", "/__admin/requests/count", '{"method":"POST","urlPath":"/b"}')
      assert.equal(1, count.count)
      local _, found = json(server.port, "POST", "/__admin/requests/find", '{"method":"GET","urlPathPattern":"/path-.*"}')
      assert.equal(1, #found.requests)
      assert.equal("/path-only?x=1", found.requests[1].url)
      local _, unmatched = json(server.port, "GET", "/__admin/requests/unmatched")
      assert.equal(1, #unmatched.requests)
      assert.equal("/nothing-here", unmatched.requests[1].url)
      assert.equal(200, (json(server.port, "DELETE", "/__admin/requests")))
      assert.equal(0, select(2, json(server.port, "GET", "/__admin/requests")).meta.total)
    end)
  end)

  describe("CORS", function()
    it("answers a preflight", function()
      local status, _, h = req(server.port, "OPTIONS", "/anything", {
        Origin = "http://app.test", ["Access-Control-Request-Method"] = "PUT",
        ["Access-Control-Request-Headers"] = "X-Custom" })
      assert.equal(204, status)
      assert.equal("http://app.test", h["access-control-allow-origin"])
      assert.truthy(h["access-control-allow-methods"]:find("PUT", 1, true))
      assert.equal("X-Custom", h["access-control-allow-headers"])
    end)
    it("puts Access-Control-Allow-Origin on every response", function()
      local _, _, h = req(server.port, "GET", "/path-only")
      assert.equal("*", h["access-control-allow-origin"])
      _, _, h = req(server.port, "GET", "/nowhere", { Origin = "http://app.test" })
      assert.equal("http://app.test", h["access-control-allow-origin"])
      _, _, h = req(server.port, "GET", "/plain")
      assert.equal("*", h["access-control-allow-origin"])
    end)
  end)
end)

describe("mock options", function()
  it("--no-cors leaves CORS out", function()
    local server = support.start("spec/fixtures/mock.lua", { "--no-cors" })
    local _, _, h = req(server.port, "GET", "/path-only")
    assert.is_nil(h["access-control-allow-origin"])
    local status = req(server.port, "OPTIONS", "/x", { Origin = "http://a", ["Access-Control-Request-Method"] = "GET" })
    assert.equal(404, status)
  end)
  it("--journal-size bounds the journal, across workers", function()
    local server = support.start("spec/fixtures/mock.lua", { "--journal-size", "5", "--workers", "2" })
    for i = 1, 12 do body_of(server.port, "GET", "/path-only?i=" .. i) end
    local _, doc = json(server.port, "GET", "/__admin/requests")
    assert.equal(5, doc.meta.total)
    assert.equal("/path-only?i=12", doc.requests[1].request.url)
    assert.equal("/path-only?i=8", doc.requests[5].request.url)
  end)
end)

describe("mock command line", function()
  it("refuses --mock with an APP too, and a missing directory", function()
    local code, _, err = helpers.run({ "--mock", "spec/fixtures/wiremock", "spec/fixtures/mock.lua" })
    assert.equal(2, code)
    assert.truthy(err:find("--mock", 1, true))
    code, _, err = helpers.run({ "--listen", "127.0.0.1:0", "--mock", "/nonexistent/dir" })
    assert.equal(1, code)
    assert.truthy(err:find("/nonexistent/dir", 1, true), err)
  end)
  it("checks a mock directory with --check", function()
    local code, out = helpers.run({ "--check", "--mock", "spec/fixtures/wiremock" })
    assert.equal(0, code)
    assert.truthy(out:find("^%-%-mock spec/fixtures/wiremock: ok, %d+ routes\n"), out)
    assert.truthy(out:find("GET /__admin/mappings", 1, true))
  end)
  it("keeps no journal with --journal-size 0", function()
    local server = support.start("spec/fixtures/mock.lua", { "--journal-size", "0" })
    body_of(server.port, "GET", "/path-only")
    local _, doc = json(server.port, "GET", "/__admin/requests")
    assert.equal(0, doc.meta.total)
  end)
end)

describe("moonport --mock DIR", function()
  it("reloads when a mapping changes or is added, and keeps serving through a broken one", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("cp -r spec/fixtures/wiremock " .. dir) == 0)
    support.defer(function() helpers.remove_dir(dir) end)
    local server = support.start(dir, nil, { mock = true })
    local port = server.port
    local function write(path, text)
      local f = assert(io.open(dir .. "/" .. path, "w"))
      f:write(text)
      f:close()
    end
    assert.equal("Hello, world!", body_of(port, "GET", "/some/thing"))
    -- A mapping added through the admin API outlives reloads of the files.
    assert.equal(201, (json(port, "POST", "/__admin/mappings",
      '{"request":{"url":"/added"},"response":{"body":"added"}}')))
    write("mappings/hello.json", '{"request":{"url":"/some/thing"},"response":{"body":"Changed"}}')
    assert.truthy(helpers.eventually(function() return body_of(port, "GET", "/some/thing") == "Changed" end))
    assert.equal("added", body_of(port, "GET", "/added"))
    write("mappings/nested/new.json", '{"request":{"url":"/new"},"response":{"body":"new one"}}')
    assert.truthy(helpers.eventually(function() return body_of(port, "GET", "/new") == "new one" end))
    write("mappings/nested/bad.json", "{broken")
    assert.truthy(helpers.eventually(function()
      return server:stderr():find("bad%.json: not JSON")
    end), server:stderr())
    assert.equal("new one", body_of(port, "GET", "/new"))
  end)

  it("serves WireMock mappings, bodies from __files and Lua stub scripts", function()
    local server = support.start("spec/fixtures/wiremock", nil, { mock = true })
    local port = server.port
    local status, b, h = req(port, "GET", "/some/thing")
    assert.equal(200, status)
    assert.equal("Hello, world!", b)
    assert.equal("text/plain", h["content-type"])
    assert.same({ id = 1, name = "Ada" }, cjson.decode((body_of(port, "GET", "/users/77"))))
    local st, created, hh, resp = req(port, "POST", "/users", { ["Content-Type"] = "application/json" }, '{"name":"Bo"}')
    assert.equal(201, st)
    assert.equal("Made It", resp.reason)
    assert.equal('{"created":true}\n', created)
    assert.equal("/users/2", hh.location)
    assert.same({ "a=1", "b=2" }, helpers.header_values(resp, "Set-Cookie"))
    assert.same({ contact = "12", address = "34" }, cjson.decode((body_of(port, "GET", "/contacts/12/addresses/34"))))
    assert.same({ lua = true }, cjson.decode((body_of(port, "GET", "/from-lua"))))
    -- A GET no stub matches is served from __files, as WireMock does.
    local fst, fbody, fh = req(port, "GET", "/created.json")
    assert.equal(200, fst)
    assert.equal('{"created":true}\n', fbody)
    assert.equal("application/json", fh["content-type"])
    assert.equal(404, (req(port, "GET", "/../mappings/hello.json")))
    assert.equal(404, (req(port, "POST", "/created.json")))
    local _, doc = json(port, "GET", "/__admin/mappings/8c5db8b0-2db4-4ad7-a99f-38c9b00da3f7")
    assert.equal("user by id", doc.name)
    assert.equal("/users/[0-9]+", doc.request.urlPathPattern)
  end)
end)

-- A WireMock root in a new directory: files maps relative paths to their
-- text. Returns its path; remove it with helpers.remove_dir(dir).
local function mock_root(files)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. dir .. "/mappings " .. dir .. "/__files") == 0)
  for path, text in pairs(files) do
    local f = assert(io.open(dir .. "/" .. path, "wb"))
    f:write(text)
    f:close()
  end
  return dir
end

-- One response read to the end on its own connection, in pieces (the
-- helpers' reader joins its buffer on every read, too slow for tens of
-- megabytes).
local function fetch_large(port, target)
  local socket = require("socket")
  local sock = assert(socket.tcp())
  sock:settimeout(60)
  assert(sock:connect("127.0.0.1", port))
  assert(sock:send(helpers.build_request("GET", target, { Connection = "close" })))
  local parts = {}
  while true do
    local data, err, partial = sock:receive(1024 * 1024)
    local chunk = data or partial
    if chunk and #chunk > 0 then parts[#parts + 1] = chunk end
    if err == "closed" then break end
    assert(err == nil, err)
  end
  sock:close()
  return (helpers.parse_response(table.concat(parts), true))
end

describe("mock admin data", function()
  it("refuses a number like 1e309 where it must use it, with 422, losing nothing", function()
    local server = support.start("spec/fixtures/mock.lua")
    local port = server.port
    assert.equal(201, (json(port, "POST", "/__admin/mappings",
      '{"id":"11111111-2222-4333-8444-555555555555","request":{"url":"/first"},"response":{"body":"first"}}')))
    local total = select(2, json(port, "GET", "/__admin/mappings")).meta.total
    local status, doc, raw = json(port, "POST", "/__admin/mappings",
      '{"request":{"url":"/inf"},"response":{"status":200,"fixedDelayMilliseconds":1e309}}')
    assert.equal(422, status, raw)
    assert.truthy(doc.errors[1].detail:find("response.fixed_delay_milliseconds: not a finite number", 1, true), raw)
    assert.equal(422, (json(port, "PUT", "/__admin/mappings/11111111-2222-4333-8444-555555555555",
      '{"request":{"url":"/first"},"response":{"body":"second"},"priority":1e309}')))
    assert.equal("first", body_of(port, "GET", "/first"))
    assert.equal(404, select(2, body_of(port, "GET", "/inf")))
    assert.equal(total, select(2, json(port, "GET", "/__admin/mappings")).meta.total)
  end)

  it("serves a number like 1e309 in a jsonBody as written", function()
    local server = support.start("spec/fixtures/mock.lua")
    local port = server.port
    assert.equal(201, (json(port, "POST", "/__admin/mappings",
      '{"request":{"url":"/huge"},"response":{"jsonBody":{"n":1e309}}}')))
    assert.equal('{"n":1e309}', body_of(port, "GET", "/huge"))
  end)

  it("keeps admin mappings, scenario states and journal numbers whatever fills the journal and moonport.shared", function()
    local server = support.start("spec/fixtures/mock_limits.lua", { "--shared-size", "64k" })
    local port = server.port
    assert.equal(201, (json(port, "POST", "/__admin/mappings", '{"request":{"url":"/kept"},"response":{"body":"kept"}}')))
    assert.equal(201, (json(port, "POST", "/__admin/mappings", '{"scenarioName":"s","requiredScenarioState":"Started",'
      .. '"newScenarioState":"two","request":{"url":"/step"},"response":{"body":"one"}}')))
    assert.equal(201, (json(port, "POST", "/__admin/mappings", '{"scenarioName":"s","requiredScenarioState":"two",'
      .. '"request":{"url":"/step"},"response":{"body":"two"}}')))
    assert.equal("one", body_of(port, "GET", "/step"))
    assert.equal("true", body_of(port, "POST", "/fill?n=200&size=1000"))
    local c = helpers.connect(port)
    local body = ("j"):rep(4096)
    for i = 1, 100 do assert.equal(404, c:request("POST", "/flood/" .. i, nil, body).status) end
    c:close()
    assert.equal("kept", body_of(port, "GET", "/kept"))
    assert.equal("two", body_of(port, "GET", "/step"))
    local _, doc = json(port, "GET", "/__admin/requests?limit=3")
    assert.equal(3, #doc.requests)
    assert.equal("/step", doc.requests[1].request.url)
    assert.equal("/kept", doc.requests[2].request.url)
    assert.equal("/flood/100", doc.requests[3].request.url)
    assert.equal("6a6f7572-6e61-4c00-8000-000000000067", doc.requests[1].id) -- the 103rd
  end)

  it("stores more than 1 MiB of admin mappings", function()
    local server = support.start("spec/fixtures/mock.lua")
    local port = server.port
    local before = select(2, json(port, "GET", "/__admin/mappings")).meta.total
    local big = ("m"):rep(60 * 1024)
    for i = 1, 24 do
      local status = json(port, "POST", "/__admin/mappings",
        cjson.encode({ request = { url = "/big/" .. i }, response = { body = i .. big } }))
      assert.equal(201, status, "mapping " .. i)
    end
    for i = 1, 24 do assert.equal(i .. big, body_of(port, "GET", "/big/" .. i)) end
    assert.equal(before + 24, select(2, json(port, "GET", "/__admin/mappings")).meta.total)
  end)

  it("answers 507 when --mock-state-size has no room, and keeps what it had", function()
    local server = support.start("spec/fixtures/mock.lua", { "--mock-state-size", "64k", "--stats" })
    local port = server.port
    local filler = ("s"):rep(8 * 1024)
    local stored, status, doc, raw = 0, nil, nil, nil
    for i = 1, 20 do
      status, doc, raw = json(port, "POST", "/__admin/mappings",
        cjson.encode({ id = "fill-" .. i, request = { url = "/s/" .. i }, response = { body = filler } }))
      if status ~= 201 then break end
      stored = i
    end
    assert.equal(507, status, raw)
    assert.truthy(doc.errors[1].detail:find("--mock-state-size", 1, true), raw)
    assert.is_true(stored >= 2)
    for i = 1, stored do assert.equal(filler, body_of(port, "GET", "/s/" .. i)) end
    assert.equal(404, select(2, body_of(port, "GET", "/s/" .. (stored + 1))))
    assert.equal(404, (json(port, "GET", "/__admin/mappings/fill-" .. (stored + 1))))
    -- Room made is room to use.
    assert.equal(200, (json(port, "DELETE", "/__admin/mappings/fill-1")))
    assert.equal(201, (json(port, "POST", "/__admin/mappings",
      cjson.encode({ request = { url = "/s/again" }, response = { body = filler } }))))
    -- Each store on the stats endpoint, sized by its option.
    local _, stats = json(port, "GET", "/__moonport/stats")
    assert.is_true(stats.mock_state.capacity_bytes < 64 * 1024)
    assert.is_true(stats.mock_state.used_bytes > 32 * 1024)
    assert.is_true(stats.mock_journal.capacity_bytes > 30 * 1024 * 1024)
    assert.is_true(stats.mock_journal.entries >= stored)
    assert.equal(0, stats.shared.entries)
  end)
end)

describe("mock journal", function()
  it("answers GET /__admin/requests for the largest journal the defaults allow", function()
    local server = support.start("spec/fixtures/mock.lua", { "--stats" })
    local port = server.port
    local c = helpers.connect(port)
    local body = ("0123456789abcdef"):rep(4096) -- 64 KiB, the most an entry keeps
    -- 320 entries that size overflow the journal's default 32 MiB.
    for i = 1, 320 do assert.equal("any", c:request("POST", "/any?i=" .. i, nil, body).body) end
    c:close()
    local _, stats = json(port, "GET", "/__moonport/stats")
    local j = stats.mock_journal
    assert.is_true(j.used_bytes > j.capacity_bytes * 0.9, cjson.encode(j))
    local resp = fetch_large(port, "/__admin/requests")
    assert.equal(200, resp.status, resp.body:sub(1, 300))
    local doc = assert(cjson.decode(resp.body))
    assert.equal(j.entries, #doc.requests)
    assert.equal(#doc.requests, doc.meta.total)
    assert.is_true(#doc.requests > 200)
    assert.equal("/any?i=320", doc.requests[1].request.url)
    assert.equal(body, doc.requests[1].request.body)
    assert.equal(4 * math.ceil(#body / 3), #doc.requests[#doc.requests].request.bodyAsBase64)
  end)

  it("lists only unmatched requests with ?unmatched=true, and counts in WireMock's shape", function()
    local server = support.start("spec/fixtures/mock.lua")
    local port = server.port
    body_of(port, "GET", "/path-only")
    body_of(port, "GET", "/nowhere")
    body_of(port, "GET", "/path-only?again")
    local _, doc = json(port, "GET", "/__admin/requests?unmatched=true")
    assert.equal(1, #doc.requests)
    assert.equal("/nowhere", doc.requests[1].request.url)
    assert.is_false(doc.requests[1].wasMatched)
    local _, _, raw = json(port, "POST", "/__admin/requests/count", '{"method":"GET","urlPath":"/path-only"}')
    assert.same({ count = 2, requestJournalDisabled = false }, cjson.decode(raw))
  end)

  it("says the journal is off with --journal-size 0", function()
    local server = support.start("spec/fixtures/mock.lua", { "--journal-size", "0" })
    local _, doc = json(server.port, "POST", "/__admin/requests/count", '{"method":"GET"}')
    assert.same({ count = 0, requestJournalDisabled = true }, doc)
    assert.is_true(select(2, json(server.port, "GET", "/__admin/requests")).requestJournalDisabled)
  end)
end)

describe("mock regular expressions", function()
  local server = support.serve("spec/fixtures/mock_limits.lua", { "--handler-timeout", "1" })

  local EVIL = ("a"):rep(30) .. "!"

  it("pass over a stub whose pattern gives up at the match limit, logged once, never taking it for a mismatch", function()
    for _ = 1, 3 do assert.equal("fallback", body_of(server.port, "GET", "/evil", { ["X-In"] = EVIL })) end
    assert.equal("evil stub", body_of(server.port, "GET", "/evil", { ["X-In"] = "fine" }))
    local _, n = server:stderr():gsub("/evil%) passed over: header X%-In: /%(a%+%)%+%[bc%]/ gave up", "")
    assert.equal(1, n, server:stderr())
  end)

  it("cost a worker no more than its handler timeout, a hundred such stubs at once", function()
    local workers = server:workers()
    local b, status = body_of(server.port, "GET", "/slow", { ["X-In"] = EVIL })
    assert.equal(404, status, b)
    -- They came nearest (the path matched), and the report says why they
    -- were passed over.
    assert.truthy(b:find("\n  1. [^\n]*/slow%): header X%-In: /%(a%+%)%+%[bc%]/ gave up at PCRE2's match limit"), b)
    assert.same(workers, server:workers())
    assert.is_nil(server:stderr():find("killing it", 1, true))
  end)

  it("run once per request, the report of the closest stubs included", function()
    body_of(server.port, "GET", "/regex-calls")
    local b, status = body_of(server.port, "GET", "/count?v=abc")
    assert.equal(404, status)
    assert.truthy(b:find('query parameter v "abc" does not match /[0-9]+/', 1, true), b)
    -- One match for each of the five stubs on /count, and one for the URL
    -- pattern of "user by id", which only the report tried.
    assert.equal("6", body_of(server.port, "GET", "/regex-calls"))
  end)

  it("rank the closest stubs by how near the request came, the URL first", function()
    local b, status = body_of(server.port, "GET", "/api/users/abc")
    assert.equal(404, status)
    assert.truthy(b:find("\n  1. user by id (GET /api/users/[0-9]+): path /api/users/abc does not match", 1, true), b)
    b = body_of(server.port, "POST", "/api/user")
    assert.truthy(b:find("\n  1. create user (POST /api/users)", 1, true), b)
    b = body_of(server.port, "GET", "/api/search?q=")
    assert.truthy(b:find("\n  1. search (GET /api/search)", 1, true), b)
  end)

  it("report a path that is all the start of a template or pattern as a miss", function()
    for _, mapping in ipairs({
      { request = { urlPathTemplate = "/start/{id}" }, response = { body = "tpl" } },
      { request = { urlPattern = "/start2\\?a=[a-z]+" }, response = { body = "re" } },
    }) do
      req(server.port, "POST", "/__admin/reset")
      assert.equal(201, (json(server.port, "POST", "/__admin/mappings", cjson.encode(mapping))))
      local path = mapping.request.urlPathTemplate and "/start" or "/start2"
      local b, status = body_of(server.port, "GET", path)
      assert.equal(404, status, b)
      assert.truthy(b:find("Closest stubs:\n  1. ", 1, true), b)
    end
  end)
end)

describe("mock responses WireMock serves", function()
  it("drop the Date, Transfer-Encoding and Content-Length a mapping sets: the core frames the response", function()
    local server = support.start("spec/fixtures/mock.lua")
    local port = server.port
    assert.equal(201, (json(port, "POST", "/__admin/mappings", cjson.encode({
      request = { url = "/framed" },
      response = { body = "framed body", headers = { Date = "Mon, 01 Jan 2001 00:00:00 GMT",
        ["Transfer-Encoding"] = "chunked", ["Content-Length"] = "999", ["X-Kept"] = "yes" } } }))))
    local status, b, h, resp = req(port, "GET", "/framed")
    assert.equal(200, status)
    assert.equal("framed body", b)
    assert.equal(1, #helpers.header_values(resp, "Date"))
    assert.is_nil(h["date"]:find("2001", 1, true))
    assert.is_nil(h["transfer-encoding"])
    assert.equal("11", h["content-length"])
    assert.equal("yes", h["x-kept"])
  end)

  it("refuse a 1xx or out-of-range status when the mapping is loaded", function()
    local dir = mock_root({ ["mappings/interim.json"] = '{"request":{"url":"/x"},"response":{"status":101}}' })
    support.defer(function() helpers.remove_dir(dir) end)
    local server = support.start("spec/fixtures/mock.lua")
    for _, st in ipairs({ 100, 101, 199, 600, 99 }) do
      local status, doc, raw = json(server.port, "POST", "/__admin/mappings",
        cjson.encode({ request = { url = "/s" .. st }, response = { status = st } }))
      assert.equal(422, status, raw)
      assert.truthy(doc.errors[1].detail:find("status " .. st, 1, true), raw)
    end
    local code, _, err = helpers.run({ "--listen", "127.0.0.1:0", "--mock", dir })
    assert.equal(1, code)
    assert.truthy(err:find("mappings/interim.json: status 101", 1, true), err)
  end)

  it("stream a body file of many megabytes under the request memory limit", function()
    local size = 6 * 1024 * 1024
    local big = ("0123456789abcde\n"):rep(size / 16)
    local dir = mock_root({
      ["__files/big.bin"] = big,
      ["mappings/big.json"] = '{"request":{"url":"/big"},"response":{"bodyFileName":"big.bin"}}',
    })
    support.defer(function() helpers.remove_dir(dir) end)
    local server = support.start(dir, nil, { mock = true })
    for _, target in ipairs({ "/big", "/big.bin" }) do
      local resp = fetch_large(server.port, target)
      assert.equal(200, resp.status, target .. ": " .. resp.body:sub(1, 200))
      assert.equal(tostring(size), resp.headers["content-length"])
      assert.is_nil(helpers.first_difference(big, resp.body))
    end
  end)
end)

describe("mock responses it cannot serve", function()
  it("are refused by the admin API with 422, naming them", function()
    local server = support.start("spec/fixtures/mock.lua")
    local cases = {
      { { proxyBaseUrl = "ftp://example.com" }, "proxyBaseUrl ftp://example.com: not an http or https URL" },
      { { body = "{{#lookup request.method}}yes{{/lookup}}", transformers = { "response-template" } },
        "'#lookup' is not a block" },
      { { body = "{{#if request.method}}yes", transformers = { "response-template" } }, "never closed" },
      { { body = "{{truncateDate (now) 'first day of month'}}", transformers = { "response-template" } },
        "'truncateDate' is not a helper" },
      { { headers = { ["X-Y"] = "{{now timezone='Europe/Paris'}}" },
          transformers = { "response-template" } }, "time zone 'Europe/Paris'" },
    }
    for _, case in ipairs(cases) do
      local status, doc, raw = json(server.port, "POST", "/__admin/mappings",
        cjson.encode({ request = { url = "/unsupported" }, response = case[1] }))
      assert.equal(422, status, raw)
      assert.truthy(doc.errors[1].detail:find(case[2], 1, true), raw)
    end
    assert.equal(404, select(2, body_of(server.port, "GET", "/unsupported")))
  end)

  it("in a mapping file stop the server from starting, naming the file and the feature", function()
    local dir = mock_root({ ["mappings/proxy.json"] =
      '{"request":{"url":"/p"},"response":{"proxyBaseUrl":"ftp://example.com"}}' })
    support.defer(function() helpers.remove_dir(dir) end)
    local code, _, err = helpers.run({ "--listen", "127.0.0.1:0", "--mock", dir })
    assert.equal(1, code)
    assert.truthy(err:find("mappings/proxy.json: proxyBaseUrl ftp://example.com", 1, true), err)
    code, _, err = helpers.run({ "--check", "--mock", dir })
    assert.equal(1, code)
    assert.truthy(err:find("proxyBaseUrl", 1, true), err)
  end)

  it("in a mapping file fail its reload, and the old stubs keep serving", function()
    local dir = mock_root({ ["mappings/a.json"] = '{"request":{"url":"/a"},"response":{"body":"a"}}' })
    support.defer(function() helpers.remove_dir(dir) end)
    local server = support.start(dir, nil, { mock = true })
    local f = assert(io.open(dir .. "/mappings/a.json", "w"))
    f:write('{"request":{"url":"/a"},"response":{"body":"{{#each request.query}}x{{/if}}",'
      .. '"transformers":["response-template"]}}')
    f:close()
    assert.truthy(helpers.eventually(function()
      return server:stderr():find("reload %(files changed%) failed: .-mappings/a%.json: body: template: .-never closed")
    end), server:stderr())
    assert.equal("a", body_of(server.port, "GET", "/a"))
  end)

  it("answer 500 with the reason when a body file's template does not render, never the raw template", function()
    local dir = mock_root({
      ["__files/t.txt"] = "Hello {{#if request.method}}you{{/unless}}",
      ["mappings/t.json"] = '{"request":{"url":"/t"},"response":{"bodyFileName":"t.txt",'
        .. '"transformers":["response-template"]}}',
    })
    support.defer(function() helpers.remove_dir(dir) end)
    local server = support.start(dir, nil, { mock = true })
    local b, status = body_of(server.port, "GET", "/t")
    assert.equal(500, status)
    assert.truthy(b:find("^response template failed: body: .*never closed"), b)
    assert.is_nil(b:find("Hello", 1, true))
  end)

  it("with a directory that is not there, exit 1 naming it", function()
    local code, _, err = helpers.run({ "--listen", "127.0.0.1:0", "--mock", "spec/fixtures/no-such-dir" })
    assert.equal(1, code)
    assert.truthy(err:find("spec/fixtures/no-such-dir: No such file or directory", 1, true), err)
    code, _, err = helpers.run({ "--check", "--mock", "spec/fixtures/no-such-dir" })
    assert.equal(1, code)
    assert.truthy(err:find("spec/fixtures/no-such-dir", 1, true), err)
  end)
end)
