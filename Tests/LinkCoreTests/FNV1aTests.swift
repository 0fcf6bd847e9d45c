import LinkCore
import XCTest

/// FNV-1a against the published test vectors: the room index files on disk depend on it.
final class FNV1aTests: XCTestCase {
  func testThirtyTwoBitHashesMatchTheReferenceVectors() {
    XCTAssertEqual(FNV1a.hash32("".utf8), 0x811C_9DC5)
    XCTAssertEqual(FNV1a.hash32("a".utf8), 0xE40C_292C)
    XCTAssertEqual(FNV1a.hash32("foobar".utf8), 0xBF9C_F968)
  }

  func testSixtyFourBitHashesMatchTheReferenceVectors() {
    XCTAssertEqual(FNV1a.hash64("".utf8), 0xCBF2_9CE4_8422_2325)
    XCTAssertEqual(FNV1a.hash64("a".utf8), 0xAF63_DC4C_8601_EC8C)
    XCTAssertEqual(FNV1a.hash64("foobar".utf8), 0x8594_4171_F739_67E8)
  }

  func testCombiningPiecesEqualsHashingTheWhole() {
    let pieces = FNV1a.hash32("bar".utf8, continuing: FNV1a.hash32("foo".utf8))
    XCTAssertEqual(pieces, FNV1a.hash32("foobar".utf8))
  }

  func testASecretBasisChangesEveryHashButHashesEqualBytesEqually() {
    let basis: UInt64 = 0x0123_4567_89AB_CDEF
    XCTAssertNotEqual(FNV1a.hash64("foobar".utf8, basis: basis), FNV1a.hash64("foobar".utf8))
    XCTAssertEqual(
      FNV1a.hash64(Array("foobar".utf8), basis: basis), FNV1a.hash64("foobar".utf8, basis: basis))
  }
}
