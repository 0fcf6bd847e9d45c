@preconcurrency import Glibc

/// Runs `body` while writes past `bytes` fail with EFBIG (RLIMIT_FSIZE, SIGXFSZ ignored), as
/// a full disk fails them; the limit is lifted afterwards, whatever `body` does.
func withFileSizeLimit<T>(_ bytes: Int, _ body: () throws -> T) rethrows -> T {
  signal(SIGXFSZ, SIG_IGN)
  var old = rlimit()
  getrlimit(Int32(RLIMIT_FSIZE.rawValue), &old)
  var limited = rlimit(rlim_cur: rlim_t(bytes), rlim_max: old.rlim_max)
  setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limited)
  defer { setrlimit(Int32(RLIMIT_FSIZE.rawValue), &old) }
  return try body()
}
