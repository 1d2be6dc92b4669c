-- The app `moonport --mock DIR` runs: a mock app serving the WireMock root
-- directory DIR (mappings/, __files/ and *.lua stub scripts), and the
-- json-server database of --json-db FILE.
local core = require("moonport.core")
local mock = require("moonport.mock")

local settings = core.mock_settings()
local app = mock.app()
if settings.dir then app:load_dir(settings.dir) end
-- --json-db: json-server's routes over the file (paths of no resource go
-- to the stubs of --mock, else get json-server's 404 {}).
if settings.json_db then mock.json_db(app, settings.json_db, { stubs = settings.dir ~= nil }) end
-- --proxy-all: below every stub, whatever none matched goes to the API.
if settings.proxy_all then
  app:stub_wiremock({ priority = 2147483647, request = { method = "ANY", urlPattern = ".*" },
                      response = { proxyBaseUrl = settings.proxy_all } }, "--proxy-all")
end
return app
