import JSON
import LinkCore
import WebSocket
import XCTest

/// The envelope and raw dialects on the backend-protocol seam: framing of sends, joins and
/// leaves, and what an inbound frame becomes.
final class EnvelopeProtocolTests: XCTestCase {
  private let entry = OutboxEntry(
    id: "c-1", room: RoomID("7"), text: "deploy \"finished\"", count: 3,
    created: Timestamp(microseconds: 0))

  func testEnvelopeEncodesTheSeedsSendMessageEvent() throws {
    var envelope = EnvelopeProtocol(sender: "ops-bot")
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

  func testEnvelopeSendsAreTheSameWhetherOrNotTheTextNeedsEscapes() throws {
    // Plain texts and ids are written in one exact allocation, the others piece by piece:
    // both give the same frame for every kind of room, text and count.
    var envelope = EnvelopeProtocol(sender: "ops \"bot\"")
    let rooms: [RoomID?] = [nil, RoomID("7"), RoomID("ops"), RoomID("a \"q\" é")]
    let texts = [
      "", "hi", String(repeating: "long plain text ", count: 20), "tab\there",
      "quote \" and \\", "é 😀", "del \u{7F}",
    ]
    for room in rooms {
      for text in texts {
        for (count, id) in [
          (UInt64(0), "c"), (1, "0123456789abcdef"), (.max, "x.y:z-_1"), (2, "q\"1"),
        ] {
          let entry = OutboxEntry(
            id: id, room: room, text: text, count: count, created: Timestamp(microseconds: 0))
          // Checked once, when the entry is made: plain when neither needs an escape.
          let plain = JSONString.quoted(text) == "\"\(text)\"" && id != "q\"1"
          XCTAssertEqual(entry.isPlain, plain, "\(text) \(id)")
          let frame = try XCTUnwrap(envelope.encode(entry).text)
          let expected =
            #"{"event":"send-message","data":{"room_id":"#
            + (room.map { String(decoding: $0.json, as: UTF8.self) } ?? "null")
            + #","message":"# + JSONString.quoted(text) + #","sender":"ops \"bot\"","count":"#
            + "\(count)" + #","client_id":"# + JSONString.quoted(id) + "}}"
          XCTAssertEqual(frame, expected)
          XCTAssertNotNil(Array(frame.utf8).withUnsafeBytes { JSONScanner.scan($0) })
          // Written into a run's buffer (after a frame already there), the same bytes.
          XCTAssertTrue(envelope.writesFramesInPlace)
          var frames: PackedStrings = ["before"]
          envelope.encode(entry, appendingTo: &frames)
          XCTAssertEqual(Array(frames), ["before", expected])
        }
      }
    }
  }

  func testEnvelopeFieldAndEventNamesAreConfigurable() throws {
    var names = EnvelopeNames()
    names.eventField = "type"
    names.dataField = "payload"
    names.roomField = "channel"
    names.sendEvent = "post"
    names.clientIDField = "nonce"
    var envelope = EnvelopeProtocol(names: names, sender: "bot")
    let text = try XCTUnwrap(envelope.encode(entry).text)
    XCTAssertTrue(text.hasPrefix(#"{"type":"post","payload":{"channel":7,"#), text)
    XCTAssertTrue(text.contains(#""nonce":"c-1""#))
    let inbound = envelope.read(
      .text(Array(#"{"type":"message","payload":{"channel":"dev","nonce":"x9"}}"#.utf8)))
    XCTAssertEqual(inbound.record?.room, Array("\"dev\"".utf8))
    XCTAssertEqual(inbound.echoedClientID, "x9")
  }

  /// The event name is compared as bytes; an escaped spelling is still the same name, and a
  /// longer or other name is not an echo.
  func testEnvelopeRecognisesAnEchoWhateverTheEventNamesEscapingAndNothingElse() {
    var envelope = EnvelopeProtocol(sender: "bot")
    func decode(_ event: String) -> ProtocolReading {
      envelope.read(
        .text(Array(#"{"event":"\#(event)","data":{"room_id":7,"client_id":"c-9"}}"#.utf8)))
    }
    let escaped = decode(#"mess\u0061ge"#)
    XCTAssertEqual(escaped.echoedClientID, "c-9")
    for other in ["messages", "messag", "Message", "", #"message\n"#] {
      XCTAssertNil(decode(other).echoedClientID, other)
    }
    let numeric = envelope.read(
      .text(Array(#"{"event":7,"data":{"room_id":7,"client_id":"c-9"}}"#.utf8)))
    XCTAssertNil(numeric.echoedClientID)
  }

  func testEnvelopeDecodesRoomsAndEchoesAndKeepsFramesThatDoNotParse() {
    var envelope = EnvelopeProtocol(sender: "bot")
    let message = envelope.read(
      .text(
        Array(
          #"{"event":"message","data":{"room_id":7,"message":"hi","sender":"bob","client_id":"c-1"}}"#
            .utf8)))
    XCTAssertEqual(message.record?.room, Array("7".utf8))
    XCTAssertEqual(message.echoedClientID, "c-1")
    guard case .json? = message.record?.scan else { return XCTFail("not scanned as JSON") }
    let notJSON = envelope.read(.text(Array("hello".utf8)))
    XCTAssertNil(notJSON.record?.room)
    guard case .notJSON? = notJSON.record?.scan else { return XCTFail("not scanned as text") }
    let objectRoom = envelope.read(
      .text(Array(#"{"event":"x","data":{"room_id":{"a":1}}}"#.utf8)))
    XCTAssertNil(objectRoom.record?.room)
    XCTAssertNotNil(objectRoom.record)
    let binary = envelope.read(.binary([1, 2]))
    guard case .unscanned? = binary.record?.scan else { return XCTFail("binary was scanned") }
    XCTAssertNil(binary.echoedClientID)
  }

  func testEachFrameKeepsItsOwnRoomWhenRoomsChangeFromFrameToFrame() {
    // The dialect shares one room's bytes between consecutive frames of that room.
    var envelope = EnvelopeProtocol(sender: "me")
    let rooms = ["7", "7", "8", #""ops""#, #""dev""#, #""dev""#, "78", "7", "-7", #""o\"s""#, "7"]
    var previous: InboundMessage?
    for room in rooms + [nil, "7"] {
      let data = room.map { #"{"room_id":\#($0),"message":"m"}"# } ?? #"{"message":"m"}"#
      let frame = #"{"event":"message","data":\#(data)}"#
      let record = envelope.read(.text(Array(frame.utf8))).record
      XCTAssertEqual(record?.room, room.map { Array($0.utf8) }, "\(room ?? "none")")
      XCTAssertEqual(record?.payload, .text(Array(frame.utf8)))
      // An earlier record keeps its room whatever came after.
      if let previous, let room = previous.room {
        XCTAssertEqual(previous.payload.text?.contains(String(decoding: room, as: UTF8.self)), true)
      }
      previous = record
    }
  }

  func testEnvelopeQuotesEveryTextExactlyAsJSON() throws {
    var envelope = EnvelopeProtocol(sender: "ops \"bot\"")
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
    var raw = RawProtocol()
    XCTAssertFalse(raw.hasRooms)
    XCTAssertNil(raw.join(RoomID("7")!))
    XCTAssertEqual(raw.encode(entry).text, "deploy \"finished\"")
    let reading = raw.read(.text(Array(#"{"room_id":7}"#.utf8)))
    XCTAssertNil(reading.record?.room)
    XCTAssertNil(reading.echoedClientID)
    guard case .json? = reading.record?.scan else { return XCTFail("raw JSON was not scanned") }
    XCTAssertFalse(raw.framesAreSingleLineJSON)
    XCTAssertTrue(raw.confirmsByPong)
  }
}
