-- fuzz_template (spec/fuzz/fuzz_lua.c): the mock's response templates
-- (lua/moonport/mock/template.lua) on arbitrary template text. Returns the
-- function each input is given to; an error out of it is a failed
-- invariant.
--
-- - compile never raises on a string: a compiled template (the same one
--   again from the cache), or nil and a message;
-- - render of a text that does not compile gives the text itself and the
--   same message;
-- - a template that compiles renders without raising, to a string, against
--   a request, with and without opts.json: render documents no error but
--   misuse of its arguments, and a helper WireMock answers with an error
--   renders "[ERROR: ...]" text.
-- Running out of the state's memory or instruction budget is a normal
-- outcome (the server's request limits).
--
-- The helpers that call C (matches, regexExtract, base64, the hashes,
-- xPath) find the FFI functions in the executable (spec/fuzz/CMakeLists.txt).
-- moonport.core is the server's whole Lua API; here it is only what the
-- XML matchers take from it, the regular expressions.
package.preload["moonport.core"] = function()
  return { regex = require("moonport.core.regex").new }
end
local template = require("moonport.mock.template")

local T = 1709211845 -- 2024-02-29T13:04:05Z

local function context()
  return {
    request = {
      url = "/users/7/orders?x=1&x=2&y=z",
      path = "/users/7/orders",
      path_segments = { "users", "7", "orders" },
      path_params = { id = "7" },
      query = { x = { "1", "2" }, y = "z" },
      headers = {
        ["content-type"] = "application/json",
        ["x-quote"] = 'say "hi" \\ back\nslash\t\1',
        cookie = "a=1; b=2",
      },
      body = '{"name":"Bob","age":42,"pets":[{"type":"dog"},{"type":"cat"}],"xml":"<a><b>1</b></a>"}',
      method = "POST",
      base_url = "http://127.0.0.1:8080",
      client_ip = "127.0.0.1",
    },
    parameters = { n = 3, word = "hello", list = { 1, 2 } },
  }
end

local function limit(err)
  err = tostring(err)
  return err:find("not enough memory", 1, true) or err:find("fuzz: instruction budget", 1, true)
end

return function(text)
  local ok, c, err = pcall(template.compile, text)
  if not ok then
    if limit(c) then return end
    error("compile raised: " .. tostring(c))
  end
  if not c then
    if limit(err) then return end
    assert(type(err) == "string" and #err > 0, "compile failed without a message")
    local out, rerr = template.render(text, context())
    assert(out == text and rerr == err, "render does not hand back a text that does not compile")
    return
  end
  assert(template.compile(text) == c, "the compiled template is not cached")
  for _, opts in ipairs({ { now = T }, { json = true, now = T } }) do
    local rok, out = pcall(template.render, c, context(), opts)
    if not rok then
      if limit(out) then return end
      error("a compiled template raised while rendering: " .. tostring(out))
    end
    assert(type(out) == "string", "render gave a " .. type(out))
  end
end
