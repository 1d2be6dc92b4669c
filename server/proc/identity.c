/*
 * --user (see identity.h). The order of the drop matters: groups first
 * (setgroups and setgid need root), the user last, and a check that root
 * cannot be taken back, since a half-dropped process is worse than one
 * that refused to start.
 */
#include "identity.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

/* A whole number, or -1. */
static long number(const char *s) {
  char *end;
  if (*s < '0' || *s > '9') return -1;
  long n = strtol(s, &end, 10);
  return *end == '\0' ? n : -1;
}

int mp_identity_resolve(const char *spec, mp_identity *id) {
  char user[64], *group = NULL;
  memset(id, 0, sizeof *id);
  if (snprintf(user, sizeof user, "%s", spec) >= (int)sizeof user) {
    fprintf(stderr, "moonport: --user %s: name too long\n", spec);
    return -1;
  }
  char *colon = strchr(user, ':');
  if (colon != NULL) {
    *colon = '\0';
    group = colon + 1;
  }
  const struct passwd *pw = getpwnam(user);
  long n = number(user);
  if (pw == NULL && n >= 0) pw = getpwuid((uid_t)n);
  if (pw == NULL && n < 0) {
    fprintf(stderr, "moonport: --user %s: no such user\n", user);
    return -1;
  }
  id->uid = pw != NULL ? pw->pw_uid : (uid_t)n;
  id->gid = pw != NULL ? pw->pw_gid : (gid_t)n;
  snprintf(id->user, sizeof id->user, "%s", pw != NULL ? pw->pw_name : "");
  if (group != NULL) {
    const struct group *gr = getgrnam(group);
    long g = number(group);
    if (gr == NULL && g < 0) {
      fprintf(stderr, "moonport: --user %s: no such group '%s'\n", spec,
              group);
      return -1;
    }
    id->gid = gr != NULL ? gr->gr_gid : (gid_t)g;
  }
  if (id->uid == 0) {
    fprintf(stderr, "moonport: --user %s: that is root; give the user the "
            "server should run as, or leave --user out\n", spec);
    return -1;
  }
  return 0;
}

bool mp_identity_is_current(const mp_identity *id) {
  return getuid() == id->uid && geteuid() == id->uid &&
         getgid() == id->gid && getegid() == id->gid;
}

int mp_identity_give_file(const mp_identity *id, const char *path,
                          const char *what) {
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 ||
      (st.st_uid != id->uid && fchown(fd, id->uid, id->gid) != 0)) {
    fprintf(stderr, "moonport: %s: cannot give '%s' to --user: %s\n", what,
            path, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  close(fd);
  return 0;
}

int mp_identity_assume(const mp_identity *id) {
  int rc = id->user[0] != '\0' ? initgroups(id->user, id->gid)
                                : setgroups(0, NULL);
  if (rc != 0 || setgid(id->gid) != 0 || setuid(id->uid) != 0) {
    fprintf(stderr, "moonport: --user: cannot become uid %u gid %u: %s\n",
            (unsigned)id->uid, (unsigned)id->gid, strerror(errno));
    return -1;
  }
  if (setuid(0) == 0 || geteuid() == 0) {
    fprintf(stderr, "moonport: --user: still able to become root after "
            "dropping privileges; refusing to run\n");
    return -1;
  }
  /* Changing credentials made the process non-dumpable: no core, and
   * /proc/self owned by root. The workers, exec'd after the drop, are
   * dumpable; so is their master. */
  prctl(PR_SET_DUMPABLE, 1);
  return 0;
}
