-- README.md's "Differences from json-server", made from the table of
-- spec/compat/json_server_cases.lua: the differences that hold for every
-- case, then each case marked `differs`, with its reason.
-- spec/compat/json_server_diff_spec.lua checks that README.md holds
-- exactly this text.
--
-- usage (from the repository root): luajit spec/support/json_server_differences.lua
local differences = require("spec.support.differences")

local M = {}

--- The subsection's text (markdown) for the table `t` ({global, cases}).
function M.render(t)
  local out = {
    "#### Differences from json-server",
    "",
    "`spec/compat/json_server_diff_spec.lua` runs every case of",
    "`spec/compat/json_server_cases.lua` (" .. #t.cases .. " cases) against the real json-server",
    "(" .. t.json_server_version .. ", installed by `npm ci` from a lockfile) and",
    "`moonport --json-db`, on copies of the same files, and compares the",
    "status, the Content-Type, " .. t.compared_headers .. ",",
    "the body (JSON as JSON) and, after a write, db.json (as JSON). This",
    "list is made from that table (`luajit spec/support/json_server_differences.lua`);",
    "nothing else may differ.",
    "",
  }
  return differences.render(out, t)
end

if arg and arg[0] and arg[0]:find("json_server_differences%.lua$") then
  package.path = "./?.lua;" .. package.path
  io.write(M.render(require("spec.compat.json_server_cases")))
end

return M
