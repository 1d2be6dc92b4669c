-- What the real Prism answers to the cases of spec/compat/prism_cases.lua:
-- for writing and checking cases (a case's `status` is what Prism answers
-- to it). Starts Prism (spec/support/fetch_prism.sh's install, in
-- $MOONPORT_PRISM or build/prism) on each document and mode, sends every
-- case whose name contains PATTERN (all without one), and prints the
-- status, Content-Type, the compared headers and the body of each answer,
-- with `!!` where the status is not the case's.
--
-- usage (from the repository root): luajit spec/support/prism_record.lua [PATTERN]
package.path = "./?.lua;./?/init.lua;" .. package.path
local prism = require("spec.support.prism")
local helpers = require("spec.helpers")
local T = require("spec.compat.prism_cases")

local pattern = arg[1]
local servers = {}

local function server_for(c)
  local mode = c.mode or "static"
  local key = c.doc .. "/" .. mode
  if not servers[key] then
    servers[key] = prism.start_prism(T.documents[c.doc].file,
      { dynamic = mode == "dynamic", seed = T.seed })
  end
  return servers[key]
end

local ok, err = pcall(function()
  for _, c in ipairs(T.cases) do
    if not pattern or c.name:find(pattern, 1, true) then
      local s = server_for(c)
      local sent, resp = pcall(prism.send, s.port, c)
      if not sent then resp = { status = 0, header_list = {}, body = "NO ANSWER: " .. tostring(resp) } end
      local method, target, headers, body = prism.request_of(c)
      local hs = {}
      for _, h in ipairs(headers) do hs[#hs + 1] = h[1] .. ": " .. h[2] end
      print(("== %s%s"):format(resp.status ~= c.status and "!! " or "", c.name))
      print(("   %s %s  [%s]%s"):format(method, target, table.concat(hs, "; "),
        body and ("  body " .. helpers.shorten(body, 200)) or ""))
      local names = { "content-type" }
      for _, n in ipairs(T.compared) do names[#names + 1] = n end
      for _, n in ipairs(T.documents[c.doc].headers) do names[#names + 1] = n end
      local shown = {}
      for _, n in ipairs(names) do
        local v = helpers.header_values(resp, n)
        if #v > 0 then shown[#shown + 1] = n .. ": " .. table.concat(v, " | ") end
      end
      print(("   -> %d (case: %s)  %s"):format(resp.status, tostring(c.status), table.concat(shown, "  ")))
      print("   " .. helpers.shorten(resp.body, 1500))
    end
  end
end)
for _, s in pairs(servers) do s:stop() end
if not ok then error(err, 0) end
