-- The reference JSON API: the routes the tests, the allocation budgets and
-- the benchmarks all use.
local moonport = require("moonport")

local app = moonport.app()

-- Ids are integers a double holds exactly, and moonport.json writes them
-- so; from 2^53 on, different ids would read as the same number.
local MAX_ID = 2^53 - 1
local MAX_BLOB = 64 * 1024 * 1024
local PATTERN = "abcdefghij"
-- Large bodies go out in pieces of one prebuilt chunk, a whole number of
-- patterns long, so a 64 MiB blob costs the handler no 64 MiB string.
local CHUNK = PATTERN:rep(6554)

local function bad(res, status, message)
  res:status(status):json({ error = message })
end

app:get("/health", function(req, res)
  res:json({ ok = true })
end)

app:get("/users/:id", function(req, res)
  local raw = req.params.id
  local id = raw:match("^%d+$") and tonumber(raw)
  if not id then
    return bad(res, 400, "id must be a non-negative integer")
  end
  if id > MAX_ID then
    return bad(res, 400, "id must be at most 9007199254740991")
  end
  res:json({ id = id, name = "user-" .. string.format("%d", id) })
end)

local function is_integer(v)
  return type(v) == "number" and v % 1 == 0 and v > -2^53 and v < 2^53
end

app:post("/add", function(req, res)
  local doc, err = req:json()
  if err then
    return bad(res, 400, err)
  end
  if type(doc) ~= "table" or not is_integer(doc.a) or not is_integer(doc.b) then
    return bad(res, 422, "a and b must both be integers")
  end
  res:json({ sum = doc.a + doc.b })
end)

app:get("/search", function(req, res)
  local q = req:query("q") or ""
  res:json({ q = q, length = #q })
end)

app:get("/blob/:n", function(req, res)
  local raw = req.params.n
  local n = raw:match("^%d+$") and tonumber(raw)
  if not n or n > MAX_BLOB then
    return bad(res, 400, "n must be an integer from 0 to " .. MAX_BLOB)
  end
  res:header("Content-Length", n)
  local whole = math.floor(n / #CHUNK)
  for _ = 1, whole do
    res:write(CHUNK)
  end
  local rest = n - whole * #CHUNK
  if rest > 0 then
    res:write(CHUNK:sub(1, rest))
  end
end)

return app
