--- WireMock's XML matchers: `equalToXml` (with placeholders and exempted
-- comparisons) and `matchesXPath` (with namespaces and a matcher of the
-- nodes' text), over moonport.core.xml (libxml2).
--
--     local xmlmatch = require("moonport.mock.xmlmatch")
--     local m = assert(xmlmatch.equal_to_xml({ equal_to_xml = "<a><b>1</b></a>" }, "body"))
--     m.test("<a>\n  <b>1</b>\n</a>") -- true
--
-- equalToXml compares as WireMock's XMLUnit setup does: white space
-- between elements, comments, namespace prefixes and the order of
-- attributes do not count, nor does the order of sibling elements with
-- different names; text is trimmed. What does count: element names and
-- namespaces, the number of attributes and each one's value, the number of
-- children, text, processing instructions.
--
-- @module moonport.mock.xmlmatch

local xml = require("moonport.core.xml")
local core = require("moonport.core")

local type, pairs, ipairs, tostring, tonumber, setmetatable = type, pairs, ipairs, tostring, tonumber, setmetatable
local match, find, sub, lower = string.match, string.find, string.sub, string.lower

local xmlmatch = {}

-- The comparisons WireMock counts, which exemptedComparisons may turn off.
local COMPARISONS = {
  ELEMENT_TAG_NAME = true, SCHEMA_LOCATION = true, NO_NAMESPACE_SCHEMA_LOCATION = true,
  NODE_TYPE = true, NAMESPACE_URI = true, TEXT_VALUE = true,
  PROCESSING_INSTRUCTION_TARGET = true, PROCESSING_INSTRUCTION_DATA = true,
  ELEMENT_NUM_ATTRIBUTES = true, ATTR_VALUE = true, CHILD_NODELIST_LENGTH = true,
  CHILD_LOOKUP = true, ATTR_NAME_LOOKUP = true,
}

local function split_name(name)
  local uri, localname = match(name, "^{(.-)}(.*)$")
  if uri then return uri, localname end
  return "", name
end

-- A placeholder's test: function(actual or nil) -> ok, from the text of
-- a control value that is one (the whole value, as XMLUnit reads it), or
-- nil when it is not one.
local function placeholder_reader(opening, closing)
  local frame, err = core.regex("\\s*(?:" .. opening .. ")\\s*xmlunit\\.[a-zA-Z]+\\s*(?:\\(.*\\))?\\s*(?:"
    .. closing .. ")\\s*", false)
  if not frame then return nil, err end
  local cache = {}
  return function(text)
    local got = cache[text]
    if got ~= nil then return got or nil end
    got = false
    if frame:match(text) then
      local keyword, rest = match(text, "xmlunit%.(%a+)%s*(.*)$")
      local args = match(rest or "", "^%((.*)%)") or ""
      if keyword == "ignore" then
        got = function() return true end
      elseif keyword == "isNumber" then
        got = function(v)
          return v ~= nil and tonumber(v) ~= nil and not find(v, "^%s*0[xX]") and not find(v, "^%s*$")
        end
      elseif keyword == "matchesRegex" then
        local re = core.regex(args, false)
        got = function(v) return v ~= nil and re ~= nil and re:match(v) == true end
      elseif keyword == "isDateTime" then
        local parse = require("moonport.mock.dates").parser(args ~= "" and args or nil)
        got = function(v)
          if v == nil or parse == nil then return false end
          local zoned, loc = parse(v)
          return zoned ~= nil or loc ~= nil
        end
      end
    end
    cache[text] = got
    return got or nil
  end
end

-- Compares a control tree with a test tree, counting the comparisons made
-- and the differences found. stop: give up at the first difference.
local function compare(ctrl, test, opts, stop)
  local total, diffs = 0, 0
  local counted = opts.counted
  local ph = opts.placeholder
  local function check(kind, same)
    if not counted[kind] then return true end
    total = total + 1
    if not same then diffs = diffs + 1 end
    return same
  end
  local function value_same(kind, want, got)
    local p = ph and ph(want)
    if p then return check(kind, p(got)) end
    return check(kind, want == got)
  end
  local element
  function element(c, t)
    local cu, cl = split_name(c.name)
    local tu, tl = split_name(t.name)
    if not check("ELEMENT_TAG_NAME", cl == tl) and stop then return false end
    if not check("NAMESPACE_URI", cu == tu) and stop then return false end
    if not check("ELEMENT_NUM_ATTRIBUTES", c.nattrs == t.nattrs) and stop then return false end
    for name, want in pairs(c.attrs) do
      local got = t.attrs[name]
      if not check("ATTR_NAME_LOOKUP", got ~= nil) then
        if stop then return false end
      elseif not value_same("ATTR_VALUE", want, got) and stop then
        return false
      end
    end
    local ck, tk = c.kids, t.kids
    -- A control text that is ${xmlunit.ignore} may stand for no text.
    local nc = #ck
    if ph and nc == 1 and ck[1].text and #tk == 0 and ph(ck[1].text) then nc = 0 end
    if not check("CHILD_NODELIST_LENGTH", nc == #tk) and stop then return false end
    local used = {}
    for _, k in ipairs(ck) do
      local found
      for j, o in ipairs(tk) do
        if not used[j] then
          -- Elements pair by local name: a namespace that differs is a
          -- difference of its own (NAMESPACE_URI), which may be exempted.
          if k.name and o.name and k.localname == o.localname or k.text and o.text or k.pi and o.pi then
            found = j
            break
          end
        end
      end
      if found == nil then
        if not (k.text and nc == 0) and not check("CHILD_LOOKUP", false) and stop then return false end
      else
        used[found] = true
        local o = tk[found]
        if k.name then
          if not element(k, o) and stop then return false end
        elseif k.text then
          if not value_same("TEXT_VALUE", k.text, o.text) and stop then return false end
        else
          if not check("PROCESSING_INSTRUCTION_TARGET", k.pi == o.pi) and stop then return false end
          if not check("PROCESSING_INSTRUCTION_DATA", k.data == o.data) and stop then return false end
        end
      end
    end
    return true
  end
  element(ctrl, test)
  return diffs == 0, total, diffs
end

-- A body as a document, or nil: several matchers of one request parse it
-- once (the last body parsed is kept).
local last_text, last_doc
local function document(text)
  if text == nil or text == "" then return nil end
  if text == last_text then return last_doc end
  local doc = xml.parse(text)
  last_text, last_doc = text, doc or false
  return doc
end

--- Compiles an equalToXml matcher ({ equal_to_xml, enable_placeholders,
-- placeholder_opening_delimiter_regex, placeholder_closing_delimiter_regex,
-- exempted_comparisons }). Returns { test, explain } or nil and what is
-- wrong (the expected XML does not parse, a comparison is unknown).
-- @usage local m = assert(xmlmatch.equal_to_xml(spec, "body"))
function xmlmatch.equal_to_xml(m, what)
  local expected, err = xml.parse(tostring(m.equal_to_xml))
  if not expected then return nil, what .. ": equalToXml: not XML: " .. err end
  local counted = COMPARISONS
  if m.exempted_comparisons ~= nil then
    if type(m.exempted_comparisons) ~= "table" then
      return nil, what .. ": exemptedComparisons is a list of comparison names"
    end
    counted = {}
    for k in pairs(COMPARISONS) do counted[k] = true end
    for _, name in ipairs(m.exempted_comparisons) do
      name = tostring(name)
      if not COMPARISONS[name] and not match(name, "^[A-Z_]+$") then
        return nil, what .. ": exemptedComparisons: " .. name .. " is not a comparison type"
      end
      counted[name] = nil
    end
  end
  local ph
  if m.enable_placeholders == true then
    ph, err = placeholder_reader(m.placeholder_opening_delimiter_regex and
      tostring(m.placeholder_opening_delimiter_regex) or "\\$\\{",
      m.placeholder_closing_delimiter_regex and tostring(m.placeholder_closing_delimiter_regex) or "\\}")
    if not ph then return nil, what .. ": bad placeholder delimiter: " .. err end
  end
  local opts = { counted = counted, placeholder = ph }
  local canon = expected:canonical()
  local root = expected:tree()
  return {
    test = function(v)
      local doc = document(v)
      if not doc then return false end
      if not ph and counted == COMPARISONS and doc:canonical() == canon then return true end
      return (compare(root, doc:tree(), opts, true))
    end,
    explain = function(v)
      local doc = document(v)
      if not doc then return what .. " is not XML", 1 end
      local _, total, diffs = compare(root, doc:tree(), opts, false)
      return what .. " is not equal to the expected XML", total > 0 and diffs / total or 1
    end,
  }
end

--- Compiles a matchesXPath matcher: { matches_x_path = expression or {
-- expression = ..., <a string matcher> }, x_path_namespaces = {prefix =
-- uri} }. sub_matcher(m, what) compiles the nodes' matcher. Returns {
-- test, explain } or nil and what is wrong (not an XPath expression).
-- @usage local m = assert(xmlmatch.matches_xpath(spec, "body", match.string_matcher))
function xmlmatch.matches_xpath(m, what, sub_matcher)
  local spec = m.matches_x_path
  local expr, sm = spec, nil
  local err
  if type(spec) == "table" then
    expr = spec.expression
    local rest = {}
    for k, v in pairs(spec) do if k ~= "expression" then rest[k] = v end end
    if next(rest) ~= nil then
      sm, err = sub_matcher(rest, what .. " at XPath " .. tostring(expr))
      if not sm then return nil, err end
    end
  end
  if type(expr) ~= "string" then return nil, what .. ": matchesXPath needs an expression" end
  local ns = m.x_path_namespaces
  if ns ~= nil and type(ns) ~= "table" then
    return nil, what .. ": xPathNamespaces is an object of prefix to URI"
  end
  local xp
  xp, err = xml.xpath(expr, ns)
  if not xp then return nil, ("%s: matchesXPath: %s is not an XPath expression: %s"):format(what, expr, err) end
  local function nodes(v)
    -- As WireMock: a value that does not start with '<' is not parsed.
    if v == nil or not find(v, "^%s*<") then return nil end
    local doc = document(v)
    return doc and xp:eval(doc)
  end
  return {
    test = function(v)
      local found = nodes(v)
      if found == nil or #found == 0 then return false end
      if sm == nil then return true end
      local e
      for _, text in ipairs(found) do
        local ok, why = sm.test(text)
        if ok then return true end
        if ok == nil then e = e or why end
      end
      if e then return nil, e end
      return false
    end,
    explain = function(v)
      local found = nodes(v)
      if found == nil then return what .. " is not XML", 1 end
      if #found == 0 then return ("nothing at XPath %s"):format(expr), 1 end
      return ("no node at XPath %s satisfies the matcher"):format(expr), 0.5
    end,
  }
end

-- Expressions the template helpers compiled, by their text.
local helper_xpaths = setmetatable({}, { __mode = "v" })

--- What the {{xPath}} and {{soapXPath}} template helpers write: the text
-- of what expr selects in text (an XML document), as matchesXPath reads
-- it; several values as WireMock lists them ("[a, b]"); "" when expr is
-- not an expression or selects nothing; WireMock's "[ERROR: <text> is not
-- valid XML]" when text is not XML.
-- @usage xmlmatch.template_xpath("<a><b>1</b></a>", "/a/b/text()") -- "1"
function xmlmatch.template_xpath(text, expr)
  if type(text) ~= "string" then return "" end
  local doc = find(text, "^%s*<") and document(text)
  if not doc then return "[ERROR: " .. text .. " is not valid XML]" end
  local xp = helper_xpaths[expr]
  if xp == nil then
    xp = xml.xpath(expr)
    if not xp then return "" end
    helper_xpaths[expr] = xp
  end
  local found = xp:eval(doc)
  if found == nil or #found == 0 then return "" end
  if #found == 1 then return found[1] end
  return "[" .. table.concat(found, ", ") .. "]"
end

return xmlmatch
