/*
 * --user USER[:GROUP]: the identity the server runs as once a master
 * started as root has done what needs root (binding a port below 1024,
 * opening the logs and the pid file).
 */
#ifndef MP_IDENTITY_H
#define MP_IDENTITY_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct mp_identity {
  uid_t uid;
  gid_t gid;
  char user[64];
} mp_identity;

/* Resolves "USER[:GROUP]" (names or numbers; without GROUP, USER's
 * primary group) into *id. Refuses root as USER: there would be nothing
 * to drop. Returns 0, or -1 after printing why. */
int mp_identity_resolve(const char *spec, mp_identity *id);

/* Whether this process already is id (its real and effective ids): a
 * master started by an upgrading one that had dropped to it. */
bool mp_identity_is_current(const mp_identity *id);

/* Creates the log file at path when it is missing and gives it to id, so
 * that id can append to it and open it again on SIGUSR1. Returns 0, or -1
 * after printing why. */
int mp_identity_give_file(const mp_identity *id, const char *path,
                          const char *what);

/* Becomes id for good: supplementary groups (id's user's, or none when
 * it has no name), group, then user. The process stays dumpable, as the
 * workers it execs are, so that it can leave a core. Returns 0, or -1
 * after printing why. */
int mp_identity_assume(const mp_identity *id);

#endif
