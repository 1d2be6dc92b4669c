-- Stubs beside the Petstore document: with
--
--     moonport --mock scripts/petstore/mock --openapi scripts/petstore/openapi.yaml
--
-- these (and mappings/*.json) answer the requests they match; the
-- document answers every other one, as Prism would.
return function(app)
  -- A known pet, instead of the schema's sample.
  app:stub{
    request = { method = "GET", url_path = "/pets/1" },
    response = { status = 200, json_body = { id = 1, name = "Rex", tag = "dog" } },
  }
  -- Any logic: a pet named "boom" fails as the document's default error.
  app:stub{
    priority = 1,
    request = { method = "POST", url_path = "/pets",
                body_patterns = { { matches_json_path = "$[?(@.name == 'boom')]" } } },
    response = function(req, res)
      res:json({ code = 500, message = "the store is on fire" }, 500)
    end,
  }
end
