/*
 * The worker process, as Lua sees it (see ../ffi.h): its number among the
 * workers, how many there are, its pid. The ngx compatibility module's
 * ngx.worker.id/count/pid read them. The number is the worker's slot in
 * the shared segment, which the VM host holds; a VM without one (--check,
 * the master's check of a reload) is no worker.
 */
#include "ffi.h"

#include <unistd.h>

#include "config.h"
#include "errors.h"
#include "shared.h"
#include "vm.h"

int mp_worker_id(void) {
  const mp_vm_host *host = mp_vm_host_self;
  if (host == NULL || host->slot == NULL || host->shared == NULL)
    return MP_NOT_FOUND;
  /* Slots count from 1; OpenResty's worker ids from 0. */
  unsigned n = mp_shared_nslots(host->shared);
  for (unsigned i = 1; i <= n; i++)
    if (mp_shared_slot(host->shared, i) == host->slot) return (int)i - 1;
  return MP_NOT_FOUND;
}

int mp_worker_count(void) {
  const mp_vm_host *host = mp_vm_host_self;
  if (host == NULL || host->cfg == NULL) return 1;
  return host->cfg->workers > 0 ? (int)host->cfg->workers : 1;
}

int mp_worker_pid(void) { return (int)getpid(); }
