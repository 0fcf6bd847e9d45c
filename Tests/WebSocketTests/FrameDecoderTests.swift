import TestSupport
import WebSocket
import XCTest

final class FrameDecoderTests: XCTestCase {
  private func decodeAll(_ bytes: [UInt8], decoder: inout FrameDecoder) throws -> [Frame] {
    decoder.append(bytes)
    var frames: [Frame] = []
    while case .frame(let frame) = try decoder.next() { frames.append(frame) }
    return frames
  }

  /// RFC 6455 §5.7: a single-frame unmasked text message "Hello".
  func testDecoderReadsTheRFCUnmaskedHelloExample() throws {
    var decoder = FrameDecoder()
    let frames = try decodeAll([0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f], decoder: &decoder)
    XCTAssertEqual(frames.count, 1)
    XCTAssertEqual(frames[0].opcode, .text)
    XCTAssertTrue(frames[0].fin)
    XCTAssertEqual(frames[0].payload, Array("Hello".utf8))
  }

  /// RFC 6455 §5.7: the masked "Hello" example, read by a server-role decoder.
  func testServerDecoderUnmasksTheRFCMaskedHelloExample() throws {
    var decoder = FrameDecoder(role: .server)
    let bytes: [UInt8] = [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]
    let frames = try decodeAll(bytes, decoder: &decoder)
    XCTAssertEqual(frames.first?.payload, Array("Hello".utf8))
    XCTAssertEqual(frames.first?.header.maskingKey, MaskingKey(0x37, 0xfa, 0x21, 0x3d))
  }

  private func address(_ bytes: [UInt8]) -> UInt? {
    bytes.withUnsafeBufferPointer { $0.baseAddress.map { UInt(bitPattern: $0) } }
  }

  private func next(_ decoder: inout FrameDecoder) throws -> Frame? {
    if case .frame(let frame) = try decoder.next() { return frame }
    return nil
  }

  func testARecycledPayloadHoldsTheNextFramesPayloadInItsMemory() throws {
    var decoder = FrameDecoder()
    decoder.append(ServerFrames.frame(0x1, Array("first message".utf8)))
    decoder.append(ServerFrames.frame(0x1, Array("second".utf8)))
    decoder.append(ServerFrames.frame(0x2, Array(repeating: 7, count: 300)))
    var first = try XCTUnwrap(try next(&decoder)).payload
    let memory = address(first)
    decoder.recycle(first)
    first = []  // the consumer lets go: the decoder's copy is the only one
    let second = try XCTUnwrap(try next(&decoder))
    XCTAssertEqual(second.payload, Array("second".utf8))
    XCTAssertEqual(address(second.payload), memory)
    decoder.recycle(second.payload)
    // A longer payload grows the recycled array (and is still right).
    XCTAssertEqual(try next(&decoder)?.payload, Array(repeating: 7, count: 300))
  }

  func testARecycledPayloadStillHeldByItsConsumerIsNeverChanged() throws {
    var decoder = FrameDecoder()
    decoder.append(ServerFrames.frame(0x1, Array("kept by a subscriber".utf8)))
    decoder.append(ServerFrames.frame(0x1, Array("next".utf8)))
    let kept = try XCTUnwrap(try next(&decoder)).payload
    decoder.recycle(kept)
    let next = try XCTUnwrap(try next(&decoder)).payload
    XCTAssertEqual(kept, Array("kept by a subscriber".utf8))
    XCTAssertEqual(next, Array("next".utf8))
    XCTAssertNotEqual(address(next), address(kept))
  }

  func testBigPayloadsAreNotKeptForRecycling() throws {
    var decoder = FrameDecoder()
    let big = [UInt8](repeating: 1, count: 10_000)
    decoder.append(ServerFrames.frame(0x2, big))
    decoder.append(ServerFrames.frame(0x2, [2, 3]))
    var first = try XCTUnwrap(try next(&decoder)).payload
    let memory = address(first)
    decoder.recycle(first)
    first = []
    let second = try XCTUnwrap(try next(&decoder)).payload
    XCTAssertEqual(second, [2, 3])
    XCTAssertNotEqual(address(second), memory)
    XCTAssertLessThan(second.capacity, 10_000)
  }

  func testDecoderReadsSevenSixteenAndSixtyFourBitLengths() throws {
    for length in [0, 1, 125, 126, 127, 65535, 65536, 200_000] {
      var decoder = FrameDecoder()
      let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0) }
      let frames = try decodeAll(ServerFrames.frame(0x2, payload), decoder: &decoder)
      XCTAssertEqual(frames.count, 1, "length \(length)")
      XCTAssertEqual(frames.first?.payload, payload, "length \(length)")
      XCTAssertEqual(decoder.bufferedByteCount, 0)
    }
  }

  /// Input may be split anywhere: feed a stream of mixed frames at every split point.
  func testDecoderAcceptsAStreamSplitAtEveryByte() throws {
    let stream =
      ServerFrames.text("Hello", fin: false) + ServerFrames.frame(0x9, Array("ping".utf8))
      + ServerFrames.frame(0x0, Array(" world".utf8))
      + ServerFrames.frame(0x2, Array(repeating: 7, count: 300))
      + ServerFrames.close(1000, Array("bye".utf8))
    var expected = FrameDecoder()
    let reference = try decodeAll(stream, decoder: &expected)
    XCTAssertEqual(reference.map(\.opcode), [.text, .ping, .continuation, .binary, .close])
    for split in 0...stream.count {
      var decoder = FrameDecoder()
      var frames = try decodeAll(Array(stream[..<split]), decoder: &decoder)
      frames += try decodeAll(Array(stream[split...]), decoder: &decoder)
      XCTAssertEqual(frames, reference, "split at \(split)")
    }
    // And one byte at a time.
    var decoder = FrameDecoder()
    var frames: [Frame] = []
    for byte in stream { frames += try decodeAll([byte], decoder: &decoder) }
    XCTAssertEqual(frames, reference)
  }

  func testDecoderRejectsReservedOpcodes() {
    for opcode: UInt8 in [3, 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF] {
      var decoder = FrameDecoder()
      decoder.append([0x80 | opcode, 0x00])
      XCTAssertThrowsError(try decoder.next()) { error in
        XCTAssertEqual(error as? ProtocolViolation, .reservedOpcode(opcode))
        XCTAssertEqual((error as? ProtocolViolation)?.closeCode, .protocolError)
      }
    }
  }

  func testDecoderRejectsReservedBitsUnlessCompressionWasNegotiated() throws {
    for rsv: UInt8 in [1, 2, 4, 3, 7] {
      var decoder = FrameDecoder()
      decoder.append(ServerFrames.frame(0x1, [0x41], rsv: rsv))
      XCTAssertThrowsError(try decoder.next(), "rsv \(rsv)")
    }
    var deflating = FrameDecoder(allowsCompressedBit: true)
    deflating.append(ServerFrames.frame(0x1, [0x41], rsv: 4))
    guard case .frame(let frame) = try deflating.next() else { return XCTFail("no frame") }
    XCTAssertTrue(frame.header.rsv1)
    deflating.append(ServerFrames.frame(0x1, [0x41], rsv: 2))
    XCTAssertThrowsError(try deflating.next())
  }

  func testDecoderRejectsCompressedControlFrames() {
    var decoder = FrameDecoder(allowsCompressedBit: true)
    decoder.append(ServerFrames.frame(0x9, [], rsv: 4))
    XCTAssertThrowsError(try decoder.next()) { error in
      XCTAssertEqual(error as? ProtocolViolation, .compressedBitOnWrongFrame(.ping))
    }
  }

  /// RFC 6455 §5.1: a client must fail on a masked frame from the server.
  func testClientDecoderRejectsMaskedFrames() {
    var decoder = FrameDecoder()
    decoder.append([0x81, 0x85, 1, 2, 3, 4, 0, 0, 0, 0, 0])
    XCTAssertThrowsError(try decoder.next()) { error in
      XCTAssertEqual(error as? ProtocolViolation, .maskedFrameFromServer)
    }
    var server = FrameDecoder(role: .server)
    server.append([0x81, 0x00])
    XCTAssertThrowsError(try server.next()) { error in
      XCTAssertEqual(error as? ProtocolViolation, .unmaskedFrameFromClient)
    }
  }

  /// RFC 6455 §5.5: control frames carry at most 125 bytes and are never fragmented.
  func testDecoderRejectsFragmentedAndOversizedControlFrames() {
    var long = FrameDecoder()
    long.append(ServerFrames.frame(0x9, Array(repeating: 0, count: 126)))
    XCTAssertThrowsError(try long.next()) { error in
      XCTAssertEqual(error as? ProtocolViolation, .controlFrameTooLong(126))
    }
    var fragmented = FrameDecoder()
    fragmented.append(ServerFrames.frame(0xA, [], fin: false))
    XCTAssertThrowsError(try fragmented.next()) { error in
      XCTAssertEqual(error as? ProtocolViolation, .fragmentedControlFrame(.pong))
    }
  }

  /// Header errors fail as soon as the first two bytes arrive.
  func testDecoderFailsOnTheFirstTwoBytesOfABadHeader() {
    var decoder = FrameDecoder()
    decoder.append([0x83])
    XCTAssertEqual(try decoder.next(), .needMoreData)
    decoder.append([0x7E])
    XCTAssertThrowsError(try decoder.next())
  }

  func testDecoderRejectsSixtyFourBitLengthsWithTheHighBitSet() {
    var decoder = FrameDecoder()
    decoder.append([0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 1])
    XCTAssertThrowsError(try decoder.next()) { error in
      XCTAssertEqual(error as? ProtocolViolation, .invalidPayloadLength)
    }
  }

  func testDecoderAnswersFramesOverTheLimitWithMessageTooBig() {
    var decoder = FrameDecoder(maxFrameSize: 1000)
    decoder.append([0x82, 126, 0x03, 0xE9])
    XCTAssertThrowsError(try decoder.next()) { error in
      XCTAssertEqual(error as? ProtocolViolation, .frameTooLarge(length: 1001, limit: 1000))
      XCTAssertEqual((error as? ProtocolViolation)?.closeCode, .messageTooBig)
    }
    var exact = FrameDecoder(maxFrameSize: 1000)
    exact.append(ServerFrames.frame(0x2, Array(repeating: 1, count: 1000)))
    XCTAssertNoThrow(try exact.next())
  }

  func testDecoderExposesThePrefixOfALongFrameWhileItArrives() throws {
    var decoder = FrameDecoder()
    let bytes = ServerFrames.frame(0x1, Array(repeating: 0x61, count: 1000))
    decoder.append(Array(bytes[..<104]))
    XCTAssertEqual(try decoder.next(), .needMoreData)
    XCTAssertEqual(decoder.partialFrame?.header.payloadLength, 1000)
    XCTAssertEqual(decoder.partialFrame?.payloadPrefix.count, 100)
    decoder.append(Array(bytes[104...]))
    guard case .frame(let frame) = try decoder.next() else { return XCTFail("no frame") }
    XCTAssertEqual(frame.payload.count, 1000)
    XCTAssertNil(decoder.partialFrame)
  }

  /// Found by the fuzzer: a masked frame arriving in pieces exposed a still-masked prefix,
  /// so a server checked masked bytes as UTF-8.
  func testServerDecoderExposesAnUnmaskedPrefixWhileAMaskedFrameArrives() throws {
    let bytes: [UInt8] = [0x81, 0x85, 0x80, 0x80, 0x80, 0x80, 0xc8, 0xe5, 0xec, 0xec, 0xef]
    var decoder = FrameDecoder(role: .server)
    var frames: [Frame] = []
    for byte in bytes {
      decoder.append([byte])
      if case .frame(let frame) = try decoder.next() { frames.append(frame) }
      if let partial = decoder.partialFrame {
        XCTAssertEqual(
          partial.payloadPrefix, Array(Array("Hello".utf8).prefix(partial.payloadPrefix.count)))
      }
    }
    XCTAssertEqual(frames.map(\.payload), [Array("Hello".utf8)])
  }

  func testServerSessionAcceptsMaskedTextSplitAtEveryByteAndRejectsMaskedInvalidUTF8() throws {
    var encoder = FrameEncoder(masking: SplitMix64())
    var valid: [UInt8] = []
    encoder.encode(opcode: .text, payload: Array("κόσμε and more text".utf8), into: &valid)
    var invalid: [UInt8] = []
    encoder.encode(opcode: .text, payload: [0xFF, 0x61], into: &invalid)
    for (bytes, expectText) in [(valid, true), (invalid, false)] {
      let session = try FrameSession(
        role: .server, limits: ClientConnection.Limits(), encoder: FrameEncoder(), compression: nil)
      var events: [FrameSession.Event] = []
      for byte in bytes {
        [byte].withUnsafeBytes { session.receive($0) }
        while let event = session.nextEvent() { events.append(event) }
      }
      if expectText {
        XCTAssertEqual(events, [.message(.text(Array("κόσμε and more text".utf8)))])
      } else {
        XCTAssertEqual(events, [])
        XCTAssertEqual(session.state, .closing)
      }
    }
  }
}
