--- Content negotiation by the Accept header (RFC 9110 section 12.5.1):
-- which of the types a handler can answer with the client prefers.
-- req:accepts is made of it.
-- @module moonport.accept

local type, error, tonumber = type, error, tonumber
local find, lower, match, gmatch = string.find, string.lower, string.match, string.gmatch

local accept = {}

--- The media types of the short names req:accepts takes; any other name
-- must be a type/subtype itself.
accept.types = {
  json = "application/json", html = "text/html", text = "text/plain",
  xml = "application/xml", csv = "text/csv", css = "text/css",
  js = "text/javascript", form = "application/x-www-form-urlencoded",
  multipart = "multipart/form-data", png = "image/png", jpeg = "image/jpeg",
  gif = "image/gif", svg = "image/svg+xml", webp = "image/webp",
  pdf = "application/pdf", binary = "application/octet-stream",
  events = "text/event-stream",
}
local types = accept.types

-- The media ranges of an Accept value: {type, subtype, q, position},
-- those with a malformed range or q left out.
local function ranges(header)
  local list = {}
  for item in gmatch(header, "[^,]+") do
    local range, params = match(item, "^[ \t]*([^;]-)[ \t]*(;.*)$")
    if not range then range, params = match(item, "^[ \t]*(.-)[ \t]*$"), "" end
    local t, s = match(lower(range), "^([%w!#%$%%&'%*%+%-%.%^_`|~]+)/([%w!#%$%%&'%*%+%-%.%^_`|~]+)$")
    local q = 1
    for name, value in gmatch(params, ";[ \t]*([^=; \t]+)[ \t]*=[ \t]*([^; \t]*)") do
      if lower(name) == "q" then
        -- qvalue: 0, 0.xyz, 1 or 1.000 (at most three decimals).
        if value == "0" or value == "1" or find(value, "^0%.%d?%d?%d?$")
            or find(value, "^1%.0?0?0?$") then
          q = tonumber(value)
        else
          t = nil
        end
        break
      end
    end
    if t and (t ~= "*" or s == "*") then
      list[#list + 1] = { t, s, q, #list + 1 }
    end
  end
  return list
end

--- Of the offered names (short names from accept.types, or type/subtype
-- strings), the one the Accept value header prefers, or nil when it
-- accepts none of them. Each offer takes the q of the most specific range
-- that matches it (type/subtype, then type/*, then */*); the highest q
-- wins, then the more specific match, then the range listed first, then
-- the offer given first. A q of 0 refuses. No header (nil or blank)
-- accepts anything: the first offer. Parameters other than q are not
-- compared.
-- @usage accept.best("text/html,application/json;q=0.9", {"json", "html"}) --> "html"
function accept.best(header, offers)
  if offers[1] == nil then return nil end
  if header == nil or not find(header, "%S") then return offers[1] end
  local list = ranges(header)
  local best, best_q, best_s, best_pos = nil, 0, -1, 0
  for i = 1, #offers do
    local name = offers[i]
    if type(name) ~= "string" then error("req:accepts: offers must be strings", 3) end
    local full = types[name] or lower(name)
    local t, s = match(full, "^([^/]+)/([^/]+)$")
    if not t then error("req:accepts: unknown type '" .. name .. "'", 3) end
    -- This offer's match: the most specific range, the first listed.
    local q, spec, pos = nil, -1, 0
    for j = 1, #list do
      local r = list[j]
      local rs
      if r[1] == t and r[2] == s then rs = 2
      elseif r[1] == t and r[2] == "*" then rs = 1
      elseif r[1] == "*" then rs = 0 end
      if rs and rs > spec then q, spec, pos = r[3], rs, r[4] end
    end
    if q and q > 0 and (q > best_q or (q == best_q and (spec > best_s
        or (spec == best_s and pos < best_pos)))) then
      best, best_q, best_s, best_pos = name, q, spec, pos
    end
  end
  return best
end

return accept
