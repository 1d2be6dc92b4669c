/*
 * Watching the app's files: a set of files, watched through the
 * directories that hold them (editors save by writing a new file and
 * renaming it over the old one, which a watch on the file itself would
 * miss), and one callback a short delay after the last change of a burst.
 * The master owns one; it runs no Lua.
 */
#ifndef MP_WATCH_H
#define MP_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

typedef struct mp_watch mp_watch;

/* A watcher on loop that calls on_change(ud) delay_ms after the last of a
 * burst of changes to a watched file. NULL when out of memory. */
mp_watch *mp_watch_new(uv_loop_t *loop, uint64_t delay_ms,
                       void (*on_change)(void *ud), void *ud);

/* Makes paths (absolute, see mp_watch_abspath) the files watched (a path
 * ending in '/' stands for every file in that directory): their
 * directories are watched from now on, and directories no longer needed
 * are let go. A directory that cannot be watched is logged and skipped.
 * Returns 0 or MP_NOMEM (the old set stays). */
int mp_watch_set(mp_watch *w, char *const *paths, unsigned n);

/* Whether path (absolute) is among the files watched. */
bool mp_watch_has(const mp_watch *w, const char *path);

/* Stops watching; the memory goes once libuv has closed every handle. */
void mp_watch_close(mp_watch *w);

/* path made absolute with its directory resolved (symbolic links and
 * "..", as realpath does) and its last part kept as it is, so a file that
 * is missing for a moment (deleted, to be written again) still has a
 * name. Returns false when the directory does not exist or the result
 * does not fit in cap. */
bool mp_watch_abspath(const char *path, char *out, size_t cap);

#endif
