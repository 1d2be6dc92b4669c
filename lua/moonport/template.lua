--- HTML templates in etlua's syntax, compiled once to a Lua function.
--
--     local template = require("moonport.template")
--     local page = template.load("views/fortunes.html")
--     app:get("/fortunes", function(req, res)
--       res:header("Content-Type", "text/html; charset=utf-8")
--       res:send(page({ fortunes = list }))
--     end)
--
-- A template is text with three kinds of tags: `<%= expr %>` writes the
-- value of a Lua expression HTML-escaped, `<%- expr %>` writes it as it
-- is, and `<% code %>` runs Lua statements (loops and conditionals may
-- span tags). A tag closed with `-%>` drops the newline right after it.
--
-- How it works. The template becomes the source of one Lua function:
-- text between tags becomes string constants, and every run of text and
-- expressions without code between them becomes one `put` call on a
-- string.buffer (LuaJIT's), so rendering makes no intermediate strings but
-- the escaped copies of values that hold `&<>"'`, and one string at the
-- end. The generated source keeps the template's line breaks where they
-- are (a newline in text is a backslash-newline inside its string
-- constant), so line N of the template is line N of the chunk, and the
-- chunk's name is the template's: Lua's own messages, at compile time and
-- while rendering, name the template and its line with no mapping.
--
-- Expressions see the fields of the table given to the render as
-- variables, then Lua's globals. Each render gets a scope table of its own
-- (metatable: the fields, then _G) and a fresh closure of the compiled
-- chunk with that scope as its environment, so renders of one template
-- that overlap (a render that waits on a query inside a block, while
-- another request renders the same page) never see each other's values.
-- Assigning a global in a block writes to that scope only.
--
-- What it does not do: no partials or layouts of its own (a block can call
-- another template: `<%- header({title = title}) %>`), no `<%%` escape, no
-- caching of compile() (load() keeps one template per path per state).
-- @module moonport.template

local buffer = require("string.buffer")
local ffi = require("ffi")

local type, tostring, error, setmetatable, rawget, pairs =
  type, tostring, error, setmetatable, rawget, pairs
local cast = ffi.cast
local setfenv, loadstring = setfenv, loadstring
local byte, find, sub, match, gsub, format = string.byte, string.find, string.sub,
  string.match, string.gsub, string.format
local concat = table.concat
local io_open = io.open
local G = _G

local template = {}

-- Escaping ----------------------------------------------------------------

local ENTITY = {}      -- byte -> entity
local SPECIAL = ffi.new("uint8_t[256]")
for c, e in pairs({ ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;",
                    ["'"] = "&#39;" }) do
  ENTITY[byte(c)] = e
  SPECIAL[byte(c)] = 1
end
local bytes_of = ffi.typeof("const uint8_t *")
-- Buffers (the escape buffer, the render buffers) over this size are not
-- kept, so one huge value or page does not pin its memory for the state's
-- life.
local KEEP_MAX = 64 * 1024
-- The buffer escaped strings are made in; nothing in between can yield.
local escaped = buffer.new()

-- The escaped copy of s, which holds at least one special character.
-- A walk over the bytes that copies the runs between them: five times
-- as fast as gsub with a table, which the JIT compiler cannot compile.
local function escape_copy(s)
  local p = cast(bytes_of, s)
  local n, run = #s, 0
  escaped:reset()
  for i = 0, n - 1 do
    local c = p[i]
    if SPECIAL[c] ~= 0 then
      escaped:putcdata(p + run, i - run):put(ENTITY[c])
      run = i + 1
    end
  end
  escaped:putcdata(p + run, n - run)
  local out = escaped:tostring()
  -- One huge value does not pin its memory for the state's life.
  if #out > KEEP_MAX then escaped:free() end
  return out
end

--- Escapes `&`, `<`, `>`, `"` and `'` as `&amp;`, `&lt;`, `&gt;`,
-- `&quot;` and `&#39;`; other values are passed through `tostring` first.
-- What `<%= expr %>` does to its value. A string with none of those
-- characters is returned as it is, without a copy.
-- @param value any value
-- @return the escaped string
-- @usage template.escape('<a href="x">') --> '&lt;a href=&quot;x&quot;&gt;'
local function escape(value)
  local t = type(value)
  if t ~= "string" then
    value = tostring(value)
    if t == "number" then return value end
  end
  -- Five plain searches, which the JIT compiler compiles, cost less than
  -- one search for a class of characters, which it leaves to the
  -- interpreter; most values (ids, names) need no escaping.
  if find(value, "&", 1, true) or find(value, "<", 1, true) or find(value, ">", 1, true)
     or find(value, '"', 1, true) or find(value, "'", 1, true) then
    return escape_copy(value)
  end
  return value
end
template.escape = escape

-- Parsing -----------------------------------------------------------------

local B_QUOTE, B_DQUOTE, B_BACKSLASH = byte("'"), byte('"'), byte("\\")
local B_NL, B_LBRACKET, B_DASH = byte("\n"), byte("["), byte("-")
local B_PERCENT, B_GT = byte("%"), byte(">")

-- The line of position pos in text, counted from 1.
local function line_at(text, pos)
  local _, n = gsub(sub(text, 1, pos - 1), "\n", "")
  return n + 1
end

-- The position of the "%>" that closes a tag whose code starts at pos, or
-- nil. A "%>" inside a Lua string or long comment does not close the tag;
-- one inside a line comment does (the comment ends with the tag). A short
-- string that meets a newline is left to Lua to report.
local function find_close(text, pos)
  local i = pos
  while true do
    local c = byte(text, i)
    if c == nil then return nil end
    if c == B_PERCENT and byte(text, i + 1) == B_GT then return i end
    if c == B_QUOTE or c == B_DQUOTE then
      i = i + 1
      while true do
        local d = byte(text, i)
        if d == nil then return nil end
        if d == B_BACKSLASH then
          i = i + 2
        else
          i = i + 1
          if d == c or d == B_NL then break end
        end
      end
    elseif c == B_LBRACKET and match(text, "^%[=*%[", i) then
      local eqs = match(text, "^%[(=*)%[", i)
      local _, e = find(text, "]" .. eqs .. "]", i, true)
      if not e then return nil end
      i = e + 1
    elseif c == B_DASH and byte(text, i + 1) == B_DASH then
      local eqs = match(text, "^%-%-%[(=*)%[", i)
      if eqs then
        local _, e = find(text, "]" .. eqs .. "]", i, true)
        if not e then return nil end
        i = e + 1
      else
        local nl = find(text, "\n", i, true)
        local close = find(text, "%>", i, true)
        if close and (not nl or close < nl) then return close end
        if not nl then return nil end
        i = nl + 1
      end
    else
      i = i + 1
    end
  end
end

-- A put call takes at most this many pieces, well inside the limit on a
-- call's arguments (about 250 registers).
local MAX_ARGS = 60

-- Translates a template into the body of its function, which sees the
-- buffer as _b, the escape function as _esc and tostring as _ts. name is
-- the template's name for errors. Returns the body, or raises
-- "name:LINE: message".
local function translate(text, name)
  local out, n = {}, 0
  local args, nargs = {}, 0
  -- Newlines the generated code has that the template has not yet had
  -- (after a tag that ends in a line comment, or one that drops the
  -- newline after it): the next newlines of text are written as "\n"
  -- escapes instead of line breaks, so the lines line up again.
  local debt = 0

  local function emit(s)
    n = n + 1
    out[n] = s
  end
  local function flush()
    if nargs > 0 then
      emit("_b:put(" .. concat(args, ",", 1, nargs) .. ");")
      nargs = 0
    end
  end
  local function arg(s)
    nargs = nargs + 1
    args[nargs] = s
    if nargs == MAX_ARGS then flush() end
  end
  local function text_piece(s)
    if s == "" then return end
    -- %q writes a newline as a backslash followed by a line break.
    local q = format("%q", s)
    if debt > 0 then
      local paid
      q, paid = gsub(q, "\\\n", "\\n", debt)
      debt = debt - paid
    end
    arg(q)
  end
  -- Code followed by what ends it: a line break when it holds a comment,
  -- which would otherwise swallow what follows on the line.
  local function code_end(code)
    if find(code, "--", 1, true) then
      debt = debt + 1
      return "\n"
    end
    return " "
  end

  local pos, len = 1, #text
  while pos <= len do
    local open = find(text, "<%", pos, true)
    if not open then
      text_piece(sub(text, pos))
      break
    end
    text_piece(sub(text, pos, open - 1))
    local kind = sub(text, open + 2, open + 2)
    local code_start = open + 2
    if kind == "=" or kind == "-" then
      code_start = code_start + 1
    else
      kind = ""
    end
    local close = find_close(text, code_start)
    if not close then
      error(format("%s:%d: '<%%%s' is not closed by '%%>'", name, line_at(text, open), kind), 0)
    end
    local code_end_pos = close - 1
    local trim = code_end_pos >= code_start and byte(text, code_end_pos) == B_DASH
    if trim then code_end_pos = code_end_pos - 1 end
    local code = sub(text, code_start, code_end_pos)
    if kind == "" then
      flush()
      emit(code .. code_end(code))
    else
      if not find(code, "%S") then
        error(format("%s:%d: '<%%%s' holds no expression", name, line_at(text, open), kind), 0)
      end
      local fn = kind == "=" and "_esc(" or "_ts("
      arg(fn .. code .. (find(code, "--", 1, true) and code_end(code) or "") .. ")")
    end
    pos = close + 2
    if trim and byte(text, pos) == B_NL then
      pos = pos + 1
      -- The line break the text no longer has goes in the code.
      flush()
      emit("\n")
    end
  end
  flush()
  return concat(out, "", 1, n)
end

-- Templates ---------------------------------------------------------------

local Template = {}
Template.__index = Template

-- Spare buffers, so that a render reuses the memory of earlier ones. A
-- render takes one and gives it back when done (one that raises drops
-- it), so renders that overlap each have their own.
local spare, nspare = {}, 0

-- A render's scope: the render's table in slot 1, then the globals.
-- Assignments to globals land in the scope itself.
local scope_mt = {
  __index = function(scope, key)
    local v = rawget(scope, 1)[key]
    if v == nil then v = G[key] end
    return v
  end,
}
-- What a render without a table sees (blocks assign to the scope, not here).
local EMPTY = {}

--- Renders the template with the fields of `env` as variables (and Lua's
-- globals after them); returns the text. `tpl(env)` does the same. A
-- runtime error in the template raises with the template's name and line
-- (`views/page.html:12: attempt to index global 'user' (a nil value)`).
-- @param env a table (optional)
-- @return the rendered string
-- @usage res:send(page:render({ user = user }))
function Template:render(env)
  if env == nil then
    env = EMPTY
  elseif type(env) ~= "table" then
    error("template: render takes a table of values, not a " .. type(env), 2)
  end
  local chunk = self.chunk
  -- The chunk returns a new closure, which takes the chunk's environment
  -- as it is now: no other render can change it.
  setfenv(chunk, setmetatable({ env }, scope_mt))
  local body = chunk()
  local buf
  if nspare > 0 then
    buf = spare[nspare]
    spare[nspare] = nil
    nspare = nspare - 1
  else
    buf = buffer.new()
  end
  body(buf, escape, tostring)
  local s = buf:tostring()
  if #buf <= KEEP_MAX then
    buf:reset()
    nspare = nspare + 1
    spare[nspare] = buf
  end
  return s
end

Template.__call = Template.render

-- Compiles text under chunkname ("=name" or "@path"); name is how errors
-- call it. Raises "name:LINE: message".
local function build(text, chunkname, name)
  local body = translate(text, name)
  local chunk, err = loadstring("return function(_b,_esc,_ts,...) " .. body .. "\nend", chunkname)
  if not chunk then
    -- The same body as a chunk of its own, for Lua's message without the
    -- wrapper (an unclosed `if` is then reported as such, not as an
    -- unclosed function).
    local _, plain = loadstring("local _b,_esc,_ts=... " .. body, chunkname)
    error(plain or err, 0)
  end
  return setmetatable({ name = name, chunk = chunk }, Template)
end

--- Compiles a template from its text. Raises on a syntax error, naming
-- `name` (default "template") and the template's line:
-- `page:3: '<%=' is not closed by '%>'`, `page:7: 'end' expected near '<eof>'`.
-- @param text the template
-- @param name the name errors give it (optional)
-- @return the template: call it, or its `render` method, with a table
-- @usage local hello = template.compile("Hello <%= name %>!", "hello")
-- hello({ name = "you" }) --> "Hello you!"
function template.compile(text, name)
  if type(text) ~= "string" then
    error("template.compile: text must be a string", 2)
  end
  if name == nil then
    name = "template"
  elseif type(name) ~= "string" then
    error("template.compile: name must be a string", 2)
  end
  return build(text, "=" .. name, name)
end

-- Templates load() compiled in this state, by path.
local loaded = {}

--- Reads and compiles a template file, and has the master watch it: saving
-- the file reloads the app, as saving a script does (a template that no
-- longer compiles fails the reload, and the workers keep the old code). A
-- relative path is taken from the working directory, as `io.open` and
-- `dofile` take it. The file is read once per state; later calls with the
-- same path return the same template. Raises when the file cannot be read
-- or does not compile (`views/page.html:3: ...`).
-- @param path the file
-- @return the template
-- @usage local page = template.load("views/page.html")
function template.load(path)
  if type(path) ~= "string" then
    error("template.load: path must be a string", 2)
  end
  local tpl = loaded[path]
  if tpl then return tpl end
  -- Watched before it is read: a file that is missing or broken now is
  -- reloaded once it is fixed.
  require("moonport.core.app").track_file(path)
  local f, err = io_open(path, "rb")
  if not f then error("template.load: " .. err, 2) end
  local text = f:read("*a")
  f:close()
  tpl = build(text, "@" .. path, path)
  loaded[path] = tpl
  return tpl
end

return template
