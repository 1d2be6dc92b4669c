-- README.md's "Differences from WireMock", made from the table of
-- spec/compat/wiremock_cases.lua: the differences that hold for every
-- case, then each case marked `differs`, with its reason.
-- spec/compat/wiremock_diff_spec.lua checks that README.md holds exactly
-- this text.
--
-- usage (from the repository root): luajit spec/support/wiremock_differences.lua
local differences = require("spec.support.differences")

local M = {}

--- The subsection's text (markdown) for the table `t` ({global, cases}).
function M.render(t)
  local out = {
    "### Differences from WireMock",
    "",
    "`spec/compat/wiremock_diff_spec.lua` runs every case of",
    "`spec/compat/wiremock_cases.lua` (" .. #t.cases .. " cases) against the real WireMock "
      .. "(" .. t.wiremock_version .. ") and",
    "the mock, and compares the status, the Content-Type, the headers the",
    "mappings set and the body (JSON as JSON). This list is made from that",
    "table (`luajit spec/support/wiremock_differences.lua`); nothing else",
    "may differ.",
    "",
  }
  return differences.render(out, t)
end

if arg and arg[0] and arg[0]:find("wiremock_differences%.lua$") then
  package.path = "./?.lua;" .. package.path
  io.write(M.render(require("spec.compat.wiremock_cases")))
end

return M
