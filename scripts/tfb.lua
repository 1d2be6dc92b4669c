-- The TechEmpower Framework Benchmarks' six test types on moonport, by
-- TFB's rules (bench/tfb/verify checks them):
--
--   GET /json             {"message":"Hello, World!"}, a new object each time
--   GET /db               one random world row {"id":N,"randomNumber":M}
--   GET /queries?queries=N  N random rows, one query each (pipelined, a Sync
--                         after each), N an integer clamped to 1..500,
--                         anything else 1
--   GET /fortunes         the fortune table plus one fortune added here,
--                         sorted by message, through an HTML template
--   GET /updates?queries=N  N random rows read (one query each), given new
--                         random numbers, written back in one UPDATE
--   GET /plaintext        Hello, World! as text/plain
--
-- The database: TFB's `world` (10,000 rows) and `fortune` (12 rows) tables
-- in `hello_world`. Connection: DATABASE_URL, else libpq's PG* environment
-- with TFB's defaults for what it leaves out (host localhost, user
-- benchmarkdbuser, password benchmarkdbpass, database hello_world).
--
--   ./build/moonport --workers auto scripts/tfb.lua
local moonport = require("moonport")
local pg = require("moonport.pg")
local template = require("moonport.template")

local app = moonport.app()

-- TFB's defaults, each only where the environment does not say.
local function conninfo()
  local url = os.getenv("DATABASE_URL")
  if url and url ~= "" then return url end
  local parts = {}
  for _, d in ipairs({
    { "PGHOST", "host", "localhost" }, { "PGUSER", "user", "benchmarkdbuser" },
    { "PGPASSWORD", "password", "benchmarkdbpass" }, { "PGDATABASE", "dbname", "hello_world" },
  }) do
    if not os.getenv(d[1]) then parts[#parts + 1] = d[2] .. "=" .. d[3] end
  end
  return table.concat(parts, " ")
end

local db = pg.connect(conninfo())

local WORLD = "SELECT id, randomnumber FROM world WHERE id = $1"
local FORTUNES = "SELECT id, message FROM fortune"
local random, sort, concat = math.random, table.sort, table.concat

local fortunes_page = template.compile([[
<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table><tr><th>id</th><th>message</th></tr><% for _, f in ipairs(fortunes) do %><tr><td><%= f.id %></td><td><%= f.message %></td></tr><% end %></table></body></html>]],
  "fortunes.html")

-- Every failure gets a 500 with its message; the first few different ones
-- also go to the error log (a benchmark's clients leave with queries in
-- flight, each a "closed" failure, and the log need not hold them all).
local logged, nlogged = {}, 0

local function failed(res, err)
  local message = tostring(err)
  if nlogged < 5 and not logged[message] then
    logged[message], nlogged = true, nlogged + 1
    moonport.log("error", "query failed: " .. message)
  end
  res:status(500):json({ error = message })
end

-- TFB's queries parameter: an integer clamped to 1..500, anything else 1.
local function count(raw)
  local n = tonumber(raw and raw:match("^%s*(%-?%d+)%s*$"))
  if not n or n < 1 then return 1 end
  return n > 500 and 500 or n
end

-- n random rows, one statement each, sent together. ids: the ids to read.
local function worlds(ids)
  local statements = {}
  for i = 1, #ids do statements[i] = { WORLD, ids[i] } end
  local results = db:batch(statements)
  local rows = {}
  for i = 1, #ids do
    local r = results[i]
    if r.err then return nil, r.err end
    local row = r.rows[1]
    rows[i] = { id = row.id, randomNumber = row.randomnumber }
  end
  return rows
end

local function random_ids(n)
  local ids = {}
  for i = 1, n do ids[i] = random(1, 10000) end
  return ids
end

app:get("/json", function(req, res)
  res:json({ message = "Hello, World!" })
end)

app:get("/plaintext", function(req, res)
  res:send("Hello, World!")
end)

app:get("/db", function(req, res)
  local rows, err = db:query(WORLD, random(1, 10000))
  if not rows then return failed(res, err) end
  local row = rows[1]
  res:json({ id = row.id, randomNumber = row.randomnumber })
end)

app:get("/queries", function(req, res)
  local rows, err = worlds(random_ids(count(req:query("queries"))))
  if not rows then return failed(res, err) end
  res:json(rows)
end)

local function by_message(a, b) return a.message < b.message end

app:get("/fortunes", function(req, res)
  local fortunes, err = db:query(FORTUNES)
  if not fortunes then return failed(res, err) end
  fortunes[#fortunes + 1] = { id = 0, message = "Additional fortune added at request time." }
  sort(fortunes, by_message)
  res:header("Content-Type", "text/html; charset=utf-8")
  res:send(fortunes_page({ fortunes = fortunes }))
end)

-- One UPDATE per distinct count of rows, prepared once per connection:
-- UPDATE world SET randomnumber = v.r FROM (VALUES ($1::int, $2::int), ...)
-- AS v(id, r) WHERE world.id = v.id
local update_sql = setmetatable({}, { __index = function(t, n)
  local values = {}
  for i = 1, n do values[i] = ("($%d::int, $%d::int)"):format(2 * i - 1, 2 * i) end
  local sql = "UPDATE world SET randomnumber = v.r FROM (VALUES " .. concat(values, ", ")
    .. ") AS v(id, r) WHERE world.id = v.id"
  t[n] = sql
  return sql
end })

-- Distinct ids, sorted: one value per row in the UPDATE, and workers that
-- update at once take their row locks in the same order.
local function distinct_ids(n)
  local seen, ids = {}, {}
  while #ids < n do
    local id = random(1, 10000)
    if not seen[id] then
      seen[id] = true
      ids[#ids + 1] = id
    end
  end
  sort(ids)
  return ids
end

app:get("/updates", function(req, res)
  local n = count(req:query("queries"))
  local rows, err = worlds(distinct_ids(n))
  if not rows then return failed(res, err) end
  local args = { update_sql[n] }
  for i = 1, n do
    local row = rows[i]
    local r = random(1, 10000)
    if r == row.randomNumber then r = r % 10000 + 1 end -- always a change
    row.randomNumber = r
    args[2 * i], args[2 * i + 1] = row.id, r
  end
  local done, uerr = db:query(unpack(args, 1, 2 * n + 1))
  if not done then return failed(res, uerr) end
  res:json(rows)
end)

return app
