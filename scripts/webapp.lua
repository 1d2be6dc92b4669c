--- A small web app with what most need: a static front end
-- (scripts/webapp/public: HTML and JavaScript calling the JSON API), a
-- login form that sets a signed session cookie, an authentication
-- middleware for /api, a TODO list shared by all workers, file uploads
-- streamed part by part, server-sent events announcing changes,
-- compression and request ids.
--
--     moonport --request-id scripts/webapp.lua    # then open http://127.0.0.1:8080/
--
-- The password is "moonport" for any user name (WEBAPP_PASSWORD changes
-- it); sessions are signed with WEBAPP_SECRET (set it: the default is for
-- trying the app only).
local moonport = require("moonport")
local cookie = require("moonport.cookie")
local json = moonport.json

local app = moonport.app()
local SECRET = os.getenv("WEBAPP_SECRET") or "only-for-trying-the-app"
local PASSWORD = os.getenv("WEBAPP_PASSWORD") or "moonport"
local store = moonport.shared -- every worker sees the same list

-- Declared before any middleware, the front end is served by the core
-- alone; the middleware below runs for the routes.
app:static("/", "webapp/public", { cache_control = "no-cache" })
app:use(moonport.compress{})

-- Logging in and out ----------------------------------------------------------

app:post("/login", function(req, res)
  local form = req:form() or {}
  local user = type(form.user) == "string" and form.user:match("^%s*(.-)%s*$") or ""
  if user == "" or #user > 40 or form.password ~= PASSWORD then
    return res:redirect("/?error=login", 303)
  end
  res:cookie("session", cookie.sign(user, SECRET),
             { path = "/", http_only = true, same_site = "Lax", max_age = 8 * 3600 })
  res:redirect("/", 303)
end)

app:post("/logout", function(req, res)
  res:cookie("session", "", { path = "/", max_age = 0 })
  res:redirect("/", 303)
end)

-- /api answers only a signed session: the user goes on in req.ctx.
app:use("/api", function(req, res)
  local user = cookie.verify(req:cookie("session"), SECRET)
  if not user then return res:status(401):json({ error = "log in first" }) end
  req.ctx.user = user
end)

-- The TODO list ---------------------------------------------------------------

local function todo_key(id) return "todo:" .. id end

local function todos()
  local list = {}
  for _, key in ipairs(store:keys(0)) do
    if key:find("^todo:%d+$") then list[#list + 1] = json.decode(store:get(key)) end
  end
  table.sort(list, function(a, b) return a.id < b.id end)
  return list
end

-- Every change moves the version, which /api/events watches.
local function changed() store:incr("todo:version", 1, 0) end

local function save(todo)
  local ok, err = store:set(todo_key(todo.id), json.encode(todo))
  if not ok then return nil, err end
  changed()
  return todo
end

app:get("/api/me", function(req, res) res:json({ user = req.ctx.user, request = req.id }) end)

app:get("/api/todos", function(req, res) res:json(json.array(todos())) end)

app:post("/api/todos", function(req, res)
  local body = req:json()
  local title = type(body) == "table" and body.title
  if type(title) ~= "string" or #title == 0 or #title > 200 then
    return res:status(422):json({ error = "title: 1 to 200 characters" })
  end
  local todo, err = save({ id = store:incr("todo:last", 1, 0), title = title, done = false,
                           by = req.ctx.user })
  if not todo then return res:status(507):json({ error = err }) end
  res:header("Location", "/api/todos/" .. todo.id):json(todo, 201)
end)

app:patch("/api/todos/:id", function(req, res)
  local text = store:get(todo_key(req.params.id))
  if not text then return res:status(404):json({ error = "no such todo" }) end
  local todo, body = json.decode(text), req:json()
  if type(body) ~= "table" or type(body.done) ~= "boolean" then
    return res:status(422):json({ error = "done: true or false" })
  end
  todo.done = body.done
  res:json(assert(save(todo)))
end)

app:delete("/api/todos/:id", function(req, res)
  if not store:get(todo_key(req.params.id)) then return res:status(404):json({ error = "no such todo" }) end
  store:delete(todo_key(req.params.id))
  changed()
  res:status(204):send("")
end)

-- Uploads: each file's size, counted as it streams in (nothing is kept).
app:post("/api/uploads", function(req, res)
  local parts, err = req:parts()
  if not parts then return res:status(415):json({ error = err }) end
  local files = {}
  local ok, failure = pcall(function()
    for part in parts do
      if part.filename then
        local bytes = 0
        for piece in part:chunks() do bytes = bytes + #piece end
        files[#files + 1] = { field = part.name, filename = part.filename, bytes = bytes }
      end
    end
  end)
  if not ok then
    local status = type(failure) == "table" and failure.status or 500
    return res:status(status):json({ error = type(failure) == "table" and failure.message or tostring(failure) })
  end
  res:json(json.array(files))
end)

-- Server-sent events: "changed" each time the list moves, until the page
-- goes away.
app:get("/api/events", function(req, res)
  local seen = store:get("todo:version") or 0
  if not res:sse{ event = "hello", data = { user = req.ctx.user, version = seen } } then return end
  while true do
    moonport.sleep(200)
    local now = store:get("todo:version") or 0
    if now ~= seen then
      seen = now
      if not res:sse{ event = "changed", data = { version = now } } then return end
    elseif not res:sse{ comment = "still here" } then
      return
    end
  end
end)

return app
