-- moonport.openapi.doc (lua/moonport/openapi/doc.lua): loading OpenAPI
-- documents (spec/fixtures/openapi/: three files, cross-file $refs, a
-- recursive schema), their operations and warnings, and routing as Prism
-- routes (what it answered for the same paths is noted where it matters).
require("spec.support.ffi_unit")
if not os.getenv("LUA_CPATH") then package.cpath = "build/lua/?.so;" .. package.cpath end
local json = require("moonport.json")
local oadoc = require("moonport.openapi.doc")

local F = "spec/fixtures/openapi/"

describe("moonport.openapi.doc", function()
  local doc = assert(oadoc.load(F .. "api.yaml"))

  local function op_by_id(d, id)
    for _, op in ipairs(d.operations) do if op.id == id then return op end end
  end

  describe("load", function()
    it("reads a 3.0 YAML document, the files it names, and its servers' base paths", function()
      assert.equal("3.0", doc.version)
      local files = {}
      for _, f in ipairs(doc.files) do files[f] = true end
      assert.same({ [F .. "api.yaml"] = true, [F .. "common.yaml"] = true, [F .. "sub/paths.yaml"] = true }, files)
      assert.same({ "/v1", "/api" }, doc.base_paths)
      assert.equal("apiKey", doc.security_schemes.apiKey.type)
    end)

    it("reads a 3.1 JSON document; no servers is the base path ''", function()
      local d = assert(oadoc.load(F .. "v31.json"))
      assert.equal("3.1", d.version)
      assert.same({ "" }, d.base_paths)
    end)

    it("lists operations in document order, with merged parameters and effective security", function()
      local ids = {}
      for i, op in ipairs(doc.operations) do ids[i] = op.method .. " " .. op.path end
      assert.same({
        "GET /pets", "POST /pets", "GET /pets/mine", "GET /pets/{petId}", "DELETE /pets/{petId}",
        "GET /nodes", "PUT /nodes", "POST /forms", "GET /styles/{id}/{obj}", "GET /files/{name}.json",
      }, ids)
      local show = op_by_id(doc, "showPet")
      assert.equal("verbose", show.parameters[1].name)
      assert.equal("petId", show.parameters[2].name)
      assert.same({ { apiKey = {} } }, show.security)                 -- the document's
      assert.same({}, op_by_id(doc, "listPets").security)             -- security: []
      assert.equal(2, #op_by_id(doc, "deletePet").security)
      assert.is_table(op_by_id(doc, "createPet").responses.default)
      assert.equal("listPets", op_by_id(doc, "listPets").raw.operationId)
    end)

    it("resolves $refs across files (relative to the referencing file) into shared tables", function()
      local list = op_by_id(doc, "listPets")
      assert.equal("limit", list.parameters[1].name)          -- common.yaml#/components/parameters/Limit
      local pet = list.responses["200"].content["application/json"].schema.items
      local show = op_by_id(doc, "showPet").responses["200"].content["application/json"].schema
      assert.equal(pet, show)                                  -- one table for one schema
      local new = op_by_id(doc, "createPet").request_body.content["application/json"].schema
      assert.equal(new, pet.allOf[1])
      assert.equal(json.array_mt, getmetatable(new.required))
    end)

    it("keeps a recursive schema as a cycle", function()
      local node = op_by_id(doc, "listNodes").responses["200"].content["application/json"].schema
      assert.equal(node, node.properties.children.items)
      assert.equal(node, op_by_id(doc, "putNode").request_body.content["application/json"].schema)
    end)

    it("reports unsupported parts once, in doc.warnings", function()
      local d = assert(oadoc.load(F .. "v31.json"))
      assert.same({ F .. "v31.json: webhooks are not supported (newThing ignored)" }, d.warnings)
      local text = table.concat(doc.warnings, "\n")
      assert.matches("POST /pets: callbacks are not supported %(onMade ignored%)", text)
      assert.matches("GET /pets/{petId}: links of response 200 are not supported", text)
      assert.matches("GET /pets/{petId}: application/xml bodies of response 200", text)
      assert.matches("cookie parameter session is not validated", text)
    end)

    it("names the file, line and reason of what it cannot load", function()
      local function err(name)
        local d, e = oadoc.load(F .. name)
        assert.is_nil(d)
        return e
      end
      assert.equal(F .. "bad-syntax.yaml:6:5: did not find expected ',' or ']' while parsing a flow sequence",
        err("bad-syntax.yaml"))
      assert.equal(F .. "bad-ref.yaml:11: $ref '#/components/schemas/Nope' names nothing (no 'components' in #)",
        err("bad-ref.yaml"))
      assert.equal(F .. "bad-file.yaml:5: $ref 'missing.yaml#/a': cannot read " .. F
        .. "missing.yaml: No such file or directory", err("bad-file.yaml"))
      assert.equal(F .. "bad-loop.yaml:15: circular $ref '#/components/schemas/A/properties/x'",
        err("bad-loop.yaml"))
      assert.equal(F .. "swagger2.yaml: not an OpenAPI 3.x document (swagger: 2.0)", err("swagger2.yaml"))
      assert.equal("cannot read " .. F .. "none.yaml: No such file or directory", err("none.yaml"))
      assert.has_error(function() oadoc.load(nil) end, "moonport.openapi.doc.load: path must be a string")
    end)
  end)

  describe("route", function()
    local function route(method, path)
      local op, params, status = doc:route(method, path)
      return op and op.id, params, status
    end

    it("matches templates and decodes parameters", function()
      local id, params = route("GET", "/pets/12")
      assert.equal("showPet", id)
      assert.same({ petId = "12" }, params)
      id, params = route("GET", "/files/a%20b.json")
      assert.equal("fileJson", id)
      assert.same({ name = "a b" }, params)
    end)

    it("decodes each segment on its own: %2F stays in its segment (Prism: /p/a%2Fx is /p/{id})", function()
      local id, params = route("GET", "/pets/a%2Fb")
      assert.equal("showPet", id)
      assert.same({ petId = "a/b" }, params)
      id, params = route("GET", "/v1/pets/a%2fb%20c")
      assert.equal("showPet", id)
      assert.same({ petId = "a/b c" }, params)
      id, params = route("GET", "/files/x%2Fy.json")
      assert.equal("fileJson", id)
      assert.same({ name = "x/y" }, params)
      assert.same({ nil, nil, 404 }, { route("GET", "/pets%2F12") })
    end)

    it("matches a segment with text around a template as Prism's unanchored (.*) does, in linear time", function()
      local id, params = route("GET", "/files/a.json.json")
      assert.equal("fileJson", id)
      assert.same({ name = "a.json" }, params)
      id, params = route("GET", "/files/b.jsonx")
      assert.equal("fileJson", id)
      assert.same({ name = "b" }, params)
      -- A long segment without the literal (a backtracking pattern took
      -- seconds here).
      local t = os.clock()
      assert.same({ nil, nil, 404 }, { route("GET", "/files/" .. string.rep("a", 50000)) })
      params = select(2, route("GET", "/files/" .. string.rep(".jso", 20000) .. ".json"))
      assert.equal(80000, #params.name)
      assert.is_true(os.clock() - t < 1)
    end)

    it("prefers a path without templates (Prism: /pets/mine is myPets)", function()
      assert.equal("myPets", (route("GET", "/pets/mine")))
    end)

    it("takes an empty segment for a template, as Prism does (/pets/ is showPet with petId '')", function()
      local id, params = route("GET", "/pets/")
      assert.equal("showPet", id)
      assert.same({ petId = "" }, params)
    end)

    it("answers 405 for a path of other methods, 404 for none (as Prism)", function()
      assert.same({ nil, nil, 405 }, { route("PUT", "/pets/12") })
      assert.same({ nil, nil, 404 }, { route("GET", "/nope") })
      assert.same({ nil, nil, 404 }, { route("GET", "/files/a.txt") })
      assert.same({ nil, nil, 404 }, { route("GET", "pets") })
    end)

    it("also matches under a server's base path, which Prism does not", function()
      assert.equal("listPets", (route("GET", "/v1/pets")))
      assert.equal("listNodes", (route("GET", "/api/nodes")))
      assert.same({ nil, nil, 405 }, { route("PATCH", "/v1/pets") })
    end)

    it("allocates nothing but the params table", function()
      for _ = 1, 100 do doc:route("GET", "/pets/12") end
      collectgarbage()
      collectgarbage("stop")
      local before = collectgarbage("count")
      for _ = 1, 1000 do doc:route("GET", "/pets") end
      local concrete = (collectgarbage("count") - before) * 1024 / 1000
      before = collectgarbage("count")
      for _ = 1, 1000 do doc:route("GET", "/v1/pets/12") end
      local templated = (collectgarbage("count") - before) * 1024 / 1000
      collectgarbage("restart")
      assert.is_true(concrete <= 64, concrete .. " bytes a route")
      assert.is_true(templated <= 160, templated .. " bytes a route") -- table, its hash part, "12"
    end)
  end)
end)
