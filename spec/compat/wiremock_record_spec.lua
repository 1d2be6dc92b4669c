-- A directory recorded by moonport, checked against the real WireMock (the
-- standalone jar the npm package `wiremock` ships, fetched by
-- spec/support/fetch_wiremock.sh): WireMock loads every mapping and body
-- file moonport wrote and answers the session as the API did, and so does
-- moonport restarted on the directory.
local helpers = require("spec.helpers")
local process = require("spec.support.process")
local cjson = require("cjson")
local recording = require("spec.support.recording")

local JAR = (os.getenv("MOONPORT_WIREMOCK") or "build/wiremock") .. "/wiremock-standalone.jar"

describe("a recording in the real WireMock", function()
  local procs, dir = {}, nil
  teardown(function()
    for _, p in ipairs(procs) do p:stop() end
    if dir then helpers.remove_dir(dir) end
  end)

  it("is served by WireMock as by moonport, the API gone", function()
    local api = process.start("spec/fixtures/http_upstream.lua")
    procs[#procs + 1] = api
    dir = helpers.scratch_dir()
    local mock = process.start(dir, nil, { mock = true })
    procs[#procs + 1] = mock
    local status = helpers.request(mock.port, "POST", "/__admin/recordings/start", nil,
      cjson.encode({ targetBaseUrl = "http://127.0.0.1:" .. api.port }))
    assert.equal(200, status)
    local live = recording.play(mock.port)
    local body
    status, _, body = helpers.request(mock.port, "POST", "/__admin/recordings/stop")
    assert.equal(200, status, body)
    mock:stop()
    api:stop()

    local port = process.free_port()
    local wiremock = process.spawn({ "java", "-Xmx256m", "-jar", JAR, "--port", tostring(port),
      "--bind-address", "127.0.0.1", "--root-dir", dir, "--disable-banner" })
    procs[#procs + 1] = wiremock
    process.wait_port(port, 120, wiremock)
    status, _, body = helpers.request(port, "GET", "/__admin/mappings")
    assert.equal(200, status, body)
    assert.equal(#recording.SESSION, #cjson.decode(body).mappings, body)
    recording.play(port, live, "WireMock")

    local again = process.start(dir, nil, { mock = true })
    procs[#procs + 1] = again
    recording.play(again.port, live, "moonport")
  end)
end)
