import WebSocket
import XCTest

final class SHA1Tests: XCTestCase {
  private func hex(_ bytes: [UInt8]?) -> String {
    (bytes ?? []).map {
      String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16)
    }
    .joined()
  }

  func testFIPSVectors() {
    XCTAssertEqual(hex(SHA1.digest([])), "da39a3ee5e6b4b0d3255bfef95601890afd80709")
    XCTAssertEqual(hex(SHA1.digest(Array("abc".utf8))), "a9993e364706816aba3e25717850c26c9cd0d89d")
    XCTAssertEqual(
      hex(SHA1.digest(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))),
      "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
    XCTAssertEqual(
      hex(SHA1.digest([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))),
      "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
  }

  func testLengthsAroundTheBlockAndPaddingBoundaries() {
    // Digests from Python's hashlib of bytes (i * 7 + 3) % 256.
    let expected = [
      55: "ddf57317ef34bfee3b6df83d359098930eb278bc",
      56: "a0d492bb0fc889d0eca3bc137066ab6f4f74f369",
      63: "c55856749bef509bdfe6bfebfc7bf4e793e82132",
      64: "bede92be29c3874e1b54ddc77988d606fc857a8e",
      119: "504e27376a6e0f0dba8295b85cb25dc4dfa17d23",
      200: "892b673ca3c696ab13ab8aab3cf3abfbc3aaeb3b",
    ]
    for (length, digest) in expected {
      let input = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 7 + 3) }
      XCTAssertEqual(hex(SHA1.digest(input)), digest, "length \(length)")
    }
  }

  func testTheSecureGeneratorYieldsFreshValuesAcrossRefills() {
    var generator = SecureRandomGenerator()
    let values = (0..<1000).map { _ in generator.next() }
    XCTAssertEqual(Set(values).count, values.count)
  }
}
