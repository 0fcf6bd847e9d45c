import JSON
import LinkCore
import WebSocket
import XCTest

final class RetryAfterTests: XCTestCase {
  private let now = Timestamp(rfc3339: "2026-12-02T12:00:00Z")!

  func testDelaySecondsAreTakenAsGiven() {
    XCTAssertEqual(RetryAfterDelay.delay(.seconds(5), now: now), .seconds(5))
  }

  func testAnHTTPDateIsAWaitUntilThatTime() {
    XCTAssertEqual(
      RetryAfterDelay.delay(.date("Wed, 02 Dec 2026 12:00:07 GMT"), now: now), .seconds(7))
    // The obsolete forms a recipient must accept (RFC 9110 §5.6.7).
    XCTAssertEqual(
      RetryAfterDelay.delay(.date("Wednesday, 02-Dec-26 12:01:00 GMT"), now: now), .seconds(60))
    XCTAssertEqual(
      RetryAfterDelay.delay(.date("Wed Dec  2 13:00:00 2026"), now: now), .seconds(3600))
  }

  func testADateInThePastMeansNow() {
    XCTAssertEqual(
      RetryAfterDelay.delay(.date("Tue, 01 Dec 2026 12:00:00 GMT"), now: now), .seconds(0))
  }

  func testMalformedDatesAreNotRead() {
    for text in [
      "", "tomorrow", "Wed, 32 Dec 2026 12:00:00 GMT", "Wed, 02 Foo 2026 12:00:00 GMT",
      "Wed, 02 Dec 2026 12:00 GMT", "Wed, 02 Dec 2026 12:00:00 CET",
      "Wed, 29 Feb 2026 12:00:00 GMT",
    ] {
      XCTAssertNil(RetryAfterDelay.delay(.date(text), now: now), text)
    }
  }

  func testTheHeaderIsReadFromAResponse() {
    let head = HTTPResponseHead(
      status: 503, reason: "Service Unavailable",
      headers: ["Retry-After": "Wed, 02 Dec 2026 12:00:30 GMT"])
    XCTAssertEqual(head.retryAfter.flatMap { RetryAfterDelay.delay($0, now: now) }, .seconds(30))
  }
}
