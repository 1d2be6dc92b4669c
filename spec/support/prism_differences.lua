-- README.md's "Differences from Prism", made from the table of
-- spec/compat/prism_cases.lua: the differences that hold for every case,
-- then each case marked `differs`, with its reason.
-- spec/compat/prism_diff_spec.lua checks that README.md holds exactly
-- this text.
--
-- usage (from the repository root): luajit spec/support/prism_differences.lua
local differences = require("spec.support.differences")

local M = {}

--- The subsection's text (markdown) for the table `t` ({global, cases,
-- documents}).
function M.render(t)
  local docs = {}
  for _, name in ipairs(t.document_order) do
    local d = t.documents[name]
    docs[#docs + 1] = ("- `%s`: %s"):format(d.file, d.title)
  end
  local dynamic = 0
  for _, c in ipairs(t.cases) do
    if c.dynamic then dynamic = dynamic + 1 end
  end
  local out = {
    "### Differences from Prism",
    "",
    "`spec/compat/prism_diff_spec.lua` runs every case of",
    "`spec/compat/prism_cases.lua` (" .. #t.cases .. " cases) against the real Prism CLI",
    "(" .. t.prism_version .. ", installed by `npm ci` from a lockfile) and `moonport --openapi`,",
    "both started on the same document of `spec/compat/prism/`:",
    "",
    table.concat(docs, "\n"),
    "",
    "It compares the status, the Content-Type, " .. t.compared_headers .. ",",
    "and the body (JSON as JSON); the bodies of the " .. dynamic .. " cases with random data",
    "(`--dynamic --seed " .. t.seed .. "`, or `Prefer: dynamic=true`) are validated against",
    "the document's schema instead, and moonport's must repeat with the same seed.",
    "This list is made from that table (`luajit spec/support/prism_differences.lua`);",
    "nothing else may differ.",
    "",
  }
  return differences.render(out, t)
end

if arg and arg[0] and arg[0]:find("prism_differences%.lua$") then
  package.path = "./?.lua;" .. package.path
  io.write(M.render(require("spec.compat.prism_cases")))
end

return M
