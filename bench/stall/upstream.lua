-- The stalled upstream of bench/stall/run: GET /stall never answers.
local moonport = require("moonport")
local app = moonport.app()
app:get("/stall", function(req, res) moonport.sleep(3600000) end)
return app
