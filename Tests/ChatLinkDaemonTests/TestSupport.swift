import EventLoop
import Foundation
@preconcurrency import Glibc
import XCTest

/// A fresh directory under /tmp, removed at deinit.
final class TemporaryDirectory {
  let path: String
  init() {
    var template = Array("/tmp/chatlink-test-XXXXXX".utf8CString)
    path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
  }
  deinit { try? FileManager.default.removeItem(atPath: path) }

  func read(_ name: String) -> String {
    (try? String(contentsOfFile: path + "/" + name, encoding: .utf8)) ?? ""
  }

  func write(_ name: String, _ text: String) {
    _ = FileManager.default.createFile(atPath: path + "/" + name, contents: Data(text.utf8))
  }

  func lines(_ name: String) -> [String] {
    read(name).split(separator: "\n").map(String.init)
  }
}

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

/// Spins `loop` until `done()` or the timeout.
func spin(
  _ loop: EventLoop, timeout: Microseconds = 5_000_000, file: StaticString = #filePath,
  line: UInt = #line, until done: () -> Bool
) throws {
  let start = loop.now
  while !done() {
    try loop.runOnce(timeout: 20_000)
    if loop.now - start > timeout {
      XCTFail("timed out", file: file, line: line)
      return
    }
  }
}
