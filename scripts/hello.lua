-- The smallest moonport app: one route, plain text.
local app = require("moonport").app()

app:get("/hello", function(req, res)
  res:send("Hello, World!")
end)

return app
