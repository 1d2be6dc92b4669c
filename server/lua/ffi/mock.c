/*
 * The mock's settings (see ../ffi.h): the command-line options
 * lua/moonport/mock/ reads at load, through lua/moonport/core/mock.lua.
 * The strings are the configuration's, which lives as long as the process.
 */
#include "ffi.h"

#include "config.h"
#include "vm.h"

int mp_mock_settings(mp_mock_config *out) {
  const mp_config *cfg = mp_vm_host_self->cfg;
  out->dir = cfg->mock_dir;
  out->listen_host = cfg->host;
  out->admin_hosts = cfg->admin_hosts;
  out->cors = cfg->cors;
  out->admin_cors = cfg->admin_cors;
  out->journal_size = (int)cfg->journal_size;
  out->proxy_all = cfg->proxy_all;
  out->record_mappings = cfg->record_mappings;
  out->json_db = cfg->json_db;
  out->store = cfg->mock_store;
  out->json_routes = cfg->json_routes;
  out->json_static = cfg->json_static;
  out->json_id = cfg->json_id;
  out->json_fks = cfg->json_fks;
  out->json_read_only = cfg->json_read_only;
  out->json_delay_ms = (int)cfg->json_delay_ms;
  out->wiremock_404 = cfg->wiremock_404;
  /* With an APP (--check --openapi), the app is not the mock's. */
  out->openapi = cfg->openapi_mock ? cfg->openapi : NULL;
  out->openapi_dynamic = cfg->openapi_dynamic;
  out->openapi_seed = cfg->openapi_seed;
  out->check = cfg->check;
  return 0;
}
