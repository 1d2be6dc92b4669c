-- HTML templates (lua/moonport/template.lua): etlua's tags compiled to one
-- Lua function, escaping, blocks, errors that name the template's line,
-- and load() of files, recorded for the master to watch.
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path

-- load() records its files through moonport.core.app, which needs the
-- server's FFI functions; outside the server a stand-in records them here.
local tracked = {}
package.loaded["moonport.core.app"] = {
  track_file = function(path) tracked[#tracked + 1] = path end,
}

local template = require("moonport.template")

local function render(text, env)
  return template.compile(text)(env)
end

-- The message compile(text, name) raises.
local function compile_error(text, name)
  local ok, err = pcall(template.compile, text, name)
  assert.is_false(ok, "the template compiled")
  return err
end

-- The message rendering raises.
local function render_error(tpl, env)
  local ok, err = pcall(tpl, env)
  assert.is_false(ok, "the template rendered")
  return err
end

local function scratch_file(text)
  local path = os.tmpname()
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
  return path
end

local TFB = '<script>alert("This should not be displayed in a browser alert box.");</script>'

describe("template", function()
  describe("escaping", function()
    it("escapes the five HTML characters in <%= %>", function()
      assert.equal("&amp;&lt;&gt;&quot;&#39;", render("<%= s %>", { s = [[&<>"']] }))
      assert.equal("a &amp; b &lt;i&gt; &quot;q&quot; it&#39;s",
                   render("<%= s %>", { s = [[a & b <i> "q" it's]] }))
    end)

    it("escapes the TechEmpower fortune that holds a script", function()
      assert.equal('&lt;script&gt;alert(&quot;This should not be displayed in a browser '
                   .. 'alert box.&quot;);&lt;/script&gt;', render("<%= m %>", { m = TFB }))
    end)

    it("leaves text without those characters, and the template's own text, as they are", function()
      local plain = "Plain text, ünïcode, 100% + [brackets] & nothing else"
      assert.equal("Plain text, ünïcode", render("<%= s %>", { s = "Plain text, ünïcode" }))
      assert.equal(plain, render(plain))
      assert.equal("<b>\"x\" & 'y'</b>", render([[<b>"x" & 'y'</b>]]))
    end)

    it("writes <%- %> raw", function()
      assert.equal(TFB, render("<%- m %>", { m = TFB }))
      assert.equal("<i>1</i>", render("<%- '<i>' .. n .. '</i>' %>", { n = 1 }))
    end)

    it("offers the escape function", function()
      assert.equal("&lt;a href=&quot;x&quot;&gt;", template.escape('<a href="x">'))
      assert.equal("42", template.escape(42))
    end)
  end)

  describe("values", function()
    it("writes numbers, booleans and nil through tostring, as etlua does", function()
      assert.equal("42 1.5 -0.25 true false nil",
                   render("<%= a %> <%= b %> <%= c %> <%= t %> <%= f %> <%= missing %>",
                          { a = 42, b = 1.5, c = -0.25, t = true, f = false }))
      assert.equal("7 nil", render("<%- 7 %> <%- nothing %>"))
    end)

    it("uses a value's __tostring", function()
      local v = setmetatable({}, { __tostring = function() return "<v>" end })
      assert.equal("&lt;v&gt; <v>", render("<%= v %> <%- v %>", { v = v }))
    end)

    it("sees the table's fields first, then Lua's globals", function()
      assert.equal("HI 3 shadowed",
                   render("<%= string.upper(s) %> <%= #list %> <%= print %>",
                          { s = "hi", list = { 1, 2, 3 }, print = "shadowed" }))
    end)

    it("keeps a block's global assignments to the render", function()
      local env = { x = 1 }
      local tpl = template.compile("<% x = x + 1; y = 'set' %><%= x %><%= y %>")
      assert.equal("2set", tpl(env))
      assert.equal(1, env.x)
      assert.is_nil(rawget(_G, "y"))
      assert.equal("2set", tpl(env))
    end)

    it("renders without a table, and refuses a value that is not one", function()
      assert.equal("nil", render("<%= x %>"))
      local ok, err = pcall(template.compile("x"), "nope")
      assert.is_false(ok)
      assert.matches("render takes a table of values, not a string", err, 1, true)
    end)

    it("renders with :render as with a call", function()
      local tpl = template.compile("<%= a %>")
      assert.equal("1", tpl:render({ a = 1 }))
      assert.equal("2", tpl({ a = 2 }))
    end)
  end)

  describe("blocks", function()
    it("runs loops and conditionals across tags", function()
      local tpl = template.compile(
        "<ul><% for i, v in ipairs(items) do %><% if i > 1 then %>,<% end %>"
        .. "<li><%= v %></li><% end %></ul><% if #items == 0 then %>none<% else %>some<% end %>")
      assert.equal("<ul><li>a</li>,<li>&lt;b&gt;</li></ul>some", tpl({ items = { "a", "<b>" } }))
      assert.equal("<ul></ul>none", tpl({ items = {} }))
    end)

    it("renders TechEmpower's fortunes table", function()
      local tpl = template.compile(
        "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>"
        .. "<tr><th>id</th><th>message</th></tr>"
        .. "<% for _, f in ipairs(fortunes) do %><tr><td><%= f.id %></td><td><%= f.message %>"
        .. "</td></tr><% end %></table></body></html>")
      local fortunes, want = {}, {}
      for i = 1, 13 do
        fortunes[i] = { id = i, message = i == 12 and TFB or ("fortune " .. i .. " & co") }
      end
      for i, f in ipairs(fortunes) do
        want[i] = "<tr><td>" .. i .. "</td><td>" .. template.escape(f.message) .. "</td></tr>"
      end
      assert.equal("<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>"
                   .. "<tr><th>id</th><th>message</th></tr>" .. table.concat(want)
                   .. "</table></body></html>", tpl({ fortunes = fortunes }))
    end)

    it("drops the newline after -%>, and only that one", function()
      assert.equal("a\nb\nc", render("<% if true then -%>\na\n<%- 'b' -%>\n\n<% end -%>\nc"))
      assert.equal("x\n", render("<%= 'x' %>\n"))
      assert.equal("x", render("<%= 'x' -%>\n"))
      -- The minus that opens a raw tag trims nothing.
      assert.equal("5\n", render("<%- 5 %>\n"))
    end)

    it("closes a tag at the %> outside strings and long comments only", function()
      assert.equal("%&gt; a]%>b", render([=[<%= "%>" %> <%- [[a]%>b]] %>]=]))
      assert.equal("x", render("<% --[[ %> ]] local v = 'x' %><%= v %>"))
      -- A line comment ends with its tag; what follows on the line is text.
      assert.equal("a-b", render("a<% -- it's a comment %>-<%= 'b' -- the b %>"))
    end)

    it("keeps every byte of the text", function()
      local text = "quotes \" ' \\ backslash \\n not a newline\r\n\0nul\t\1\255 end\n\n"
      assert.equal(text, render(text))
      assert.equal("[" .. text .. "]", render("[<%- t %>]", { t = text }))
    end)

    it("writes a template with more pieces than one call takes", function()
      local parts, want = {}, {}
      for i = 1, 500 do
        parts[#parts + 1] = "<%= " .. i .. " %>,"
        want[#want + 1] = i .. ","
      end
      assert.equal(table.concat(want), render(table.concat(parts)))
    end)

    it("gives overlapping renders of one template each their own values", function()
      local tpl = template.compile("<%= name %>:<% coroutine.yield() %><%= name %>")
      local a = coroutine.wrap(function() return tpl({ name = "a" }) end)
      local b = coroutine.wrap(function() return tpl({ name = "b" }) end)
      a()
      b()
      assert.equal("b:b", b())
      assert.equal("a:a", a())
    end)

    it("starts every render with an empty buffer, after one that raised too", function()
      local tpl = template.compile("<%= a %><% if fail then error('stop') end %>!")
      assert.is_false(pcall(tpl, { a = "first", fail = true }))
      assert.equal("second!", tpl({ a = "second" }))
      assert.equal("third!", tpl({ a = "third" }))
    end)
  end)

  describe("errors", function()
    it("names the template and the line of a tag left open", function()
      assert.equal("page:3: '<%=' is not closed by '%>'", compile_error("a\nb\n<%= x \n", "page"))
      assert.equal("template:2: '<%' is not closed by '%>'", compile_error("a\n<% if x then"))
      assert.equal("template:1: '<%-' is not closed by '%>'", compile_error("<%- 'a %>"))
    end)

    it("names the line of bad Lua in a block or an expression", function()
      assert.matches("^page:4: ", compile_error("1\n2\n<% x = %>\n<% y = = 1 %>\n", "page"))
      assert.matches("^page:3: .*near", compile_error("1\n2\n<%= a b %>\n", "page"))
      assert.matches("^template:2: ", compile_error("<% for i = 1, 2 do %>\n<%= ) %>\n<% end %>"))
    end)

    it("names the line of a block left open", function()
      local err = compile_error("<ul>\n<% if x then %>\n<li>\n", "list")
      assert.matches("^list:4: 'end' expected %(to close 'if' at line 2%)", err)
    end)

    it("refuses an empty expression", function()
      assert.equal("t:2: '<%=' holds no expression", compile_error("\n<%=  %>", "t"))
    end)

    it("names the template's line of an error while rendering", function()
      local tpl = template.compile("<p>\n<%= a %>\n<% for _, u in ipairs(users) do %>\n"
                                   .. "<%= u.name.first %>\n<% end %>", "users")
      local err = render_error(tpl, { a = 1, users = { { name = { first = "x" } }, {} } })
      assert.matches("^users:4: attempt to index field 'name' %(a nil value%)", err)
      assert.matches("^users:2: boom", render_error(template.compile("\n<% error('boom') %>", "users")))
    end)

    it("keeps lines in step after a comment or a dropped newline", function()
      local text = "<% -- a comment %>x\n<%= 'y' -- another %>\n<% if true then -%>\n"
        .. "line4\n<% error('here') %>\n<% end %>"
      assert.matches("^t:5: here", render_error(template.compile(text, "t")))
      assert.matches("^t:3: ", compile_error("<% -- c %>a\n\n<% = %>", "t"))
    end)

    it("names a template 'template' unless told otherwise", function()
      assert.matches("^template:1: attempt to call global 'nope'", render_error(template.compile("<%= nope() %>")))
    end)

    it("raises for misuse, naming the caller", function()
      local ok, err = pcall(template.compile, 42)
      assert.is_false(ok)
      assert.matches("template.compile: text must be a string", err, 1, true)
      ok, err = pcall(template.load, nil)
      assert.is_false(ok)
      assert.matches("template.load: path must be a string", err, 1, true)
    end)
  end)

  describe("load", function()
    local paths = {}
    after_each(function()
      for _, p in ipairs(paths) do os.remove(p) end
      paths = {}
    end)
    local function file(text)
      local p = scratch_file(text)
      paths[#paths + 1] = p
      return p
    end

    it("compiles a file and records it for the master to watch", function()
      local path = file("<h1><%= title %></h1>\n")
      tracked = {}
      local tpl = template.load(path)
      assert.equal("<h1>&lt;T&gt;</h1>\n", tpl({ title = "<T>" }))
      assert.same({ path }, tracked)
      -- Loaded once per state: the same template, not recorded again.
      assert.equal(tpl, template.load(path))
      assert.same({ path }, tracked)
    end)

    it("names the file and line of a syntax error, and watches the file still", function()
      local path = file("ok\nok\n<% if x then %>\n")
      tracked = {}
      local ok, err = pcall(template.load, path)
      assert.is_false(ok)
      local short = path:match("[^/]+$")
      assert.matches(short:gsub("%p", "%%%0") .. ":4: 'end' expected", err)
      assert.same({ path }, tracked)
      path = file("\n<%= a %>\n<% x = %>")
      ok, err = pcall(template.load, path)
      assert.is_false(ok)
      assert.matches(path:match("[^/]+$"):gsub("%p", "%%%0") .. ":3: ", err)
    end)

    it("names the file and line of an error while rendering", function()
      local path = file("<p>\n\n<%= user.name %>\n</p>")
      local err = render_error(template.load(path), {})
      assert.matches(path:match("[^/]+$"):gsub("%p", "%%%0") .. ":3: attempt to index global 'user'", err)
    end)

    it("raises for a file it cannot read, and watches it for when it appears", function()
      local path = os.tmpname()
      os.remove(path)
      tracked = {}
      local ok, err = pcall(template.load, path)
      assert.is_false(ok)
      assert.matches("template.load: " .. path:gsub("%p", "%%%0") .. ": No such file", err)
      assert.same({ path }, tracked)
    end)
  end)
end)
