import JSON
import LinkCore
import WebSocket
import XCTest

/// The envelope's catch-up extension: message ids read from inbound events, and joins that
/// name the newest id stored for the room, asked of the store before the rooms are joined.
final class CatchUpTests: XCTestCase {
  private func envelope(id: String = "msg_id", since: String = "") -> EnvelopeProtocol {
    var names = EnvelopeNames()
    names.idField = id
    names.sinceField = since
    return EnvelopeProtocol(names: names, sender: "bot")
  }

  private func id(_ frame: String, _ dialect: EnvelopeProtocol? = nil) -> String? {
    var dialect = dialect ?? envelope()
    return idText(dialect.read(text(frame)).record)
  }

  func testAnInboundEventsIDIsTakenFromItsDataAsAString() {
    XCTAssertEqual(id(#"{"event":"message","data":{"room_id":7,"msg_id":"a-1"}}"#), "a-1")
    XCTAssertEqual(id(#"{"event":"message","data":{"room_id":7,"msg_id":1234}}"#), "1234")
    XCTAssertEqual(id(#"{"event":"message","data":{"msg_id":"\u0041\"b"}}"#), #"A"b"#)
    XCTAssertEqual(id(#"{"event":"message","data":{"msg_id":-5}}"#), "-5")
  }

  func testAnIDIsMarkedEscapedOnlyWhenItsOwnStringHasEscapesWhereverTheFramesAre() {
    var dialect = envelope()
    for (data, escaped, want) in [
      (#"{"msg_id":"m-1","message":"a\nb"}"#, false, "m-1"),
      (#"{"message":"a\nb","msg_id":"m-2"}"#, false, "m-2"),
      (#"{"message":"a\nb","msg_id":12}"#, false, "12"),
      (#"{"msg_id":"m\\","message":"x"}"#, true, #"m\"#),
      (#"{"msg_id":"\u006d-3"}"#, true, "m-3"),
      (#"{"message":"a\nb","msg_id":"m-4","sender":"\"x\""}"#, false, "m-4"),
      (#"{"message":"a\nb","msg_id":"m\"5","sender":"\"x\""}"#, true, #"m"5"#),
    ] {
      let record = dialect.read(text(#"{"event":"message","data":\#(data)}"#)).record
      XCTAssertEqual(record?.id?.escaped, escaped, data)
      XCTAssertEqual(idText(record), want, data)
    }
  }

  func testValuesThatAreNotIDsGiveNone() {
    for value in [#"{}"#, #"[1]"#, "true", "null", #""""#] {
      XCTAssertNil(id(#"{"event":"message","data":{"msg_id":\#(value)}}"#), value)
    }
    XCTAssertNil(id(#"{"event":"message","data":{"room_id":7}}"#), "absent")
    XCTAssertNil(id(#"{"event":"message","msg_id":"top"}"#), "only inside the data")
    XCTAssertNil(
      id(#"{"event":"message","data":{"msg_id":"a"}}"#, envelope(id: "")), "IDField= empty")
  }

  func testAJoinNamesTheNewestStoredIDWhenSinceFieldIsSet() {
    var dialect = envelope(since: "since")
    XCTAssertTrue(dialect.joinsAfterStoredID)
    XCTAssertEqual(
      dialect.join(RoomID("7")!, after: RoomPosition(id: Array(#"a"1"#.utf8)))?.text,
      #"{"event":"join-room","data":{"room_id":7,"since":"a\"1"}}"#)
    XCTAssertEqual(
      dialect.join(RoomID("ops")!, after: nil)?.text,
      #"{"event":"join-room","data":{"room_id":"ops"}}"#, "a room never stored: no since")
    var plain = envelope()
    XCTAssertFalse(plain.joinsAfterStoredID)
    XCTAssertEqual(
      plain.join(RoomID("7")!, after: RoomPosition(id: Array("x".utf8)))?.text,
      #"{"event":"join-room","data":{"room_id":7}}"#)
  }

  func testTheCoreAsksForTheRoomsNewestIDsBeforeJoiningThem() {
    var link = Harness(rooms: ["7", "ops"], backend: envelope(since: "since"))
    let opened = link.open()
    XCTAssertTrue(opened.contains("request positions 7,ops"), "\(opened)")
    XCTAssertFalse(opened.contains { $0.hasPrefix("send") }, "no join before the positions")
    XCTAssertEqual(
      link.on(.positions([RoomID("7")!: RoomPosition(id: Array("m-9".utf8))])),
      [
        #"send {"event":"join-room","data":{"room_id":7,"since":"m-9"}}"#,
        #"send {"event":"join-room","data":{"room_id":"ops"}}"#,
      ])
    XCTAssertEqual(link.on(.positions([:])), [], "answered once")
    XCTAssertEqual(link.on(.join(RoomID("new")!)), ["request positions new"])
    XCTAssertEqual(
      link.on(.positions([:])), [#"send {"event":"join-room","data":{"room_id":"new"}}"#])
  }

  func testPositionsThatComeAfterTheConnectionEndedJoinNothing() {
    var link = Harness(rooms: ["7"], backend: envelope(since: "since"))
    link.open()
    link.on(.ended(.connectionFailed("reset")))
    XCTAssertEqual(link.on(.positions([:])), [])
    link.on(.timerFired(.retry))
    XCTAssertTrue(link.on(.upgraded(handshake())).contains("request positions 7"))
  }

  func testARoomLeftBeforeItsPositionCameIsNotJoined() {
    var link = Harness(rooms: ["7", "8"], backend: envelope(since: "since"))
    link.open()
    link.on(.leave(RoomID("8")!))
    XCTAssertEqual(
      link.on(.positions([:])), [#"send {"event":"join-room","data":{"room_id":7}}"#])
  }

  private func socketIO(since: String = "since") -> SocketIOProtocol {
    var settings = SocketIOProtocol.Settings()
    settings.names.idField = "msg_id"
    settings.names.sinceField = since
    return SocketIOProtocol(settings)
  }

  func testASocketIOEventsIDIsTakenFromItsFirstArgument() {
    var dialect = socketIO()
    let reading = dialect.read(text(#"42["message",{"room_id":7,"msg_id":"s-1","text":"hi"}]"#))
    XCTAssertEqual(idText(reading.record), "s-1")
    XCTAssertEqual(reading.record?.room, Array("7".utf8))
    XCTAssertNil(dialect.read(text(#"42["message",{"room_id":7}]"#)).record?.id)
    XCTAssertNil(dialect.read(text(#"42["message","msg_id"]"#)).record?.id)
    let spaced = dialect.read(text(#"42[ "message" , {"msg_id":"s\u002d2"}]"#)).record
    XCTAssertEqual(idText(spaced), "s-2", "found in the record however the frame was spaced")
  }

  func testABinarySocketIOEventsIDIsTakenFromItsFirstArgumentToo() {
    var dialect = socketIO()
    _ = dialect.read(
      text(#"451-["file",{"room_id":7,"msg_id":42,"a":{"_placeholder":true,"num":0}}]"#))
    let reading = dialect.read(.binary([0xFF]))
    XCTAssertEqual(idText(reading.record), "42")
    XCTAssertEqual(reading.record?.room, Array("7".utf8))
  }

  func testASocketIOJoinNamesTheNewestStoredIDAndATruncationIsAGap() {
    var dialect = socketIO()
    XCTAssertTrue(dialect.joinsAfterStoredID)
    XCTAssertEqual(
      dialect.join(RoomID("7")!, after: RoomPosition(id: Array("s-9".utf8)))?.text,
      #"421["join-room",{"room_id":7,"since":"s-9"}]"#)
    let gap = dialect.read(text(#"42["history-truncated",{"room_id":7,"since":"s-9"}]"#))
    XCTAssertEqual(gap.historyGap, "7")
    XCTAssertNotNil(gap.record, "stored like any event")
    XCTAssertNil(dialect.read(text(#"42["message",{"room_id":7}]"#)).historyGap)
  }

  func testAnEnvelopeTruncationIsAGapCountedByTheCore() {
    var link = Harness(rooms: ["7"], backend: envelope(since: "since"))
    link.open()
    link.on(.positions([:]))
    let lines = link.on(
      .message(text(#"{"event":"history-truncated","data":{"room_id":7,"since":"a","first":"q"}}"#))
    )
    XCTAssertTrue(lines.contains("report historyGap(room: \"7\")"), "\(lines)")
    XCTAssertTrue(lines.contains { $0.hasPrefix("store ") }, "the event is stored too")
    XCTAssertEqual(link.core.counters.historyGaps, 1)
    var plain = Harness(rooms: ["7"], backend: envelope())
    plain.open()
    plain.on(.message(text(#"{"event":"history-truncated","data":{"room_id":7}}"#)))
    XCTAssertEqual(plain.core.counters.historyGaps, 0, "without SinceField= it is an event")
  }

  func testAnIDTooLongToKeepLeavesTheMessageStoredWithoutOne() {
    var dialect = envelope()
    let long = String(repeating: "x", count: MessageIDText.maximumLength + 1)
    let reading = dialect.read(text(#"{"event":"message","data":{"msg_id":"\#(long)"}}"#))
    XCTAssertNotNil(reading.record, "stored all the same")
    XCTAssertNil(reading.record?.id)
    let longest = String(repeating: "y", count: MessageIDText.maximumLength)
    let kept = dialect.read(text(#"{"event":"message","data":{"msg_id":"\#(longest)"}}"#))
    XCTAssertEqual(idText(kept.record), longest)
  }

  func testAnIDIsReadWhereItLiesInThePayloadAndAnEscapedOneIsReadUnescaped() {
    var dialect = envelope()
    let plain = dialect.read(text(#"{"event":"message","data":{"msg_id":"ab"}}"#)).record
    XCTAssertEqual(plain?.id, MessageIDText(.payload, 37..<39))
    let escaped = dialect.read(text(#"{"event":"message","data":{"msg_id":"a\u0062"}}"#)).record
    XCTAssertEqual(escaped?.id, MessageIDText(.payload, 37..<44, escaped: true))
    XCTAssertEqual(escaped?.idBytes, Array("ab".utf8))
  }
}

/// The id of a record as text, read from its payload when it lies there.
func idText(_ record: InboundMessage?) -> String? {
  record?.idBytes.map { String(decoding: $0, as: UTF8.self) }
}
