-- The app bench/lib/bigbody.sh measures: a download streamed in 64 KiB
-- pieces, and an upload read piece by piece with req:read.
local app = require("moonport").app()

local PIECE = ("x"):rep(64 * 1024)

app:get("/download/:mib", function(req, res)
  local pieces = tonumber(req.params.mib) * 16
  res:header("Content-Length", pieces * #PIECE)
  for _ = 1, pieces do
    res:write(PIECE)
  end
end)

app:put("/upload", function(req, res)
  local bytes = 0
  for piece in req:chunks() do
    bytes = bytes + #piece
  end
  res:json({ bytes = bytes })
end)

return app
