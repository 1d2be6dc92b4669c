-- A TODO JSON API on PostgreSQL (moonport.pg):
--
--   POST   /todos            {"title": "...", "done": false, "tags": ["a"]} -> 201
--   GET    /todos?done=true&q=milk&limit=20&offset=0 -> {"items": [...], "total": n}
--   GET    /todos/:id        -> 200, or 404
--   PATCH  /todos/:id        {"title": ..., "done": ..., "tags": ...} -> 200, 404
--   DELETE /todos/:id        -> 204, or 404
--
-- Bad input gets 422 with what is wrong; a title that another todo has
-- gets 409 (the table's unique constraint: SQLSTATE 23505); a database
-- that does not answer, 503. The table is created on first use.
--
--   ./build/moonport --pg "postgresql://postgres@127.0.0.1/postgres" scripts/todo_pg.lua
--
-- (or DATABASE_URL, or libpq's PG* environment).
local moonport = require("moonport")
local pg = require("moonport.pg")

local db = pg.default()
local app = moonport.app()

local SCHEMA = [[
CREATE TABLE IF NOT EXISTS todos (
  id bigserial PRIMARY KEY,
  title text NOT NULL UNIQUE CHECK (length(title) BETWEEN 1 AND 200),
  done boolean NOT NULL DEFAULT false,
  tags text[] NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now()
)]]

local COLUMNS = "id, title, done, tags, created_at"

local ready = false

-- The table, made once per worker; a concurrent CREATE in another worker
-- may answer "already exists" (42P07) or a duplicate type (23505).
local function ensure()
  if ready then return true end
  local rows, err = db:query(SCHEMA)
  if rows or (err and (err.sqlstate == "42P07" or err.sqlstate == "23505")) then
    ready = true
    return true
  end
  return nil, err
end

local function unavailable(res, err)
  moonport.log("error", "todo_pg: " .. tostring(err))
  res:status(503):json({ error = "database unavailable" })
end

local function invalid(res, why)
  res:status(422):json({ error = why })
end

-- The fields of a body: title, done, tags; what is wrong, or nil.
local function check(body, creating)
  if type(body) ~= "table" then return "the body must be a JSON object" end
  local title = body.title
  if creating and title == nil then return "title is required" end
  if title ~= nil and (type(title) ~= "string" or #title < 1 or #title > 200) then
    return "title must be a string of 1 to 200 bytes"
  end
  if body.done ~= nil and type(body.done) ~= "boolean" then
    return "done must be true or false"
  end
  if body.tags ~= nil then
    if type(body.tags) ~= "table" then return "tags must be an array of strings" end
    for _, tag in ipairs(body.tags) do
      if type(tag) ~= "string" or tag:find("[{},\"\\]") or tag == "" then
        return "tags must be non-empty strings without {}, commas, quotes or backslashes"
      end
    end
  end
end

-- A Lua array of simple strings as a PostgreSQL array literal.
local function array_literal(tags)
  return "{" .. table.concat(tags, ",") .. "}"
end

local function id_of(req)
  local id = tonumber(req.params.id)
  if not id or id < 1 or id ~= math.floor(id) or id >= 2 ^ 53 then return nil end
  return id
end

app:post("/todos", function(req, res)
  local body, jerr = req:json()
  if jerr then return invalid(res, "the body is not JSON: " .. jerr) end
  local why = check(body, true)
  if why then return invalid(res, why) end
  local ok, err = ensure()
  if not ok then return unavailable(res, err) end
  local rows
  rows, err = db:query("INSERT INTO todos (title, done, tags) VALUES ($1, $2, $3) RETURNING "
    .. COLUMNS, body.title, body.done == true, array_literal(body.tags or {}))
  if not rows then
    if err.sqlstate == "23505" then
      return res:status(409):json({ error = "a todo with this title exists" })
    end
    return unavailable(res, err)
  end
  res:status(201):header("Location", "/todos/" .. rows[1].id):json(rows[1])
end)

app:get("/todos", function(req, res)
  local ok, err = ensure()
  if not ok then return unavailable(res, err) end
  local done = req:query("done")
  if done ~= nil and done ~= "true" and done ~= "false" then
    return invalid(res, "done must be true or false")
  end
  local limit = tonumber(req:query("limit") or "20")
  local offset = tonumber(req:query("offset") or "0")
  if not limit or limit < 1 or limit > 100 or limit ~= math.floor(limit) then
    return invalid(res, "limit must be an integer from 1 to 100")
  end
  if not offset or offset < 0 or offset ~= math.floor(offset) then
    return invalid(res, "offset must be a non-negative integer")
  end
  local q = req:query("q")
  local where = "WHERE ($1::boolean IS NULL OR done = $1) AND ($2::text IS NULL OR strpos(title, $2) > 0)"
  local done_arg = done == nil and pg.null or done == "true"
  local results = db:batch({
    { "SELECT " .. COLUMNS .. " FROM todos " .. where .. " ORDER BY id LIMIT $3 OFFSET $4",
      done_arg, q or pg.null, limit, offset },
    { "SELECT count(*)::int AS total FROM todos " .. where, done_arg, q or pg.null },
  })
  if results[1].err then return unavailable(res, results[1].err) end
  if results[2].err then return unavailable(res, results[2].err) end
  res:json({ items = results[1].rows, total = results[2].rows[1].total })
end)

app:get("/todos/:id", function(req, res)
  local id = id_of(req)
  if not id then return res:status(404):json({ error = "no such todo" }) end
  local ok, err = ensure()
  if not ok then return unavailable(res, err) end
  local rows
  rows, err = db:query("SELECT " .. COLUMNS .. " FROM todos WHERE id = $1", id)
  if not rows then return unavailable(res, err) end
  if not rows[1] then return res:status(404):json({ error = "no such todo" }) end
  res:json(rows[1])
end)

app:patch("/todos/:id", function(req, res)
  local id = id_of(req)
  if not id then return res:status(404):json({ error = "no such todo" }) end
  local body, jerr = req:json()
  if jerr then return invalid(res, "the body is not JSON: " .. jerr) end
  local why = check(body, false)
  if why then return invalid(res, why) end
  local ok, err = ensure()
  if not ok then return unavailable(res, err) end
  local rows
  rows, err = db:query("UPDATE todos SET title = coalesce($2, title), done = coalesce($3, done), "
    .. "tags = coalesce($4::text[], tags) WHERE id = $1 RETURNING " .. COLUMNS,
    id, body.title or pg.null, body.done == nil and pg.null or body.done,
    body.tags and array_literal(body.tags) or pg.null)
  if not rows then
    if err.sqlstate == "23505" then
      return res:status(409):json({ error = "a todo with this title exists" })
    end
    return unavailable(res, err)
  end
  if not rows[1] then return res:status(404):json({ error = "no such todo" }) end
  res:json(rows[1])
end)

app:delete("/todos/:id", function(req, res)
  local id = id_of(req)
  if not id then return res:status(404):json({ error = "no such todo" }) end
  local ok, err = ensure()
  if not ok then return unavailable(res, err) end
  local rows, affected
  rows, affected = db:query("DELETE FROM todos WHERE id = $1", id)
  if not rows then return unavailable(res, affected) end
  if affected == 0 then return res:status(404):json({ error = "no such todo" }) end
  res:status(204):send("")
end)

return app
