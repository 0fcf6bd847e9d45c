import LinkCore
import XCTest

final class BackoffTests: XCTestCase {
  func testBackoffGrowsExponentiallyWithJitterWithinBoundsAndResets() {
    var backoff = Backoff(minimum: .seconds(1), maximum: .seconds(30))
    var ceilings: [Duration] = []
    for _ in 0..<8 {
      ceilings.append(backoff.ceiling)
      let delay = backoff.nextDelay()
      XCTAssertGreaterThanOrEqual(delay, .seconds(1))
      XCTAssertLessThanOrEqual(delay, .seconds(30))
    }
    XCTAssertEqual(ceilings, [1, 2, 4, 8, 16, 30, 30, 30].map { .seconds($0) })
    XCTAssertEqual(backoff.failures, 8)
    backoff.reset()
    XCTAssertEqual(backoff.ceiling, .seconds(1))
    let short = backoff.shortDelay()
    XCTAssertTrue((Duration.seconds(1)...Duration.seconds(2)).contains(short))
    XCTAssertEqual(backoff.failures, 0)
    // Jitter: many draws at one ceiling are spread, not equal.
    var spread = Backoff(minimum: .seconds(1), maximum: .seconds(64))
    for _ in 0..<6 { _ = spread.nextDelay() }
    let draws = Set(
      (0..<20).map { _ -> Duration in
        var copy = spread
        return copy.nextDelay()
      })
    XCTAssertGreaterThan(draws.count, 10)
  }
}
