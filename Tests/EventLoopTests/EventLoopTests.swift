import EventLoop
@preconcurrency import Glibc
import TestSupport
import XCTest

final class EventLoopTests: XCTestCase {
  func testTimersFireOnceInDeadlineOrderAndCanBeRearmed() throws {
    let loop = try EventLoop()
    var fired: [String] = []
    let late = try loop.makeTimer { fired.append("late") }
    let early = try loop.makeTimer { fired.append("early") }
    late.schedule(after: 30_000)
    early.schedule(after: 5_000)
    XCTAssertTrue(late.isArmed)
    try spin(loop) { fired.count == 2 }
    XCTAssertEqual(fired, ["early", "late"])
    XCTAssertFalse(early.isArmed)
    early.schedule(after: 1_000)
    try spin(loop) { fired.count == 3 }
    XCTAssertEqual(fired.last, "early")
  }

  func testDisarmedAndCancelledTimersDoNotFire() throws {
    let loop = try EventLoop()
    var fired = 0
    let a = try loop.makeTimer { fired += 1 }
    let b = try loop.makeTimer { fired += 1 }
    let marker = try loop.makeTimer {}
    a.schedule(after: 1_000)
    b.schedule(after: 1_000)
    marker.schedule(after: 20_000)
    a.disarm()
    b.cancel()
    XCTAssertFalse(b.isActive)
    try spin(loop) { !marker.isArmed }
    XCTAssertEqual(fired, 0)
  }

  func testPostedWorkRunsOnTheNextIteration() throws {
    let loop = try EventLoop()
    var order: [Int] = []
    loop.post { order.append(1) }
    loop.post { order.append(2) }
    XCTAssertEqual(order, [])
    try spin(loop) { order.count == 2 }
    XCTAssertEqual(order, [1, 2])
  }

  func testIOWatcherReportsReadabilityAndCanChangeItsEvents() throws {
    let loop = try EventLoop()
    var fds: [Int32] = [0, 0]
    XCTAssertEqual(pipe(&fds), 0)
    defer {
      close(fds[0])
      close(fds[1])
    }
    var received: [UInt8] = []
    let watcher = try loop.watch(fd: fds[0], events: .readable) { events in
      XCTAssertTrue(events.contains(.readable))
      var byte: UInt8 = 0
      if read(fds[0], &byte, 1) == 1 { received.append(byte) }
    }
    var value: UInt8 = 42
    _ = write(fds[1], &value, 1)
    try spin(loop) { received == [42] }
    watcher.isEnabled = false
    XCTAssertFalse(watcher.isEnabled)
    _ = write(fds[1], &value, 1)
    try loop.runOnce(timeout: 20_000)
    XCTAssertEqual(received, [42])
    watcher.isEnabled = true
    try spin(loop) { received == [42, 42] }
    XCTAssertEqual(watcher.events, .readable)
  }

  func testExitStopsRunWithTheGivenCode() throws {
    let loop = try EventLoop()
    let timer = try loop.makeTimer { loop.exit(code: 7) }
    timer.schedule(after: 1_000)
    XCTAssertEqual(try loop.run(), 7)
  }

  func testSignalsArriveOnTheLoop() throws {
    let loop = try EventLoop()
    var got = false
    let watcher = try loop.onSignal(SIGUSR2) { got = true }
    // raise() targets this thread, where sd-event blocked the signal for its signalfd; a
    // process-directed kill() could land on another test thread and kill the run.
    raise(SIGUSR2)
    try spin(loop) { got }
    watcher.cancel()
  }

  func testBackgroundWorkerRunsBlockingWorkOffTheLoopAndReturnsResultsOnIt() throws {
    let loop = try EventLoop()
    let worker = try BackgroundWorker(loop: loop, name: "test-worker")
    let loopThread = pthread_self()
    var results: [Int] = []
    for i in 0..<5 {
      worker.submit(
        { () -> Int in
          usleep(2_000)
          return i * i
        },
        completion: { value in
          XCTAssertTrue(pthread_equal(pthread_self(), loopThread) != 0)
          results.append(value)
        })
    }
    XCTAssertEqual(worker.pendingCount, 5)
    try spin(loop) { results.count == 5 }
    XCTAssertEqual(results, [0, 1, 4, 9, 16])
    XCTAssertEqual(worker.pendingCount, 0)
  }

  func testNowIsMonotonic() throws {
    let loop = try EventLoop()
    let a = loop.now
    usleep(1_000)
    try loop.runOnce(timeout: 0)
    XCTAssertGreaterThanOrEqual(loop.now, a)
  }
}
