// Linux and glibc interfaces that Swift's Glibc module does not export, or exports awkwardly.
// Wrappers only; no logic lives here.
#ifndef CHATLINK_CSYSTEM_SHIM_H
#define CHATLINK_CSYSTEM_SHIM_H
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/random.h> /* getrandom: the WebSocket masking keys and client ids, 4 KiB at a time */
#include <sys/socket.h>
#include <malloc.h> /* mallopt, malloc_trim: the daemon keeps its idle footprint small */
#include <sys/syscall.h>
#include <unistd.h>

static inline int chatlink_set_thread_name(const char *name) { return prctl(PR_SET_NAME, name, 0, 0, 0); }
/* struct ucred needs _GNU_SOURCE, which the Glibc module is not built with: mirror it. */
struct chatlink_ucred { int pid; unsigned int uid; unsigned int gid; };
static inline int chatlink_peer_credentials(int fd, struct chatlink_ucred *out) {
  socklen_t length = sizeof(*out);
  return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, out, &length);
}
/* sync_file_range(SYNC_FILE_RANGE_WRITE), whose glibc declaration needs _GNU_SOURCE: starts the
   writeback of a range and returns without waiting for it. */
static inline int chatlink_start_writeback(int fd, long long offset, long long count) {
  return (int)syscall(SYS_sync_file_range, fd, offset, count, 2 /* SYNC_FILE_RANGE_WRITE */);
}
/* memrchr, a GNU extension that glibc declares only under _GNU_SOURCE: the store's readers look
   for the last newline before a point, which glibc scans many bytes a step. */
extern void *memrchr(const void *s, int c, size_t n);
static inline const void *chatlink_memrchr(const void *s, int c, size_t n) { return memrchr(s, c, n); }
/* memmem, the same (a record's "room" key, read for every line the dedupe window's rebuild reads). */
extern void *memmem(const void *haystack, size_t haystacklen, const void *needle, size_t needlelen);
static inline const void *chatlink_memmem(const void *h, size_t hl, const void *n, size_t nl) {
  return memmem(h, hl, n, nl);
}
#endif
