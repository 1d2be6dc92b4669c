-- The cases spec/compat/json_server_diff_spec.lua runs against the real
-- json-server and `moonport --json-db`. Each case:
--   name      unique, says what is checked
--   db        db.json's text (default T.DB)
--   routes    a routes.json, as a list of {from, to} rules (in order)
--   files     name -> contents, more files in the case's folder (a
--             ./public or a --static folder)
--   options   json-server's command-line options, given to both: static
--             (a folder), id, fks (--foreignKeySuffix, moonport's
--             --foreign-key-suffix), read_only, no_cors, delay (ms)
--   requests  sent in order to both: method (GET), path, headers (a map),
--             json (a body sent as application/json: a table, or a
--             string as it is), body (a string as it is); status: what
--             json-server must answer (the case is written for it);
--             min_ms: neither may answer sooner; project:
--             function(decoded JSON body) -> what is compared;
--             transform: function(body) -> what is compared;
--             compare_headers: more header names to compare;
--             header_project: function(name, value) -> what is compared
--   project_db function(decoded db.json) -> what is compared
--   differs   a deliberate difference, its reason (listed in README.md),
--             with differ_in: the aspects that differ ("status", "body",
--             "header:Name", "db")
-- A case that sends anything but GET and HEAD gets servers of its own, and
-- its db.json is compared after its requests.
local T = { json_server_version = "0.17.4" }

-- The headers compared in every answer, and with --no-cors also the CORS
-- fields (else moonport's own CORS answers: see global).
T.compared = { "Location", "X-Total-Count", "Link", "Access-Control-Expose-Headers",
               "Cache-Control", "Pragma", "Expires" }
T.compared_without_cors = { "Access-Control-Allow-Origin", "Access-Control-Allow-Credentials",
                            "Access-Control-Allow-Methods" }
T.compared_headers = "`Location`, `X-Total-Count`, `Link`,\n"
  .. "`Access-Control-Expose-Headers`, `Cache-Control`, `Pragma` and `Expires`\n"
  .. "(with `--no-cors` also `Access-Control-Allow-*`)"

-- Differences that hold in every case, and that the runner allows.
T.global = {
  { what = "CORS",
    reason = "json-server reflects the request's `Origin` with "
      .. "`Access-Control-Allow-Credentials: true` and `Vary: Origin`, and answers every "
      .. "OPTIONS with 204; moonport answers as its mock does (`Access-Control-Allow-Origin: *`, "
      .. "preflights only; see [CORS](#cors)). `Access-Control-Allow-*` fields are compared only "
      .. "with `--no-cors`, where neither sends any." },
  { what = "JSON text",
    reason = "json-server indents its JSON by two spaces and keeps the file's key order; "
      .. "moonport's answers are compact and in Lua's key order, and it writes db.json with "
      .. "`id` first and the other keys in byte order. Bodies and db.json are compared as JSON." },
  { what = "Express's own headers",
    reason = "`X-Powered-By`, `ETag` (and the 304 a matching `If-None-Match` gets), "
      .. "`X-Content-Type-Options`, `Vary`, `Date`, `Connection`, framing, and a static "
      .. "file's `Accept-Ranges` and `Last-Modified` are not compared; moonport sends its own "
      .. "`Server`, and gzips only with `--gzip` (json-server gzips bodies of 1 KiB and more "
      .. "for clients that take it; the cases send no `Accept-Encoding`)." },
}

local cases = {}
T.cases = cases

local function add(c) cases[#cases + 1] = c end

local function get(path, status, extra)
  local r = { method = "GET", path = path, status = status }
  for k, v in pairs(extra or {}) do r[k] = v end
  return r
end

local function req(method, path, status, json, extra)
  local r = { method = method, path = path, status = status, json = json }
  for k, v in pairs(extra or {}) do r[k] = v end
  return r
end

-- A case of GET requests on the default db.
local function reads(name, requests, extra)
  local c = { name = name, requests = requests }
  for k, v in pairs(extra or {}) do c[k] = v end
  add(c)
end

T.DB = [[
{
  "posts": [
    { "id": 1, "title": "json-server", "author": { "name": "typicode", "age": 30 }, "views": 100,
      "tags": ["rest", "mock"], "published": true, "price": 9.99, "category": "tools" },
    { "id": 2, "title": "moonport", "author": { "name": "ada", "age": 36 }, "views": 250,
      "tags": ["lua"], "published": false, "price": 20, "category": "servers" },
    { "id": 3, "title": "Lua tips", "author": { "name": "ada", "age": 36 }, "views": 50,
      "tags": [], "published": true, "price": null, "category": "tools" },
    { "id": 4, "title": "HTTP caching", "author": { "name": "bob", "age": 41 }, "views": 250,
      "tags": ["http", "rest"], "published": true, "category": "servers" },
    { "id": 5, "title": "JSON in depth", "author": { "name": "Typicode", "age": 30 }, "views": 10,
      "tags": ["json"], "published": false, "price": 5, "category": "formats" }
  ],
  "comments": [
    { "id": 1, "body": "great post", "postId": 1, "userId": 1 },
    { "id": 2, "body": "+1", "postId": 1, "userId": 2 },
    { "id": 3, "body": "how fast?", "postId": 2, "userId": 1 },
    { "id": 4, "body": "nice", "postId": "2", "userId": 2 }
  ],
  "users": [
    { "id": 1, "name": "ada" },
    { "id": 2, "name": "bob" }
  ],
  "categories": [
    { "id": "news", "name": "News" },
    { "id": "tech", "name": "Tech" }
  ],
  "empty": [],
  "profile": { "name": "typicode", "links": { "github": "typicode" } }
}
]]

------------------------------------------------------------------------------
-- Routes
------------------------------------------------------------------------------

reads("GET /db: the whole document", { get("/db", 200) })
reads("GET /{name}: an array resource's items", { get("/posts", 200), get("/comments", 200), get("/empty", 200) })
reads("GET /{name}/{id}: one item, by its id as a string", {
  get("/posts/1", 200), get("/posts/5", 200), get("/categories/tech", 200), get("/posts/01", 404) })
reads("GET /{name}/{id}: an unknown id is 404 {}", { get("/posts/99", 404), get("/categories/9", 404) })
reads("GET /{name}: a singular resource", { get("/profile", 200) })
reads("GET of a path that names no resource: 404 {}", {
  get("/nothing", 404), get("/nothing/1", 404), get("/posts/1/comments/1", 404) })
reads("GET /{name}/{id}/{child}: nested items", {
  get("/posts/1/comments", 200), get("/users/1/comments", 200), get("/posts/3/comments", 200) })
reads("nested: the id is compared as a string (2 and \"2\")", { get("/posts/2/comments", 200) })
reads("nested: an unknown child is 404 {}", { get("/posts/1/nothing", 404) })
reads("nested: a singular child is served whole", { get("/posts/1/profile", 200) })
reads("nested: a parent that is no resource still filters the child", {
  get("/authors/1/comments", 200) })
reads("nested: with the query of a list", {
  get("/posts/1/comments?_sort=id&_order=desc", 200), get("/posts/1/comments?_page=1&_limit=1", 200) })
reads("resource names ignore case, as Express routes do", {
  get("/POSTS", 200), get("/Posts/2", 200), get("/DB", 200) })
reads("a trailing slash is the same path", {
  get("/posts/", 200), get("/posts/2/", 200), get("/profile/", 200), get("/db/", 200),
  get("/posts/1/comments/", 200) })
reads("a slash after the resource's name is taken with it, as Express mounts", {
  get("/posts//", 200), get("/posts//1", 200), get("/posts///", 404), get("/posts/1//", 404) })
reads("HEAD is GET without a body", {
  get("/posts", 200, { method = "HEAD" }), get("/posts/99", 404, { method = "HEAD" }) })
reads("percent-encoded ids are decoded", { get("/categories/t%65ch", 200) })

------------------------------------------------------------------------------
-- Writes
------------------------------------------------------------------------------

add({ name = "POST /{name}: 201, the next id, Location", requests = {
  req("POST", "/posts", 201, { title = "new", views = 1 }), get("/posts/6", 200) } })
add({ name = "POST /{name}: an id given is kept", requests = {
  req("POST", "/posts", 201, { id = 42, title = "forty-two" }), req("POST", "/posts", 201, { title = "next" }) } })
add({ name = "POST /{name}: a false id (0, \"\") gets a new one", requests = {
  req("POST", "/posts", 201, { id = 0, title = "zero" }), req("POST", "/posts", 201, { id = "", title = "empty" }) } })
add({ name = "POST /{name}: a string id given is kept", requests = {
  req("POST", "/posts", 201, { id = "abc", title = "string id" }), get("/posts/abc", 200) } })
add({ name = "POST /{name}: the first item of an empty resource gets id 1", requests = {
  req("POST", "/empty", 201, { name = "first" }), req("POST", "/empty", 201, { name = "second" }) } })
add({ name = "POST /{name}: ids after string ids are nanoids", requests = {
  req("POST", "/categories", 201, { name = "Sport" }, {
    project = function(b)
      if type(b.id) == "string" and b.id:find("^[%w_-]+$") and #b.id == 7 then b.id = "<nanoid>" end
      return b
    end,
    header_project = function(name, v)
      if name == "Location" then return (v:gsub("/[%w_-]+$", "/<nanoid>")) end
      return v
    end }) },
  project_db = function(db)
    for _, c in ipairs(db.categories) do
      if #c.id == 7 then c.id = "<nanoid>" end
    end
    return db
  end })
add({ name = "POST /{name}: a form body", requests = {
  req("POST", "/posts", 201, nil, { body = "title=form&views=3",
    headers = { ["Content-Type"] = "application/x-www-form-urlencoded" } }) } })
add({ name = "POST /{name}: a body of another type is {}", requests = {
  req("POST", "/posts", 201, nil, { body = "title=x", headers = { ["Content-Type"] = "text/plain" } }),
  req("POST", "/users", 201) } })
add({ name = "POST /{name}: the body's Location keeps the query", requests = {
  req("POST", "/posts?draft=1", 201, { title = "q" }) } })
add({ name = "POST /{name}: a taken id is 500", requests = {
  req("POST", "/posts", 500, { id = 1, title = "again" }) },
  differs = "json-server answers its stack trace as HTML; moonport answers "
    .. "`{\"error\": \"Error: Insert failed, duplicate id\"}` as JSON",
  differ_in = { "header:Content-Type", "body" } })
add({ name = "POST /{name}: invalid JSON is 400", requests = {
  req("POST", "/posts", 400, "{not json") },
  differs = "json-server answers body-parser's error page (HTML); moonport answers "
    .. "`{\"error\": ...}` as JSON",
  differ_in = { "header:Content-Type", "body" } })
add({ name = "PUT /{name}/{id}: replaced, its id kept", requests = {
  req("PUT", "/posts/1", 200, { id = 9, title = "replaced" }), get("/posts/1", 200), get("/posts/9", 404) } })
add({ name = "PATCH /{name}/{id}: merged, its id kept", requests = {
  req("PATCH", "/posts/2", 200, { id = 9, views = 251, extra = { deep = true } }), get("/posts/2", 200) } })
add({ name = "PUT and PATCH of an unknown id: 404 {}", requests = {
  req("PUT", "/posts/99", 404, { title = "x" }), req("PATCH", "/posts/99", 404, { title = "x" }) } })
add({ name = "PUT and PATCH by a string id", requests = {
  req("PATCH", "/categories/news", 200, { name = "Breaking" }), req("PUT", "/categories/tech", 200, { label = "t" }) } })
add({ name = "DELETE /{name}/{id}: 200 {}, and the comments that named it", requests = {
  req("DELETE", "/posts/1", 200), get("/posts/1", 404), get("/comments", 200) } })
add({ name = "DELETE /{name}/{id}: dependents by a string foreign key", requests = {
  req("DELETE", "/posts/2", 200), get("/comments", 200) } })
add({ name = "DELETE /{name}/{id}: an item no other names", requests = {
  req("DELETE", "/users/2", 200), get("/users", 200), get("/comments", 200) } })
add({ name = "DELETE of an unknown id: 404 {}", requests = { req("DELETE", "/posts/99", 404) } })
add({ name = "DELETE of an unknown id still removes orphans", db = [[
{ "posts": [ { "id": 1 } ],
  "comments": [ { "id": 1, "postId": 1 }, { "id": 2, "postId": 7 } ] }
]], requests = { req("DELETE", "/posts/99", 404), get("/comments", 200) } })
add({ name = "PUT /{name}: a singular resource replaced", requests = {
  req("PUT", "/profile", 200, { name = "ada" }), get("/profile", 200) } })
add({ name = "PATCH /{name}: a singular resource merged", requests = {
  req("PATCH", "/profile", 200, { age = 36 }), get("/profile", 200) } })
add({ name = "POST /{name}: a singular resource set, 201 and Location", requests = {
  req("POST", "/profile", 201, { name = "bob" }), get("/profile", 200) } })
add({ name = "DELETE and POST /{name}/{id} of a singular resource: 404", requests = {
  req("DELETE", "/profile", 404), req("POST", "/profile/1", 404, {}) } })
add({ name = "POST /{name}/{id}/{child}: the parent id as a string", requests = {
  req("POST", "/posts/1/comments", 201, { body = "nested" }), get("/posts/1/comments", 200) } })
add({ name = "POST /{name}/{id}/{child}: the path's id wins over the body's", requests = {
  req("POST", "/users/2/comments", 201, { body = "b", userId = 1 }) } })
add({ name = "methods a resource has no route for: 404 {}", requests = {
  req("PUT", "/posts", 404, {}), req("DELETE", "/posts", 404), req("PATCH", "/posts", 404, {}),
  req("POST", "/posts/1", 404, {}), req("PUT", "/posts/1/comments", 404, {}) } })
add({ name = "X-HTTP-Method-Override on a POST", requests = {
  req("POST", "/posts/3", 200, { views = 51 }, { headers = { ["X-HTTP-Method-Override"] = "PATCH" } }),
  req("POST", "/posts/4", 200, nil, { headers = { ["X-HTTP-Method-Override"] = "DELETE" } }) } })
add({ name = "writes keep $schema", db = [[
{ "$schema": "./schema.json", "posts": [ { "id": 1 } ] }
]], requests = { get("/db", 200), req("POST", "/posts", 201, { title = "x" }), get("/$schema", 404) } })

------------------------------------------------------------------------------
-- Filters
------------------------------------------------------------------------------

reads("filter: field=value", { get("/posts?title=moonport", 200), get("/posts?category=tools", 200) })
reads("filter: a repeated field is any of its values", { get("/posts?id=1&id=3", 200) })
reads("filter: a number or a boolean as JavaScript writes it", {
  get("/posts?views=250", 200), get("/posts?published=true", 200), get("/posts?price=9.99", 200) })
reads("filter: a nested field (a.b)", { get("/posts?author.name=ada", 200), get("/posts?author.age=30", 200) })
reads("filter: an array element (tags.0)", { get("/posts?tags.0=rest", 200) })
reads("filter: a field no item has is ignored", { get("/posts?nope=1", 200), get("/posts?nope=1&views=10", 200) })
reads("filter: several fields, all of them", { get("/posts?published=true&views=250", 200) })
reads("filter: _gte and _lte on numbers", {
  get("/posts?views_gte=100", 200), get("/posts?views_lte=100", 200), get("/posts?views_gte=50&views_lte=100", 200) })
reads("filter: _gte and _lte on strings", { get("/posts?title_gte=M", 200), get("/posts?title_lte=J", 200) })
reads("filter: _gte skips null and absent fields", { get("/posts?price_gte=6", 200), get("/posts?price_lte=100", 200) })
reads("filter: _gte against a word is false", { get("/posts?views_gte=abc", 200) })
reads("filter: _ne, repeated: none of the values", {
  get("/posts?views_ne=250", 200), get("/posts?views_ne=250&views_ne=10", 200) })
reads("filter: _like is a case-insensitive regular expression", {
  get("/posts?title_like=^m", 200), get("/posts?title_like=json|lua", 200), get("/posts?title_like=TIPS", 200) })
reads("filter: _like on a nested field and a number", {
  get("/posts?author.name_like=^ty", 200), get("/posts?views_like=^2", 200) })

------------------------------------------------------------------------------
-- Sorting
------------------------------------------------------------------------------

reads("_sort: one field, ascending", { get("/posts?_sort=views", 200), get("/posts?_sort=title", 200) })
reads("_sort with _order=desc", { get("/posts?_sort=views&_order=desc", 200) })
reads("_sort: several fields, each its order", {
  get("/posts?_sort=views,title&_order=desc,asc", 200), get("/posts?_sort=author.age,id&_order=asc,desc", 200) })
reads("_sort: a nested field", { get("/posts?_sort=author.name", 200) })
reads("_sort: null and absent fields last, first when descending", {
  get("/posts?_sort=price", 200), get("/posts?_sort=price&_order=desc", 200) })
reads("_sort with filters", { get("/posts?published=true&_sort=views&_order=desc", 200) })

------------------------------------------------------------------------------
-- Paging and slicing
------------------------------------------------------------------------------

reads("_page and _limit: Link and X-Total-Count", {
  get("/posts?_page=1&_limit=2", 200), get("/posts?_page=2&_limit=2", 200), get("/posts?_page=3&_limit=2", 200) })
reads("_page past the end: no items, an empty Link", { get("/posts?_page=9&_limit=2", 200) })
reads("_page without _limit: 10 a page", { get("/posts?_page=1", 200) })
reads("_page 0 and a word are page 1", { get("/posts?_page=0&_limit=2", 200), get("/posts?_page=x&_limit=2", 200) })
reads("_page with filters and sorting", { get("/posts?published=true&_sort=views&_page=2&_limit=1", 200) })
reads("_start and _end", { get("/posts?_start=1&_end=3", 200), get("/posts?_end=2", 200) })
reads("_start and _limit, _limit alone", { get("/posts?_start=2&_limit=2", 200), get("/posts?_limit=3", 200) })
reads("_start from the end", { get("/posts?_start=-2&_end=5", 200) })

------------------------------------------------------------------------------
-- Full-text search
------------------------------------------------------------------------------

reads("q: any value that contains it, ignoring case", {
  get("/posts?q=ada", 200), get("/posts?q=TYPICODE", 200), get("/posts?q=caching", 200) })
reads("q: inside arrays and nested objects", { get("/posts?q=rest", 200), get("/posts?q=41", 200) })
reads("q: with filters, sorting and paging", { get("/posts?q=o&published=true&_sort=views&_limit=2", 200) })

------------------------------------------------------------------------------
-- _embed and _expand
------------------------------------------------------------------------------

reads("_embed on a list", { get("/posts?_embed=comments", 200), get("/users?_embed=comments", 200) })
reads("_embed on an item", { get("/posts/1?_embed=comments", 200), get("/posts/2?_embed=comments", 200) })
reads("_embed: several, and one that is no resource", {
  get("/posts/1?_embed=comments&_embed=nothing", 200) })
reads("_expand on a list", { get("/comments?_expand=post", 200) })
reads("_expand on an item, several", { get("/comments/1?_expand=post&_expand=user", 200) })
reads("_expand where an item has no foreign key", { get("/posts?_expand=user", 500) }, {
  differs = "json-server 0.17.4 fails with a TypeError (500, its stack as HTML) when an item lacks "
    .. "the `<parent>Id` field; moonport leaves that item without the parent",
  differ_in = { "status", "header:Content-Type", "body" } })

------------------------------------------------------------------------------
-- JSONP and _delay
------------------------------------------------------------------------------

-- JSONP's JavaScript as JSON: the callback's name and the value.
local function jsonp(body)
  local cb, value = body:match("^/%*%*/ typeof ([%w_$.%[%]]*) === 'function' && [%w_$.%[%]]*%((.*)%);$")
  if cb == nil then return body end
  return '{"callback": "' .. cb .. '", "value": ' .. value .. "}"
end
reads("JSONP: callback wraps the answer", {
  get("/posts/1?callback=cb", 200, { transform = jsonp }),
  get("/posts?callback=my.cb&_limit=1", 200, { transform = jsonp }),
  get("/posts/99?callback=cb", 404, { transform = jsonp }),
  get("/posts/1?callback=a<b>(c)", 200, { transform = jsonp }) })
reads("_delay: the answer waits that many ms", { get("/posts/1?_delay=300", 200, { min_ms = 300 }) })

------------------------------------------------------------------------------
-- Ids
------------------------------------------------------------------------------

add({ name = "ids: the greatest plus one, whatever the order", db = [[
{ "items": [ { "id": 7 }, { "id": 3 }, { "id": 12 }, { "id": 5 } ] }
]], requests = { req("POST", "/items", 201, { n = 1 }), req("POST", "/items", 201, { n = 2 }) } })
add({ name = "ids: items without an id are skipped", db = [[
{ "items": [ { "name": "a" }, { "id": 2 } ] }
]], requests = { req("POST", "/items", 201, { n = 1 }), get("/items/3", 200) } })

------------------------------------------------------------------------------
-- --routes
------------------------------------------------------------------------------

local RULES = {
  { "/api/*", "/$1" },
  { "/:resource/:id/show", "/:resource/:id" },
  { "/posts/:category", "/posts?category=:category" },
  { "/blog/:id?", "/posts/:id" },
}

reads("--routes: /api/* to /$1", { get("/api/posts", 200), get("/api/profile", 200), get("/API/users", 200) },
  { routes = RULES })
reads("--routes: :params carried into the target", { get("/posts/1/show", 200), get("/users/2/show", 200) },
  { routes = RULES })
reads("--routes: a target with a query", { get("/posts/tools", 200), get("/posts/servers", 200) },
  { routes = RULES })
reads("--routes: every rule runs, on what the rules before left", {
  get("/api/posts/1", 200), get("/api/users/1/show", 200), get("/posts/1", 200) }, { routes = RULES })
reads("--routes: the query of the URL is matched too", {
  get("/api/posts?title=moonport", 200), get("/posts/tools?views=100", 200) }, { routes = RULES })
reads("--routes: an optional param, unmatched, is \"undefined\"", { get("/blog/2", 200), get("/blog", 404) },
  { routes = RULES })
reads("--routes: GET /__rules", { get("/__rules", 200) }, { routes = RULES })
reads("--routes: Link names the rewritten URL", { get("/api/posts?_page=1&_limit=2", 200) }, { routes = RULES })
reads("--routes: what no rule matches is served as it is", { get("/users", 200), get("/db", 200) },
  { routes = RULES })
add({ name = "--routes: a POST through a rule, Location from the rewritten URL", routes = RULES, requests = {
  req("POST", "/api/posts", 201, { title = "via api" }), get("/api/posts/6/show", 200) } })
reads("--routes: a named group and a custom pattern", {
  get("/p/3", 200), get("/p/x", 404), get("/c/tools/posts", 200) }, {
  routes = { { "/p/:id(\\d+)", "/posts/:id" }, { "/c/:cat/posts", "/posts?category=:cat" } } })
reads("--routes: a rule with a dot and a star", { get("/files/posts.json", 200), get("/files/a/b.json", 404) },
  { routes = { { "/files/:name.json", "/:name" } } })

------------------------------------------------------------------------------
-- --static and ./public
------------------------------------------------------------------------------

local PUBLIC = {
  ["public/index.html"] = "<!doctype html><title>home</title>\n",
  ["public/notes.txt"] = "plain text\n",
  ["public/docs/index.html"] = "<p>docs</p>\n",
}
local STATIC = {
  ["site/index.html"] = "<!doctype html><title>site</title>\n",
  ["site/app.css"] = "body { color: red }\n",
  ["site/posts"] = "a file named like a resource\n",
}

reads("./public is served first when it exists", {
  get("/", 200), get("/index.html", 200), get("/notes.txt", 200), get("/docs/", 200),
  get("/posts", 200) }, { files = PUBLIC })
reads("a static .json file's type", { get("/data.json", 200) }, {
  files = { ["public/data.json"] = '{"from": "a file"}\n' },
  differs = "Express types a `.json` file `application/json; charset=UTF-8`; moonport's static "
    .. "files name no charset for JSON, which is UTF-8 by definition (RFC 8259)",
  differ_in = { "header:Content-Type" } })
reads("--static DIR: its files first, the database after", {
  get("/", 200), get("/app.css", 200), get("/posts", 200), get("/posts/1", 200), get("/missing.txt", 404) },
  { files = STATIC, options = { static = "site" } })
add({ name = "--static: only GET and HEAD are files", files = STATIC, options = { static = "site" }, requests = {
  req("POST", "/app.css", 404, {}), req("POST", "/posts", 201, { title = "x" }) } })
reads("--static: .. does not leave the folder", { get("/../db.json", 404), get("/%2e%2e/db.json", 404) },
  { files = STATIC, options = { static = "site" } })

------------------------------------------------------------------------------
-- --read-only, --id, --foreign-key-suffix, --no-cors, --delay
------------------------------------------------------------------------------

add({ name = "--read-only: GET answers, every other method 403", options = { read_only = true }, requests = {
  get("/posts/1", 200), req("POST", "/posts", 403, { title = "x" }), req("PUT", "/posts/1", 403, {}),
  req("PATCH", "/profile", 403, {}), req("DELETE", "/posts/1", 403), req("POST", "/nothing", 403, {}) } })
add({ name = "--read-only: HEAD is refused too", options = { read_only = true }, requests = {
  get("/posts", 403, { method = "HEAD" }) } })
local ID_DB = [[
{ "items": [ { "_id": "a1", "name": "one" }, { "_id": 5, "name": "five" } ],
  "notes": [ { "_id": 1, "itemId": 5, "text": "n" } ] }
]]
add({ name = "--id: the id field is another", db = ID_DB, options = { id = "_id" }, requests = {
  get("/items/a1", 200), get("/items/5", 200), req("PATCH", "/items/5", 200, { name = "FIVE", _id = 9 }),
  req("PUT", "/items/a1", 200, { name = "ONE" }), req("DELETE", "/items/a1", 200), get("/items", 200) } })
add({ name = "--id: a new item's id", db = [[{ "items": [ { "_id": 4 } ] }]], options = { id = "_id" }, requests = {
  req("POST", "/items", 201, { name = "x" }) },
  differs = "json-server 0.17.4 writes `Location` from the item's `id` field whatever `--id` says "
    .. "(`/items/undefined`); moonport from the `--id` field",
  differ_in = { "header:Location" } })
add({ name = "--id: _expand by the id field", db = ID_DB, options = { id = "_id" }, requests = {
  get("/notes?_expand=item", 200) } })
local FKS_DB = [[
{ "posts": [ { "id": 1, "title": "a" }, { "id": 2, "title": "b" } ],
  "comments": [ { "id": 1, "post_id": 1 }, { "id": 2, "post_id": 2 }, { "id": 3, "postId": 1 } ] }
]]
reads("--foreign-key-suffix: nested routes, _embed and _expand", {
  get("/posts/1/comments", 200), get("/posts?_embed=comments", 200), get("/comments/1?_expand=post", 200) },
  { db = FKS_DB, options = { fks = "_id" } })
add({ name = "--foreign-key-suffix: POST nested and DELETE's dependents", db = FKS_DB, options = { fks = "_id" },
  requests = { req("POST", "/posts/2/comments", 201, { text = "x" }), req("DELETE", "/posts/1", 200),
               get("/comments", 200) } })
reads("--no-cors: no CORS fields at all", {
  get("/posts/1", 200, { headers = { Origin = "http://page.test" } }),
  get("/posts?_page=1&_limit=1", 200, { headers = { Origin = "http://page.test" } }) },
  { options = { no_cors = true } })
add({ name = "--no-cors: Location and its exposure", options = { no_cors = true }, requests = {
  req("POST", "/posts", 201, { title = "x" }, { headers = { Origin = "http://page.test" } }) } })
reads("--delay: every answer of the database waits", {
  get("/posts/1", 200, { min_ms = 300 }), get("/db", 200, { min_ms = 300 }) }, { options = { delay = 300 } })
reads("--delay with --static: files do not wait", {
  get("/app.css", 200), get("/posts/1", 200, { min_ms = 300 }) },
  { files = STATIC, options = { static = "site", delay = 300 } })

------------------------------------------------------------------------------
-- Deliberate differences
------------------------------------------------------------------------------

reads("GET / without a static folder", { get("/", 200) }, {
  differs = "json-server serves its own home page (its package's `public/`) when there is no "
    .. "`./public`; moonport has none: 404 (a `--mock` directory's stubs may answer)",
  differ_in = { "status", "header:Content-Type", "body", "header:Cache-Control" } })

return T
