-- The app `moonport --mock DIR` runs: a mock app serving the WireMock root
-- directory DIR (mappings/, __files/ and *.lua stub scripts), the
-- json-server database of --json-db FILE, and the OpenAPI document of
-- --openapi FILE.
local core = require("moonport.core")
local mock = require("moonport.mock")

local settings = core.mock_settings()
local app = mock.app()
if settings.dir then app:load_dir(settings.dir) end
-- --json-db: json-server's routes over the file (paths of no resource go
-- to the stubs of --mock, else get json-server's 404 {}), with
-- json-server's options; as json-server, ./public is the static folder
-- when --static names none and there is one.
if settings.json_db then
  local static = settings.json_static
  if static == nil and core.dir_list("public") ~= nil then static = "public" end
  mock.json_db(app, settings.json_db, {
    stubs = settings.dir ~= nil, routes = settings.json_routes, static = static,
    id = settings.json_id, foreign_key_suffix = settings.json_fks,
    read_only = settings.json_read_only, delay = settings.json_delay,
  })
end
-- --openapi: the document answers what no stub (nor file of __files)
-- matched, as Prism would (moonport.openapi.mock), with --dynamic and --seed.
if settings.openapi then
  require("moonport.openapi").mock(app, settings.openapi, {
    dynamic = settings.openapi_dynamic, seed = settings.openapi_seed,
  })
end
-- --proxy-all: below every stub, whatever none matched goes to the API.
if settings.proxy_all then
  app:stub_wiremock({ priority = 2147483647, request = { method = "ANY", urlPattern = ".*" },
                      response = { proxyBaseUrl = settings.proxy_all } }, "--proxy-all")
end
return app
