-- The moonport side of bench/redis/run: lua-resty-redis, unmodified, as
-- Debian's lua-nginx-redis package ships it (module `nginx.redis`), over
-- moonport's sockets through the ngx compatibility module. The handlers
-- are those of bench/redis/nginx.conf.
--
-- spec/integration/alloc_spec.lua holds GET /get to its allocation
-- budget.
--
-- Environment: REDIS_PORT (default 6379) and MOONPORT_RESTY, the folder
-- that holds nginx/redis.lua (spec/support/fetch_resty.sh puts it there;
-- default /usr/share/lua/5.1, where the package puts it when installed).
require("moonport.ngx")

package.path = (os.getenv("MOONPORT_RESTY") or "/usr/share/lua/5.1") .. "/?.lua;"
  .. package.path

local redis = require("nginx.redis")
local app = require("moonport").app()

local REDIS_PORT = tonumber(os.getenv("REDIS_PORT")) or 6379

-- One GET per request, the connection back into the pool after it.
app:get("/get", function(req, res)
  local red = redis:new()
  red:set_timeout(1000)
  local ok, err = red:connect("127.0.0.1", REDIS_PORT)
  if not ok then
    return res:status(502):send("redis connect: " .. err)
  end
  local value, err = red:get("user:1")
  if not value or value == ngx.null then
    return res:status(502):send("redis get: " .. tostring(err))
  end
  red:set_keepalive(10000, 100)
  res:send(value)
end)

-- Ten GETs in one pipeline per request.
app:get("/pipeline", function(req, res)
  local red = redis:new()
  red:set_timeout(1000)
  local ok, err = red:connect("127.0.0.1", REDIS_PORT)
  if not ok then
    return res:status(502):send("redis connect: " .. err)
  end
  red:init_pipeline(10)
  for i = 1, 10 do
    red:get("user:" .. i)
  end
  local values, err = red:commit_pipeline()
  if not values then
    return res:status(502):send("redis pipeline: " .. err)
  end
  red:set_keepalive(10000, 100)
  res:send(table.concat(values, "\n"))
end)

return app
