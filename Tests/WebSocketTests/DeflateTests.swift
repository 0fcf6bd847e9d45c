import WebSocket
import XCTest

final class DeflateTests: XCTestCase {
  /// RFC 7692 §7.2.3.1: "Hello" compresses to f2 48 cd c9 c9 07 00.
  func testDeflaterReproducesTheRFC7692HelloExample() throws {
    let deflater = try MessageDeflater.make()
    XCTAssertEqual(
      try deflater.compress(Array("Hello".utf8)), [0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00])
    // §7.2.3.2: with context takeover the second "Hello" refers back to the first.
    XCTAssertEqual(try deflater.compress(Array("Hello".utf8)), [0xf2, 0x00, 0x11, 0x00, 0x00])
  }

  func testDeflaterWithoutContextTakeoverRepeatsItsOutput() throws {
    let deflater = try MessageDeflater.make(noContextTakeover: true)
    let first = try deflater.compress(Array("Hello".utf8))
    XCTAssertEqual(try deflater.compress(Array("Hello".utf8)), first)
  }

  func testInflaterReadsTheRFCExamplesIncludingAnUncompressedBlock() throws {
    let inflater = try MessageInflater.make()
    var out: [UInt8] = []
    try [UInt8]([0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00]).withUnsafeBytes {
      try inflater.inflate($0, isFinal: true, limit: 100, into: &out)
    }
    XCTAssertEqual(out, Array("Hello".utf8))
    // §7.2.3.3: a stored (uncompressed) block.
    out = []
    try [UInt8]([0x00, 0x05, 0x00, 0xfa, 0xff, 0x48, 0x65, 0x6c, 0x6c, 0x6f, 0x00]).withUnsafeBytes
    {
      try inflater.inflate($0, isFinal: true, limit: 100, into: &out)
    }
    XCTAssertEqual(out, Array("Hello".utf8))
  }

  /// RFC 7692 §7.2.3.4: a message may be split over frames at any byte.
  func testInflaterAcceptsFragmentsSplitAnywhere() throws {
    let payload = Array(String(repeating: "chat message ", count: 200).utf8)
    let compressed = try MessageDeflater.make().compress(payload)
    for split in stride(from: 0, through: compressed.count, by: 3) {
      let inflater = try MessageInflater.make()
      var out: [UInt8] = []
      try Array(compressed[..<split]).withUnsafeBytes {
        try inflater.inflate($0, isFinal: false, limit: 1 << 20, into: &out)
      }
      try Array(compressed[split...]).withUnsafeBytes {
        try inflater.inflate($0, isFinal: true, limit: 1 << 20, into: &out)
      }
      XCTAssertEqual(out, payload, "split at \(split)")
    }
  }

  /// A few kilobytes can inflate to gigabytes; the limit must apply while inflating.
  func testInflaterStopsADecompressionBombAtTheLimit() throws {
    let bomb = try MessageDeflater.make().compress([UInt8](repeating: 0, count: 8 << 20))
    XCTAssertLessThan(bomb.count, 20_000)
    let inflater = try MessageInflater.make()
    var out: [UInt8] = []
    XCTAssertThrowsError(
      try bomb.withUnsafeBytes {
        try inflater.inflate($0, isFinal: true, limit: 1 << 20, into: &out)
      }
    ) { error in
      XCTAssertEqual(error as? DeflateError, .limitExceeded(limit: 1 << 20))
    }
    XCTAssertLessThanOrEqual(out.count, 1 << 20)
  }

  func testInflaterRejectsGarbage() throws {
    let inflater = try MessageInflater.make()
    var out: [UInt8] = []
    XCTAssertThrowsError(
      try [UInt8]([0xff, 0xff, 0xff, 0xff]).withUnsafeBytes {
        try inflater.inflate($0, isFinal: true, limit: 100, into: &out)
      })
  }

  func testEmptyMessageCompressesToASingleByte() throws {
    let compressed = try MessageDeflater.make().compress([])
    XCTAssertEqual(compressed, [0x00])
    let inflater = try MessageInflater.make()
    var out: [UInt8] = [9]
    try compressed.withUnsafeBytes {
      try inflater.inflate($0, isFinal: true, limit: 10, into: &out)
    }
    XCTAssertEqual(out, [9])
  }

  func testSmallWindowsRoundTrip() throws {
    let payload = (0..<50_000).map { UInt8(truncatingIfNeeded: $0 % 251 ^ $0 % 13) }
    for bits in 9...15 {
      let compressed = try MessageDeflater.make(windowBits: bits).compress(payload)
      let inflater = try MessageInflater.make()
      var out: [UInt8] = []
      try compressed.withUnsafeBytes {
        try inflater.inflate($0, isFinal: true, limit: 1 << 20, into: &out)
      }
      XCTAssertEqual(out, payload, "window \(bits)")
    }
  }
}
