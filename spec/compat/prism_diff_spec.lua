-- moonport's OpenAPI mode (`--openapi`) side by side with the real Prism
-- CLI 5.14.2 (installed from spec/support/prism's lockfile by
-- spec/support/fetch_prism.sh).
--
-- For every case of spec/compat/prism_cases.lua, Prism (`prism mock`) and
-- `moonport --openapi` started on the same document of spec/compat/prism/,
-- the case's request sent to both; their answers must agree on the status,
-- the Content-Type (as a media type), the headers the table compares
-- (`sl-violations` as JSON) and those the document defines, and the body
-- (JSON compared as JSON: Prism's `validation` lists in order, which
-- Prism keeps stable). A case's `status` is what Prism answers: the case
-- fails when Prism answers otherwise, so a case cannot silently stop
-- checking what it says.
--
-- Random bodies (cases with `dynamic`: a server in --dynamic mode, or
-- `Prefer: dynamic=true`) are not compared: each side's is validated
-- against the response schema the document gives for the answer's status
-- and media type, with moonport's JSON Schema module. In --dynamic mode
-- (`--dynamic --seed T.seed` on both) moonport runs twice, and its two
-- answers to the same sequence of requests must be the same (the bodies
-- as JSON, the document's headers as text). The document's headers of a
-- random answer are compared for presence only.
--
-- Cases of one document and mode share one set of servers, in table
-- order (the mock keeps no state between requests).
--
-- The differences the table names (its `global` list, and a case's
-- `differs`) are the only ones allowed: a case marked `differs` must still
-- differ where it says (`differ_in`), so a mark cannot outlive the
-- difference. README.md's "Differences from Prism" is generated from the
-- same table (spec/support/prism_differences.lua) and checked here.
--
-- Until the moonport binary has `--openapi`, only Prism's side is checked
-- (each case's status, and the validity of its random bodies).
local helpers = require("spec.helpers")
local prism = require("spec.support.prism")
local differences = require("spec.support.prism_differences")
local jc = require("spec.support.json_compare")

local T = require("spec.compat.prism_cases")
local CASES = T.cases

local function values(resp, name)
  return table.concat(helpers.header_values(resp, name), "\n")
end

-- A media type compared as such: case and spaces around `;` do not count.
local function media_type(v)
  if v == nil or v == "" then return nil end
  return (v:lower():gsub("%s*;%s*", ";"):gsub("%s+$", ""))
end

-- The media type alone, without parameters.
local function essence(v)
  local m = media_type(v)
  return m and m:match("^[^;]*")
end

-- A set of servers for one document and mode.
local Set = {}
Set.__index = Set

local function set_key(c)
  return c.doc .. "/" .. (c.mode or "static")
end

local function start_set(c, with_moonport)
  local file = T.documents[c.doc].file
  local dynamic = c.mode == "dynamic"
  local opts = { dynamic = dynamic, seed = dynamic and T.seed or nil }
  local self = setmetatable({ key = set_key(c) }, Set)
  local ok, err = pcall(function()
    self.prism = prism.start_prism(file, opts)
    if with_moonport then
      self.moonport = prism.start_moonport(file, opts)
      if dynamic then self.moonport2 = prism.start_moonport(file, opts) end
    end
  end)
  if not ok then
    self:stop()
    error(err, 0)
  end
  return self
end

function Set:stop()
  for _, who in ipairs({ "prism", "moonport", "moonport2" }) do
    if self[who] then self[who]:stop() end
  end
end

-- Whether the answer's body is valid against the schema the document
-- gives for it: true, or false and why. `nil` when the document gives no
-- schema for the answer's status and media type (a problem answer).
local function check_dynamic(c, resp)
  local schema, version = prism.response_schema(T.documents[c.doc].file, c.dynamic, c.method or "GET",
    resp.status, essence(values(resp, "content-type")))
  if schema == nil then return nil end
  return prism.validate(schema, version, resp.body)
end

-- The differences between Prism's answer p and moonport's m to case c: a
-- list of {aspect, text}.
local function compare(c, p, m)
  local found = {}
  local function differ(aspect, text) found[#found + 1] = { aspect, text } end
  if p.status ~= m.status then
    differ("status", ("status %d vs %d"):format(p.status, m.status))
  end
  local pct, mct = values(p, "content-type"), values(m, "content-type")
  if media_type(pct) ~= media_type(mct) then
    differ("header:Content-Type", ("Content-Type %q vs %q"):format(pct, mct))
  end
  local names, random = {}, {}
  for _, n in ipairs(T.compared) do names[#names + 1] = n end
  for _, n in ipairs(T.documents[c.doc].headers) do
    names[#names + 1] = n
    -- With random data the document's headers are random too: only
    -- whether each is there is compared.
    random[n] = c.dynamic ~= nil
  end
  for _, n in ipairs(names) do
    local a, b = values(p, n), values(m, n)
    if random[n] then a, b = a ~= "" and "(random)" or "", b ~= "" and "(random)" or "" end
    local ja, jb = jc.try_decode(a), jc.try_decode(b)
    if n == "sl-violations" and ja ~= nil and jb ~= nil then
      local d = jc.diff(ja, jb, "Prism", "moonport")
      if d then differ("header:" .. n, ("%s differs at %s\nPrism: %s\nmoonport: %s"):format(n, d, a, b)) end
    elseif a ~= b then
      differ("header:" .. n, ("%s %q vs %q"):format(n, a, b))
    end
  end
  if (c.method or "GET") == "HEAD" then return found end
  if c.dynamic then
    local ok_p, why_p = check_dynamic(c, p)
    local ok_m, why_m = check_dynamic(c, m)
    if ok_p ~= nil or ok_m ~= nil then
      -- Prism's side is checked by the caller; here only moonport's.
      if ok_m == false then differ("body", "moonport's body does not validate: " .. tostring(why_m)
        .. "\nbody: " .. helpers.shorten(m.body, 600)) end
      if ok_m == nil then differ("body", "moonport's answer has no schema in the document: "
        .. helpers.shorten(m.body, 300)) end
      return found
    end
  end
  local a, b = p.body, m.body
  local ja, jb = jc.try_decode(a), jc.try_decode(b)
  if ja ~= nil and jb ~= nil then
    local d = jc.diff(ja, jb, "Prism", "moonport")
    if d then
      differ("body", "JSON body differs at " .. d .. "\nPrism: " .. helpers.shorten(jc.encode(ja), 900)
        .. "\nmoonport: " .. helpers.shorten(jc.encode(jb), 900))
    end
  elseif a ~= b then
    differ("body", ("body %s vs %s"):format(helpers.shorten(a, 600), helpers.shorten(b, 600)))
  end
  return found
end

describe("moonport's OpenAPI mode beside Prism", function()
  local set
  local with_moonport = prism.moonport_has_openapi()

  setup(function()
    if not with_moonport then
      io.stderr:write("prism_diff_spec: " .. helpers.bin .. " has no --openapi yet; "
        .. "checking Prism's side of every case only\n")
    end
  end)

  teardown(function()
    if set then set:stop() end
  end)

  it("has at least 80 cases, each named once and complete", function()
    assert.is_true(#CASES >= 80, #CASES .. " cases")
    local seen = {}
    for _, c in ipairs(CASES) do
      assert.is_nil(seen[c.name], "two cases named " .. c.name)
      seen[c.name] = true
      assert.is_truthy(T.documents[c.doc], c.name .. ": no document " .. tostring(c.doc))
      assert.is_number(c.status, c.name .. ": what does Prism answer?")
      assert.is_truthy(c.mode == nil or c.mode == "static" or c.mode == "dynamic", c.name .. ": mode?")
      if c.differs then assert.is_true(#(c.differ_in or {}) > 0, c.name .. ": differs where?") end
    end
  end)

  it("README.md lists the differences the table names", function()
    local readme = helpers.read_file(helpers.resolve("README.md"))
    local text = differences.render(T)
    assert.is_truthy(readme:find(text, 1, true),
      "README.md's \"Differences from Prism\" is not what the table says; "
      .. "regenerate it with: luajit spec/support/prism_differences.lua\n" .. text)
  end)

  for _, c in ipairs(CASES) do
    it(c.name, function()
      if set and set.key ~= set_key(c) then
        set:stop()
        set = nil
      end
      set = set or start_set(c, with_moonport)
      local what = ("%s %s"):format(c.method or "GET", c.path)

      local p = prism.send(set.prism.port, c)
      assert.equal(c.status, p.status, what .. ": Prism's status is not the one the case is written for; body: "
        .. helpers.shorten(p.body, 400))
      if c.dynamic then
        local ok, why = check_dynamic(c, p)
        assert.is_true(ok ~= false, what .. ": Prism's random body does not validate against its schema: "
          .. tostring(why) .. "\nbody: " .. helpers.shorten(p.body, 400))
      end
      if not with_moonport then return end

      local m = prism.send(set.moonport.port, c)
      local excused = {}
      for _, aspect in ipairs(c.differ_in or {}) do excused[aspect] = false end
      local problems = {}
      for _, d in ipairs(compare(c, p, m)) do
        if excused[d[1]] ~= nil then
          excused[d[1]] = true
        else
          problems[#problems + 1] = what .. ": " .. d[2]
        end
      end
      if set.moonport2 then
        -- The same answer from the second moonport, as JSON (the order of
        -- an object's members may differ between processes) and in the
        -- document's headers.
        local m2 = prism.send(set.moonport2.port, c)
        local a, b = jc.try_decode(m.body), jc.try_decode(m2.body)
        local same = m2.status == m.status
          and ((a ~= nil and b ~= nil and jc.diff(a, b, "1", "2") == nil) or m.body == m2.body)
        for _, n in ipairs(T.documents[c.doc].headers) do
          if values(m, n) ~= values(m2, n) then same = false end
        end
        if not same then
          problems[#problems + 1] = what .. (": --seed %d does not repeat: %d %s vs %d %s"):format(T.seed,
            m.status, helpers.shorten(m.body, 300), m2.status, helpers.shorten(m2.body, 300))
        end
      end
      assert.equal(0, #problems, table.concat(problems, "\n"))
      for aspect, seen in pairs(excused) do
        assert.is_true(seen, ("marked as differing in %s (%s), but it no longer does"):format(
          aspect, tostring(c.differs)))
      end
    end)
  end
end)
