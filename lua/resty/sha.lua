-- resty.sha, the base lua-resty-string's SHA modules require: moonport's
-- need nothing from it.
return { _VERSION = "0.16" }
