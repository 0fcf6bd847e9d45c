import JSON
import TestSupport
import XCTest

@testable import WebSocket

final class FrameSessionSendingTests: XCTestCase {
  private func session(compressed: Bool) throws -> FrameSession {
    let compression = FrameSession.Compression(
      outgoingWindowBits: 15, outgoingNoContextTakeover: false, incomingNoContextTakeover: false,
      threshold: 8, level: 6)
    return try FrameSession(
      role: .client, limits: ClientConnection.Limits(),
      encoder: FrameEncoder(masking: SplitMix64(seed: 9)),
      compression: compressed ? compression : nil)
  }

  private let messages: [Message] = [
    .text(Array("first message".utf8)), .binary([0, 1, 2, 0xFF]), .text(Array("κόσμε".utf8)),
    .text([]), .text(Array(repeating: UInt8(ascii: "x"), count: 70_000)),
  ]

  func testARunOfMessagesIsFramedAsTheSameMessagesSentOneByOne() throws {
    for compressed in [false, true] {
      let one = try session(compressed: compressed)
      for message in messages { try one.send(message) }
      let run = try session(compressed: compressed)
      var queued = 0
      try run.send(contentsOf: messages, queued: &queued)
      XCTAssertEqual(queued, messages.count)
      XCTAssertEqual(run.takeOutbound(), one.takeOutbound(), "compressed: \(compressed)")
      // The encoder was handed back: the next frame is masked as it would have been.
      try one.send(.text(Array("after".utf8)))
      try run.send(contentsOf: [.text(Array("after".utf8))], queued: &queued)
      XCTAssertEqual(run.takeOutbound(), one.takeOutbound())
    }
  }

  func testTextThatIsNotUTF8StopsTheRunAndKeepsWhatWentBefore() throws {
    for compressed in [false, true] {
      let one = try session(compressed: compressed)
      try one.send(messages[0])
      try one.send(messages[1])
      let run = try session(compressed: compressed)
      var queued = 0
      XCTAssertThrowsError(
        try run.send(
          contentsOf: [messages[0], messages[1], .text([0xC3, 0x28]), messages[2]], queued: &queued)
      ) { error in
        XCTAssertEqual(error as? ClientConnection.SendError, .invalidUTF8)
      }
      XCTAssertEqual(queued, 2)
      XCTAssertEqual(run.takeOutbound(), one.takeOutbound(), "compressed: \(compressed)")
    }
  }

  func testARunOnAClosingSessionIsRefusedWhole() throws {
    let run = try session(compressed: false)
    try run.close()
    _ = run.takeOutbound()
    var queued = 0
    XCTAssertThrowsError(try run.send(contentsOf: messages, queued: &queued))
    XCTAssertEqual(queued, 0)
    XCTAssertEqual(run.takeOutbound(), [])
  }

  private let texts: [[UInt8]] = [
    Array("first message".utf8), Array("κόσμε".utf8), [], Array(repeating: 0x78, count: 70_000),
  ]

  private func packed(_ texts: [[UInt8]]) -> PackedStrings {
    var packed = PackedStrings()
    for text in texts { text.withUnsafeBytes { packed.append(utf8: $0) } }
    return packed
  }

  func testTextsKeptInOneBufferAreFramedAsTheSameTextsSentOneByOne() throws {
    for compressed in [false, true] {
      let one = try session(compressed: compressed)
      for text in texts { try one.send(.text(text)) }
      let run = try session(compressed: compressed)
      var queued = 0
      try run.send(texts: packed(texts), queued: &queued)
      XCTAssertEqual(queued, texts.count)
      XCTAssertEqual(run.takeOutbound(), one.takeOutbound(), "compressed: \(compressed)")
      try one.send(.text(Array("after".utf8)))
      try run.send(texts: packed([Array("after".utf8)]), queued: &queued)
      XCTAssertEqual(run.takeOutbound(), one.takeOutbound())
      XCTAssertEqual(queued, texts.count + 1)
    }
  }

  func testATextOfTheBufferThatIsNotUTF8StopsTheRunAndKeepsWhatWentBefore() throws {
    for compressed in [false, true] {
      let one = try session(compressed: compressed)
      try one.send(.text(texts[0]))
      try one.send(.text(texts[1]))
      let run = try session(compressed: compressed)
      var queued = 0
      XCTAssertThrowsError(
        try run.send(texts: packed([texts[0], texts[1], [0xC3, 0x28], texts[2]]), queued: &queued)
      ) { error in
        XCTAssertEqual(error as? ClientConnection.SendError, .invalidUTF8)
      }
      XCTAssertEqual(queued, 2)
      XCTAssertEqual(run.takeOutbound(), one.takeOutbound(), "compressed: \(compressed)")
    }
  }

  func testTextsOnAClosingSessionAreRefusedWhole() throws {
    let run = try session(compressed: false)
    try run.close()
    _ = run.takeOutbound()
    var queued = 0
    XCTAssertThrowsError(try run.send(texts: packed(texts), queued: &queued))
    XCTAssertEqual(queued, 0)
    XCTAssertEqual(run.takeOutbound(), [])
  }
}
