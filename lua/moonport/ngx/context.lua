--- What the ngx compatibility module knows of the request whose code
-- runs: the request itself (moonport.core.current), the error OpenResty
-- raises where there is none, and what the module keeps for the request
-- while its handler runs (base.kept.ngx, dropped with the request).
-- @module moonport.ngx.context

local base = require("moonport.core.base")
local current = require("moonport.core.current")

local error = error
local current_request, current_phase = current.request, current.phase
local states, keep = base.kept.ngx, base.keep

local context = {}

--- The req of the request whose code runs now; raises OpenResty's
-- "API disabled in the context of ..." outside a request, blaming the
-- caller `level` frames up from the caller of this function.
-- @usage local req = context.request(2)
function context.request(level)
  local req = current_request()
  if req then return req end
  if current_phase() == "timer" then
    error("API disabled in the context of ngx.timer", level + 2)
  end
  error("API disabled in the context of init_by_lua*", level + 2)
end

--- The module's table for req: { status, sent, headers, body, ctx, ... };
-- made when first asked for, dropped when the handler returns.
-- @usage local st = context.state(req)
function context.state(req)
  local st = states[req]
  if st then return st end
  st = keep(states, req, {})
  -- A request whose handler has returned: a table of its own that
  -- nothing keeps.
  return st or {}
end

return context
