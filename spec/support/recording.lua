--- A session to record against spec/fixtures/http_upstream.lua and replay
-- against whatever serves the recording (the mock, a restarted mock, the
-- real WireMock): each request of SESSION, and its answer compared.
local helpers = require("spec.helpers")
local assert = require("luassert")

local recording = {}

local bytes = {}
for i = 0, 255 do bytes[#bytes + 1] = string.char(i) end
--- What GET /bytes answers: every byte value once.
recording.BYTES = table.concat(bytes)

--- The requests: {method, target, body, headers}. Text and JSON bodies,
-- bytes both ways, a body past 10 KiB (kept in __files), a 404 and one
-- request twice with two answers (a scenario).
recording.SESSION = {
  { "GET", "/echo?a=1" },
  { "POST", "/echo", '{"x":[1,2]}', { ["Content-Type"] = "application/json" } },
  { "PUT", "/echo", "\0\255\1", { ["Content-Type"] = "application/octet-stream" } },
  { "GET", "/big/20000" },
  { "GET", "/bytes" },
  { "GET", "/status/404" },
  { "GET", "/counter" },
  { "GET", "/counter" },
}

--- Plays SESSION against port; with answers (what an earlier play
-- returned), checks each status, body and Content-Type against them,
-- naming what differs and who (`who`) answered it. Returns the answers:
-- {status, body, type} each.
function recording.play(port, answers, who)
  local got = {}
  for i, r in ipairs(recording.SESSION) do
    local status, headers, body = helpers.request(port, r[1], r[2], r[4], r[3])
    got[i] = { status = status, body = body, type = headers["content-type"] }
  end
  for i, want in ipairs(answers or {}) do
    local name = ("%s%s %s"):format(who and (who .. ": ") or "", recording.SESSION[i][1], recording.SESSION[i][2])
    assert.equal(want.status, got[i].status, name)
    assert.is_true(want.body == got[i].body, name .. ": the body differs")
    assert.equal(want.type, got[i].type, name)
  end
  return got
end

return recording
