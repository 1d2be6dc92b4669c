-- Webhooks (`serveEventListeners` and `postServeActions`), side by side
-- with WireMock. Each server's webhook calls the server itself (its
-- `{{originalRequest.baseUrl}}`), on a target stub that records into its
-- journal; the cases then poll the journal and compare what the target
-- received: method, URL, the headers the webhook set, and the body.
return function(add, h)
  -- The request that fires a webhook names the server in its Host, so
  -- that {{originalRequest.baseUrl}} calls the server back.
  local function get(path, status, headers)
    local r = h.get(path, status, headers)
    r.own_host = true
    return r
  end
  local function req(method, path, status, headers, body)
    local r = h.req(method, path, status, headers, body)
    r.own_host = true
    return r
  end

  -- A target for the webhooks: any method on /wh-target...
  local TARGET = { request = { method = "ANY", urlPathPattern = "/wh-target.*" },
                   response = { status = 200, body = "got" } }

  -- POST /__admin/requests/find for the target's requests, until n came.
  local function received(n, project)
    return { method = "POST", path = "/__admin/requests/find",
             headers = { ["Content-Type"] = "application/json" },
             body = '{"urlPathPattern": "/wh-target.*"}',
             poll = function(v) return type(v.requests) == "table" and #v.requests >= n end,
             project = project or function(v)
               local out = {}
               for i, r in ipairs(v.requests) do
                 out[i] = { method = r.method, url = r.url, body = r.body,
                            contentType = r.headers["Content-Type"], xm = r.headers["X-M"] }
               end
               table.sort(out, function(a, b) return a.url < b.url end)
               return out
             end }
  end

  -- The serve event of the request to path, with the sub-events its
  -- webhooks left, once there are n of them.
  local function serve_event(path, n, project)
    return { method = "GET", path = "/__admin/requests",
             poll = function(v)
               for _, e in ipairs(v.requests or {}) do
                 if e.request.url == path then return #(e.subEvents or {}) >= n end
               end
               return false
             end,
             project = function(v)
               for _, e in ipairs(v.requests) do
                 if e.request.url == path then return project(e) end
               end
             end }
  end

  add({ name = "webhook: method, templated url, headers and body after the answer",
    mappings = { TARGET, { request = { method = "POST", urlPath = "/wh1" },
      response = { status = 201, body = "hooked" },
      serveEventListeners = { { name = "webhook", parameters = {
        method = "PUT",
        url = "{{originalRequest.baseUrl}}/wh-target/{{jsonPath originalRequest.body '$.id'}}?from={{originalRequest.method}}",
        headers = { ["Content-Type"] = "application/json", ["X-M"] = "{{originalRequest.method}} {{originalRequest.url}}" },
        body = '{"id": "{{jsonPath originalRequest.body \'$.id\'}}", "who": "{{originalRequest.headers.X-Who}}"}',
      } } } } },
    requests = { req("POST", "/wh1?q=1", 201, { ["X-Who"] = "ada", ["Content-Type"] = "application/json" }, '{"id": "42"}'),
      received(1) } })

  add({ name = "webhook: GET without a body by default",
    mappings = { TARGET, { request = { urlPath = "/wh2" }, response = { status = 200, body = "ok" },
      serveEventListeners = { { name = "webhook", parameters = {
        url = "{{originalRequest.baseUrl}}/wh-target/plain{{originalRequest.path}}" } } } } },
    requests = { get("/wh2", 200), received(1) } })

  add({ name = "webhook: a fixed delay",
    mappings = { TARGET, { request = { urlPath = "/wh3" }, response = { status = 200, body = "ok" },
      serveEventListeners = { { name = "webhook", parameters = {
        method = "POST", url = "{{originalRequest.baseUrl}}/wh-target/fixed", body = "later",
        delay = { type = "fixed", milliseconds = 200 } } } } } },
    requests = { get("/wh3", 200), received(1) } })

  add({ name = "webhook: a uniform delay",
    mappings = { TARGET, { request = { urlPath = "/wh4" }, response = { status = 200, body = "ok" },
      serveEventListeners = { { name = "webhook", parameters = {
        method = "POST", url = "{{originalRequest.baseUrl}}/wh-target/uniform", body = "u",
        delay = { type = "uniform", lower = 10, upper = 60 } } } } } },
    requests = { get("/wh4", 200), received(1) } })

  add({ name = "webhook: base64Body sends bytes",
    mappings = { TARGET, { request = { urlPath = "/wh5" }, response = { status = 200, body = "ok" },
      serveEventListeners = { { name = "webhook", parameters = {
        method = "POST", url = "{{originalRequest.baseUrl}}/wh-target/bytes", base64Body = "AAEC/w==" } } } } },
    requests = { get("/wh5", 200), received(1, function(v)
      local r = v.requests[1]
      return { method = r.method, url = r.url, bytes = r.bodyAsBase64 }
    end) } })

  add({ name = "webhook: two listeners, each sent",
    mappings = { TARGET, { request = { urlPath = "/wh6" }, response = { status = 200, body = "ok" },
      serveEventListeners = {
        { name = "webhook", parameters = { method = "POST", url = "{{originalRequest.baseUrl}}/wh-target/a", body = "a" } },
        { name = "webhook", parameters = { method = "DELETE", url = "{{originalRequest.baseUrl}}/wh-target/b" } } } } },
    requests = { get("/wh6", 200), received(2) } })

  add({ name = "webhook: postServeActions as a list",
    mappings = { TARGET, { request = { urlPath = "/wh7" }, response = { status = 200, body = "ok" },
      postServeActions = { { name = "webhook", parameters = {
        method = "PATCH", url = "{{originalRequest.baseUrl}}/wh-target/psa", body = "p" } } } } },
    requests = { get("/wh7", 200), received(1) } })

  add({ name = "webhook: postServeActions as WireMock 2 wrote them, listed as a list",
    mappings = { TARGET, { id = "00000000-0000-4000-8000-0000000000e8", request = { urlPath = "/wh8" },
      response = { status = 200, body = "ok" },
      postServeActions = { webhook = {
        method = "POST", url = "{{originalRequest.baseUrl}}/wh-target/legacy", body = "l" } } } },
    requests = { get("/wh8", 200), received(1),
      { method = "GET", path = "/__admin/mappings/00000000-0000-4000-8000-0000000000e8",
        project = function(v) return v.postServeActions end } } })

  add({ name = "webhook: listed with its mapping as given",
    mappings = { { id = "00000000-0000-4000-8000-0000000000e9", request = { urlPath = "/wh9" },
      response = { status = 200 },
      serveEventListeners = { { name = "webhook", parameters = {
        method = "POST", url = "http://127.0.0.1:9/x", headers = { ["X-A"] = "a" }, body = "b",
        delay = { type = "lognormal", median = 10, sigma = 0.1 } } } } } },
    requests = { { method = "GET", path = "/__admin/mappings/00000000-0000-4000-8000-0000000000e9",
      project = function(v) return v.serveEventListeners end } } })

  add({ name = "webhook: the serve event lists what was sent and what came back",
    mappings = { TARGET, { request = { urlPath = "/wh10" }, response = { status = 200, body = "ok" },
      serveEventListeners = { { name = "webhook", parameters = {
        method = "POST", url = "{{originalRequest.baseUrl}}/wh-target/sub?a=1",
        headers = { ["X-A"] = "x" }, body = "sent" } } } } },
    requests = { get("/wh10", 200), serve_event("/wh10", 2, function(e)
      local out = {}
      for i, s in ipairs(e.subEvents) do
        local d = s.data
        -- The target's own response headers are each server's.
        out[i] = { type = s.type, method = d.method, url = d.url, body = d.body,
                   headers = s.type == "WEBHOOK_REQUEST" and d.headers or nil,
                   query = d.queryParams, status = d.status }
      end
      return out
    end) } })

  add({ name = "webhook: a webhook that fails changes nothing of the answer, and is listed",
    mappings = { { request = { urlPath = "/wh11" }, response = { status = 202, body = "still" },
      serveEventListeners = { { name = "webhook", parameters = { url = "http://127.0.0.1:1/nothing" } } } } },
    requests = { get("/wh11", 202), serve_event("/wh11", 2, function(e)
      local out = {}
      for i, s in ipairs(e.subEvents) do
        -- The reason is each HTTP client's own words.
        out[i] = { type = s.type, message = s.data.message and s.data.message:match("^(.-: )"),
                   url = s.data.absoluteUrl }
      end
      return out
    end) } })
end
