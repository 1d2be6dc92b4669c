-- bench/static/run's moonport side: the run's scratch directory, whose
-- path comes in STATIC_ROOT, served at / by the core (sendfile), with no
-- route: no request enters Lua.
local app = require("moonport").app()
app:static("/", assert(os.getenv("STATIC_ROOT"), "STATIC_ROOT is not set"),
  { precompressed = false })
return app
