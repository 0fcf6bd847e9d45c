import ChatLinkCore
import Foundation
import WebSocket
import XCTest

final class ProtocolTests: XCTestCase {
  private let entry = OutboxEntry(
    id: "c-1", room: RoomID("7"), text: "deploy \"finished\"", count: 3,
    created: Timestamp(microseconds: 0))

  func testEnvelopeEncodesTheSeedsSendMessageEvent() throws {
    let envelope = EnvelopeProtocol(sender: "ops-bot")
    let text = try XCTUnwrap(envelope.encode(entry).text)
    XCTAssertEqual(
      text,
      #"{"event":"send-message","data":{"room_id":7,"message":"deploy \"finished\"","sender":"ops-bot","count":3,"client_id":"c-1"}}"#
    )
    XCTAssertEqual(
      envelope.join(RoomID("ops")!)?.text, #"{"event":"join-room","data":{"room_id":"ops"}}"#)
    XCTAssertEqual(
      envelope.leave(RoomID("7")!)?.text, #"{"event":"leave-room","data":{"room_id":7}}"#)
    XCTAssertTrue(envelope.hasRooms)
  }

  func testEnvelopeFieldAndEventNamesAreConfigurable() throws {
    var names = Configuration.Envelope()
    names.eventField = "type"
    names.dataField = "payload"
    names.roomField = "channel"
    names.sendEvent = "post"
    names.clientIDField = "nonce"
    let envelope = EnvelopeProtocol(names: names, sender: "bot")
    let text = try XCTUnwrap(envelope.encode(entry).text)
    XCTAssertTrue(text.hasPrefix(#"{"type":"post","payload":{"channel":7,"#), text)
    XCTAssertTrue(text.contains(#""nonce":"c-1""#))
    let inbound = envelope.decode(
      .text(Array(#"{"type":"message","payload":{"channel":"dev","nonce":"x9"}}"#.utf8)))
    XCTAssertEqual(inbound.room, Array("\"dev\"".utf8))
    XCTAssertEqual(inbound.echoedClientID, "x9")
    XCTAssertEqual(inbound.event, "message")
  }

  /// The event name is compared as bytes; an escaped spelling is still the same name, and a
  /// longer or other name is not an echo.
  func testEnvelopeRecognisesAnEchoWhateverTheEventNamesEscapingAndNothingElse() {
    let envelope = EnvelopeProtocol(sender: "bot")
    func decode(_ event: String) -> InboundMessage {
      envelope.decode(
        .text(Array(#"{"event":"\#(event)","data":{"room_id":7,"client_id":"c-9"}}"#.utf8)))
    }
    let escaped = decode(#"mess\u0061ge"#)
    XCTAssertEqual(escaped.echoedClientID, "c-9")
    XCTAssertEqual(escaped.event, "message")
    for other in ["messages", "messag", "Message", "", #"message\n"#] {
      XCTAssertNil(decode(other).echoedClientID, other)
    }
    let numeric = envelope.decode(
      .text(Array(#"{"event":7,"data":{"room_id":7,"client_id":"c-9"}}"#.utf8)))
    XCTAssertNil(numeric.echoedClientID)
    XCTAssertNil(numeric.event)
  }

  func testEnvelopeDecodesRoomsAndEchoesAndKeepsFramesThatDoNotParse() {
    let envelope = EnvelopeProtocol(sender: "bot")
    let message = envelope.decode(
      .text(
        Array(
          #"{"event":"message","data":{"room_id":7,"message":"hi","sender":"bob","client_id":"c-1"}}"#
            .utf8)))
    XCTAssertEqual(message.room, Array("7".utf8))
    XCTAssertEqual(message.echoedClientID, "c-1")
    XCTAssertNotNil(message.scan ?? nil)
    let notJSON = envelope.decode(.text(Array("hello".utf8)))
    XCTAssertNil(notJSON.room)
    XCTAssertEqual(notJSON.scan.map { $0 == nil }, true)
    let objectRoom = envelope.decode(
      .text(Array(#"{"event":"x","data":{"room_id":{"a":1}}}"#.utf8)))
    XCTAssertNil(objectRoom.room)
    let binary = envelope.decode(.binary([1, 2]))
    XCTAssertNil(binary.scan ?? nil)
  }

  func testEnvelopeQuotesEveryTextExactlyAsJSON() throws {
    let envelope = EnvelopeProtocol(sender: "ops \"bot\"")
    for text in ["plain", "quote \" back \\ slash", "ctl \u{01}\u{1F}\u{7F}\t\n", "héllo 🚀", ""] {
      for room in [RoomID("7"), RoomID("ops"), nil] {
        let entry = OutboxEntry(
          id: "id-1", room: room, text: text, count: 12_345_678_901, created: .now())
        let encoded = try XCTUnwrap(envelope.encode(entry).text)
        var quoted: [UInt8] = []
        JSONString.append(text, to: &quoted)
        let expected =
          #"{"event":"send-message","data":{"room_id":"#
          + (room.map { String(decoding: $0.json, as: UTF8.self) } ?? "null")
          + #","message":"# + String(decoding: quoted, as: UTF8.self)
          + #","sender":"ops \"bot\"","count":12345678901,"client_id":"id-1"}}"#
        XCTAssertEqual(encoded, expected)
        let parsed = try JSONValue.parse(Array(encoded.utf8))
        XCTAssertEqual(parsed["data"]?["message"]?.stringValue, text)
      }
    }
  }

  func testRawModePassesTextThroughAndHasNoRooms() {
    let raw = RawProtocol()
    XCTAssertFalse(raw.hasRooms)
    XCTAssertNil(raw.join(RoomID("7")!))
    XCTAssertEqual(raw.encode(entry).text, "deploy \"finished\"")
    XCTAssertNil(raw.decode(.text(Array(#"{"room_id":7}"#.utf8))).room)
  }

  func testBackoffGrowsExponentiallyWithJitterWithinBoundsAndResets() {
    var backoff = Backoff(minimum: 1, maximum: 30)
    var ceilings: [Double] = []
    for _ in 0..<8 {
      ceilings.append(backoff.ceiling)
      let delay = backoff.nextDelay()
      XCTAssertGreaterThanOrEqual(delay, 1)
      XCTAssertLessThanOrEqual(delay, 30)
    }
    XCTAssertEqual(ceilings, [1, 2, 4, 8, 16, 30, 30, 30])
    XCTAssertEqual(backoff.failures, 8)
    backoff.reset()
    XCTAssertEqual(backoff.ceiling, 1)
    let short = backoff.shortDelay()
    XCTAssertTrue((1...2).contains(short))
    XCTAssertEqual(backoff.failures, 0)
    // Jitter: many draws at one ceiling are spread, not equal.
    var spread = Backoff(minimum: 1, maximum: 64)
    for _ in 0..<6 { _ = spread.nextDelay() }
    let draws = Set(
      (0..<20).map { _ -> Double in
        var copy = spread
        return copy.nextDelay()
      })
    XCTAssertGreaterThan(draws.count, 10)
  }

  func testTokenComesFromTheCredentialFirstAndNeverFromAnEmptyFile() throws {
    let dir = TemporaryDirectory()
    dir.write("token", "  s3cret-token\n")
    dir.write("empty", "\n")
    XCTAssertEqual(
      try TokenSource.read(tokenFile: dir.path + "/token", credentialsDirectory: nil),
      "s3cret-token")
    let credentials = TemporaryDirectory()
    credentials.write("token", "from-credential")
    XCTAssertEqual(
      try TokenSource.read(tokenFile: dir.path + "/token", credentialsDirectory: credentials.path),
      "from-credential")
    XCTAssertNil(try TokenSource.read(tokenFile: nil, credentialsDirectory: nil))
    XCTAssertThrowsError(
      try TokenSource.read(tokenFile: dir.path + "/empty", credentialsDirectory: nil))
    XCTAssertThrowsError(
      try TokenSource.read(tokenFile: dir.path + "/missing", credentialsDirectory: nil)
    ) { error in
      XCTAssertTrue("\(error)".contains("/missing"))
    }
    dir.write("spaces", "two words")
    XCTAssertThrowsError(
      try TokenSource.read(tokenFile: dir.path + "/spaces", credentialsDirectory: nil)
    ) { error in
      XCTAssertFalse("\(error)".contains("two words"))
    }
  }
}
