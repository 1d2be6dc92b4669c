-- CORS for apps (moonport.cors) seen by a real browser: headless Chromium
-- loads a page from one moonport and its script PUTs JSON with a bearer
-- token and a custom header to an API on another moonport, which puts a
-- login check before CORS and has no OPTIONS route. The preflight must get
-- through, the answer and its exposed header must reach the script; a page
-- of an origin the API does not list must be blocked by the browser.
local helpers = require("spec.helpers")
local process = require("spec.support.process")

-- What the page's script wrote, from the DOM once Chromium ran it; with
-- shot, a screenshot of the page too.
local function browse(url, shot)
  local profile = helpers.scratch_dir()
  local argv = { "chromium", "--headless=new", "--no-sandbox", "--disable-gpu",
                 "--no-first-run", "--user-data-dir=" .. profile,
                 "--virtual-time-budget=10000", "--dump-dom", url }
  local code, dom, err = process.command(argv, { timeout = 120 })
  if shot then
    process.command({ "chromium", "--headless=new", "--no-sandbox", "--disable-gpu",
      "--no-first-run", "--user-data-dir=" .. profile, "--virtual-time-budget=10000",
      "--window-size=900,420", "--screenshot=" .. shot, url }, { timeout = 120 })
  end
  helpers.remove_dir(profile)
  assert.equal(0, code, err)
  return dom:match("RESULT ([^<]*)")
end

describe("moonport.cors in a browser", function()
  local procs = {}
  teardown(function() for _, p in ipairs(procs) do p:stop() end end)

  it("lets an allowed page PUT with credentials and read the exposed header; blocks another", function()
    local api_port = process.free_port()
    local api_url = "http://127.0.0.1:" .. api_port
    local page = process.start("spec/fixtures/cors_page.lua", nil, { env = { API_URL = api_url } })
    procs[#procs + 1] = page
    local other = process.start("spec/fixtures/cors_page.lua", nil, { env = { API_URL = api_url } })
    procs[#procs + 1] = other
    local api = process.start("spec/fixtures/cors_api.lua",
      { "--listen", "127.0.0.1:" .. api_port, "--access-log", "-" },
      { env = { PAGE_ORIGIN = "http://127.0.0.1:" .. page.port } })
    procs[#procs + 1] = api

    local shot = os.getenv("MOONPORT_CORS_SCREENSHOT")
    local result = browse("http://127.0.0.1:" .. page.port .. "/", shot)
    local status, total, body = tostring(result):match("^status=(%d+) total=(%S+) body=(.*)$")
    assert.equal("200", status, result)
    assert.equal("42", total, result)
    assert.same({ id = "7", saved = { name = "lamp" } }, helpers.json(body))
    result = browse("http://127.0.0.1:" .. other.port .. "/")
    assert.truthy(result and result:find("^blocked"), tostring(result))
    -- The API saw the preflight and answered it, and one PUT.
    local log = api:stdout()
    assert.truthy(log:find('"OPTIONS /api/items/7 HTTP/1.1" 204', 1, true), log)
    assert.truthy(log:find('"PUT /api/items/7 HTTP/1.1" 200', 1, true), log)
  end)
end)
