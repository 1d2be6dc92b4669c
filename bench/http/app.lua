-- The moonport side of bench/http/run: GET /proxy makes one GET to the
-- upstream's /hello through moonport.http (a keep-alive pool per origin,
-- kept by the module) and answers with the upstream's status and body.
-- The same handler as bench/http/nginx.conf's proxy_pass and
-- bench/http/node.js's.
--
-- Environment: UPSTREAM_PORT, the port of the upstream (a second moonport
-- serving scripts/hello.lua on 127.0.0.1).
local moonport = require("moonport")
local http = require("moonport.http")
local app = moonport.app()

local URL = "http://127.0.0.1:" .. assert(tonumber(os.getenv("UPSTREAM_PORT")), "UPSTREAM_PORT")
  .. "/hello"

app:get("/proxy", function(req, res)
  local got, err = http.request({ url = URL })
  if not got then
    return res:status(502):send("upstream: " .. err)
  end
  res:status(got.status):send(got.body)
end)

return app
