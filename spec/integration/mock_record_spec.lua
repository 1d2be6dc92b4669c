-- The mock's recorder (WireMock's recordings API and --record-mappings)
-- against a real API, a second moonport (spec/fixtures/http_upstream.lua):
-- a session recorded, stopped and written as WireMock files, then served
-- by the mock and by a mock restarted on the directory with the API gone;
-- a snapshot of the journal; --record-mappings; and the errors.
local helpers = require("spec.helpers")
local process = require("spec.support.process")
local cjson = require("cjson")

local recording = require("spec.support.recording")
local BYTES, SESSION, play = recording.BYTES, recording.SESSION, recording.play

local function files(dir)
  local list = {}
  local p = io.popen("ls -A " .. dir .. " 2>/dev/null")
  for name in p:lines() do list[#list + 1] = name end
  p:close()
  table.sort(list)
  return list
end

local function post_json(port, path, value)
  local status, _, body = helpers.request(port, "POST", path,
    { ["Content-Type"] = "application/json" }, value and cjson.encode(value) or "")
  return status, body
end

local function get(port, path)
  local status, headers, body = helpers.request(port, "GET", path)
  return status, body, headers
end

describe("mock recording", function()
  local upstream, base
  setup(function()
    upstream = process.start("spec/fixtures/http_upstream.lua")
    base = "http://127.0.0.1:" .. upstream.port
  end)
  teardown(function()
    if upstream then upstream:stop() end
  end)

  local dirs, mocks = {}, {}
  local function new_mock(args)
    local dir = helpers.scratch_dir()
    dirs[#dirs + 1] = dir
    local m = process.start(dir, args, { mock = true })
    mocks[#mocks + 1] = m
    return m, dir
  end
  after_each(function()
    for _, m in ipairs(mocks) do m:stop() end
    for _, d in ipairs(dirs) do helpers.remove_dir(d) end
    mocks, dirs = {}, {}
  end)

  it("records a session as WireMock files that a restarted mock serves the same", function()
    -- An API of its own, stopped before the replay.
    local api = process.start("spec/fixtures/http_upstream.lua")
    mocks[#mocks + 1] = api
    local mock, dir = new_mock()
    local _, body = get(mock.port, "/__admin/recordings/status")
    assert.same({ status = "NeverStarted" }, helpers.json(body))
    assert.equal(200, (post_json(mock.port, "/__admin/recordings/start",
      { targetBaseUrl = "http://127.0.0.1:" .. api.port })))
    _, body = get(mock.port, "/__admin/recordings/status")
    assert.same({ status = "Recording" }, helpers.json(body))

    local live = play(mock.port)
    assert.equal(200, live[1].status)
    assert.equal("/echo", helpers.json(live[1].body).path)
    assert.equal("\0\255\1", helpers.json(live[3].body).body)
    assert.is_true(live[5].body == BYTES)
    assert.equal(404, live[6].status)
    assert.equal("1", live[7].body)
    assert.equal("2", live[8].body)

    local status
    status, body = post_json(mock.port, "/__admin/recordings/stop")
    assert.equal(200, status, body)
    local mappings = helpers.json(body).mappings
    assert.equal(#SESSION, #mappings, body)
    _, body = get(mock.port, "/__admin/recordings/status")
    assert.same({ status = "Stopped" }, helpers.json(body))

    -- WireMock's shapes: the request as it came, the answer as it went.
    local by_url = {}
    for _, m in ipairs(mappings) do
      by_url[m.request.method .. " " .. m.request.url] = by_url[m.request.method .. " " .. m.request.url] or {}
      table.insert(by_url[m.request.method .. " " .. m.request.url], m)
      assert.equal(m.id, m.uuid)
      assert.is_true(m.persistent)
    end
    assert.same({ { binaryEqualTo = "AP8B" } }, by_url["PUT /echo"][1].request.bodyPatterns)
    local post = by_url["POST /echo"][1]
    assert.same({ { equalToJson = '{"x":[1,2]}', ignoreArrayOrder = true, ignoreExtraElements = true } },
      post.request.bodyPatterns)
    local big = by_url["GET /big/20000"][1]
    assert.equal("big_20000-" .. big.id .. ".txt", big.response.bodyFileName)
    assert.is_nil(big.response.body)
    assert.equal("bytes-" .. by_url["GET /bytes"][1].id .. ".bin", by_url["GET /bytes"][1].response.bodyFileName)
    assert.equal(404, by_url["GET /status/404"][1].response.status)
    local counter = by_url["GET /counter"]
    assert.equal(2, #counter)
    assert.equal("scenario-1-counter", counter[1].scenarioName)
    assert.equal("Started", counter[1].requiredScenarioState)
    assert.equal("scenario-1-counter-2", counter[1].newScenarioState)
    assert.equal("scenario-1-counter-2", counter[2].requiredScenarioState)
    assert.is_nil(counter[2].newScenarioState)

    -- Written where WireMock writes them, named as it names them.
    local written = files(dir .. "/mappings")
    assert.equal(#SESSION, #written, table.concat(written, " "))
    for _, m in ipairs(mappings) do
      local name = m.name .. "-" .. m.id .. ".json"
      local f = assert(io.open(dir .. "/mappings/" .. name, "rb"), name)
      assert.equal(m.id, cjson.decode(f:read("*a")).id)
      f:close()
    end
    local f = assert(io.open(dir .. "/__files/" .. big.response.bodyFileName, "rb"))
    assert.equal(("x"):rep(20000), f:read("*a"))
    f:close()

    -- The mock serves them now, the API gone, and so does a mock started
    -- afresh on the directory; the repeated request replays its answers
    -- in order.
    api:stop()
    play(mock.port, live)
    mock:stop()
    local again = process.start(dir, nil, { mock = true })
    mocks[#mocks + 1] = again
    play(again.port, live)
    status, body = get(again.port, "/counter")
    assert.equal("2", body, "the last answer repeats")
  end)

  it("takes a snapshot of the journal's proxied requests, filtered, without writing files", function()
    local mock, dir = new_mock({ "--proxy-all", base })
    get(mock.port, "/echo?snap=1")
    get(mock.port, "/counter")
    local status, body = post_json(mock.port, "/__admin/recordings/snapshot", {
      filters = { urlPathPattern = "/echo.*" }, persist = false, outputFormat = "IDS" })
    assert.equal(200, status, body)
    local ids = helpers.json(body).ids
    assert.equal(1, #ids, body)
    _, body = get(mock.port, "/__admin/mappings/" .. ids[1])
    local m = helpers.json(body)
    assert.equal("/echo?snap=1", m.request.url)
    assert.is_nil(m.persistent)
    assert.same({}, files(dir .. "/mappings"))
    -- The snapshot's stub answers above the catch-all proxy: the journal
    -- shows the next request served by it, not proxied.
    get(mock.port, "/echo?snap=1")
    _, body = get(mock.port, "/__admin/requests?limit=1")
    local e = helpers.json(body).requests[1]
    assert.equal(ids[1], e.stubMapping.id)
    assert.is_nil(e.responseDefinition.proxyBaseUrl)
  end)

  it("writes each distinct request once with --record-mappings, for a restart to serve", function()
    local mock, dir = new_mock({ "--proxy-all", base, "--record-mappings" })
    local _, first = get(mock.port, "/counter")
    assert.truthy(helpers.eventually(function() return #files(dir .. "/mappings") == 1 end),
      "one mapping written")
    get(mock.port, "/counter")
    get(mock.port, "/counter")
    assert.equal(1, #files(dir .. "/mappings"), table.concat(files(dir .. "/mappings"), " "))
    mock:stop()
    local again = process.start(dir, nil, { mock = true })
    mocks[#mocks + 1] = again
    local status, body = get(again.port, "/counter")
    assert.equal(200, status)
    assert.equal(first, body)
  end)

  it("journals a proxied answer with the target's response, bytes in base64", function()
    local mock = new_mock({ "--proxy-all", base })
    get(mock.port, "/bytes")
    local _, body = get(mock.port, "/__admin/requests?limit=1")
    local e = helpers.json(body).requests[1]
    assert.equal(base, e.responseDefinition.proxyBaseUrl)
    assert.equal(200, e.response.status)
    assert.equal("application/octet-stream", e.response.headers["Content-Type"])
    assert.equal(require("mime").b64(BYTES), e.response.bodyAsBase64)
  end)

  it("refuses what it cannot do, with the reason", function()
    local mock = new_mock()
    local status, body = post_json(mock.port, "/__admin/recordings/stop")
    assert.equal(400, status)
    assert.equal("Not currently recording.", helpers.json(body).errors[1].title)
    status, body = post_json(mock.port, "/__admin/recordings/start", { targetBaseUrl = "ftp://x" })
    assert.equal(422, status)
    assert.truthy(body:find("targetBaseUrl", 1, true), body)
    status, body = post_json(mock.port, "/__admin/recordings/snapshot", { outputFormat = "XML" })
    assert.equal(422, status)
    assert.truthy(body:find("outputFormat", 1, true), body)
    local off = new_mock({ "--journal-size", "0" })
    status, body = post_json(off.port, "/__admin/recordings/start", { targetBaseUrl = base })
    assert.equal(422, status)
    assert.truthy(body:find("--journal-size 0", 1, true), body)
  end)
end)
