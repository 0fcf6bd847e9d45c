import TestSupport
import WebSocket
import XCTest

final class FrameEncoderTests: XCTestCase {
  /// RFC 6455 §5.7: masked "Hello" with key 37 fa 21 3d.
  func testEncoderReproducesTheRFCMaskedHelloExample() {
    // The key is drawn from the low 32 bits, first byte lowest.
    var encoder = FrameEncoder(masking: FixedGenerator(word: 0x3d21_fa37))
    var out: [UInt8] = []
    encoder.encode(opcode: .text, payload: Array("Hello".utf8), into: &out)
    XCTAssertEqual(out, [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58])
  }

  func testUnmaskedEncoderReproducesTheRFCUnmaskedExample() {
    var encoder = FrameEncoder()
    var out: [UInt8] = []
    encoder.encode(opcode: .text, payload: Array("Hello".utf8), into: &out)
    XCTAssertEqual(out, [0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f])
  }

  func testEncodedFramesRoundTripThroughAServerDecoderForEveryLengthClass() throws {
    var encoder = FrameEncoder(masking: SplitMix64())
    for length in [0, 5, 125, 126, 1000, 65535, 65536, 100_000] {
      let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31) }
      var out: [UInt8] = []
      encoder.encode(opcode: .binary, fin: length % 2 == 0, payload: payload, into: &out)
      XCTAssertEqual(out.count, encoder.headerSize(payloadLength: length) + length)
      let frames = clientFrames(out)
      XCTAssertEqual(frames.count, 1)
      XCTAssertEqual(frames.first?.payload, payload)
      XCTAssertEqual(frames.first?.fin, length % 2 == 0)
      XCTAssertNotNil(frames.first?.header.maskingKey)
    }
  }

  func testMaskingIsDeterministicWithAnInjectedGenerator() {
    var a = FrameEncoder(masking: SplitMix64(seed: 7))
    var b = FrameEncoder(masking: SplitMix64(seed: 7))
    var outA: [UInt8] = []
    var outB: [UInt8] = []
    for _ in 0..<3 {
      a.encode(opcode: .text, payload: Array("same".utf8), into: &outA)
      b.encode(opcode: .text, payload: Array("same".utf8), into: &outB)
    }
    XCTAssertEqual(outA, outB)
    // Each frame draws a new key.
    XCTAssertNotEqual(outA[2..<6], outA[12..<16])
  }

  func testMaskingAtAnyOffsetMatchesBytewiseXor() {
    let key = MaskingKey(0x12, 0x34, 0x56, 0x78)
    let keyBytes: [UInt8] = [0x12, 0x34, 0x56, 0x78]
    for offset in 0..<4 {
      // Every length up to past two vector steps, a word and a half-word: each path and each
      // hand-over between them.
      for length in Array(0...52) + [64, 131, 4096] {
        var data = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let expected = data.enumerated().map { $1 ^ keyBytes[($0 + offset) % 4] }
        data.withUnsafeMutableBytes { key.apply(to: $0, offset: offset) }
        XCTAssertEqual(data, expected, "offset \(offset) length \(length)")
      }
    }
  }

  func testSecureRandomGeneratorProducesDistinctWords() {
    var generator = SecureRandomGenerator()
    // Past three refills of the pool: a refill that failed or repeated would show.
    let words = (0..<1600).map { _ in generator.next() }
    XCTAssertEqual(Set(words).count, words.count)
    XCTAssertEqual(Set(words[1024..<1536]).intersection(words[0..<512]), [])
  }

  func testAnEncoderMaskingWithTheSecureGeneratorDrawsAFreshKeyForEveryFrame() throws {
    var encoder = FrameEncoder(masking: SecureRandomGenerator())
    XCTAssertEqual(encoder.headerSize(payloadLength: 5), 6)
    var out: [UInt8] = []
    let payload = Array("hello".utf8)
    for _ in 0..<64 { encoder.encode(opcode: .text, payload: payload, into: &out) }
    var keys: Set<[UInt8]> = []
    for frame in 0..<64 {
      let start = frame * 11
      XCTAssertEqual(out[start], 0x81)
      XCTAssertEqual(out[start + 1], 0x80 | 5)
      let key = Array(out[(start + 2)..<(start + 6)])
      keys.insert(key)
      let unmasked = (0..<5).map { out[start + 6 + $0] ^ key[$0 % 4] }
      XCTAssertEqual(unmasked, payload)
    }
    XCTAssertEqual(out.count, 64 * 11)
    XCTAssertGreaterThan(keys.count, 60)
    XCTAssertEqual(FrameEncoder().headerSize(payloadLength: 5), 2)
  }
}
