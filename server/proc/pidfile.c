/*
 * --pid-file (see pidfile.h). The lock, not the pid written, says whether
 * a moonport is alive: a pid in a stale file may have been reused by any
 * process.
 */
#include "pidfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

int mp_pidfile_open(const char *path, bool *passed) {
  const char *given = getenv(MP_PID_FD_ENV);
  *passed = false;
  if (given != NULL) {
    int fd = atoi(given);
    unsetenv(MP_PID_FD_ENV);
    if (fd > 2 && fcntl(fd, F_SETFD, FD_CLOEXEC) == 0) {
      *passed = true;
      return fd;
    }
  }
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    fprintf(stderr, "moonport: --pid-file: cannot open '%s': %s\n", path,
            strerror(errno));
    return -1;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    char pid[32] = "";
    ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
    pid[n > 0 ? n : 0] = '\0';
    pid[strcspn(pid, "\n")] = '\0';
    if (err == EWOULDBLOCK)
      fprintf(stderr, "moonport: --pid-file: '%s' is held by a running "
              "moonport%s%s%s\n", path, pid[0] ? " (pid " : "", pid,
              pid[0] ? ")" : "");
    else
      fprintf(stderr, "moonport: --pid-file: cannot lock '%s': %s\n", path,
              strerror(err));
    close(fd);
    return -1;
  }
  return fd;
}

int mp_pidfile_write(int fd) {
  char text[32];
  int n = snprintf(text, sizeof text, "%d\n", (int)getpid());
  if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)n, 0) != n)
    return -errno;
  return 0;
}

void mp_pidfile_remove(const char *path, int fd) {
  if (unlink(path) != 0) {
    /* The directory may not be this process's to change (it dropped
     * privileges): an empty file names no pid, and holds no lock once fd
     * is closed. */
    int rc = ftruncate(fd, 0);
    (void)rc;
  }
  close(fd);
}
