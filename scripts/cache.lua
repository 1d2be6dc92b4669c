-- A read-through cache: GET /items/:id answers from Redis when it can, and
-- otherwise loads the item from a slow backend (50 ms here), answers, and
-- stores it in Redis for 30 s. Redis is reached with lua-resty-redis (the
-- Debian package lua-nginx-redis, module nginx.redis), unmodified, through
-- moonport's ngx compatibility module, with a connection pool, short
-- timeouts, and a fallback: when Redis is down or slow the item is served
-- from the backend (X-Cache: bypass) and the request still succeeds.
--
--   redis-server --port 6379 &
--   spec/support/fetch_resty.sh build/resty   # or apt-get install lua-nginx-redis
--   MOONPORT_RESTY=build/resty ./build/moonport scripts/cache.lua
--   curl -i localhost:8080/items/42           # X-Cache: miss, then hit
--
-- REDIS_HOST and REDIS_PORT (default 127.0.0.1:6379) say where Redis is.
require("moonport.ngx")
package.path = (os.getenv("MOONPORT_RESTY") or "build/resty") .. "/?.lua;" .. package.path

local moonport = require("moonport")
local redis = require("nginx.redis")
local json = moonport.json

local REDIS_HOST = os.getenv("REDIS_HOST") or "127.0.0.1"
local REDIS_PORT = tonumber(os.getenv("REDIS_PORT") or "6379")
local TTL = 30 -- seconds an item stays cached

local app = moonport.app()

-- The slow source of truth.
local function load_item(id)
  moonport.sleep(50)
  return { id = id, name = "item " .. id, loaded_at = ngx.now() }
end

-- A pooled Redis connection, or nil and why not. A Redis that does not
-- answer within 100 ms counts as down for this request.
local function cache()
  local red = redis:new()
  red:set_timeout(100)
  local ok, err = red:connect(REDIS_HOST, REDIS_PORT, { pool_size = 32, backlog = 64 })
  if not ok then return nil, err end
  return red
end

app:get("/items/:id", function(req, res)
  local id = req.params.id
  if not id:match("^%d+$") then
    return res:status(400):json({ error = "id must be a number" })
  end
  local key = "item:" .. id
  local red, err = cache()
  if red then
    local cached
    cached, err = red:get(key)
    if cached and cached ~= ngx.null then
      red:set_keepalive(10000)
      res:header("X-Cache", "hit"):header("Content-Type", "application/json")
      return res:send(cached)
    end
  end
  local body = json.encode(load_item(id))
  if red and not err then
    red:set(key, body, "EX", TTL)
    red:set_keepalive(10000)
    res:header("X-Cache", "miss")
  else
    if red then red:close() end
    moonport.log("warn", "cache bypassed for " .. key .. ": " .. tostring(err))
    res:header("X-Cache", "bypass")
  end
  res:header("Content-Type", "application/json"):send(body)
end)

app:get("/health", function(req, res)
  local red, err = cache()
  local pong
  if red then
    pong, err = red:ping()
    red:set_keepalive(10000)
  end
  res:json({ status = "ok", redis = pong == "PONG" and "up" or ("down: " .. tostring(err)) })
end)

return app
