// Wrappers for what Swift cannot import from libsystemd directly. No logic lives here.
#ifndef CHATLINK_CSYSTEMD_SHIM_H
#define CHATLINK_CSYSTEMD_SHIM_H
#include <systemd/sd-event.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include <signal.h>

static inline int chatlink_sd_event_signal_procmask(int sig) { return sig | SD_EVENT_SIGNAL_PROCMASK; }
#endif
