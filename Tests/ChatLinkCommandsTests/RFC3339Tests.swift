import ChatLinkCommands
import XCTest

final class RFC3339Tests: XCTestCase {
  func testUTCTimesParseToTheStoresSpelling() {
    XCTAssertEqual(
      RFC3339Time(parsing: "2026-12-02T12:00:00Z")?.utcText, "2026-12-02T12:00:00.000000Z")
    XCTAssertEqual(
      RFC3339Time(parsing: "2026-12-02T12:00:00.123456789Z")?.utcText,
      "2026-12-02T12:00:00.123456Z")
    XCTAssertEqual(
      RFC3339Time(parsing: "2026-12-02t12:00:00.5z")?.utcText, "2026-12-02T12:00:00.500000Z")
  }

  func testOffsetsAreConvertedToUTC() {
    XCTAssertEqual(
      RFC3339Time(parsing: "2026-12-02T01:30:00+02:00")?.utcText, "2026-12-01T23:30:00.000000Z")
    XCTAssertEqual(
      RFC3339Time(parsing: "2026-12-31 23:00:00-01:00")?.utcText, "2027-01-01T00:00:00.000000Z")
  }

  func testAFullDateMeansMidnightUTC() {
    XCTAssertEqual(RFC3339Time(parsing: "2024-02-29")?.utcText, "2024-02-29T00:00:00.000000Z")
    XCTAssertEqual(RFC3339Time(parsing: "1970-01-01")?.seconds, 0)
  }

  func testAnythingElseIsRejected() {
    for text in [
      "", "yesterday", "2026-12-02T12:00:00", "2026-13-01", "2025-02-29", "2026-12-02T24:00:00Z",
      "2026-12-02T12:00:00+2:00", "2026-12-02T12:00:00.Z", "2026-12-02T12:00:00Zjunk", "12:00",
    ] {
      XCTAssertNil(RFC3339Time(parsing: text), text)
    }
  }
}
