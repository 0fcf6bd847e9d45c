// Wrappers for zlib macros that Swift cannot import. No logic lives here.
#ifndef CHATLINK_CZLIB_SHIM_H
#define CHATLINK_CZLIB_SHIM_H
#include <zlib.h>

static inline int chatlink_deflateInit2(z_streamp strm, int level, int windowBits, int memLevel) {
  return deflateInit2(strm, level, Z_DEFLATED, windowBits, memLevel, Z_DEFAULT_STRATEGY);
}
static inline int chatlink_inflateInit2(z_streamp strm, int windowBits) {
  return inflateInit2(strm, windowBits);
}
#endif
