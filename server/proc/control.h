/*
 * The master-worker control protocol, over the socket each worker gets as
 * MP_WORKER_CONTROL_FD. No I/O here: messages to bytes and bytes to
 * messages, so the protocol can be tested on strings.
 *
 * Worker to master: "F<path>\n" for every file its app loads (the master
 * watches it), from its first load on, and one MP_CONTROL_READY byte,
 * between two of those, once it listens. Master to worker: MP_CONTROL_RELOAD bytes, each asking for
 * a load of the app; several read at once mean one load. End of file
 * either way means the other side is gone.
 */
#ifndef MP_CONTROL_H
#define MP_CONTROL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define MP_CONTROL_READY 'R'
#define MP_CONTROL_RELOAD 'L'
#define MP_CONTROL_FILE 'F'

/* The longest message: a file's path and its two bytes of framing. */
#define MP_CONTROL_MAX (PATH_MAX + 2)

/* Writes the "F<path>\n" message into out (MP_CONTROL_MAX bytes). Returns
 * its length, or 0 when path is empty, too long or holds a newline. */
size_t mp_control_file(char *out, const char *path);

/* Whether bytes the master sent ask for a reload. */
bool mp_control_wants_reload(const char *p, size_t n);

/* The master's reader of one worker's messages. */
typedef struct mp_control_reader {
  bool ready; /* the READY byte has come */
  size_t len; /* bytes of the message being read */
  char line[MP_CONTROL_MAX];
} mp_control_reader;

enum { MP_CONTROL_GOT_READY = 1, MP_CONTROL_GOT_FILE = 2 };

/* Reads n bytes of what a worker sent, calling on_message(ud, kind, path)
 * for each whole message (path: the file, for MP_CONTROL_GOT_FILE; NULL
 * otherwise). A message longer than MP_CONTROL_MAX is cut short. */
void mp_control_read(mp_control_reader *rd, const char *p, size_t n,
                     void (*on_message)(void *ud, int kind, const char *path),
                     void *ud);

#endif
