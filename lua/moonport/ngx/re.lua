--- ngx.re: OpenResty's regular expressions (match, find, gmatch, sub,
-- gsub) on PCRE2, through moonport.core.regex.
--
-- As lua-nginx-module: a captures table has the whole match at [0], the
-- groups at [1]..[n] (false for a group that took no part) and named
-- groups under their names too; ctx.pos is where to start (1-based) and
-- is set past the match; options are OpenResty's letters: a (anchored),
-- d (DFA: the longest match, no groups), D (duplicate names: a name's
-- value is the array of its groups' matches), i, j (JIT), J (JavaScript
-- compatible), m, o (compile once: kept in a cache of 1,024 patterns
-- per worker), s, u and U (UTF-8; U checks the subject's UTF-8 too), x.
-- An unknown letter raises. Matches run within PCRE2's limits
-- (moonport.core.regex); a match given up there returns nil and the
-- reason, as a PCRE error does.
-- @module moonport.ngx.re

local regex = require("moonport.core.regex")
local bit = require("bit")

local type, tostring, tonumber, error, pairs = type, tostring, tonumber, error, pairs
local byte, sub, concat = string.byte, string.sub, table.concat
local bor, band = bit.bor, bit.band
local re_compile, re_exec, re_free = regex.re_compile, regex.re_exec, regex.re_free
local letters = regex.flags
local DFA, DUPNAMES, UTF = letters.d, letters.D, letters.u

local ok_clear, clear_tab = pcall(require, "table.clear")
if not ok_clear then
  clear_tab = function(t) for k in pairs(t) do t[k] = nil end end
end

local re = {}

-- Option strings already read, to their flags and whether 'o' is there.
local option_flags, option_once = {}, {}

local function parse_options(opts)
  local flags = option_flags[opts]
  if flags then return flags, option_once[opts] end
  flags = 0
  local once = false
  for i = 1, #opts do
    local c = sub(opts, i, i)
    if c == "o" then
      once = true
    else
      local f = letters[c == "U" and "u" or c]
      if f == nil then error('unknown flag "' .. c .. '"', 4) end
      flags = bor(flags, f)
    end
  end
  option_flags[opts], option_once[opts] = flags, once
  return flags, once
end

-- Patterns compiled with 'o', by pattern and flags.
local CACHE_MAX = 1024
local cache, cached = {}, 0

-- The compiled pattern for regex with opts and whether it is cached (else
-- the caller frees it when done); nil and the message when it does not
-- compile.
local function compiled_for(pattern, opts)
  if type(pattern) ~= "string" then
    if type(pattern) ~= "number" then
      error("bad argument #2 (string expected, got " .. type(pattern) .. ")", 3)
    end
    pattern = tostring(pattern)
  end
  local flags, once = 0, false
  if opts ~= nil and opts ~= "" then flags, once = parse_options(opts) end
  local key
  if once then
    key = pattern .. "\0" .. flags
    local c = cache[key]
    if c then return c, true end
  end
  local c, err = re_compile(pattern, flags)
  if not c then return nil, err end
  c.flags = flags
  c.dfa = band(flags, DFA) ~= 0
  c.utf = band(flags, UTF) ~= 0
  if once then
    if cached < CACHE_MAX then
      cache[key] = c
      cached = cached + 1
    else
      once = false
    end
  end
  return c, once
end

local function done(c, once)
  if not once then re_free(c) end
end

local function subject_of(s)
  if type(s) == "string" then return s end
  if type(s) == "number" then return tostring(s) end
  error("bad argument #1 (string expected, got " .. type(s) .. ")", 3)
end

-- The captures table of the match in c.ov.
local function captures(c, subject, res)
  if res then clear_tab(res) else res = {} end
  local ov = c.ov
  local n = c.dfa and 0 or c.ncaptures
  for i = 0, n do
    local from = ov[2 * i]
    if from >= 0 then
      res[i] = sub(subject, from + 1, ov[2 * i + 1])
    else
      res[i] = false
    end
  end
  local names = c.names
  if names and not c.dfa then
    local dup = band(c.flags, DUPNAMES) ~= 0
    for k = 1, #names do
      local entry = names[k]
      local cap, name = res[entry[1]], entry[2]
      if dup then
        if cap then
          local old = res[name]
          if old then old[#old + 1] = cap else res[name] = { cap } end
        end
      else
        res[name] = cap
      end
    end
  end
  return res
end

-- The 0-based start offset ctx asks for.
local function start_of(ctx)
  if ctx then
    local pos = ctx.pos
    if pos and pos > 0 then return pos - 1 end
  end
  return 0
end

--- The first match of regex in subject: a captures table, or nil when
-- there is none, or nil and an error message. ctx.pos (1-based) says
-- where to start and is set to the byte after the match; res, a table to
-- fill instead of a new one.
-- @usage local m = ngx.re.match("hello, 1234", "([0-9])(?<rest>[0-9]+)") -- m[0] "1234", m[1] "1", m.rest "234"
function re.match(subject, regex_, opts, ctx, res)
  subject = subject_of(subject)
  local c, once = compiled_for(regex_, opts)
  if not c then return nil, once end
  local pos = start_of(ctx)
  if pos > #subject then
    done(c, once)
    return nil
  end
  local matched, err = re_exec(c, subject, pos)
  if not matched then
    done(c, once)
    return nil, err
  end
  if ctx then ctx.pos = c.ov[1] + 1 end
  local m = captures(c, subject, res)
  done(c, once)
  return m
end

--- Where the first match of regex in subject is: from and to, 1-based and
-- inclusive (to is from - 1 for an empty match); with nth, where group nth
-- is. nil when there is no match (or group nth took no part), nil, nil
-- and an error message on error. ctx as re.match.
-- @usage local from, to = ngx.re.find("hello, 1234", "[0-9]+") -- 8, 11
function re.find(subject, regex_, opts, ctx, nth)
  subject = subject_of(subject)
  local c, once = compiled_for(regex_, opts)
  if not c then return nil, nil, once end
  local pos = start_of(ctx)
  if pos > #subject then
    done(c, once)
    return nil
  end
  local matched, err = re_exec(c, subject, pos)
  if not matched then
    done(c, once)
    return nil, nil, err
  end
  local ov = c.ov
  if ctx then ctx.pos = ov[1] + 1 end
  if not nth or nth < 0 then nth = 0 end
  done(c, once)
  if nth > c.ncaptures then return nil, nil, "nth out of bound" end
  if c.dfa and nth > 0 then return nil, nil end
  local from, to = ov[2 * nth], ov[2 * nth + 1]
  if from < 0 then return nil, nil end
  return from + 1, to
end

-- Where to look after an empty match at byte offset pos: the next
-- character (a whole UTF-8 sequence with 'u').
local function step(c, subject, pos)
  pos = pos + 1
  if c.utf then
    local b = byte(subject, pos + 1)
    while b and b >= 0x80 and b < 0xc0 do
      pos = pos + 1
      b = byte(subject, pos + 1)
    end
  end
  return pos
end

--- An iterator over the matches of regex in subject, each a captures
-- table; it returns nil after the last, or nil and an error message. nil
-- and the message when the pattern does not compile.
-- @usage for m in ngx.re.gmatch("hello, world", "([a-z]+)") do ngx.say(m[1]) end
function re.gmatch(subject, regex_, opts)
  subject = subject_of(subject)
  local c, once = compiled_for(regex_, opts)
  if not c then return nil, once end
  local pos, finished = 0, false
  local len = #subject
  return function()
    if finished then return nil end
    local matched, err = re_exec(c, subject, pos)
    if not matched then
      finished = true
      done(c, once)
      return nil, err
    end
    local ov = c.ov
    local from, to = ov[0], ov[1]
    local m = captures(c, subject)
    pos = to
    if from == to then
      pos = step(c, subject, pos)
      if pos > len then
        finished = true
        done(c, once)
      end
    end
    return m
  end
end

-- Replacement templates ---------------------------------------------------

local DOLLAR, LBRACE, RBRACE = byte("$"), byte("{"), byte("}")

local function is_digit(b) return b and b >= 48 and b <= 57 end
local function is_word(b)
  return b and (is_digit(b) or (b >= 65 and b <= 90) or (b >= 97 and b <= 122) or b == 95)
end

-- Templates read, to their parts: strings, group numbers, {name}.
local TEMPLATES_MAX = 256
local templates, ntemplates = {}, 0

-- A template's parts, or nil when it is not one: "$" ends it, "$" or "${"
-- is followed by no name, or "${" has no "}".
local function parse_template(t)
  local parts = templates[t]
  if parts then return parts end
  parts = {}
  local i, n, lit = 1, #t, 1
  while i <= n do
    if byte(t, i) == DOLLAR then
      if i > lit then parts[#parts + 1] = sub(t, lit, i - 1) end
      i = i + 1
      local b = byte(t, i)
      if b == nil then return nil end
      if b == DOLLAR then
        parts[#parts + 1] = "$"
        i = i + 1
      else
        local bracket = b == LBRACE
        if bracket then i = i + 1 end
        local s = i
        if is_digit(byte(t, i)) then
          while is_digit(byte(t, i)) do i = i + 1 end
          parts[#parts + 1] = tonumber(sub(t, s, i - 1))
        else
          while is_word(byte(t, i)) do i = i + 1 end
          if i == s then return nil end
          parts[#parts + 1] = { sub(t, s, i - 1) }
        end
        if bracket then
          if byte(t, i) ~= RBRACE then return nil end
          i = i + 1
        end
      end
      lit = i
    else
      i = i + 1
    end
  end
  if n >= lit then parts[#parts + 1] = sub(t, lit, n) end
  if ntemplates < TEMPLATES_MAX then
    templates[t] = parts
    ntemplates = ntemplates + 1
  end
  return parts
end

-- Group n's text in the match in c.ov, or "".
local function group_text(c, subject, n)
  if n > c.ncaptures or (c.dfa and n > 0) then return "" end
  local from = c.ov[2 * n]
  if from < 0 then return "" end
  return sub(subject, from + 1, c.ov[2 * n + 1])
end

-- The template's parts expanded for the match in c.ov, into out.
local function expand(c, subject, parts, out)
  for k = 1, #parts do
    local p = parts[k]
    local t = type(p)
    if t == "string" then
      out[#out + 1] = p
    elseif t == "number" then
      out[#out + 1] = group_text(c, subject, p)
    else
      local text = ""
      local names = c.names
      if names then
        for j = 1, #names do
          if names[j][2] == p[1] then
            text = group_text(c, subject, names[j][1])
            if text ~= "" then break end
          end
        end
      end
      out[#out + 1] = text
    end
  end
end

local function substitute(subject, regex_, replace, opts, global)
  subject = subject_of(subject)
  local func, parts
  if type(replace) == "function" then
    func = replace
  else
    if type(replace) ~= "string" then replace = tostring(replace) end
    parts = parse_template(replace)
    if not parts then return nil, nil, "failed to compile the replacement template" end
  end
  local c, once = compiled_for(regex_, opts)
  if not c then return nil, nil, once end
  local len = #subject
  local out, count, pos, copied = {}, 0, 0, 0
  while true do
    local matched, err = re_exec(c, subject, pos)
    if matched == nil then
      done(c, once)
      return nil, nil, err
    end
    if not matched then break end
    count = count + 1
    local ov = c.ov
    local from, to = ov[0], ov[1]
    if from > copied then out[#out + 1] = sub(subject, copied + 1, from) end
    if func then
      -- from and to are read first: the function may match with the same
      -- cached pattern, which overwrites c.ov.
      local piece = func(captures(c, subject))
      local pt = type(piece)
      if pt ~= "string" then
        if pt ~= "number" then
          done(c, once)
          error("the replace function must return a string (got " .. pt .. ")", 3)
        end
        piece = tostring(piece)
      end
      out[#out + 1] = piece
    else
      expand(c, subject, parts, out)
    end
    copied, pos = to, to
    if from == to then
      pos = step(c, subject, pos)
      if pos > len then break end
    end
    if not global then break end
  end
  done(c, once)
  if count == 0 then return subject, 0 end
  if copied < len then out[#out + 1] = sub(subject, copied + 1) end
  return concat(out), count
end

--- subject with the first match of regex replaced: by replace, a template
-- ($0 the match, $1 or ${1} a group, ${name} a named group, $$ a "$"; a
-- group that took no part is ""), or a function given the captures table
-- and returning the replacement. Returns the new string and how many
-- matches were replaced (0 or 1), or nil, nil and an error message.
-- @usage local s, n = ngx.re.sub("hello, 1234", "([0-9])[0-9]", "[$0][$1]") -- "hello, [12][1]34", 1
function re.sub(subject, regex_, replace, opts)
  return substitute(subject, regex_, replace, opts, false)
end

--- As re.sub, for every match.
-- @usage local s, n = ngx.re.gsub("hello, world", "([a-z])[a-z]+", "[$0,$1]") -- "[hello,h], [world,w]", 2
function re.gsub(subject, regex_, replace, opts)
  return substitute(subject, regex_, replace, opts, true)
end

--- Drops the patterns compiled with 'o' (for specs and benchmarks).
-- @usage re.flush_cache()
function re.flush_cache()
  cache, cached = {}, 0
end

return re
