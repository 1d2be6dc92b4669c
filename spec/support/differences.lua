-- The list part of README.md's "Differences from ..." subsections, made
-- from a compat table ({global, cases}): the differences that hold for
-- every case, then each case marked `differs`, with what differs and why.
local M = {}

--- Appends the list's lines to `out` (a list of lines) and returns the
-- whole text (markdown).
function M.render(out, t)
  out[#out + 1] = "In every case:"
  out[#out + 1] = ""
  for _, g in ipairs(t.global) do
    out[#out + 1] = ("- **%s**: %s"):format(g.what, g.reason)
  end
  local marked = {}
  for _, c in ipairs(t.cases) do
    if c.differs then marked[#marked + 1] = c end
  end
  if #marked > 0 then
    out[#out + 1] = ""
    out[#out + 1] = "Cases marked as differing:"
    out[#out + 1] = ""
    for _, c in ipairs(marked) do
      out[#out + 1] = ("- **%s** (%s): %s"):format(c.name, table.concat(c.differ_in, ", "), c.differs)
    end
  end
  return table.concat(out, "\n") .. "\n"
end

return M
