-- A mock API for front-end work: users you can create, change and delete
-- (kept in moonport.shared, so every worker sees the same data), a slow
-- endpoint, a flaky one, and a checkout that moves through states.
--
--   moonport --workers 2 scripts/mock.lua
--   curl -X POST localhost:8080/api/users -d '{"name":"Ada","email":"ada@example.com"}'
--   curl localhost:8080/__admin/requests      # what the front end sent
local moonport = require("moonport")
local mock = require("moonport.mock")
local json = moonport.json

local shared = moonport.shared
local app = mock.app()

-- Users ------------------------------------------------------------------------

local function user_key(id) return "user:" .. id end

local function get_user(id)
  local text = shared:get(user_key(id))
  return text and json.decode(text)
end

local function put_user(user)
  shared:set(user_key(user.id), json.encode(user))
end

-- Two users to start with; add() leaves them alone when a worker or a
-- reload runs this again.
if shared:add("users:next", 2) then
  put_user({ id = 1, name = "Ada Lovelace", email = "ada@example.com" })
  put_user({ id = 2, name = "Alan Turing", email = "alan@example.com" })
end

local function bad_user(body)
  local user = json.decode(body or "")
  if type(user) ~= "table" or type(user.name) ~= "string" or user.name == "" then
    return nil, "a user needs a name"
  end
  return user
end

app:stub{
  request = { method = "GET", url_path = "/api/users" },
  response = function(req, res)
    local users = {}
    for _, key in ipairs(shared:keys(0)) do
      local id = key:match("^user:(%d+)$")
      if id then users[#users + 1] = get_user(id) end
    end
    table.sort(users, function(a, b) return a.id < b.id end)
    res:json(json.array(users))
  end,
}

app:stub{
  request = { method = "POST", url_path = "/api/users" },
  response = function(req, res)
    local user, err = bad_user(req:body())
    if not user then return res:status(422):json({ error = err }) end
    user.id = shared:incr("users:next")
    put_user(user)
    res:status(201):header("Location", "/api/users/" .. user.id):json(user)
  end,
}

app:stub{
  request = { method = "GET", url_path_template = "/api/users/{id}" },
  response = function(req, res)
    local user = get_user(req.path:match("(%d+)$") or "")
    if not user then return res:status(404):json({ error = "no such user" }) end
    res:json(user)
  end,
}

app:stub{
  request = { method = "PUT", url_path_template = "/api/users/{id}" },
  response = function(req, res)
    local id = tonumber(req.path:match("(%d+)$"))
    if not id or not get_user(id) then return res:status(404):json({ error = "no such user" }) end
    local user, err = bad_user(req:body())
    if not user then return res:status(422):json({ error = err }) end
    user.id = id
    put_user(user)
    res:json(user)
  end,
}

app:stub{
  request = { method = "DELETE", url_path_template = "/api/users/{id}" },
  response = function(req, res)
    local id = req.path:match("(%d+)$")
    if not id or not get_user(id) then return res:status(404):json({ error = "no such user" }) end
    shared:delete(user_key(id))
    res:status(204):send("")
  end,
}

-- A slow endpoint: the report takes 800 ms (other requests go on meanwhile).
app:stub{
  request = { method = "GET", url_path = "/api/reports/monthly" },
  response = { fixed_delay_milliseconds = 800,
               json_body = { month = "2026-11", visits = 12345 } },
}

-- A flaky endpoint: every third call fails with 503, so retry logic can be
-- tried against it.
app:stub{
  request = { method = "GET", url_path = "/api/flaky" },
  response = function(req, res)
    local n = shared:incr("flaky:calls")
    if n % 3 == 0 then
      return res:status(503):header("Retry-After", "1"):json({ error = "try again" })
    end
    res:json({ ok = true, call = n })
  end,
}

-- A checkout that moves through states: an empty cart, a cart with an
-- item, an order. POST /__admin/scenarios/reset starts it over.
local S = "checkout"
app:stub{ request = { method = "GET", url_path = "/api/cart" },
          scenario = { name = S, required_state = "Started" },
          response = { json_body = { items = json.empty_array } } }
app:stub{ request = { method = "POST", url_path = "/api/cart/items" },
          scenario = { name = S, required_state = "Started", new_state = "has-items" },
          response = { status = 201, json_body = { items = { { sku = "{{jsonPath request.body '$.sku'}}" } } } } }
app:stub{ request = { method = "GET", url_path = "/api/cart" },
          scenario = { name = S, required_state = "has-items" },
          response = { json_body = { items = { { sku = "book-42" } } } } }
app:stub{ request = { method = "POST", url_path = "/api/checkout" },
          scenario = { name = S, required_state = "has-items", new_state = "ordered" },
          response = { status = 201, json_body = { order = "o-1001", status = "placed" } } }
app:stub{ request = { method = "GET", url_path = "/api/orders/latest" },
          scenario = { name = S, required_state = "ordered" },
          response = { json_body = { order = "o-1001", status = "placed" } } }

return app
