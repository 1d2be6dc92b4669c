-- json-server mode (`--json-db FILE` and mock.json_db in a script) over
-- real sockets, on spec/fixtures/json_db/db.json copied to a scratch
-- directory: every route and query feature, the file written back, and
-- concurrent writers under 4 workers losing nothing.
local helpers = require("spec.helpers")
local process = require("spec.support.process")
local cjson = require("cjson")

local FIXTURE = "spec/fixtures/json_db/db.json"

local read = helpers.read_file

local function get(port, target)
  local status, headers, body = helpers.request(port, "GET", target)
  return status, helpers.json(body), headers
end

local function send(port, method, target, value)
  local status, headers, body = helpers.request(port, method, target,
    { ["Content-Type"] = "application/json" }, value and cjson.encode(value) or "")
  return status, helpers.json(body), headers
end

local function ids(list)
  local out = {}
  for i, item in ipairs(list) do out[i] = item.id end
  return out
end

describe("json-server mode", function()
  local dir, db, server
  local function start(args)
    dir = dir or helpers.scratch_dir()
    db = dir .. "/db.json"
    helpers.write_file(db, read(FIXTURE))
    -- process.start puts the file last, where an APP would stand.
    local argv = {}
    for _, a in ipairs(args or {}) do argv[#argv + 1] = a end
    argv[#argv + 1] = "--json-db"
    server = process.start(db, argv)
    return server.port
  end
  after_each(function()
    if server then server:stop() end
    server = nil
    if dir then helpers.remove_dir(dir) end
    dir = nil
  end)

  describe("reads", function()
    local port
    before_each(function() port = start() end)

    it("lists a resource, shows an item, a singular resource and /db", function()
      local status, list, headers = get(port, "/posts")
      assert.equal(200, status)
      assert.same({ 1, 2, 3, 4, 5 }, ids(list))
      assert.equal("application/json; charset=utf-8", headers["content-type"])
      assert.equal("no-cache", headers["cache-control"])
      local _, post = get(port, "/posts/2")
      assert.equal("moonport", post.title)
      local _, profile = get(port, "/profile")
      assert.same({ name = "typicode" }, profile)
      local _, all = get(port, "/db")
      assert.same(cjson.decode(read(FIXTURE)), all)
    end)

    it("answers 404 {} for an unknown id, resource and method", function()
      for _, t in ipairs({ { "GET", "/posts/99" }, { "GET", "/nothing" }, { "PUT", "/posts/99" },
                           { "PATCH", "/posts/99" }, { "DELETE", "/posts/99" }, { "DELETE", "/posts" },
                           { "PUT", "/posts" }, { "GET", "/posts/1/nothing" } }) do
        local status, body = send(port, t[1], t[2], t[1] ~= "GET" and {} or nil)
        assert.equal(404, status, t[1] .. " " .. t[2])
        assert.same({}, body)
      end
    end)

    it("filters by field, nested field, _gte, _lte, _ne and _like", function()
      assert.same({ 2, 3 }, ids(select(2, get(port, "/posts?author.name=ada"))))
      assert.same({ 2, 4 }, ids(select(2, get(port, "/posts?views=250"))))
      assert.same({ 1, 2 }, ids(select(2, get(port, "/posts?id=1&id=2"))))
      assert.same({ 1, 2, 4 }, ids(select(2, get(port, "/posts?views_gte=100"))))
      assert.same({ 1, 3, 5 }, ids(select(2, get(port, "/posts?views_lte=100"))))
      assert.same({ 3, 4, 5 }, ids(select(2, get(port, "/posts?id_ne=1&id_ne=2"))))
      assert.same({ 2, 5 }, ids(select(2, get(port, "/posts?title_like=^(m|reg)"))))
      assert.same({ 4 }, ids(select(2, get(port, "/posts?title_like=CACH"))))
      -- A field no item has is no filter at all.
      assert.same({ 1, 2, 3, 4, 5 }, ids(select(2, get(port, "/posts?colour=red"))))
    end)

    it("searches the full text with q", function()
      assert.same({ 2, 3 }, ids(select(2, get(port, "/posts?q=LUA"))))
      assert.same({ 5 }, ids(select(2, get(port, "/posts?q=carol"))))
    end)

    it("sorts by several fields with _sort and _order", function()
      assert.same({ 5, 3, 1, 2, 4 }, ids(select(2, get(port, "/posts?_sort=views"))))
      assert.same({ 4, 2, 1, 3, 5 }, ids(select(2, get(port, "/posts?_sort=views,id&_order=desc,desc"))))
      assert.same({ 2, 4, 1, 3, 5 }, ids(select(2, get(port, "/posts?_sort=views,id&_order=desc,asc"))))
      assert.same({ 2, 3, 4, 5, 1 }, ids(select(2, get(port, "/posts?_sort=author.name,id"))))
    end)

    it("pages with _page and _limit, with Link and X-Total-Count", function()
      local status, list, headers = get(port, "/posts?_page=2&_limit=2")
      assert.equal(200, status)
      assert.same({ 3, 4 }, ids(list))
      assert.equal("5", headers["x-total-count"])
      assert.equal("X-Total-Count, Link", headers["access-control-expose-headers"])
      -- The links are made of the Host the client sent.
      local base = "http://127.0.0.1/posts?_page="
      assert.equal(("<%s1&_limit=2>; rel=\"first\", <%s1&_limit=2>; rel=\"prev\", "
        .. "<%s3&_limit=2>; rel=\"next\", <%s3&_limit=2>; rel=\"last\""):format(base, base, base, base),
        headers["link"])
      -- Ten to a page by default; past the last page, nothing.
      assert.same({ 1, 2, 3, 4, 5 }, ids(select(2, get(port, "/posts?_page=1"))))
      assert.same({}, select(2, get(port, "/posts?_page=9")))
    end)

    it("slices with _start, _end and _limit", function()
      local _, list, headers = get(port, "/posts?_start=1&_end=3")
      assert.same({ 2, 3 }, ids(list))
      assert.equal("5", headers["x-total-count"])
      assert.same({ 2, 3, 4 }, ids(select(2, get(port, "/posts?_start=1&_limit=3"))))
      assert.same({ 1, 2 }, ids(select(2, get(port, "/posts?_limit=2"))))
      assert.same({ 4, 5 }, ids(select(2, get(port, "/posts?_start=-2&_end=5"))))
    end)

    it("embeds children and expands parents", function()
      local _, post = get(port, "/posts/1?_embed=comments")
      assert.same({ 1, 2 }, ids(post.comments))
      local _, list = get(port, "/posts?_embed=comments&id=2")
      assert.same({ 3 }, ids(list[1].comments))
      local _, comment = get(port, "/comments/3?_expand=post")
      assert.equal("moonport", comment.post.title)
      local _, comments = get(port, "/comments?_expand=post")
      assert.equal("json-server", comments[1].post.title)
    end)

    it("serves nested routes", function()
      assert.same({ 1, 2 }, ids(select(2, get(port, "/posts/1/comments"))))
      assert.same({}, select(2, get(port, "/posts/5/comments")))
      local status, made, headers = send(port, "POST", "/posts/2/comments", { body = "nested" })
      assert.equal(201, status)
      -- json-server keeps the id from the path as the string it was.
      assert.same({ id = 4, body = "nested", postId = "2" }, made)
      assert.equal("http://127.0.0.1/posts/2/comments/4", headers["location"])
    end)
  end)

  describe("writes", function()
    local port
    before_each(function() port = start() end)

    local function file() return cjson.decode(read(db)) end

    it("creates with the next numeric id, persisted before the answer", function()
      local status, made, headers = send(port, "POST", "/posts", { title = "new" })
      assert.equal(201, status)
      assert.same({ id = 6, title = "new" }, made)
      assert.equal("http://127.0.0.1/posts/6", headers["location"])
      assert.same({ id = 6, title = "new" }, file().posts[6])
      assert.same(made, select(2, get(port, "/posts/6")))
      -- An id of its own is kept; one taken is refused.
      assert.equal(201, (send(port, "POST", "/posts", { id = 40, title = "forty" })))
      assert.equal(500, (send(port, "POST", "/posts", { id = 40, title = "again" })))
      assert.equal(41, select(2, send(port, "POST", "/posts", {})).id)
    end)

    it("gives a string id when the greatest id is a string", function()
      helpers.write_file(db, '{"tags": [{"id": "abc"}]}')
      server:stop()
      server = process.start(db, { "--json-db" })
      local status, made = send(server.port, "POST", "/tags", { name = "x" })
      assert.equal(201, status)
      assert.is_truthy(made.id:match("^[%w_-]+$") and #made.id == 7)
    end)

    it("replaces with PUT and merges with PATCH, keeping the id", function()
      local status, put = send(port, "PUT", "/posts/1", { id = 99, title = "replaced" })
      assert.equal(200, status)
      assert.same({ id = 1, title = "replaced" }, put)
      local _, patched = send(port, "PATCH", "/posts/2", { title = "patched", id = 77 })
      assert.equal("patched", patched.title)
      assert.equal(2, patched.id)
      assert.equal(250, patched.views)
      assert.same({ id = 1, title = "replaced" }, file().posts[1])
      assert.equal("patched", file().posts[2].title)
    end)

    it("deletes an item and the items that pointed at it", function()
      local status, body = send(port, "DELETE", "/posts/1")
      assert.equal(200, status)
      assert.same({}, body)
      assert.equal(404, (get(port, "/posts/1")))
      -- Its comments went with it, as json-server removes them.
      assert.same({ 3 }, ids(select(2, get(port, "/comments"))))
      assert.same({ 3 }, ids(file().comments))
    end)

    it("sets, replaces and merges a singular resource", function()
      local status, body = send(port, "PATCH", "/profile", { age = 3 })
      assert.equal(200, status)
      assert.same({ name = "typicode", age = 3 }, body)
      assert.same({ name = "z" }, select(2, send(port, "PUT", "/profile", { name = "z" })))
      status = send(port, "POST", "/profile", { name = "p" })
      assert.equal(201, status)
      assert.same({ name = "p" }, file().profile)
    end)

    it("writes the file by rename, readable at every moment", function()
      send(port, "POST", "/posts", { title = "one" })
      local text = read(db)
      assert.is_truthy(text:find('\n  "posts": [\n', 1, true))
      for name in io.popen("ls -A " .. dir):lines() do assert.equal("db.json", name) end
    end)

    it("takes the file back when it is edited by hand, and not after its own writes", function()
      assert.equal(201, (send(port, "POST", "/posts", { title = "kept" })))
      local doc = file()
      doc.posts = { { id = 1, title = "edited by hand" } }
      helpers.write_by_rename(db, cjson.encode(doc))
      assert.truthy(helpers.eventually(function()
        local _, posts = get(port, "/posts")
        return #posts == 1 and posts[1].title == "edited by hand"
      end), "the edit was not taken")
      assert.equal(201, (send(port, "POST", "/posts", { title = "after" })))
      assert.equal(2, #file().posts)
      local _, posts = get(port, "/posts")
      assert.equal(2, #posts)
    end)

    it("refuses a body that is not a JSON object", function()
      local status = helpers.request(port, "POST", "/posts", { ["Content-Type"] = "application/json" }, "[1]")
      assert.equal(400, status)
      status = helpers.request(port, "POST", "/posts", { ["Content-Type"] = "application/json" }, "{")
      assert.equal(400, status)
    end)
  end)

  it("loses no update from concurrent writers under 4 workers", function()
    local port = start({ "--workers", "4" })
    local rounds, width = 8, 25
    for r = 1, rounds do
      local conns = {}
      for i = 1, width do
        local c = helpers.connect(port)
        local body = cjson.encode({ title = ("r%d-%d"):format(r, i) })
        c:send(helpers.build_request("POST", "/posts",
          { ["Content-Type"] = "application/json", ["Content-Length"] = tostring(#body) }, body))
        conns[i] = c
      end
      for _, c in ipairs(conns) do
        local resp = c:read_response()
        assert.equal(201, resp.status)
        c:close()
      end
    end
    local _, list = get(port, "/posts")
    assert.equal(5 + rounds * width, #list)
    local seen = {}
    for _, p in ipairs(list) do
      assert.is_nil(seen[p.id])
      seen[p.id] = true
    end
    assert.equal(5 + rounds * width, #cjson.decode(read(db)).posts)
  end)

  it("sits next to a script's routes and stubs (mock.json_db)", function()
    dir = helpers.scratch_dir()
    db = dir .. "/db.json"
    helpers.write_file(db, read(FIXTURE))
    server = process.start("spec/fixtures/json_db_app.lua", {}, { env = { JSON_DB = db } })
    local port = server.port
    assert.same({ 1, 2, 3, 4, 5 }, ids(select(2, get(port, "/posts"))))
    local status, _, body = helpers.request(port, "GET", "/hello")
    assert.equal(200, status)
    assert.equal("lua route", body)
    -- A path that names no resource goes to the stubs.
    status, _, body = helpers.request(port, "GET", "/health/check/deep/path/x")
    assert.equal(200, status)
    assert.equal("stub", body)
  end)

  describe("json-server's options", function()
    it("--routes rewrites URLs, every rule on what the ones before left, and lists them at /__rules", function()
      dir = helpers.scratch_dir()
      helpers.write_file(dir .. "/routes.json",
        '{"/api/*": "/$1", "/:resource/:id/show": "/:resource/:id", "/posts/:n": "/posts?views=:n"}')
      local port = start({ "--routes", dir .. "/routes.json" })
      assert.same({ 1, 2, 3, 4, 5 }, ids(select(2, get(port, "/api/posts"))))
      local status, post = get(port, "/comments/3/show")
      assert.equal(200, status)
      assert.equal("nice", post.body)
      -- /posts/250 is the third rule's; /api/posts/250 the first's, then the third's.
      assert.same({ 2, 4 }, ids(select(2, get(port, "/posts/250"))))
      assert.same({ 2, 4 }, ids(select(2, get(port, "/api/posts/250"))))
      local _, rules = get(port, "/__rules")
      assert.equal("/$1", rules["/api/*"])
      -- Location is written from the rewritten URL.
      local _, _, headers = send(port, "POST", "/api/posts", { title = "via api" })
      assert.equal("http://127.0.0.1/posts/6", headers["location"])
    end)

    it("--static serves its files first, then the database", function()
      dir = helpers.scratch_dir()
      os.execute("mkdir '" .. dir .. "/site'")
      helpers.write_file(dir .. "/site/index.html", "<p>home</p>")
      helpers.write_file(dir .. "/site/app.css", "a{}")
      local port = start({ "--static", dir .. "/site" })
      local status, headers, body = helpers.request(port, "GET", "/")
      assert.equal(200, status)
      assert.equal("<p>home</p>", body)
      assert.equal("public, max-age=0", headers["cache-control"])
      status, _, body = helpers.request(port, "GET", "/app.css")
      assert.equal("a{}", body)
      assert.same({ 1, 2, 3, 4, 5 }, ids(select(2, get(port, "/posts"))))
      assert.equal(404, (get(port, "/missing.txt")))
      -- Names that leave the folder, or that no path can hold, reach the
      -- database, which knows none of them.
      assert.equal(404, (get(port, "/%2e%2e/%2e%2e/etc/passwd")))
      assert.equal(404, (get(port, "/" .. ("a/"):rep(2500) .. "b")))
    end)

    it("--read-only answers 403 to every method but GET and writes nothing", function()
      local port = start({ "--read-only" })
      local before = read(db)
      for _, m in ipairs({ "POST", "PUT", "PATCH", "DELETE" }) do
        local status, _, body = helpers.request(port, m, "/posts/1", { ["Content-Type"] = "application/json" }, "{}")
        assert.equal(403, status, m)
        assert.equal("Forbidden", body)
      end
      assert.equal(200, (get(port, "/posts/1")))
      assert.equal(before, read(db))
    end)

    it("--delay waits before each answer of the database", function()
      local port = start({ "--delay", "300" })
      local t0 = helpers.now()
      assert.equal(200, (get(port, "/posts/1")))
      assert.is_true(helpers.now() - t0 >= 0.27)
    end)

    it("--id and --foreign-key-suffix name the id and parent fields", function()
      dir = helpers.scratch_dir()
      db = dir .. "/db.json"
      helpers.write_file(db, '{"posts": [{"_id": 4, "title": "a"}], "notes": [{"_id": 1, "post_ref": 4}]}')
      server = process.start(db, { "--id", "_id", "--foreign-key-suffix", "_ref", "--json-db" })
      local port = server.port
      assert.equal("a", select(2, get(port, "/posts/4")).title)
      assert.same({ { _id = 1, post_ref = 4 } }, select(2, get(port, "/posts/4/notes")))
      local status, post = send(port, "POST", "/posts", { title = "b" })
      assert.equal(201, status)
      assert.equal(5, post._id)
      -- Removing post 4 removes the note that names it.
      assert.equal(200, (send(port, "DELETE", "/posts/4")))
      assert.same({}, select(2, get(port, "/notes")))
    end)

    it("are refused without --json-db", function()
      local code, _, err = process.run({ "--read-only", "spec/fixtures/compress.lua" })
      assert.equal(2, code)
      assert.is_truthy(err:find("--json-db", 1, true))
    end)
  end)

  it("refuses a file that is not an object of arrays and objects", function()
    dir = helpers.scratch_dir()
    db = dir .. "/db.json"
    helpers.write_file(db, '{"count": 3}')
    local ok, err = pcall(process.start, db, { "--json-db" })
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("not supported", 1, true))
  end)
end)
