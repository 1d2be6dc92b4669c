-- The app `moonport --mock DIR` runs: a mock app serving the WireMock root
-- directory DIR (mappings/, __files/ and *.lua stub scripts).
local core = require("moonport.core")
local mock = require("moonport.mock")

local settings = core.mock_settings()
local app = mock.app()
app:load_dir(settings.dir)
return app
