--- An OpenAPI 3.0 or 3.1 document, loaded: its files read (YAML or JSON,
-- through moonport.yaml, libyaml), every `$ref` replaced by
-- the table it names, its operations listed and its paths compiled into a
-- router.
--
--     local oadoc = require("moonport.openapi.doc")
--     local doc = assert(oadoc.load("openapi.yaml"))
--     local op, params, status = doc:route("GET", "/v1/pets/12")
--     -- op.id == "showPetById", params.petId == "12"; or nil, nil, 404 | 405
--
-- Values come out as moonport.json's do: sequences carry json.array_mt,
-- YAML null is json.null, mapping keys are strings (`200:` is "200"). The
-- YAML is read with the 1.2 core schema (what Prism's parser does:
-- `yes` is a string, `0x1F` a number); a JSON file is YAML too.
--
-- `$ref`s: "#/pointer" in the same file, "other.yaml#/pointer" and
-- "other.yaml" relative to the file that holds the reference. A reference
-- is replaced by the very table it names, so two references to a schema
-- share one table and a recursive schema becomes a cyclic table (walk it
-- with a visited set). Values under `example`, `default`, `enum` and
-- `const` are data, not documents, so `$ref`s in them stay as written.
-- Remote (http:) references are refused at load.
--
-- Routing follows Prism's router (prism-http/dist/router): the path's
-- segments are percent-decoded and compared with the template's; a
-- segment with `{name}` matches any text (the empty one too), a segment
-- like `{name}.json` matches what its pattern allows; among the paths that
-- match, one without templates wins, then the most literal segments, then
-- the path declared last (Prism sorts by that score and reverses). A path
-- that matches for other methods only is 405, no match 404. Unlike Prism,
-- a path under one of the `servers` base paths ("/v1/pets") also matches
-- with the base path taken off (Prism ignores the servers' paths); the
-- path as sent is tried first. Matching allocates nothing but the params
-- table (and a percent-decoded copy of a path that has `%` in it; a
-- `%2F` stays inside its segment, as in Prism).
--
-- Paths keep their document order (found in the file's text, since
-- moonport.yaml keeps none): doc.operations lists them so, methods in
-- the order the OpenAPI specification lists them.
--
-- Not supported, reported once in doc.warnings (and never answered
-- wrong): callbacks, webhooks, links, XML and multipart bodies (not
-- validated), cookie parameters (Prism does not validate them either),
-- servers on paths or operations, security schemes Prism does not check.
-- @module moonport.openapi.doc

local yaml_decode = require("moonport.yaml").decode
local json = require("moonport.json")
local url = require("moonport.url")

local type, pairs, ipairs, next, error, pcall, tostring, tonumber, setmetatable, getmetatable =
  type, pairs, ipairs, next, error, pcall, tostring, tonumber, setmetatable, getmetatable
local byte, find, sub, gsub, match, format, lower, upper =
  string.byte, string.find, string.sub, string.gsub, string.match, string.format,
  string.lower, string.upper
local sort, concat = table.sort, table.concat

local null, array_mt = json.null, json.array_mt

local oadoc = {}

-- Key order of the mappings the loader read (moonport.yaml gives it;
-- Lua tables keep none, and Prism's JavaScript objects do: its router
-- breaks ties by it, AJV checks properties in it, and its examples are
-- written in it): table -> { key, ... }. Weak keys, so a document's
-- tables go with it.
local order = setmetatable({}, { __mode = "k" })
local KEY_ORDER = { key_order = true }

--- The keys of a table: in document order for a mapping the loader read,
-- in their name's order for any other table.
-- @usage for _, code in ipairs(oadoc.keys(op.responses)) do ... end
function oadoc.keys(t)
  local keys = order[t]
  if keys then return keys end
  keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  return keys
end

-- An error the loader raises with error(fail(...)) and load returns.
local failure_mt = {}
local function fail(msg) return setmetatable({ msg = msg }, failure_mt) end

--- Parses YAML (or JSON) text into Lua values as moonport.json would make
-- them (moonport.yaml). Returns the value of the first document, or nil
-- and "FILE:LINE:COLUMN: reason".
-- @usage local t, err = oadoc.parse("a: [1, 2]\n", "x.yaml")
function oadoc.parse(text, file)
  local value, err = yaml_decode(text, KEY_ORDER)
  if value == nil then
    local line, col, what = match(err or "", "^line (%d+) column (%d+): (.*)$")
    if line then return nil, format("%s:%s:%s: %s", file or "(text)", line, col, what) end
    return nil, (file or "(text)") .. ": " .. tostring(err)
  end
  for map, keys in pairs(err) do order[map] = keys end
  return value
end

-- The folder of a file's path ("" for a bare name), with its slash.
local function dirname(path)
  return match(path, "^(.*/)") or ""
end

-- path with "./" and "dir/../" taken out.
local function normalize(path)
  local abs = sub(path, 1, 1) == "/"
  local parts = {}
  for seg in path:gmatch("[^/]+") do
    if seg == ".." and #parts > 0 and parts[#parts] ~= ".." then
      parts[#parts] = nil
    elseif seg ~= "." then
      parts[#parts + 1] = seg
    end
  end
  return (abs and "/" or "") .. concat(parts, "/")
end

-- The line of the first occurrence of needle in text, or nil.
local function line_of(text, needle)
  local at = text and find(text, needle, 1, true)
  if not at then return nil end
  local _, n = gsub(sub(text, 1, at), "\n", "")
  return n + 1
end

-- Keys whose values are data (examples, defaults, enums), where "$ref" is
-- no reference; and the maps whose keys are names chosen by the author,
-- under which those words are names like any other.
local DATA = { example = true, default = true, enum = true, const = true }
local NAMED = {
  properties = true, patternProperties = true, ["$defs"] = true, definitions = true,
  dependentSchemas = true, responses = true, schemas = true, parameters = true,
  examples = true, requestBodies = true, headers = true, securitySchemes = true,
  links = true, callbacks = true, pathItems = true, paths = true, content = true,
  encoding = true, variables = true, webhooks = true, components = true,
}

-- Loads a document's files and resolves its references. Raises fail().
local function load_tree(path)
  local texts, roots, files = {}, {}, {}
  local function read(file, from_file, ref)
    if roots[file] then return roots[file] end
    local f, err = io.open(file, "rb")
    if not f then
      local why = "cannot read " .. file .. ": " .. (gsub(err, "^[^:]*: ", ""))
      if from_file then
        local line = line_of(texts[from_file], ref)
        error(fail(format("%s:%s: $ref '%s': %s", from_file, line or "?", ref, why)), 0)
      end
      error(fail(why), 0)
    end
    local text = f:read("*a")
    f:close()
    local root, perr = oadoc.parse(text, file)
    if perr then error(fail(perr), 0) end
    texts[file], roots[file] = text, root
    files[#files + 1] = file
    return root
  end

  local root = read(path)

  local deref
  -- The references being looked up (file, "\0", ref): one met again while
  -- its own pointer is walked ("#/A/x" where A is that $ref) loops.
  local resolving = {}
  -- The node a "$ref" string names, and the file it lies in.
  local function lookup(ref, file)
    local key = file .. "\0" .. ref
    if resolving[key] then
      error(fail(format("%s:%s: circular $ref '%s'", file, line_of(texts[file], ref) or "?", ref)), 0)
    end
    resolving[key] = true
    local target, pointer = match(ref, "^([^#]*)#?(.*)$")
    if match(target, "^%a[%w+.-]*://") then
      error(fail(format("%s:%s: $ref '%s': remote references are not supported",
        file, line_of(texts[file], ref) or "?", ref)), 0)
    end
    local tfile = file
    if target ~= "" then
      tfile = sub(target, 1, 1) == "/" and target or normalize(dirname(file) .. url.decode(target))
    end
    local node = read(tfile, file, ref)
    if pointer ~= "" and pointer ~= "/" then
      if sub(pointer, 1, 1) ~= "/" then
        error(fail(format("%s:%s: $ref '%s': not a JSON pointer", file,
          line_of(texts[file], ref) or "?", ref)), 0)
      end
      local walked = "#"
      for raw in (sub(pointer, 2) .. "/"):gmatch("([^/]*)/") do
        local key = gsub(gsub(url.decode(raw), "~1", "/"), "~0", "~")
        node, tfile = deref(node, tfile)
        local nxt
        if type(node) == "table" then
          if getmetatable(node) == array_mt then
            local i = tonumber(key)
            nxt = i and node[i + 1]
          else
            nxt = node[key]
          end
        end
        if nxt == nil then
          error(fail(format("%s:%s: $ref '%s' names nothing (no '%s' in %s%s)", file,
            line_of(texts[file], ref) or "?", ref, key,
            target ~= "" and target or "", walked)), 0)
        end
        walked = walked .. "/" .. raw
        node = nxt
      end
    end
    resolving[key] = nil
    return node, tfile
  end

  -- Follows a chain of references to the first node that is not one.
  deref = function(node, file)
    local seen
    while type(node) == "table" and type(node["$ref"]) == "string" do
      seen = seen or {}
      if seen[node] then
        error(fail(format("%s: circular $ref '%s'", file, node["$ref"])), 0)
      end
      seen[node] = true
      node, file = lookup(node["$ref"], file)
    end
    return node, file
  end

  local visited = {}
  local function walk(t, file, named)
    if visited[t] then return end
    visited[t] = true
    for k, v in pairs(t) do
      if type(v) == "table" and (named or not DATA[k]) then
        local r, rfile = v, file
        if type(v["$ref"]) == "string" then
          r, rfile = deref(v, file)
          t[k] = r
        end
        if type(r) == "table" then walk(r, rfile, NAMED[k] and getmetatable(r) ~= array_mt) end
      end
    end
  end
  return root, files, function() walk(root, path, false) end
end

local METHODS = { "get", "put", "post", "delete", "options", "head", "patch", "trace" }
local IS_METHOD = {}
for _, m in ipairs(METHODS) do IS_METHOD[m] = true end

local function is_xml(media) return find(media, "xml", 1, true) ~= nil end

-- The path part of a server url, variables replaced by their defaults;
-- "" for none or "/".
local function base_path(server)
  local u = server.url
  if type(u) ~= "string" then return "" end
  local vars = type(server.variables) == "table" and server.variables or {}
  u = gsub(u, "{([^}]*)}", function(name)
    local var = vars[name]
    local d = type(var) == "table" and var.default
    return d ~= nil and tostring(d) or ""
  end)
  local p = match(u, "^%a[%w+.-]*://[^/]*(/.*)$") or match(u, "^(/.*)$") or ""
  p = gsub(match(p, "^[^?#]*"), "/+$", "")
  return p
end

-- A compiled path template: segments, their kinds and a static score.
local LITERAL, WHOLE, MIXED = 1, 2, 3

local function compile_path(template)
  local route = { template = template, n = 0, kind = {}, lit = {}, name = {}, lits = {},
    names = {}, methods = {}, score = 0, concrete = true }
  local n = 0
  for raw in (sub(template, 2) .. "/"):gmatch("([^/]*)/") do
    n = n + 1
    local seg = url.decode(raw)
    if find(seg, "{.+}") then
      route.concrete = false
      route.score = route.score + 0.5
      local whole = match(seg, "^{([^{}]+)}$")
      if whole then
        route.kind[n], route.name[n] = WHOLE, whole
      else
        -- The literal texts around the templates: "{a}-{b}.json" is
        -- "", "-", ".json" (Prism's regular expression (.*)-(.*)\.json).
        route.kind[n] = MIXED
        local names, lits = {}, {}
        local pos = 1
        while true do
          local s, e, name = find(seg, "{([^}]+)}", pos)
          if not s then lits[#lits + 1] = sub(seg, pos); break end
          lits[#lits + 1] = sub(seg, pos, s - 1)
          names[#names + 1] = name
          pos = e + 1
        end
        route.name[n] = names
        route.lits[n] = lits
      end
    else
      route.kind[n], route.lit[n] = LITERAL, seg
      route.score = route.score + 1
    end
  end
  route.n = n
  return route
end

-- Scratch arrays for a path's segment bounds, reused by every match (the
-- router never yields, so one set per Lua state is enough).
local seg_s, seg_e = {}, {}

-- Splits path from byte `from` into segment bounds; returns their count.
local function split(path, from)
  local n, len = 0, #path
  local s = from + 1 -- past the leading "/"
  while true do
    local e = find(path, "/", s, true)
    n = n + 1
    seg_s[n] = s
    if not e then seg_e[n] = len; break end
    seg_e[n] = e - 1
    s = e + 1
  end
  return n
end

-- Like split, for a path with an encoded "/" (%2F) in it: each segment
-- percent-decoded on its own, as Prism's router does, so that "a%2Fb"
-- stays one segment. Returns the decoded segments joined with nothing
-- between them (the bounds say where each lies) and their count.
local function split_decoded(path, from)
  local parts, n, pos, len = {}, 0, 0, #path
  local s = from + 1
  while true do
    local e = find(path, "/", s, true)
    local seg = url.decode(sub(path, s, e and e - 1 or len))
    n = n + 1
    parts[n] = seg
    seg_s[n] = pos + 1
    pos = pos + #seg
    seg_e[n] = pos
    if not e then break end
    s = e + 1
  end
  return concat(parts), n
end

-- Whether segment i of path equals the literal lit, byte by byte.
local function same(path, i, lit)
  local s, e = seg_s[i], seg_e[i]
  local len = #lit
  if e - s + 1 ~= len then return false end
  for j = 1, len do
    if byte(path, s + j - 1) ~= byte(lit, j) then return false end
  end
  return true
end

-- Whether segment i of path has the literals lits in order, apart: what
-- Prism's unanchored (.*) expression matches, in linear time (a Lua or
-- JavaScript pattern backtracks, quadratic or worse in a long segment).
local function has_in_order(path, i, lits)
  local pos, e = seg_s[i], seg_e[i]
  for j = 1, #lits do
    local lit = lits[j]
    if lit ~= "" then
      local a, b = find(path, lit, pos, true)
      if not a or b > e then return false end
      pos = b + 1
    end
  end
  return true
end

-- Whether route matches the path split by split().
local function matches(route, path)
  local kind = route.kind
  for i = 1, route.n do
    local k = kind[i]
    if k == LITERAL then
      if not same(path, i, route.lit[i]) then return false end
    elseif k == MIXED then
      if not has_in_order(path, i, route.lits[i]) then return false end
    end
  end
  return true
end

-- The params of a route without templates: one empty table, read-only,
-- so that routing a fixed path allocates nothing.
local NO_PARAMS = setmetatable({}, { __newindex = function()
  error("the params of a path without templates are read-only", 2)
end })

-- The params of a path that matched route.
local function params_of(route, path)
  local params
  for i = 1, route.n do
    local k = route.kind[i]
    if k == WHOLE then
      params = params or {}
      params[route.name[i]] = sub(path, seg_s[i], seg_e[i])
    elseif k == MIXED then
      params = params or {}
      local lits, names = route.lits[i], route.name[i]
      -- As JavaScript's exec: the first literal where it first occurs,
      -- then each (.*) greedy, so every later literal at its last place
      -- that leaves room for the ones after it (placed right to left).
      local s, hi = seg_s[i], seg_e[i]
      local at = {}
      for j = #lits, 2, -1 do
        local lit = lits[j]
        if lit == "" then
          at[j] = hi + 1
        else
          local from = s
          while true do
            local a, b = find(path, lit, from, true)
            if not a or b > hi then break end
            at[j] = a
            from = a + 1
          end
        end
        hi = at[j] - 1
      end
      local _, first_end = find(path, lits[1], s, true)
      local from = lits[1] == "" and s or first_end + 1
      for j, name in ipairs(names) do
        params[name] = sub(path, from, at[j + 1] - 1)
        from = at[j + 1] + #lits[j + 1]
      end
    end
  end
  return params or NO_PARAMS
end

-- Routes path (from byte `from`, at a "/") against the buckets: the op,
-- its params, or nil and 404 | 405. `encoded` when the path is still
-- percent-encoded (it has a %2F), to be decoded segment by segment.
local function route_from(self, method, path, from, encoded)
  local n
  if encoded then path, n = split_decoded(path, from) else n = split(path, from) end
  local bucket = self._routes[n]
  if not bucket then return nil, nil, 404 end
  local status = 404
  for i = 1, #bucket do
    local route = bucket[i]
    if matches(route, path) then
      local op = route.methods[method]
      if op then return op, params_of(route, path) end
      status = 405
    end
  end
  return nil, nil, status
end

local doc_mt = {}
doc_mt.__index = doc_mt

--- The operation for a request: `doc:route(method, path)` with the path
-- as sent, without its query. Returns the op and its path parameters
-- (percent-decoded, by template name), or nil, nil and 404 (no path
-- matches) or 405 (a path matches, for other methods only).
-- @usage local op, params, status = doc:route("GET", "/pets/12")
function doc_mt.route(self, method, path)
  method = upper(method)
  -- Decoding the whole path is the same as decoding each segment unless
  -- a "/" is encoded in one.
  local encoded = find(path, "%%2[Ff]") ~= nil
  if not encoded and find(path, "%", 1, true) then path = url.decode(path) end
  if byte(path) ~= 47 then return nil, nil, 404 end
  local op, params, status = route_from(self, method, path, 1, encoded)
  if op then return op, params end
  local len = #path
  for _, b in ipairs(self.base_paths) do
    local blen = #b
    if blen > 0 and len > blen and byte(path, blen + 1) == 47 and sub(path, 1, blen) == b then
      local op2, params2, status2 = route_from(self, method, path, blen + 1, encoded)
      if op2 then return op2, params2 end
      if status2 == 405 then status = 405 end
    end
  end
  return nil, nil, status
end

-- A parameter's identity for merging path-item and operation parameters.
local function param_key(p) return tostring(p.name) .. "\0" .. tostring(p["in"]) end

local function as_list(t)
  return type(t) == "table" and t or setmetatable({}, array_mt)
end

-- Lists the document's operations and its warnings.
local function build(doc, root, main)
  local warnings = doc.warnings
  local function warn(fmt, ...) warnings[#warnings + 1] = main .. ": " .. format(fmt, ...) end

  local servers = type(root.servers) == "table" and root.servers or {}
  local bases, seen = {}, {}
  for _, s in ipairs(servers) do
    if type(s) == "table" then
      local b = base_path(s)
      if not seen[b] then seen[b] = true; bases[#bases + 1] = b end
    end
  end
  if #bases == 0 then bases[1] = "" end
  doc.base_paths = bases

  local components = type(root.components) == "table" and root.components or {}
  doc.security_schemes = type(components.securitySchemes) == "table" and components.securitySchemes or {}
  local root_security = type(root.security) == "table" and root.security or nil

  if type(root.webhooks) == "table" and next(root.webhooks) then
    warn("webhooks are not supported (%s ignored)", concat(oadoc.keys(root.webhooks), ", "))
  end
  for _, name in ipairs(oadoc.keys(doc.security_schemes)) do
    local scheme = doc.security_schemes[name]
    local t = type(scheme) == "table" and scheme.type
    local ok = t == "apiKey" and (scheme["in"] == "header" or scheme["in"] == "query" or scheme["in"] == "cookie")
      or t == "http" and type(scheme.scheme) == "string"
        and (lower(scheme.scheme) == "basic" or lower(scheme.scheme) == "bearer" or lower(scheme.scheme) == "digest")
      or t == "oauth2" or t == "openIdConnect"
    if not ok then
      warn("security scheme %s (%s) is not checked", name, tostring(t))
    end
  end

  local ops, routes_list = {}, {}
  local paths = type(root.paths) == "table" and root.paths or {}
  for _, template in ipairs(oadoc.keys(paths)) do
    local item = paths[template]
    if type(template) == "string" and sub(template, 1, 1) == "/" and type(item) == "table" then
      local route = compile_path(template)
      routes_list[#routes_list + 1] = route
      if item.servers then warn("%s: servers of a path are not supported (ignored)", template) end
      local common = as_list(item.parameters)
      for _, method in ipairs(METHODS) do
        local raw = item[method]
        if IS_METHOD[method] and type(raw) == "table" then
          local where = upper(method) .. " " .. template
          local params, index = setmetatable({}, array_mt), {}
          for _, p in ipairs(as_list(raw.parameters)) do
            if type(p) == "table" then
              params[#params + 1] = p
              index[param_key(p)] = true
            end
          end
          for _, p in ipairs(common) do
            if type(p) == "table" and not index[param_key(p)] then params[#params + 1] = p end
          end
          for _, p in ipairs(params) do
            if p["in"] == "cookie" then
              warn("%s: cookie parameter %s is not validated (nor by Prism)", where, tostring(p.name))
            end
          end
          local security = raw.security
          if type(security) ~= "table" then security = root_security or setmetatable({}, array_mt) end
          local body = type(raw.requestBody) == "table" and raw.requestBody or nil
          if body and type(body.content) == "table" then
            for _, media in ipairs(oadoc.keys(body.content)) do
              if is_xml(media) then
                warn("%s: %s request bodies are not validated", where, media)
              elseif find(media, "^multipart/") then
                warn("%s: %s request bodies are not validated", where, media)
              end
            end
          end
          local responses = type(raw.responses) == "table" and raw.responses or {}
          for _, code in ipairs(oadoc.keys(responses)) do
            local r = responses[code]
            if type(r) == "table" then
              if type(r.links) == "table" and next(r.links) then
                warn("%s: links of response %s are not supported (ignored)", where, code)
              end
              if type(r.content) == "table" then
                for _, media in ipairs(oadoc.keys(r.content)) do
                  if is_xml(media) then
                    warn("%s: %s bodies of response %s are not generated or validated", where, media, code)
                  end
                end
              end
            end
          end
          if type(raw.callbacks) == "table" and next(raw.callbacks) then
            warn("%s: callbacks are not supported (%s ignored)", where,
              concat(oadoc.keys(raw.callbacks), ", "))
          end
          if raw.servers then warn("%s: servers of an operation are not supported (ignored)", where) end
          local op = {
            method = upper(method), path = template,
            id = type(raw.operationId) == "string" and raw.operationId or nil,
            parameters = params, request_body = body, responses = responses,
            security = security, raw = raw,
          }
          ops[#ops + 1] = op
          route.methods[op.method] = op
        end
      end
    end
  end
  doc.operations = ops

  -- Buckets by segment count, each in Prism's order of preference: paths
  -- without templates first, then by score, the later declared first.
  for i, r in ipairs(routes_list) do r.index = i end
  local buckets = {}
  for _, r in ipairs(routes_list) do
    local b = buckets[r.n]
    if not b then b = {}; buckets[r.n] = b end
    b[#b + 1] = r
  end
  for _, b in pairs(buckets) do
    sort(b, function(x, y)
      if x.concrete ~= y.concrete then return x.concrete end
      if x.score ~= y.score then return x.score > y.score end
      return x.index > y.index
    end)
  end
  doc._routes = buckets
end

--- Loads an OpenAPI 3.0 or 3.1 document from a file (YAML or JSON) and
-- the files its `$ref`s name. Returns the doc, or nil and an error naming
-- the file and line ("api.yaml:12:5: did not find expected key",
-- "api.yaml:40: $ref '#/components/schemas/Nope' names nothing ...",
-- "api.yaml: not an OpenAPI 3.x document (swagger: 2.0)").
-- @usage local doc, err = oadoc.load("openapi.yaml")
function oadoc.load(path)
  if type(path) ~= "string" then error("moonport.openapi.doc.load: path must be a string", 2) end
  local ok, res = pcall(function()
    local root, files, resolve = load_tree(path)
    if type(root) ~= "table" or getmetatable(root) == array_mt then
      error(fail(path .. ": not an OpenAPI 3.x document (not a mapping)"), 0)
    end
    local v = root.openapi
    local version = type(v) == "string" and match(v, "^(3%.[01])%.?")
    if not version then
      local what = root.swagger and ("swagger: " .. tostring(root.swagger))
        or v and ("openapi: " .. tostring(v)) or "no openapi field"
      error(fail(path .. ": not an OpenAPI 3.x document (" .. what .. ")"), 0)
    end
    resolve()
    local doc = setmetatable({ version = version, files = files, warnings = {}, root = root }, doc_mt)
    build(doc, root, path)
    return doc
  end)
  if ok then return res end
  if getmetatable(res) == failure_mt then return nil, res.msg end
  error(res, 0)
end

return oadoc
