// Wrappers for what Swift cannot import from libsystemd directly. No logic lives here.
#ifndef CHATLINK_CSYSTEMD_SHIM_H
#define CHATLINK_CSYSTEMD_SHIM_H
#include <systemd/sd-event.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/signalfd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <malloc.h> /* mallopt, malloc_trim: the daemon keeps its idle footprint small */

static inline int chatlink_sd_event_signal_procmask(int sig) { return sig | SD_EVENT_SIGNAL_PROCMASK; }
static inline int chatlink_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
  return accept4(fd, addr, len, flags);
}
static inline int chatlink_sock_nonblock_cloexec(void) { return SOCK_NONBLOCK | SOCK_CLOEXEC; }
static inline int chatlink_set_thread_name(const char *name) { return prctl(PR_SET_NAME, name, 0, 0, 0); }
/* struct ucred needs _GNU_SOURCE, which the Glibc module is not built with: mirror it. */
struct chatlink_ucred { int pid; unsigned int uid; unsigned int gid; };
static inline int chatlink_peer_credentials(int fd, struct chatlink_ucred *out) {
  socklen_t length = sizeof(*out);
  return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, out, &length);
}
#endif
