import JSON
import XCTest

final class UTF8ValidatorTests: XCTestCase {
  private let valid: [[UInt8]] = [
    [],
    Array("plain ASCII text that is longer than eight bytes".utf8),
    Array("κόσμε".utf8),
    Array("Hello-µ@ßöäüàá-UTF-8!!".utf8),
    [0xF0, 0x9F, 0x98, 0x80],  // U+1F600
    [0xF4, 0x8F, 0xBF, 0xBF],  // U+10FFFF, the last code point
    [0xED, 0x9F, 0xBF],  // U+D7FF, just below the surrogates
    [0xEE, 0x80, 0x80],  // U+E000, just above
    [0xEF, 0xBF, 0xBF],  // U+FFFF (a noncharacter, but valid UTF-8)
  ]

  private let invalid: [[UInt8]] = [
    [0x80],  // lone continuation
    [0xC0, 0xAF],  // overlong "/"
    [0xC1, 0xBF],  // overlong
    [0xE0, 0x80, 0xAF],  // overlong 3-byte
    [0xF0, 0x80, 0x80, 0xAF],  // overlong 4-byte
    [0xED, 0xA0, 0x80],  // U+D800, a surrogate
    [0xED, 0xBF, 0xBF],  // U+DFFF
    [0xF4, 0x90, 0x80, 0x80],  // U+110000
    [0xF5, 0x80, 0x80, 0x80],
    [0xFE], [0xFF],
    [0xCE, 0xBA, 0xE1, 0xBD],  // truncated at the end
    [0xC2],
  ]

  func testValidatorAcceptsValidSequencesIncludingTheEdgesOfUnicode() {
    for bytes in valid {
      XCTAssertTrue(UTF8Validator.isValid(bytes), "\(bytes)")
    }
  }

  func testValidatorRejectsOverlongFormsSurrogatesAndOutOfRangeCodePoints() {
    for bytes in invalid {
      XCTAssertFalse(UTF8Validator.isValid(bytes), "\(bytes)")
    }
  }

  /// Fragments can split a code point anywhere; the validator must carry state across.
  func testValidatorGivesTheSameAnswerForEverySplitPoint() {
    for bytes in valid + invalid {
      let whole = UTF8Validator.isValid(bytes)
      for split in 0...bytes.count {
        var validator = UTF8Validator()
        let first = validator.validate(Array(bytes[..<split]))
        let second = first && validator.validate(Array(bytes[split...]))
        XCTAssertEqual(second && validator.isComplete, whole, "\(bytes) split at \(split)")
      }
    }
  }

  /// RFC 6455 §8.1 lets an endpoint fail as soon as a byte cannot be valid: before the end.
  func testValidatorFailsFastAtTheFirstImpossibleByte() {
    var validator = UTF8Validator()
    XCTAssertTrue(validator.validate(Array("κόσμε".utf8)))
    XCTAssertFalse(validator.validate([0xED, 0xA0]))  // a surrogate is impossible after 2 bytes
    var truncated = UTF8Validator()
    XCTAssertTrue(truncated.validate([0xE2, 0x82]))
    XCTAssertFalse(truncated.isComplete)
  }

  func testASCIIFastPathStopsAtHighBytesAtAnyAlignment() {
    for prefix in 0..<150 {
      var bytes = [UInt8](repeating: 0x41, count: prefix)
      bytes += [0xC3, 0xA9] + [UInt8](repeating: 0x42, count: 9)
      XCTAssertTrue(UTF8Validator.isValid(bytes))
      bytes.append(0xFF)
      XCTAssertFalse(UTF8Validator.isValid(bytes))
    }
    // One impossible byte anywhere in a long ASCII run, whichever step of the fast path
    // (sixty-four, sixteen or eight bytes) covers it.
    for position in 0..<200 {
      var bytes = [UInt8](repeating: 0x61, count: 200)
      bytes[position] = 0x80
      XCTAssertFalse(UTF8Validator.isValid(bytes), "at \(position)")
      bytes[position] = 0x7F
      XCTAssertTrue(UTF8Validator.isValid(bytes), "at \(position)")
    }
  }
}
