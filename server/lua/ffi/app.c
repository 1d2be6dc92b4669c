/*
 * The app's files (see ../ffi.h): lua/moonport/core/app.lua reports every
 * file the app loads (require, dofile, loadfile, a mock mapping) to the
 * VM's host, which in a worker tells the master to watch it for reloads.
 */
#include "ffi.h"

#include <limits.h>
#include <string.h>

#include "vm.h"

void mp_lua_file_loaded(const char *path, size_t len) {
  const mp_vm_host *host = mp_vm_host_self;
  char copy[PATH_MAX];
  if (host == NULL || host->on_load_file == NULL || len == 0 ||
      len >= sizeof copy)
    return;
  memcpy(copy, path, len);
  copy[len] = '\0';
  host->on_load_file(host->ud, copy);
}
