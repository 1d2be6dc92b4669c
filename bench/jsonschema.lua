-- moonport.jsonschema: time per validation of the OpenAPI Petstore's Pet
-- (valid, and the errors of an invalid one) and of a larger order object,
-- compiled as the OpenAPI validator compiles them (dialect "oas3.0",
-- formats asserted, direction "request"). Not a test; run it from the
-- repository root after a build:
--
--   LUA_CPATH='build/lua/?.so;;' luajit bench/jsonschema.lua
--
-- Each figure is the best of 5 rounds of CPU time (os.clock), per call.
require("spec.support.ffi_unit")
local json = require("moonport.json")
local jsonschema = require("moonport.jsonschema")

local arr = json.array

local function best_ns(n, fn, arg)
  local best = math.huge
  for _ = 1, 5 do
    local t0 = os.clock()
    for _ = 1, n do fn(arg) end
    best = math.min(best, (os.clock() - t0) / n)
  end
  return best * 1e9
end

local opts = { dialect = "oas3.0", formats = true, direction = "request" }
local pet = assert(jsonschema.compile({
  type = "object", required = arr({ "id", "name" }),
  properties = { id = { type = "integer", format = "int64" }, name = { type = "string" },
                 tag = { type = "string" } } }, opts))
local order = assert(jsonschema.compile({
  type = "object", required = arr({ "id", "customer", "items" }), additionalProperties = false,
  properties = {
    id = { type = "string", format = "uuid" },
    customer = { type = "object", required = arr({ "email" }),
                 properties = { email = { type = "string", format = "email" }, name = { type = "string", maxLength = 80 } } },
    status = { type = "string", enum = arr({ "placed", "approved", "delivered" }) },
    at = { type = "string", format = "date-time" },
    items = { type = "array", minItems = 1, items = {
      type = "object", required = arr({ "sku", "qty" }),
      properties = { sku = { type = "string", pattern = "^[A-Z]{3}-\\d+$" },
                     qty = { type = "integer", minimum = 1 },
                     price = { oneOf = arr({ { type = "number" }, { type = "string", pattern = "^\\d+\\.\\d\\d$" } }) } } } },
  } }, opts))

local good_pet = json.decode('{"id": 10, "name": "doggie", "tag": "dog"}')
local bad_pet = json.decode('{"id": "x", "tag": 1}')
local good_order = json.decode([[{"id": "123e4567-e89b-12d3-a456-426614174000",
  "customer": {"email": "ann@example.com", "name": "Ann"}, "status": "placed",
  "at": "2024-05-01T10:00:00Z", "items": [{"sku": "ABC-1", "qty": 2, "price": 9.5},
  {"sku": "XYZ-22", "qty": 1, "price": "10.00"}]}]])
assert(pet.valid(good_pet) and not pet.valid(bad_pet) and order.valid(good_order))

print(("%-40s %8.0f ns"):format("Pet, valid (valid())", best_ns(1e6, pet.valid, good_pet)))
print(("%-40s %8.0f ns"):format("Pet, invalid (valid())", best_ns(1e6, pet.valid, bad_pet)))
print(("%-40s %8.0f ns"):format("Pet, invalid (errors(), 3 errors)", best_ns(1e5, pet.errors, bad_pet)))
print(("%-40s %8.0f ns"):format("order with 2 items, valid (valid())", best_ns(1e5, order.valid, good_order)))
