/*
 * Files for Lua (see ../ffi.h): listing and making a directory and
 * confining a name to a root, for the mock library
 * (lua/moonport/core/fs.lua), which reads mapping files, serves __files and
 * writes what it records. Confinement is decided on resolved
 * paths, so neither ".." nor a symbolic link leads a request-built name
 * out of its root. Listings go through the scratch buffer.
 */
#include "ffi.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "errors.h"
#include "scratch.h"

int mp_dir_list(const char *path, const char **out, size_t *len) {
  DIR *d = opendir(path);
  if (d == NULL) return -errno;
  int count = 0;
  size_t used = 0;
  char *buf = NULL;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    size_t n = strlen(e->d_name);
    buf = mp__ffi_scratch(used + n + 2);
    if (buf == NULL) {
      closedir(d);
      return MP_NOMEM;
    }
    bool dir = e->d_type == DT_DIR;
    if (e->d_type == DT_UNKNOWN || e->d_type == DT_LNK) {
      char full[PATH_MAX];
      struct stat st;
      snprintf(full, sizeof full, "%s/%s", path, e->d_name);
      dir = stat(full, &st) == 0 && S_ISDIR(st.st_mode);
    }
    buf[used] = dir ? 'd' : 'f';
    memcpy(buf + used + 1, e->d_name, n + 1);
    used += n + 2;
    count++;
  }
  closedir(d);
  *out = buf != NULL ? buf : "";
  *len = used;
  return count;
}

int mp_dir_make(const char *path) {
  if (mkdir(path, 0777) == 0) return 0;
  int err = errno;
  struct stat st;
  if (err == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return 0;
  return -err;
}

/* Whether a relative name climbs above its directory by its ".." parts
 * alone ("a/../../b" does, "a/../b" does not). */
static bool climbs_out(const char *name, size_t nlen) {
  long depth = 0;
  size_t i = 0;
  while (i < nlen) {
    size_t j = i;
    while (j < nlen && name[j] != '/') j++;
    size_t n = j - i;
    if (n == 2 && name[i] == '.' && name[i + 1] == '.') {
      if (--depth < 0) return true;
    } else if (n > 0 && !(n == 1 && name[i] == '.')) {
      depth++;
    }
    i = j + 1;
  }
  return false;
}

int mp_file_confine(const char *root, const char *name, size_t nlen,
                    char *out, size_t cap, double *size) {
  char joined[PATH_MAX], real_root[PATH_MAX], real[PATH_MAX];
  size_t rlen = strlen(root);
  struct stat st;
  if (memchr(name, '\0', nlen) != NULL || rlen + 1 + nlen >= sizeof joined)
    return MP_INVALID;
  /* Refused before the file system is asked, so that whether a file
   * outside exists cannot be told from the answer. */
  if (climbs_out(name, nlen)) return MP_DECLINED;
  if (realpath(root, real_root) == NULL) return MP_NOT_FOUND;
  memcpy(joined, root, rlen);
  joined[rlen] = '/';
  memcpy(joined + rlen + 1, name, nlen);
  joined[rlen + 1 + nlen] = '\0';
  if (realpath(joined, real) == NULL) return MP_NOT_FOUND;
  /* Inside the root on a component boundary: "/srv/files" does not hold
   * "/srv/files-secret/x". A root of "/" holds everything. A symbolic link
   * inside the root that leads out is caught here. */
  rlen = strlen(real_root);
  if (strncmp(real, real_root, rlen) != 0 || (rlen > 1 && real[rlen] != '/'))
    return MP_DECLINED;
  if (stat(real, &st) != 0 || !S_ISREG(st.st_mode)) return MP_NOT_FOUND;
  size_t n = strlen(real);
  if (n >= cap) return MP_INVALID;
  memcpy(out, real, n + 1);
  *size = (double)st.st_size;
  return (int)n;
}
