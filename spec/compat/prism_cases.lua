-- The cases spec/compat/prism_diff_spec.lua sends to the real Prism and to
-- `moonport --openapi`, both started on the same document of
-- spec/compat/prism/. Each case:
--   name      unique, says what is checked
--   doc       the document: a key of T.documents
--   mode      "static" (default: both started as they are) or "dynamic"
--             (both started with --dynamic --seed T.seed; moonport twice,
--             and its two answers must be the same)
--   method    (GET), path (with the query), headers (a map, or a list of
--             {name, value}), json (a body sent as application/json unless
--             headers name a Content-Type: a table, or a string as it is),
--             body (a string as it is)
--   status    what Prism answers: the case is written for it, and the spec
--             fails when Prism answers anything else
--   dynamic   the path template of the operation: the bodies are random
--             (mode "dynamic", or `Prefer: dynamic=true`), so each side's
--             is validated against the response schema the document gives
--             for the answer's status and media type instead of compared
--             (a case of mode "dynamic" without it gets an answer that is
--             not random, a problem, and compares it)
--   note      what Prism does that a reader may not expect (kept here, not
--             in README.md)
--   differs   a deliberate difference, its reason (listed in README.md),
--             with differ_in: the aspects that differ ("status", "body",
--             "header:Name"); a case marked so fails when it stops
--             differing there
local T = { prism_version = "5.14.2", seed = 42 }

T.documents = {
  petstore = { file = "petstore.yaml", headers = { "x-next" },
               title = "the OpenAPI Petstore example, 3.0" },
  shop = { file = "shop/openapi.yaml", headers = { "X-Total-Count", "X-Rate-Limit", "Location", "X-Warehouse" },
           title = "a shop, 3.1: `oneOf`, `$ref`s across three files, parameter styles, named examples, several media types" },
  secure = { file = "secure.yaml", headers = { "X-Page" },
             title = "notes, 3.0: security schemes and requirements, `nullable`, `additionalProperties` schemas" },
}
T.document_order = { "petstore", "shop", "secure" }

-- Headers compared in every answer besides Content-Type and those the
-- case's document defines; `sl-violations` is compared as JSON.
T.compared = { "sl-violations", "WWW-Authenticate", "Allow", "Deprecation" }
T.compared_headers = "`sl-violations` (as JSON), `WWW-Authenticate`, `Allow`, `Deprecation` and the\n"
  .. "response headers the document defines"

-- Differences that hold in every case, and that the runner allows.
T.global = {
  { what = "CORS",
    reason = "Prism adds `Access-Control-Allow-Origin: *`, `-Allow-Headers: *`, "
      .. "`-Allow-Credentials: true` and `-Expose-Headers: *` to every answer; moonport answers "
      .. "CORS as its mock does (see [CORS](#cors)). `Access-Control-*` fields are not compared." },
  { what = "JSON text",
    reason = "bodies (and `sl-violations`) are compared as JSON: key order and spacing may differ." },
  { what = "Node's own headers",
    reason = "`Date`, `Connection`, `Keep-Alive` and framing are not compared; the spelling of "
      .. "`Content-type` (Prism's) does not count, nor case and spaces in its value." },
  { what = "random bodies",
    reason = "with `--dynamic` or `Prefer: dynamic=true` the bodies are random on both sides "
      .. "(json-schema-faker's on Prism's): each is validated against the response schema "
      .. "instead, and moonport's, run twice with the same `--seed`, must be the same." },
}

local cases = {}
T.cases = cases

local function add(c)
  c.doc = c.doc or T.current_doc
  cases[#cases + 1] = c
end

local function doc(name) T.current_doc = name end

local JSON = { ["Content-Type"] = "application/json" }

------------------------------------------------------------------------------
-- Petstore (3.0): the example every OpenAPI tool starts with
------------------------------------------------------------------------------
doc("petstore")

add { name = "petstore: GET /pets is the 200's body built from the schema, with x-next",
      path = "/pets", status = 200 }
add { name = "petstore: GET /pets?limit=10 is valid",
      path = "/pets?limit=10", status = 200 }
add { name = "petstore: a limit that is no integer is 422 with the default response's body",
      path = "/pets?limit=abc", status = 422 }
add { name = "petstore: a limit above maximum is 422",
      path = "/pets?limit=101", status = 422 }
add { name = "petstore: a limit with a fraction is no integer",
      path = "/pets?limit=1.5", status = 422 }
add { name = "petstore: a negative limit is valid (no minimum)",
      path = "/pets?limit=-5", status = 200 }
add { name = "petstore: an int32 limit past 2^31-1 breaks the format",
      path = "/pets?limit=2147483648", status = 422 }
add { name = "petstore: an empty limit counts as none",
      path = "/pets?limit=", status = 200 }
add { name = "petstore: a repeated limit is an array, no integer",
      path = "/pets?limit=5&limit=6", status = 422 }
add { name = "petstore: an unknown query parameter is allowed",
      path = "/pets?color=red", status = 200 }
add { name = "petstore: GET /pets/{petId} takes any string",
      path = "/pets/abc", status = 200 }
add { name = "petstore: a percent-encoded petId",
      path = "/pets/a%20b", status = 200 }
add { name = "petstore: a comma in a string path parameter",
      path = "/pets/1,2", status = 422,
      differs = "Prism 5.14.2 splits every path parameter's value on commas, whatever its style and schema, so `/pets/1,2` breaks a string schema (`must be string`; an array or object path parameter with a comma ends Prism's process); moonport reads a simple-style string parameter as it is",
      differ_in = { "status", "header:sl-violations", "body" } }
add { name = "petstore: the servers url's path is not a prefix Prism serves",
      path = "/v1/pets", status = 404,
      differs = "moonport routes the document's paths with and without the path of its `servers` url (`/v1/pets` and `/pets`); Prism 5.14.2 matches `servers` only against a whole URL, and answers `/v1/pets` with 404 NO_PATH_MATCHED_ERROR",
      differ_in = { "status", "header:Content-Type", "header:x-next", "body" } }
add { name = "petstore: an unknown path is 404 NO_PATH_MATCHED_ERROR",
      path = "/owners", status = 404 }
add { name = "petstore: a trailing slash matches /pets/{petId} with an empty petId",
      path = "/pets/", status = 422,
      note = "Prism lower-cases the parameter's name in the message: 'petid'" }
add { name = "petstore: a known path with another method is 405 NO_METHOD_MATCHED_ERROR",
      method = "DELETE", path = "/pets", status = 405 }
add { name = "petstore: PUT on /pets/{petId} is 405",
      method = "PUT", path = "/pets/1", json = { id = 1, name = "Rex" }, status = 405 }
add { name = "petstore: POST /pets with a valid pet is 201 without a body",
      method = "POST", path = "/pets", json = { id = 1, name = "Rex", tag = "dog" }, status = 201 }
add { name = "petstore: POST /pets with a charset in the Content-Type",
      method = "POST", path = "/pets", headers = { ["Content-Type"] = "application/json; charset=utf-8" },
      json = { id = 2, name = "Tom" }, status = 201 }
add { name = "petstore: POST /pets with an Accept: an answer without content has no Content-Type",
      method = "POST", path = "/pets", headers = { Accept = "application/json" }, json = { id = 4, name = "Ada" },
      status = 201,
      note = "without an Accept, Prism sends Content-type: text/plain",
      differs = "an empty body goes out with moonport's own `Content-Type: text/plain; charset=utf-8`; "
        .. "Prism sends no Content-Type when the request has an Accept (`text/plain` when it has none)",
      differ_in = { "header:Content-Type" } }
add { name = "petstore: POST /pets without the required name",
      method = "POST", path = "/pets", json = { id = 1 }, status = 422 }
add { name = "petstore: POST /pets with a string id and a numeric name",
      method = "POST", path = "/pets", json = '{"id":"one","name":7}', status = 422 }
add { name = "petstore: POST /pets without a body",
      method = "POST", path = "/pets", status = 422 }
add { name = "petstore: POST /pets with an empty JSON body",
      method = "POST", path = "/pets", headers = JSON, body = "", status = 422 }
add { name = "petstore: POST /pets with text that is not JSON",
      method = "POST", path = "/pets", headers = JSON, body = '{"id": 1, "name": ', status = 400 }
add { name = "petstore: POST /pets with a Content-Type the operation does not take is 415",
      method = "POST", path = "/pets", headers = { ["Content-Type"] = "text/plain" },
      body = "Rex", status = 415 }
add { name = "petstore: POST /pets with a JSON array",
      method = "POST", path = "/pets", json = "[]", status = 422 }
add { name = "petstore: Accept: application/json",
      path = "/pets", headers = { Accept = "application/json" }, status = 200 }
add { name = "petstore: Accept: */*",
      path = "/pets/1", headers = { Accept = "*/*" }, status = 200 }
add { name = "petstore: Accept that nothing matches is 406",
      path = "/pets", headers = { Accept = "application/xml" }, status = 406 }
add { name = "petstore: Prefer: code=500 picks the default response",
      path = "/pets", headers = { Prefer = "code=500" }, status = 500 }
add { name = "petstore: Prefer: code=201 on POST with no content",
      method = "POST", path = "/pets", headers = { Prefer = "code=201" }, json = { id = 3, name = "Max" },
      status = 201 }
add { name = "petstore: Prefer: code of a response the operation lacks",
      path = "/pets/1", headers = { Prefer = "code=299" }, status = 299 }
add { name = "petstore: Prefer: dynamic=true on a static server",
      path = "/pets/1", headers = { Prefer = "dynamic=true" }, status = 200, dynamic = "/pets/{petId}" }
add { name = "petstore: HEAD is no GET to Prism: 405",
      method = "HEAD", path = "/pets", status = 405 }
add { name = "petstore: dynamic GET /pets",
      mode = "dynamic", path = "/pets", status = 200, dynamic = "/pets" }
add { name = "petstore: dynamic GET /pets/{petId}",
      mode = "dynamic", path = "/pets/7", status = 200, dynamic = "/pets/{petId}" }
add { name = "petstore: dynamic, an invalid request's default response",
      mode = "dynamic", path = "/pets?limit=x", status = 422, dynamic = "/pets" }

------------------------------------------------------------------------------
-- Shop (3.1): $refs across files, oneOf, parameter styles, examples
------------------------------------------------------------------------------
doc("shop")

add { name = "shop: GET /products is the first named example, with the document's headers",
      path = "/products", status = 200 }
add { name = "shop: the servers url's path /api",
      path = "/api/products", status = 404,
      differs = "moonport routes the document's paths with and without the path of its `servers` url (`/v1/pets` and `/pets`); Prism 5.14.2 matches `servers` only against a whole URL, and answers `/v1/pets` with 404 NO_PATH_MATCHED_ERROR",
      differ_in = { "status", "header:Content-Type", "header:X-Total-Count", "header:X-Rate-Limit", "body" } }
add { name = "shop: Prefer: example=empty picks the named example",
      path = "/products", headers = { Prefer = "example=empty" }, status = 200 }
add { name = "shop: Prefer: example of a name the response lacks is 404 NOT_FOUND",
      path = "/products", headers = { Prefer = "example=three" }, status = 404 }
add { name = "shop: Accept: text/csv picks the CSV media type and its example",
      path = "/products", headers = { Accept = "text/csv" }, status = 200 }
add { name = "shop: Accept with q-values",
      path = "/products", headers = { Accept = "application/json;q=0.5, text/csv" }, status = 200 }
add { name = "shop: Accept: text/* matches text/csv",
      path = "/products", headers = { Accept = "text/*" }, status = 200 }
add { name = "shop: Accept that nothing matches is 406",
      path = "/products", headers = { Accept = "image/png" }, status = 406 }
add { name = "shop: a limit below minimum (a $ref'd parameter) uses the 400 response, as 400",
      path = "/products?limit=0", status = 400 }
add { name = "shop: a valid limit and sort",
      path = "/products?limit=50&sort=-price", status = 200 }
add { name = "shop: a sort outside the enum ($ref across two files)",
      path = "/products?sort=cost", status = 400 }
add { name = "shop: form, exploded: repeated tags",
      path = "/products?tags=lamp&tags=desk", status = 200 }
add { name = "shop: form, exploded: a tag outside the enum",
      path = "/products?tags=lamp&tags=bed", status = 400 }
add { name = "shop: form, exploded: more tags than maxItems",
      path = "/products?tags=lamp&tags=desk&tags=chair&tags=sofa", status = 400 }
add { name = "shop: form, exploded: one tag is an array of one",
      path = "/products?tags=sofa", status = 200 }
add { name = "shop: form, not exploded: comma-separated ids",
      path = "/products?ids=1,2,3", status = 200 }
add { name = "shop: form, not exploded: an id that is no integer",
      path = "/products?ids=1,x", status = 400 }
add { name = "shop: spaceDelimited sizes",
      path = "/products?sizes=S%20M", status = 400,
      note = "Prism splits the decoded value on the text '%20', so it never splits" }
add { name = "shop: spaceDelimited, a size outside the enum",
      path = "/products?sizes=S%20XL", status = 400 }
add { name = "shop: pipeDelimited colors",
      path = "/products?colors=red|blue", status = 200 }
add { name = "shop: pipeDelimited, fewer than minItems",
      path = "/products?colors=red", status = 400 }
add { name = "shop: deepObject filter",
      path = "/products?filter[minPrice]=5&filter[inStock]=true", status = 200 }
add { name = "shop: deepObject, a member below minimum",
      path = "/products?filter[minPrice]=-1", status = 200,
      note = "Prism lower-cases the query's names, then looks up filter[minPrice]: camelCase members are never seen" }
add { name = "shop: deepObject, a member the schema does not allow",
      path = "/products?filter[color]=red", status = 200,
      note = "Prism builds the object from the schema's properties only" }
add { name = "shop: deepObject, a boolean member that is not one",
      path = "/products?filter[inStock]=maybe", status = 200 }
add { name = "shop: a date query parameter",
      path = "/products?since=2024-01-15", status = 200 }
add { name = "shop: a date that is no date",
      path = "/products?since=2024-02-30", status = 400 }
add { name = "shop: a uuid header that is no uuid",
      path = "/products", headers = { ["X-Request-Id"] = "not-a-uuid" }, status = 400 }
add { name = "shop: a uuid header",
      path = "/products", headers = { ["X-Request-Id"] = "0b5b6a52-5f3a-4d0e-9e8b-7c2d3e4f5a6b" },
      status = 200 }
add { name = "shop: a cookie parameter below minLength",
      path = "/products", headers = { Cookie = "session=short" }, status = 200,
      note = "Prism validates no cookie parameter" }
add { name = "shop: a cookie parameter",
      path = "/products", headers = { Cookie = "theme=dark; session=abcdefgh12" }, status = 200 }
add { name = "shop: violations in query, header and cookie together, in Prism's order",
      path = "/products?limit=0&sort=cost",
      headers = { ["X-Request-Id"] = "nope", Cookie = "session=x" }, status = 400 }
add { name = "shop: POST /products with a valid body: 201 built from the schema, 3.1 examples first",
      method = "POST", path = "/products", json = { name = "Lamp", price = 19.5, tags = { "a", "b" } },
      status = 201 }
add { name = "shop: POST /products with a null color (type [string, null])",
      method = "POST", path = "/products", json = '{"name":"Lamp","price":1,"color":null}', status = 201 }
add { name = "shop: POST /products without the required price",
      method = "POST", path = "/products", json = { name = "Lamp" }, status = 422 }
add { name = "shop: POST /products with a property additionalProperties: false forbids",
      method = "POST", path = "/products", json = { name = "Lamp", price = 2, weight = 3 }, status = 422 }
add { name = "shop: POST /products: minLength, exclusiveMinimum, uniqueItems, pattern at once",
      method = "POST", path = "/products",
      json = { name = "L", price = 0, tags = { "a", "a" }, sku = "lmp-1" }, status = 422 }
add { name = "shop: POST /products without a body",
      method = "POST", path = "/products", status = 422 }
add { name = "shop: POST /products with text/plain is 415",
      method = "POST", path = "/products", headers = { ["Content-Type"] = "text/plain" },
      body = "name=Lamp", status = 415 }
add { name = "shop: POST /products with a form body is 415",
      method = "POST", path = "/products", headers = { ["Content-Type"] = "application/x-www-form-urlencoded" },
      body = "name=Lamp&price=2", status = 415 }
add { name = "shop: POST /products with broken JSON",
      method = "POST", path = "/products", headers = JSON, body = "{name: Lamp}", status = 400 }
add { name = "shop: GET /products/{productId}: a Product built from the schema",
      path = "/products/1", status = 200 }
add { name = "shop: a productId below minimum has no validation response: problem+json",
      path = "/products/0", status = 422 }
add { name = "shop: a productId that is no integer",
      path = "/products/abc", status = 422 }
add { name = "shop: Accept: a vendor media type picks its allOf schema",
      path = "/products/1", headers = { Accept = "application/vnd.shop.v2+json" }, status = 200 }
add { name = "shop: Accept: application/problem+json",
      path = "/products/1", headers = { Accept = "application/problem+json" }, status = 406 }
add { name = "shop: Prefer: code=404 gives the problem+json example",
      path = "/products/1", headers = { Prefer = "code=404" }, status = 404 }
add { name = "shop: Prefer: code=500 that the operation lacks (no default) is 404 NOT_FOUND",
      path = "/products/1", headers = { Prefer = "code=500" }, status = 404 }
add { name = "shop: Prefer with code and example together",
      path = "/products", headers = { Prefer = "code=200, example=empty" }, status = 200 }
add { name = "shop: PUT with a valid body",
      method = "PUT", path = "/products/3", json = { name = "Desk", price = 100 }, status = 200 }
add { name = "shop: PUT with an invalid body uses the 422 response's example",
      method = "PUT", path = "/products/3", json = { name = "Desk" }, status = 422 }
add { name = "shop: DELETE of a deprecated operation is 204 without a body, with Deprecation",
      method = "DELETE", path = "/products/3", status = 204 }
add { name = "shop: PATCH on a path without it is 405",
      method = "PATCH", path = "/products/3", json = {}, status = 405 }
add { name = "shop: matrix, exploded object path parameter",
      path = "/grid/;x=1;y=2", status = 200 }
add { name = "shop: matrix, a member that is no integer",
      path = "/grid/;x=a;y=2", status = 422 }
add { name = "shop: label, one item",
      path = "/batch/.1", status = 200 }
add { name = "shop: label, not exploded, items joined by dots are one item",
      path = "/batch/.1.2", status = 422 }
add { name = "shop: a response example that breaks its schema, and a required response header",
      path = "/stock/LMP-0001", status = 200,
      note = "Prism checks its own answer and lists what is wrong in sl-violations",
      differs = "moonport does not check the answers it builds; Prism validates its own answer and lists what breaks the document in `sl-violations` (still with status 200): an example that breaks its schema, or a value json-schema-sampler built without the schema's `pattern`",
      differ_in = { "header:sl-violations" } }
add { name = "shop: a path parameter breaking a $ref'd pattern",
      path = "/stock/lamp", status = 422 }
add { name = "shop: POST /orders with a card payment: 201 with the first example and Location",
      method = "POST", path = "/orders", headers = { ["Idempotency-Key"] = "key-0001" },
      json = { productId = 1, quantity = 2, payment = { method = "card", cardNumber = "4111111111111111" } },
      status = 201 }
add { name = "shop: POST /orders, Prefer: example=bank",
      method = "POST", path = "/orders", headers = { ["Idempotency-Key"] = "key-0002", Prefer = "example=bank" },
      json = { productId = 2, quantity = 1, payment = { method = "bank", iban = "DE89370400440532013000" } },
      status = 201 }
add { name = "shop: POST /orders without the required header",
      method = "POST", path = "/orders",
      json = { productId = 1, quantity = 2, payment = { method = "card", cardNumber = "4111111111111111" } },
      status = 422 }
add { name = "shop: oneOf: a payment that matches neither branch",
      method = "POST", path = "/orders", headers = { ["Idempotency-Key"] = "key-0003" },
      json = { productId = 1, quantity = 1, payment = { method = "cash" } }, status = 422 }
add { name = "shop: oneOf: a card payment with a bad number",
      method = "POST", path = "/orders", headers = { ["Idempotency-Key"] = "key-0004" },
      json = { productId = 1, quantity = 1, payment = { method = "card", cardNumber = "42" } }, status = 422 }
add { name = "shop: POST /orders: maximum, format email, minimum",
      method = "POST", path = "/orders", headers = { ["Idempotency-Key"] = "key-0005" },
      json = { productId = 0, quantity = 11, email = "nobody",
               payment = { method = "bank", iban = "DE89370400440532013000" } }, status = 422 }
add { name = "shop: POST /orders with a readOnly id in the request",
      method = "POST", path = "/orders", headers = { ["Idempotency-Key"] = "key-0006" },
      json = { id = 5, productId = 1, quantity = 1, payment = { method = "bank", iban = "DE89370400440532013000" } },
      status = 201 }
add { name = "shop: GET /orders/{orderId}: an Order built from the schema (oneOf: the first branch)",
      path = "/orders/12", status = 200,
      differs = "moonport does not check the answers it builds; Prism validates its own answer and lists what breaks the document in `sl-violations` (still with status 200): an example that breaks its schema, or a value json-schema-sampler built without the schema's `pattern`",
      differ_in = { "header:sl-violations" } }
add { name = "shop: an orderId that breaks its pattern",
      path = "/orders/abc", status = 422 }
add { name = "shop: a comma in a string path parameter",
      path = "/orders/1,2", status = 422,
      note = "Prism splits every path parameter's value on commas, whatever its style and schema",
      differs = "Prism 5.14.2 splits every path parameter's value on commas, whatever its style and schema, so `/pets/1,2` breaks a string schema (`must be string`; an array or object path parameter with a comma ends Prism's process); moonport reads a simple-style string parameter as it is",
      differ_in = { "body" } }
add { name = "shop: Prefer: code=404 with an example",
      path = "/orders/12", headers = { Prefer = "code=404" }, status = 404 }
add { name = "shop: dynamic GET /products ignores the examples",
      mode = "dynamic", path = "/products", status = 200, dynamic = "/products" }
add { name = "shop: dynamic GET /products/{productId}",
      mode = "dynamic", path = "/products/5", status = 200, dynamic = "/products/{productId}" }
add { name = "shop: dynamic GET /orders/{orderId} (oneOf)",
      mode = "dynamic", path = "/orders/3", status = 200, dynamic = "/orders/{orderId}" }
add { name = "shop: dynamic POST /products",
      mode = "dynamic", method = "POST", path = "/products", json = { name = "Lamp", price = 3 },
      status = 201, dynamic = "/products" }
add { name = "shop: dynamic vendor media type (allOf, const)",
      mode = "dynamic", path = "/products/1", headers = { Accept = "application/vnd.shop.v2+json" },
      status = 200, dynamic = "/products/{productId}" }

------------------------------------------------------------------------------
-- Secure notes (3.0): security schemes, nullable
------------------------------------------------------------------------------
doc("secure")

local BASIC = "Basic dXNlcjpwYXNz" -- user:pass
local BEARER = "Bearer eyJhbGciOiJub25lIn0.e30."

add { name = "secure: an operation with security: [] needs nothing",
      path = "/status", status = 200 }
add { name = "secure: the global requirement (an api key header) missing: the document's 401",
      path = "/header-key", status = 401 }
add { name = "secure: the api key header",
      path = "/header-key", headers = { ["X-API-Key"] = "k1" }, status = 200 }
add { name = "secure: an empty api key header counts as none",
      path = "/header-key", headers = { ["X-API-Key"] = "" }, status = 401 }
add { name = "secure: an api key in the query missing: 401 problem",
      path = "/query-key", status = 401 }
add { name = "secure: an api key in the query",
      path = "/query-key?api_key=k1", status = 200 }
add { name = "secure: the query key sent as a header does not count",
      path = "/query-key", headers = { api_key = "k1" }, status = 401 }
add { name = "secure: an api key cookie missing",
      path = "/cookie-key", headers = { Cookie = "other=1" }, status = 401 }
add { name = "secure: an api key cookie",
      path = "/cookie-key", headers = { Cookie = "a=b; sid=s3cret" }, status = 200 }
add { name = "secure: bearer missing",
      path = "/bearer", status = 401 }
add { name = "secure: a bearer token",
      path = "/bearer", headers = { Authorization = BEARER }, status = 200 }
add { name = "secure: bearer, the scheme in lower case",
      path = "/bearer", headers = { Authorization = "bearer abc" }, status = 401,
      note = "Prism compares the scheme's name case-sensitively (RFC 9110 says it is not)" }
add { name = "secure: bearer wanted, basic sent",
      path = "/bearer", headers = { Authorization = BASIC }, status = 401 }
add { name = "secure: basic credentials",
      path = "/basic", headers = { Authorization = BASIC }, status = 200 }
add { name = "secure: basic with credentials that are not user:password in base64",
      path = "/basic", headers = { Authorization = "Basic !!!" }, status = 401,
      differs = "moonport's 401 always names a challenge (RFC 9110 requires `WWW-Authenticate` on a 401): when no failed scheme has one (a missing api key, Basic credentials that do not decode to user:password) it names the operation's http schemes; Prism then sends no `WWW-Authenticate` and no `headers` member",
      differ_in = { "header:WWW-Authenticate", "body" } }
add { name = "secure: basic missing",
      path = "/basic", status = 401 }
add { name = "secure: OR: the first alternative",
      path = "/either", headers = { Authorization = BEARER }, status = 200 }
add { name = "secure: OR: the second alternative",
      path = "/either", headers = { Authorization = BASIC }, status = 200 }
add { name = "secure: OR: neither: WWW-Authenticate names both",
      path = "/either", status = 401 }
add { name = "secure: AND: both",
      path = "/both", headers = { ["X-API-Key"] = "k", Authorization = BEARER }, status = 200 }
add { name = "secure: AND: only the key",
      path = "/both", headers = { ["X-API-Key"] = "k" }, status = 401 }
add { name = "secure: AND: only the token",
      path = "/both", headers = { Authorization = BEARER }, status = 401,
      differs = "moonport's 401 always names a challenge (RFC 9110 requires `WWW-Authenticate` on a 401): when no failed scheme has one (a missing api key, Basic credentials that do not decode to user:password) it names the operation's http schemes; Prism then sends no `WWW-Authenticate` and no `headers` member",
      differ_in = { "header:WWW-Authenticate", "body" } }
add { name = "secure: OR of AND: the single alternative",
      path = "/mixed?api_key=k", status = 200 }
add { name = "secure: OR of AND: the combined alternative",
      path = "/mixed", headers = { ["X-API-Key"] = "k", Authorization = BASIC }, status = 200 }
add { name = "secure: OR of AND: half the combined alternative",
      path = "/mixed", headers = { ["X-API-Key"] = "k" }, status = 401 }
add { name = "secure: oauth2 takes a bearer token",
      path = "/oauth", headers = { Authorization = BEARER }, status = 200 }
add { name = "secure: oauth2 missing",
      path = "/oauth", status = 401 }
add { name = "secure: GET /notes with its required header",
      path = "/notes", headers = { ["X-Client"] = "web" }, status = 200 }
add { name = "secure: a missing required header uses the default response",
      path = "/notes", status = 422 }
add { name = "secure: a header outside its enum",
      path = "/notes", headers = { ["X-Client"] = "tv" }, status = 422 }
add { name = "secure: an integer enum, a boolean and a date-time query parameter, all wrong",
      path = "/notes?priority=4&done=yes&updatedAfter=yesterday", headers = { ["X-Client"] = "ios" },
      status = 422 }
add { name = "secure: integer enum, boolean and date-time query parameters",
      path = "/notes?priority=2&done=false&updatedAfter=2024-05-01T10:00:00Z",
      headers = { ["X-Client"] = "android" }, status = 200 }
add { name = "secure: POST /notes with nullable members set to null",
      method = "POST", path = "/notes",
      json = '{"title":"t","priority":1,"body":null,"due":null,"tags":{"a":"x"}}', status = 201 }
add { name = "secure: POST /notes: null where not nullable, enum, additionalProperties schema, format",
      method = "POST", path = "/notes",
      json = '{"title":null,"priority":5,"due":"2024-13-01","tags":{"a":5,"b":"far too long"}}',
      status = 422 }
add { name = "secure: POST /notes with a member additionalProperties: false forbids",
      method = "POST", path = "/notes", json = { title = "t", priority = 1, owner = "me" }, status = 422 }
add { name = "secure: POST /notes with a JSON null body",
      method = "POST", path = "/notes", json = "null", status = 422 }
add { name = "secure: POST /notes with a Content-Type the operation lacks",
      method = "POST", path = "/notes", headers = { ["Content-Type"] = "application/xml" },
      body = "<note/>", status = 415 }
add { name = "secure: PATCH with a valid body gives the example (null kept)",
      method = "PATCH", path = "/notes/9b2f0e55-5f4e-4d2f-9a3c-1f0c1e2d3b4a", json = { title = "x" },
      status = 200 }
add { name = "secure: PATCH with the second media type",
      method = "PATCH", path = "/notes/9b2f0e55-5f4e-4d2f-9a3c-1f0c1e2d3b4a",
      headers = { ["Content-Type"] = "application/merge-patch+json" }, body = '{"body":null}', status = 200 }
add { name = "secure: PATCH without a body (not required)",
      method = "PATCH", path = "/notes/9b2f0e55-5f4e-4d2f-9a3c-1f0c1e2d3b4a", status = 200 }
add { name = "secure: PATCH breaking minProperties uses the 400 response, built from its schema",
      method = "PATCH", path = "/notes/9b2f0e55-5f4e-4d2f-9a3c-1f0c1e2d3b4a", json = "{}", status = 400 }
add { name = "secure: a path parameter that is no uuid",
      method = "PATCH", path = "/notes/42", json = { title = "x" }, status = 400 }
add { name = "secure: GET /status built from the schema (formats, nullable, enum)",
      path = "/status", headers = { Accept = "application/json" }, status = 200 }
add { name = "secure: dynamic GET /status",
      mode = "dynamic", path = "/status", status = 200, dynamic = "/status" }
add { name = "secure: dynamic GET /notes",
      mode = "dynamic", path = "/notes", headers = { ["X-Client"] = "web" }, status = 200, dynamic = "/notes" }
add { name = "secure: dynamic POST /notes",
      mode = "dynamic", method = "POST", path = "/notes", json = { title = "t", priority = 3 }, status = 201,
      dynamic = "/notes" }
add { name = "secure: dynamic, security still checked",
      mode = "dynamic", path = "/bearer", status = 401 }

T.current_doc = nil
return T
