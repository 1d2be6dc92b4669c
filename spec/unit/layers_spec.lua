-- server/ is built in layers, each seeing only the headers of the layers
-- before it (CMakeLists.txt), so an upward include does not compile. This
-- spec says the same of the sources, naming the file, the header and the
-- two layers, and keeps the list of layers the build uses honest.
local dirent = require("posix.dirent")
local root = os.getenv("MOONPORT_ROOT") or "."

-- Lowest first: a layer may include its own headers and those before it.
local LAYERS = { "base", "http", "net", "req", "handlers", "upstream", "lua", "proc" }
local rank = {}
for i, name in ipairs(LAYERS) do rank[name] = i end
-- Folders of server/ that are no layer: they hold no C. dist/ holds what
-- installing and packaging need (server/dist/install.cmake).
local NOT_CODE = { dist = true }

-- Every .c and .h under server/<layer>/ (one folder deeper too).
local function sources(layer)
  local found = {}
  local function walk(dir, rel)
    for name in dirent.files(dir) do
      if name ~= "." and name ~= ".." then
        local path = dir .. "/" .. name
        if name:match("%.[ch]$") then
          found[#found + 1] = { path = path, name = rel .. name }
        elseif not name:find("%.") then
          local ok = pcall(dirent.files, path)
          if ok then walk(path, rel .. name .. "/") end
        end
      end
    end
  end
  walk(root .. "/server/" .. layer, "")
  return found
end

-- Which layer each header name belongs to.
local owner = {}
for _, layer in ipairs(LAYERS) do
  for _, f in ipairs(sources(layer)) do
    if f.name:match("%.h$") then
      local base = f.name:match("([^/]+)$")
      assert(owner[base] == nil, base .. " is in two layers: header names must be unique")
      owner[base] = layer
    end
  end
end

describe("server/'s layers", function()
  it("cover every folder of server/", function()
    for name in dirent.files(root .. "/server") do
      if name ~= "." and name ~= ".." and not NOT_CODE[name] then
        assert.truthy(rank[name], "server/" .. name .. " is no layer")
      end
    end
  end)

  it("leave no C in the folders that are no layer", function()
    for name in pairs(NOT_CODE) do
      assert.same({}, sources(name), "server/" .. name .. " holds C but is no layer")
    end
  end)

  for _, layer in ipairs(LAYERS) do
    it(layer .. " includes only its own headers and those of the layers before it", function()
      for _, f in ipairs(sources(layer)) do
        local text = assert(io.open(f.path)):read("*a")
        for header in text:gmatch('#include "([^"]+)"') do
          local base = header:match("([^/]+)$")
          local from = owner[base]
          if from then
            assert(rank[from] <= rank[layer], ("server/%s/%s includes %s, of %s, a layer above %s")
              :format(layer, f.name, header, from, layer))
          end
        end
      end
    end)
  end
end)
