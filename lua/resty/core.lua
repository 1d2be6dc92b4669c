-- resty.core, which OpenResty apps require first: moonport.ngx does its
-- work (and installs the global ngx), so this is its probe table.
require("moonport.ngx")
return require("moonport.ngx.probes").modules["resty.core"]
