-- The app `moonport --mock DIR` runs: a mock app serving the WireMock root
-- directory DIR (mappings/, __files/ and *.lua stub scripts).
local core = require("moonport.core")
local mock = require("moonport.mock")

local settings = core.mock_settings()
local app = mock.app()
app:load_dir(settings.dir)
-- --proxy-all: below every stub, whatever none matched goes to the API.
if settings.proxy_all then
  app:stub_wiremock({ priority = 2147483647, request = { method = "ANY", urlPattern = ".*" },
                      response = { proxyBaseUrl = settings.proxy_all } }, "--proxy-all")
end
return app
