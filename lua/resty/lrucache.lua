--- resty.lrucache: Debian's lua-resty-lrucache (apt-get install
-- lua-resty-lrucache) when it is on package.path and loads, and
-- moonport.lrucache, which has the same API, otherwise. Either way the
-- global ngx is installed first, which the Debian module reads.
-- @module resty.lrucache

require("moonport.ngx")

local here = debug.getinfo(1, "S").source:sub(2)

for template in package.path:gmatch("[^;]+") do
  local path = template:gsub("%?", "resty/lrucache")
  if path ~= here and path ~= "./" .. here then
    local f = io.open(path, "rb")
    if f then
      f:close()
      local chunk = loadfile(path)
      local ok, m = false, nil
      if chunk then ok, m = pcall(chunk, "resty.lrucache") end
      if ok and type(m) == "table" and m.new then return m end
      break
    end
  end
end

return require("moonport.lrucache")
