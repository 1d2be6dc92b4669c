-- resty.core.base: moonport.ngx's probe table, with the helpers libraries
-- take from it (new_tab, clear_tab, the FFI_* codes, get_request).
require("moonport.ngx")
return require("moonport.ngx.probes").modules["resty.core.base"]
