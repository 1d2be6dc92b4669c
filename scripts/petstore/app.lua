-- The Petstore of openapi.yaml with real handlers, every request and
-- response checked against the document (moonport.openapi.validate):
--
--     moonport scripts/petstore/app.lua
--     curl -s localhost:8080/pets                        # []
--     curl -s -XPOST localhost:8080/pets -H 'content-type: application/json' \
--          -d '{"id": 1, "name": "Rex", "tag": "dog"}'   # 201
--     curl -s 'localhost:8080/pets?limit=x'              # 422, Prism's problem
--     moonport --check --openapi scripts/petstore/openapi.yaml scripts/petstore/app.lua
--
-- The pets live in moonport.shared (every worker sees them), as one JSON
-- array. The handlers need not check what the document already says
-- (limit an integer up to 100, a pet's id and name present and typed):
-- the middleware answered any request that breaks it.
local moonport = require("moonport")
local json = moonport.json
local shared = moonport.shared

-- The document beside this script, wherever the server was started.
local here = debug.getinfo(1, "S").source:match("^@(.*)/") or "."

local app = moonport.app()
app:use(moonport.openapi.validate(here .. "/openapi.yaml", { requests = true, responses = "log" }))

local function pets()
  return json.decode(shared:get("petstore:pets") or "[]")
end

-- listPets: at most `limit` pets (100 by default); x-next names the next page.
app:get("/pets", function(req, res)
  local all = pets()
  local limit = tonumber(req:query("limit")) or 100
  local after = tonumber(req:query("after"))
  local page, first = json.array(), 1
  if after then
    for i, pet in ipairs(all) do if pet.id == after then first = i + 1 end end
  end
  for i = first, math.min(#all, first + limit - 1) do page[#page + 1] = all[i] end
  if first + limit - 1 < #all then
    res:header("x-next", ("/pets?limit=%d&after=%d"):format(limit, page[#page].id))
  end
  res:json(page)
end)

-- createPets: 201 with no body; a taken id is the document's `default`
-- error.
app:post("/pets", function(req, res)
  local pet = req:json()
  local all = pets()
  for _, p in ipairs(all) do
    if p.id == pet.id then
      return res:json({ code = 409, message = "a pet with id " .. pet.id .. " exists" }, 409)
    end
  end
  all[#all + 1] = { id = pet.id, name = pet.name, tag = pet.tag }
  shared:set("petstore:pets", json.encode(all))
  res:status(201)
end)

-- showPetById
app:get("/pets/:petId", function(req, res)
  for _, pet in ipairs(pets()) do
    if tostring(pet.id) == req.params.petId then return res:json(pet) end
  end
  res:json({ code = 404, message = "no pet " .. req.params.petId }, 404)
end)

return app
