import EventLoop
import XCTest

final class ThreadLockTests: XCTestCase {
  func testTwoThreadsCountingUnderTheLockLoseNoIncrement() {
    // Under ThreadSanitizer (make sanitize) this is also the proof that the lock is seen: a
    // report here would fail the run.
    XCTAssertEqual(SanitizerProof.locked.run(), "locked: 200000 of 200000")
  }

  func testTheLockHandsTheStateToTheBodyAndReturnsItsResult() throws {
    let lock = ThreadLock([1, 2])
    let count = lock.withLock { state -> Int in
      state.append(3)
      return state.count
    }
    XCTAssertEqual(count, 3)
    struct Refused: Error {}
    XCTAssertThrowsError(try lock.withLock { _ in throw Refused() })
    XCTAssertEqual(lock.withLock { $0 }, [1, 2, 3])
  }

  func testEveryProofHasTheNameMakeSanitizeUses() {
    XCTAssertEqual(SanitizerProof.allCases.map(\.rawValue), ["race", "locked", "use-after-free"])
  }
}
