-- The moonport side of bench/pg/run: TechEmpower's single query and
-- multiple queries tests on moonport.pg, against the `world` table of
-- bench/pg/world.sql.
--
--   GET /db                -> {"id":N,"randomNumber":M}, one row by primary key
--   GET /queries?queries=Q -> [{"id":N,"randomNumber":M}, ...], Q rows, Q
--                             clamped to 1..500 (1 when it is not an integer),
--                             all sent in one pipeline with db:batch
--
-- Ids are random in 1..10000, drawn independently. Environment:
-- DATABASE_URL, the libpq connection string (a postgres:// URI).
local moonport = require("moonport")
local pg = require("moonport.pg")

local app = moonport.app()

-- A per-worker client; no I/O until the first query.
local db = pg.connect(os.getenv("DATABASE_URL"))

local SQL = "SELECT id, randomnumber FROM world WHERE id = $1"
local random = math.random

-- The first few different failures also go to the error log, so that a
-- run with errors says what they were; the client gets every one.
local logged, nlogged = {}, 0

local function failed(res, err)
  local message = tostring(err)
  if nlogged < 5 and not logged[message] then
    logged[message], nlogged = true, nlogged + 1
    moonport.log("error", "query failed: " .. message)
  end
  res:status(500):json({ error = message })
end

-- TFB's rule for the queries parameter: an integer clamped to 1..500,
-- anything else counts as 1.
local function count(raw)
  local n = tonumber(raw and raw:match("^%s*(%-?%d+)%s*$"))
  if not n or n < 1 then
    return 1
  end
  return n > 500 and 500 or n
end

app:get("/db", function(req, res)
  local rows, err = db:query(SQL, random(1, 10000))
  if not rows then
    return failed(res, err)
  end
  local row = rows[1]
  res:json({ id = row.id, randomNumber = row.randomnumber })
end)

app:get("/queries", function(req, res)
  local n = count(req:query("queries"))
  local statements = {}
  for i = 1, n do
    statements[i] = { SQL, random(1, 10000) }
  end
  local results, err = db:batch(statements)
  if not results then
    return failed(res, err)
  end
  local worlds = {}
  for i = 1, n do
    local result = results[i]
    if result.err then
      return failed(res, result.err)
    end
    local row = result.rows[1]
    worlds[i] = { id = row.id, randomNumber = row.randomnumber }
  end
  res:json(worlds)
end)

return app
