/*
 * File watching (see watch.h). One uv_fs_event_t (inotify on Linux) per
 * directory that holds a watched file; an event names a file in that
 * directory, and only names in the watched set restart the delay timer, so
 * an editor's swap and backup files beside the script cause nothing. A
 * directory handle is freed in its close callback; the watcher itself once
 * its last handle has closed.
 */
#include "watch.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "log.h"

typedef struct watch_dir {
  uv_fs_event_t ev;
  mp_watch *owner;
  char path[PATH_MAX];
} watch_dir;

struct mp_watch {
  uv_loop_t *loop;
  uv_timer_t timer;
  uint64_t delay_ms;
  void (*on_change)(void *ud);
  void *ud;
  char **files;
  unsigned nfiles;
  watch_dir **dirs;
  unsigned ndirs;
  unsigned open_handles;
};

bool mp_watch_abspath(const char *path, char *out, size_t cap) {
  char dir[PATH_MAX], resolved[PATH_MAX];
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  size_t dlen = slash ? (size_t)(slash - path) : 0;
  if (slash == path) dlen = 1; /* a file in / */
  if (dlen >= sizeof dir) return false;
  if (slash) {
    memcpy(dir, path, dlen);
    dir[dlen] = '\0';
  } else {
    strcpy(dir, ".");
  }
  if (realpath(dir, resolved) == NULL) return false;
  size_t rlen = strlen(resolved);
  bool root = rlen == 1;
  size_t need = rlen + (root ? 0 : 1) + strlen(base) + 1;
  if (need > cap) return false;
  memcpy(out, resolved, rlen);
  if (!root) out[rlen++] = '/';
  strcpy(out + rlen, base);
  return true;
}

/* The close callback of the timer (data: the watcher) and of every
 * directory handle (data: its watch_dir). */
static void free_handle(uv_handle_t *h) {
  mp_watch *w;
  if (h->type == UV_FS_EVENT) {
    watch_dir *d = h->data;
    w = d->owner;
    free(d);
  } else {
    w = h->data;
  }
  if (--w->open_handles == 0) {
    for (unsigned i = 0; i < w->nfiles; i++) free(w->files[i]);
    free(w->files);
    free(w->dirs);
    free(w);
  }
}

static void on_timer(uv_timer_t *t) {
  mp_watch *w = t->data;
  w->on_change(w->ud);
}

bool mp_watch_has(const mp_watch *w, const char *path) {
  for (unsigned i = 0; i < w->nfiles; i++) {
    const char *f = w->files[i];
    size_t n = strlen(f);
    if (strcmp(f, path) == 0) return true;
    /* "dir/" stands for every file directly in dir. */
    if (n > 0 && f[n - 1] == '/' && strncmp(f, path, n) == 0 &&
        strchr(path + n, '/') == NULL)
      return true;
  }
  return false;
}

static void on_event(uv_fs_event_t *ev, const char *name, int events,
                     int status) {
  watch_dir *d = ev->data;
  mp_watch *w = d->owner;
  (void)events;
  if (status < 0) {
    mp_log(MP_LOG_WARN, "watching %s: %s", d->path, uv_strerror(status));
    return;
  }
  if (name != NULL) {
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/%s", d->path, name);
    if (n < 0 || (size_t)n >= sizeof path || !mp_watch_has(w, path)) return;
  }
  /* Restarting the timer makes a burst (write, rename, chmod) one call. */
  uv_timer_start(&w->timer, on_timer, w->delay_ms, 0);
}

mp_watch *mp_watch_new(uv_loop_t *loop, uint64_t delay_ms,
                       void (*on_change)(void *ud), void *ud) {
  mp_watch *w = calloc(1, sizeof *w);
  if (w == NULL) return NULL;
  w->loop = loop;
  w->delay_ms = delay_ms;
  w->on_change = on_change;
  w->ud = ud;
  uv_timer_init(loop, &w->timer);
  w->timer.data = w;
  w->open_handles = 1;
  return w;
}

/* The directory part of an absolute path, into out. */
static void dir_of(const char *path, char *out) {
  const char *slash = strrchr(path, '/');
  size_t n = slash == path ? 1 : (size_t)(slash - path);
  memcpy(out, path, n);
  out[n] = '\0';
}

static watch_dir *find_dir(mp_watch *w, const char *dir) {
  for (unsigned i = 0; i < w->ndirs; i++)
    if (strcmp(w->dirs[i]->path, dir) == 0) return w->dirs[i];
  return NULL;
}

int mp_watch_set(mp_watch *w, char *const *paths, unsigned n) {
  char **files = calloc(n ? n : 1, sizeof *files);
  watch_dir **dirs = calloc(n ? n : 1, sizeof *dirs);
  unsigned nfiles = 0, ndirs = 0;
  if (files == NULL || dirs == NULL) goto err;
  for (unsigned i = 0; i < n; i++) {
    files[nfiles] = strdup(paths[i]);
    if (files[nfiles] == NULL) goto err;
    nfiles++;
  }

  /* Keep the directories still needed, start the new ones. */
  for (unsigned i = 0; i < nfiles; i++) {
    char dir[PATH_MAX];
    dir_of(files[i], dir);
    bool have = false;
    for (unsigned k = 0; k < ndirs && !have; k++)
      have = strcmp(dirs[k]->path, dir) == 0;
    if (have) continue;
    watch_dir *d = find_dir(w, dir);
    if (d == NULL) {
      d = calloc(1, sizeof *d);
      if (d == NULL) goto err;
      d->owner = w;
      snprintf(d->path, sizeof d->path, "%s", dir);
      uv_fs_event_init(w->loop, &d->ev);
      d->ev.data = d;
      w->open_handles++;
      int rc = uv_fs_event_start(&d->ev, on_event, d->path, 0);
      if (rc != 0) {
        mp_log(MP_LOG_WARN, "cannot watch %s: %s", d->path, uv_strerror(rc));
        uv_close((uv_handle_t *)&d->ev, free_handle);
        continue;
      }
    }
    dirs[ndirs++] = d;
  }
  for (unsigned i = 0; i < w->ndirs; i++) {
    bool kept = false;
    for (unsigned k = 0; k < ndirs && !kept; k++) kept = dirs[k] == w->dirs[i];
    if (!kept) uv_close((uv_handle_t *)&w->dirs[i]->ev, free_handle);
  }
  for (unsigned i = 0; i < w->nfiles; i++) free(w->files[i]);
  free(w->files);
  free(w->dirs);
  w->files = files;
  w->nfiles = nfiles;
  w->dirs = dirs;
  w->ndirs = ndirs;
  return 0;

err:
  /* Directories started by this call are in dirs and not in w->dirs. */
  for (unsigned k = 0; dirs != NULL && k < ndirs; k++)
    if (find_dir(w, dirs[k]->path) != dirs[k])
      uv_close((uv_handle_t *)&dirs[k]->ev, free_handle);
  for (unsigned i = 0; i < nfiles; i++) free(files[i]);
  free(files);
  free(dirs);
  return MP_NOMEM;
}

void mp_watch_close(mp_watch *w) {
  for (unsigned i = 0; i < w->ndirs; i++)
    uv_close((uv_handle_t *)&w->dirs[i]->ev, free_handle);
  w->ndirs = 0;
  uv_close((uv_handle_t *)&w->timer, free_handle);
}
