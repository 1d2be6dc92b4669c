--- The mock's settings from the command line (server/lua/ffi/mock.c).
-- @module moonport.core.mock

local ffi = require("ffi")

ffi.cdef[[
typedef struct mp_mock_config {
  const char *dir;
  const char *listen_host;
  const char *admin_hosts;
  int cors;
  int admin_cors;
  int journal_size;
  const char *proxy_all;
  int record_mappings;
  const char *json_db;
  const char *store;
  const char *json_routes;
  const char *json_static;
  const char *json_id;
  const char *json_fks;
  int json_read_only;
  int json_delay_ms;
  int wiremock_404;
  const char *openapi;
  int openapi_dynamic;
  const char *openapi_seed;
  int check;
} mp_mock_config;
int mp_mock_settings(mp_mock_config *out);
]]

local mp_mock_settings = ffi.C.mp_mock_settings
local ffi_string = ffi.string

local mock = {}

local function opt_string(p)
  if p == nil then return nil end
  return ffi_string(p)
end

--- The mock settings from the command line: { dir = --mock DIR or nil,
-- listen_host = the host of --listen, admin_hosts = --admin-host or nil,
-- cors = true unless --no-cors, admin_cors = --admin-cors,
-- journal_size = --journal-size, proxy_all = --proxy-all or nil,
-- record_mappings = --record-mappings, json_db = --json-db or nil,
-- store = --mock-store or nil, wiremock_404 = --wiremock-404, and
-- json-server's options: json_routes = --routes, json_static = --static,
-- json_id = --id, json_fks = --foreign-key-suffix (each nil when not
-- given), json_read_only = --read-only, json_delay = --delay (ms),
-- openapi = --openapi FILE (nil without it, or when an APP is given),
-- openapi_dynamic = --dynamic, openapi_seed = --seed as a number or nil,
-- check = --check (the load is a check: nothing will be served) }.
-- @usage local settings = core.mock_settings()
function mock.settings()
  local cfg = ffi.new("mp_mock_config")
  mp_mock_settings(cfg)
  return { dir = opt_string(cfg.dir), listen_host = opt_string(cfg.listen_host),
           admin_hosts = opt_string(cfg.admin_hosts), cors = cfg.cors ~= 0,
           admin_cors = cfg.admin_cors ~= 0, journal_size = cfg.journal_size,
           proxy_all = opt_string(cfg.proxy_all),
           record_mappings = cfg.record_mappings ~= 0,
           json_db = opt_string(cfg.json_db), store = opt_string(cfg.store),
           json_routes = opt_string(cfg.json_routes), json_static = opt_string(cfg.json_static),
           json_id = opt_string(cfg.json_id), json_fks = opt_string(cfg.json_fks),
           json_read_only = cfg.json_read_only ~= 0, json_delay = cfg.json_delay_ms,
           wiremock_404 = cfg.wiremock_404 ~= 0,
           openapi = opt_string(cfg.openapi), openapi_dynamic = cfg.openapi_dynamic ~= 0,
           openapi_seed = tonumber(opt_string(cfg.openapi_seed)),
           check = cfg.check ~= 0 }
end

return mock
