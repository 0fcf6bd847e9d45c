import XCTest

@testable import ChatLinkCore

/// FNV-1a against the published test vectors: the room index files on disk depend on it.
final class FNV1aTests: XCTestCase {
  func testThirtyTwoBitHashesMatchTheReferenceVectors() {
    XCTAssertEqual(FNV1a<UInt32>.hash("".utf8), 0x811C_9DC5)
    XCTAssertEqual(FNV1a<UInt32>.hash("a".utf8), 0xE40C_292C)
    XCTAssertEqual(FNV1a<UInt32>.hash("foobar".utf8), 0xBF9C_F968)
  }

  func testSixtyFourBitHashesMatchTheReferenceVectors() {
    XCTAssertEqual(FNV1a<UInt64>.hash("".utf8), 0xCBF2_9CE4_8422_2325)
    XCTAssertEqual(FNV1a<UInt64>.hash("a".utf8), 0xAF63_DC4C_8601_EC8C)
    XCTAssertEqual(FNV1a<UInt64>.hash("foobar".utf8), 0x8594_4171_F739_67E8)
  }

  func testCombiningPiecesEqualsHashingTheWhole() {
    var hasher = FNV1a<UInt32>()
    hasher.combine("foo".utf8)
    hasher.combine("bar".utf8)
    XCTAssertEqual(hasher.value, FNV1a<UInt32>.hash("foobar".utf8))
  }
}
