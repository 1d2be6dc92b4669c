--- XML documents and XPath (server/lua/ffi/xml.c, libxml2), for the mock's
-- XML matchers and its {{xPath}} template helper.
--
--     local xml = require("moonport.core.xml")
--     local doc = assert(xml.parse("<a><b>1</b></a>"))
--     local xp = assert(xml.xpath("/a/b/text()"))
--     local texts = xp:eval(doc) -- {"1"}
--
-- @module moonport.core.xml

local ffi = require("ffi")
require("moonport.core.base")

ffi.cdef[[
void *mp_xml_parse(const char *text, size_t len, char *err, size_t errlen);
void mp_xml_free(void *doc);
int mp_xml_canonical(void *doc, const char **out);
void *mp_xpath_compile(const char *expr, size_t len, char *err,
                       size_t errlen);
void mp_xpath_free(void *xp);
int mp_xpath_eval(void *doc, void *xp, const char *ns, size_t nslen,
                  int *kind, const char **out, size_t *len);
]]

local C = ffi.C
local ffi_string, ffi_gc = ffi.string, ffi.gc
local type, pairs, ipairs, setmetatable, tostring, tonumber = type, pairs, ipairs, setmetatable, tostring, tonumber
local find, sub, byte, match = string.find, string.sub, string.byte, string.match
local concat, sort = table.concat, table.sort

local errbuf = ffi.new("char[256]")
local outp = ffi.new("const char *[1]")
local outlen = ffi.new("size_t[1]")
local kindp = ffi.new("int[1]")

local xml = {}

local Doc = {}
Doc.__index = Doc

--- Parses text as an XML document. Returns a document, or nil and what
-- is wrong with the text.
-- @usage local doc, err = xml.parse(body)
function xml.parse(text)
  local d = C.mp_xml_parse(text, #text, errbuf, 256)
  if d == nil then return nil, ffi_string(errbuf) end
  return setmetatable({ doc = ffi_gc(d, C.mp_xml_free) }, Doc)
end

--- The document in its normalized form (server/lua/ffi/xml.c): equal for
-- two documents that differ only in what WireMock's equalToXml ignores
-- (white space between elements, comments, attribute order, prefixes).
-- @usage if a:canonical() == b:canonical() then ... end
function Doc:canonical()
  local c = self.canon
  if c == nil then
    local n = C.mp_xml_canonical(self.doc, outp)
    if n < 0 then return nil, "out of memory" end
    c = ffi_string(outp[0], n)
    self.canon = c
  end
  return c
end

--- The document as a tree of elements: { name = "{uri}local", localname, attrs =
-- {name = value}, nattrs, kids = {element or {text = "..."} or {pi =
-- target, data = ...}} }, read from its normalized form.
-- @usage local root = doc:tree()
function Doc:tree()
  local t = self.root
  if t ~= nil then return t end
  local s = assert(self:canonical())
  local pos, n = 1, #s
  local top = { kids = {} }
  local stack, cur = {}, top
  local function field()
    local z = find(s, "\0", pos, true)
    local v = sub(s, pos, z - 1)
    pos = z + 1
    return v
  end
  while pos <= n do
    local c = byte(s, pos)
    pos = pos + 1
    if c == 69 then -- E
      local name = field()
      local el = { name = name, localname = match(name, "^{.-}(.*)$") or name, attrs = {}, nattrs = 0,
                   kids = {} }
      cur.kids[#cur.kids + 1] = el
      stack[#stack + 1] = cur
      cur = el
    elseif c == 65 then -- A
      local name = field()
      cur.attrs[name] = field()
      cur.nattrs = cur.nattrs + 1
    elseif c == 84 then -- T
      cur.kids[#cur.kids + 1] = { text = field() }
    elseif c == 80 then -- P
      local target = field()
      cur.kids[#cur.kids + 1] = { pi = target, data = field() }
    else -- )
      cur = stack[#stack]
      stack[#stack] = nil
    end
  end
  -- The root element: comments and processing instructions around it are
  -- not part of what is compared.
  for _, k in ipairs(top.kids) do
    if k.name then t = k break end
  end
  self.root = t
  return t
end

local XPath = {}
XPath.__index = XPath

--- Compiles an XPath 1.0 expression, with namespaces: a table of prefix
-- to URI (optional). Returns an expression object, or nil and why it is
-- not one.
-- @usage local xp = assert(xml.xpath("//s:Body", { s = SOAP_NS }))
function xml.xpath(expr, namespaces)
  if type(expr) ~= "string" then return nil, "an XPath expression is a string" end
  local xp = C.mp_xpath_compile(expr, #expr, errbuf, 256)
  if xp == nil then return nil, ffi_string(errbuf) end
  local ns = {}
  if namespaces ~= nil then
    local prefixes = {}
    for prefix in pairs(namespaces) do prefixes[#prefixes + 1] = tostring(prefix) end
    sort(prefixes)
    for _, prefix in ipairs(prefixes) do
      local uri = tostring(namespaces[prefix])
      if find(prefix, "\0", 1, true) or find(uri, "\0", 1, true) then
        return nil, "a namespace prefix or URI holds a NUL byte"
      end
      ns[#ns + 1] = prefix .. "\0" .. uri .. "\0"
    end
  end
  return setmetatable({ xp = ffi_gc(xp, C.mp_xpath_free), ns = concat(ns), source = expr }, XPath)
end

-- A number as Java's NumberFormat writes it (WireMock's text of an XPath
-- number): digits grouped by ",", at most three decimals, half to even.
local function java_number(x)
  if x ~= x then return "NaN" end
  if x == math.huge then return "\226\136\158" end
  if x == -math.huge then return "-\226\136\158" end
  local s = ("%.3f"):format(x)
  local sign, int, frac = s:match("^(-?)(%d+)%.(%d+)$")
  frac = frac:gsub("0+$", "")
  int = int:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", "")
  return sign .. int .. (frac ~= "" and "." .. frac or "")
end
xml.java_number = java_number

--- What the expression finds in doc, as WireMock gives it: a list of
-- texts, one per node (an element as indented XML, an attribute or text
-- node its text), or one for a number (as Java formats it), a string or a
-- boolean; nil and a message when the evaluation failed (a prefix not
-- bound).
-- @usage local texts = xp:eval(doc)
function XPath:eval(doc)
  local ns = self.ns
  local n = C.mp_xpath_eval(doc.doc, self.xp, ns, #ns, kindp, outp, outlen)
  if n < 0 then
    return nil, ("XPath %s could not be evaluated here"):format(self.source)
  end
  local s = ffi_string(outp[0], outlen[0])
  local list, pos = {}, 1
  for i = 1, n do
    local z = find(s, "\0", pos, true)
    list[i] = sub(s, pos, z - 1)
    pos = z + 1
  end
  if kindp[0] == C.MP_XPATH_NUMBER then list[1] = java_number(tonumber(list[1])) end
  return list
end

return xml
