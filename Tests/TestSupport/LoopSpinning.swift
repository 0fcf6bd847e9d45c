import EventLoop
import XCTest

/// Runs `loop` until `done()` holds; after `timeout` fails the calling test at its own line
/// and returns, so the assertions that follow say what was missing.
public func spin(
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

/// Runs `loop` for `span`, whatever happens in it: for what must not happen within a time, or
/// what happens on its own (timers, the store's background work).
public func spin(_ loop: EventLoop, for span: Microseconds) throws {
  let start = loop.now
  while loop.now - start < span {
    try loop.runOnce(timeout: min(20_000, span - (loop.now - start)))
  }
}
