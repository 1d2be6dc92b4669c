-- The streaming multipart/form-data parser (lua/moonport/multipart.lua)
-- on bodies given in pieces of every size, as a socket may cut them.
require("spec.support.ffi_unit")
local multipart = require("moonport.multipart")

-- A read function giving body in pieces of n bytes.
local function reader(body, n)
  local pos = 1
  return function()
    if pos > #body then return nil end
    local piece = body:sub(pos, pos + n - 1)
    pos = pos + n
    return piece
  end
end

-- The parts of body (boundary b) read in pieces of n: a list of
-- {name, filename, content_type, headers, data}.
local function parse(body, n, opts, how)
  local max_parts, max_header_size = multipart.options(opts)
  local list = {}
  for part in multipart.parts(reader(body, n), "b0undary", max_parts, max_header_size) do
    local data
    if how == "skip" then
      data = nil
    elseif how then
      local pieces = {}
      while true do
        local piece = part:read(how)
        if not piece then break end
        assert(#piece <= how)
        pieces[#pieces + 1] = piece
      end
      data = table.concat(pieces)
    else
      data = part:body()
    end
    list[#list + 1] = { part.name, part.filename, part.content_type, part.headers, data }
  end
  return list
end

local function failure(fn)
  local ok, err = pcall(fn)
  assert.is_false(ok)
  assert.is_true(multipart.is_error(err), tostring(err))
  return err.status, err.message
end

describe("moonport.multipart", function()
  local body = table.concat({
    "preamble to ignore\r\n",
    "--b0undary\r\n",
    'Content-Disposition: form-data; name="title"\r\n',
    "\r\n",
    "Hello\r\nworld\r\n",
    "--b0undary  \t\r\n",
    'content-disposition: form-data; name="file"; filename="a \\"q\\";.bin"\r\n',
    "Content-Type: application/octet-stream\r\n",
    "\r\n",
    "\r\n--b0undar\r\r\n-\r\n--b0undar",
    "\r\n--b0undary\r\n",
    "\r\n",
    "no headers\r\n",
    "--b0undary--\r\n",
    "epilogue\r\n--b0undary\r\nignored",
  })
  local want = {
    { "title", nil, "text/plain", { ["content-disposition"] = 'form-data; name="title"' },
      "Hello\r\nworld" },
    { "file", 'a "q";.bin', "application/octet-stream",
      { ["content-disposition"] = 'form-data; name="file"; filename="a \\"q\\";.bin"',
        ["content-type"] = "application/octet-stream" },
      "\r\n--b0undar\r\r\n-\r\n--b0undar" },
    { nil, nil, "text/plain", {}, "no headers" },
  }

  it("finds every part's headers and data, whatever size the pieces are", function()
    for n = 1, #body + 1 do
      assert.same(want, parse(body, n), "pieces of " .. n)
    end
  end)

  it("reads n bytes at a time, and skips what a handler left unread", function()
    for _, n in ipairs({ 1, 3, 7, 64 }) do
      for _, r in ipairs({ 1, 2, 5, 100 }) do
        assert.same(want, parse(body, n, nil, r))
      end
      local skipped = parse(body, n, nil, "skip")
      assert.equal(3, #skipped)
      assert.equal("file", skipped[2][1])
    end
  end)

  it("hands a large part on in pieces no larger than the body's and a delimiter", function()
    local data = ("0123456789abcdef\r"):rep(20000)
    local big = "--b0undary\r\nContent-Disposition: form-data; name=\"f\"; filename=\"x\"\r\n\r\n"
      .. data .. "\r\n--b0undary--"
    for _, n in ipairs({ 1000, 65536 }) do
      local pieces, total = {}, 0
      for part in multipart.parts(reader(big, n), "b0undary", 100, 8192) do
        for piece in part:chunks() do
          assert.is_true(#piece <= n + #"\r\n--b0undary")
          total = total + #piece
          pieces[#pieces + 1] = piece
        end
      end
      assert.equal(#data, total)
      assert.equal(data, table.concat(pieces))
    end
  end)

  it("decodes filename* and takes the first of a repeated parameter", function()
    local b = "--b0undary\r\nContent-Disposition: form-data; name=f; name=g; "
      .. "filename=\"plain.txt\"; filename*=UTF-8''caf%C3%A9.txt\r\n\r\nx\r\n--b0undary--"
    local list = parse(b, 5)
    assert.equal("f", list[1][1])
    assert.equal("café.txt", list[1][2])
  end)

  it("stops at max_parts with 413", function()
    local b = ("--b0undary\r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n"):rep(4) .. "--b0undary--"
    assert.equal(4, #parse(b, 7, { max_parts = 4 }))
    local status, message = failure(function() parse(b, 7, { max_parts = 3 }) end)
    assert.equal(413, status)
    assert.equal("req:parts: more than 3 parts (max_parts)", message)
  end)

  it("stops at max_header_size with 413, whatever the pieces", function()
    local header = 'Content-Disposition: form-data; name="' .. ("n"):rep(60) .. '"'
    local b = "--b0undary\r\n" .. header .. "\r\n\r\nv\r\n--b0undary--"
    for n = 1, 20 do
      assert.equal(1, #parse(b, n, { max_header_size = #header }))
      local status, message = failure(function() parse(b, n, { max_header_size = #header - 1 }) end)
      assert.equal(413, status)
      assert.equal("req:parts: a part's headers are larger than " .. (#header - 1)
        .. " bytes (max_header_size)", message)
    end
    -- Headers that never end are caught at the limit too, before the body ends.
    local endless = "--b0undary\r\nX: " .. ("y"):rep(100000)
    local status = failure(function() parse(endless, 1000, { max_header_size = 512 }) end)
    assert.equal(413, status)
  end)

  it("answers malformed bodies with 400", function()
    local cases = {
      ["no boundary in the body"] = "just text",
      ["the body ended inside a part"] = "--b0undary\r\n\r\ndata without end",
      ["the body ended in a part's headers"] = "--b0undary\r\nX: 1\r\n",
      ["a part has a malformed header line"] = "--b0undary\r\nno colon\r\n\r\nx\r\n--b0undary--",
      ["a boundary line has more after the boundary"] = "--b0undaryX\r\n\r\nx\r\n--b0undary--",
      ["the body ended after a boundary"] = "--b0undary",
    }
    for why, b in pairs(cases) do
      local status, message = failure(function() parse(b, 3) end)
      assert.equal(400, status)
      assert.equal("req:parts: " .. why, message)
    end
    -- An obs-folded header line.
    local status = failure(function()
      parse("--b0undary\r\nX: 1\r\n 2\r\n\r\nx\r\n--b0undary--", 4)
    end)
    assert.equal(400, status)
  end)

  it("says when the client left", function()
    local read = reader("--b0undary\r\n\r\npartial", 4)
    local function leaving()
      local piece = read()
      if piece then return piece end
      return nil, "closed"
    end
    local status, message = failure(function()
      for part in multipart.parts(leaving, "b0undary", 100, 8192) do part:body() end
    end)
    assert.equal(400, status)
    assert.equal("req:parts: the client closed the connection before the end of the body", message)
  end)

  it("reads the boundary from the Content-Type", function()
    assert.equal("abc", multipart.boundary("multipart/form-data; boundary=abc"))
    assert.equal("a b'c", multipart.boundary('Multipart/Form-Data ; charset=x; BOUNDARY="a b\'c"'))
    assert.same({ nil, "Content-Type is not multipart/form-data" },
      { multipart.boundary("application/json") })
    assert.same({ nil, "multipart/form-data without a boundary" },
      { multipart.boundary("multipart/form-data") })
    assert.same({ nil, "invalid multipart boundary" },
      { multipart.boundary("multipart/form-data; boundary=" .. ("x"):rep(71)) })
    assert.same({ nil, "no Content-Type" }, { multipart.boundary(nil) })
  end)

  it("checks its options", function()
    assert.same({ 100, 8192 }, { multipart.options(nil) })
    assert.same({ 5, 8192 }, { multipart.options({ max_parts = 5 }) })
    assert.has_error(function() multipart.options({ max_parts = 0 }) end,
      "req:parts: max_parts must be a positive integer")
    assert.has_error(function() multipart.options({ parts = 1 }) end,
      "req:parts: unknown option 'parts'")
  end)
end)
