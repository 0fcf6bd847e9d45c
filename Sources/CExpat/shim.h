// expat's header (Debian: libexpat1-dev), linked as libexpat.so.1. Its functions import as they
// are; nothing here wraps them. No logic lives here.
#ifndef CHATLINK_CEXPAT_SHIM_H
#define CHATLINK_CEXPAT_SHIM_H
#include <expat.h>
#endif
