import LinkCore
import WebSocket
import XCTest

/// The Socket.IO dialect on its own: frames in, readings out, as a python-socketio or Node
/// server writes them.
final class SocketIOProtocolTests: XCTestCase {
  private static let openPacket =
    #"0{"sid":"e1","upgrades":[],"pingInterval":25000,"pingTimeout":20000,"maxPayload":1000}"#

  private func adapter(namespace: String = "/", auth: String = #"{"token":"t"}"#)
    -> SocketIOProtocol
  {
    var settings = SocketIOProtocol.Settings()
    settings.namespace = namespace
    settings.auth = Array(auth.utf8)
    settings.sender = "bot"
    var adapter = SocketIOProtocol(settings)
    _ = adapter.open(handshake())
    return adapter
  }

  /// An adapter whose namespace connect was accepted.
  private func connected(namespace: String = "/") -> SocketIOProtocol {
    var adapter = adapter(namespace: namespace)
    _ = adapter.read(text(Self.openPacket))
    let prefix = namespace == "/" ? "" : namespace + ","
    XCTAssertEqual(adapter.read(text("40\(prefix){\"sid\":\"n1\"}")).session, .ready)
    return adapter
  }

  private func recordText(_ reading: ProtocolReading) -> String? {
    reading.record?.payload.text
  }

  func testTheOpenPacketIsAnsweredWithTheNamespaceConnectAndSetsTheHeartbeat() {
    var main = adapter()
    XCTAssertEqual(main.open(handshake()).ready, false)
    let reading = main.read(text(Self.openPacket))
    XCTAssertNil(reading.record)
    XCTAssertEqual(reading.replies.map(\.text), [#"40{"token":"t"}"#])
    XCTAssertEqual(reading.peerHeartbeat, .seconds(45))
    XCTAssertEqual(main.maxFrameSize, 1000)
    XCTAssertNil(main.session)

    var chat = adapter(namespace: "/chat")
    XCTAssertEqual(
      chat.read(text(Self.openPacket)).replies.map(\.text), [#"40/chat,{"token":"t"}"#])
  }

  func testAnOpenPacketThatDoesNotParseRefusesTheSession() {
    var adapter = adapter()
    for bad in ["0", "0{}", #"0{"pingInterval":"x","pingTimeout":1}"#, "0[1]"] {
      guard case .refused(let reason)? = adapter.read(text(bad)).session else {
        return XCTFail(bad)
      }
      XCTAssertTrue(reason.contains("open packet"), reason)
    }
  }

  func testTheNamespaceConnectMakesTheSessionReadyWithItsSid() {
    let adapter = connected(namespace: "/chat")
    XCTAssertEqual(adapter.session, ProtocolSession(id: "n1", namespace: "/chat"))
    var other = self.adapter(namespace: "/chat")
    _ = other.read(text(Self.openPacket))
    XCTAssertNil(other.read(text(#"40{"sid":"main"}"#)).session, "another namespace's connect")
  }

  func testConnectErrorsAndServerDisconnectsAreRefusalsWithTheServersText() {
    var adapter = adapter()
    _ = adapter.read(text(Self.openPacket))
    XCTAssertEqual(
      adapter.read(text(#"44{"message":"unauthorized"}"#)).session,
      .refused("the Socket.IO server refused the connection: unauthorized"))
    XCTAssertEqual(
      adapter.read(text("44")).session,
      .refused("the Socket.IO server refused the connection: no reason given"))
    var ready = connected()
    XCTAssertEqual(
      ready.read(text("41")).session,
      .refused("the Socket.IO server disconnected namespace /"))
    XCTAssertNil(ready.session)
  }

  func testServerPingsAreAnsweredAtOnceAndRenewTheHeartbeat() {
    var adapter = connected()
    let reading = adapter.read(text("2"))
    XCTAssertEqual(reading.replies.map(\.text), ["3"])
    XCTAssertEqual(reading.peerHeartbeat, .seconds(45))
    XCTAssertNil(reading.record)
    for quiet in ["3", "6", "5"] { XCTAssertNil(adapter.read(text(quiet)).record, quiet) }
    XCTAssertNotNil(adapter.read(text("1")).problem)
  }

  func testEventsAreStoredWithTheirNameArgumentsAndRoom() {
    var adapter = connected()
    let cases: [(String, String, String?)] = [
      (
        #"42["message",{"room_id":7,"text":"hi"}]"#,
        #"{"event":"message","args":[{"room_id":7,"text":"hi"}]}"#, "7"
      ),
      (
        #"42["message",{"room_id":"ops"},2]"#,
        #"{"event":"message","args":[{"room_id":"ops"},2]}"#, "\"ops\""
      ),
      (#"42["tick"]"#, #"{"event":"tick","args":[]}"#, nil),
      (#"42[ "tick" , [1] ]"#, #"{"event":"tick","args":[ [1] ]}"#, nil),
      (#"42["m",{"room_id":{"x":1}}]"#, #"{"event":"m","args":[{"room_id":{"x":1}}]}"#, nil),
      (#"42["m","room_id"]"#, #"{"event":"m","args":["room_id"]}"#, nil),
    ]
    for (frame, stored, room) in cases {
      let reading = adapter.read(text(frame))
      XCTAssertEqual(recordText(reading), stored, frame)
      XCTAssertEqual(reading.record?.room.map { String(decoding: $0, as: UTF8.self) }, room, frame)
      XCTAssertEqual(reading.record?.scan, .json(hasLineBreaks: false), frame)
      XCTAssertNil(reading.acknowledgement)
      XCTAssertNil(reading.problem)
    }
    let multiline = adapter.read(text("42[\"m\",\n{\"a\":1}]"))
    XCTAssertEqual(multiline.record?.scan, .json(hasLineBreaks: true))
  }

  func testAnEventThatAsksForAnAckGetsItOnceDurable() {
    var main = connected()
    XCTAssertEqual(main.read(text(#"4212["ask",1]"#)).acknowledgement?.text, "4312[]")
    var chat = connected(namespace: "/chat")
    let reading = chat.read(text(#"42/chat,5["ask"]"#))
    XCTAssertEqual(reading.acknowledgement?.text, "43/chat,5[]")
    XCTAssertEqual(
      chat.read(text(#"42/other,6["x"]"#)).acknowledgement?.text, "43/other,6[]",
      "answered in the namespace it came in")
    XCTAssertEqual(main.read(text(#"42/,7["x"]"#)).acknowledgement?.text, "437[]")
    XCTAssertEqual(recordText(reading), #"{"event":"ask","args":[]}"#)
  }

  func testFramesThatAreNotPacketsAreStoredAsTheyCameWithAProblem() {
    var adapter = connected()
    let cases: [(String, PayloadScan)] = [
      ("hello", .notJSON), (#"{"a":1}"#, .json(hasLineBreaks: false)),
      ("49", .json(hasLineBreaks: false)),
      (#"42{"not":"an array"}"#, .notJSON), (#"42[1,2]"#, .notJSON), ("42[\"x\"", .notJSON),
      ("42", .json(hasLineBreaks: false)),
    ]
    for (frame, scan) in cases {
      let reading = adapter.read(text(frame))
      XCTAssertEqual(recordText(reading), frame)
      XCTAssertEqual(reading.record?.scan, scan, frame)
      XCTAssertNotNil(reading.problem, frame)
    }
  }

  func testSendsAndJoinsCarryAckIDsAndTheAckConfirmsOrFails() {
    var adapter = connected()
    XCTAssertEqual(adapter.join(RoomID("7")!)?.text, #"421["join-room",{"room_id":7}]"#)
    let frame = adapter.encode(entry(9, "héllo \"q\"", room: "ops"))
    XCTAssertEqual(
      frame.text,
      #"422["send-message",{"room_id":"ops","message":"héllo \"q\"","sender":"bot","count":9,"client_id":"id-9"}]"#
    )
    XCTAssertEqual(
      adapter.storedForm(of: frame).text,
      #"{"event":"send-message","args":[{"room_id":"ops","message":"héllo \"q\"","sender":"bot","count":9,"client_id":"id-9"}]}"#
    )
    _ = adapter.encode(entry(10))
    _ = adapter.encode(entry(11))
    XCTAssertEqual(adapter.leave(RoomID("7")!)?.text, #"425["leave-room",{"room_id":7}]"#)
    XCTAssertEqual(adapter.read(text(#"432[{"ok":true}]"#)).delivered, [9])
    XCTAssertEqual(
      adapter.read(text(#"433[{"error":"not allowed"}]"#)).failed,
      [DeliveryFailure(count: 10, reason: "not allowed")])
    _ = adapter.encode(entry(12))
    XCTAssertEqual(
      adapter.read(text(#"436[{"error":""}]"#)).failed,
      [DeliveryFailure(count: 12, reason: "refused without a reason")])
    XCTAssertEqual(
      adapter.read(text(#"434[{"error":{"code":4}}]"#)).failed,
      [DeliveryFailure(count: 11, reason: #"{"code":4}"#)])
    XCTAssertNil(adapter.read(text(#"431[{"ok":true}]"#)).problem, "a join acked")
    XCTAssertEqual(
      adapter.read(text(#"435[{"error":"no such room"}]"#)).problem,
      "the server refused to leave room 7: no such room")
    XCTAssertNotNil(adapter.read(text("432[]")).problem, "an ack id answered twice")
    XCTAssertNotNil(adapter.read(text("43[]")).problem, "an ack without an id")
  }

  func testAnAckWhoseErrorIsNullOrFalseConfirms() {
    var adapter = connected()
    for (index, ack) in [#"[{"error":null}]"#, #"[{"error":false}]"#, "[]", "[1]", "[\"x\"]"]
      .enumerated()
    {
      let count = UInt64(index + 1)
      _ = adapter.encode(entry(count))
      XCTAssertEqual(adapter.read(text("43\(count)\(ack)")).delivered, [count], ack)
    }
  }

  func testAckIDsStartOverOnEveryConnection() {
    var adapter = connected()
    _ = adapter.encode(entry(1))
    _ = adapter.open(handshake())
    XCTAssertNil(adapter.session)
    XCTAssertNil(adapter.maxFrameSize)
    XCTAssertTrue(adapter.encode(entry(2)).text?.hasPrefix("421[") == true)
    XCTAssertNotNil(adapter.read(text("432[]")).problem, "the old connection's id is forgotten")
  }

  func testBinaryEventsAreStoredWithTheirAttachmentsInBase64() {
    var adapter = connected()
    let header =
      #"452-7["file",{"room_id":7,"a":{"_placeholder":true,"num":0}},{"_placeholder":true,"num":1}]"#
    XCTAssertNil(adapter.read(text(header)).record)
    XCTAssertNil(adapter.read(.binary([0, 1, 2])).record)
    let reading = adapter.read(.binary([0xFF]))
    XCTAssertEqual(
      recordText(reading),
      #"{"event":"file","args":[{"room_id":7,"a":{"_placeholder":true,"num":0,"base64":"AAEC"}},{"_placeholder":true,"num":1,"base64":"/w=="}]}"#
    )
    XCTAssertEqual(reading.record?.room, Array("7".utf8))
    XCTAssertEqual(reading.acknowledgement?.text, "437[]")
  }

  func testABinaryAckConfirmsTheSendItAnswers() {
    var adapter = connected()
    _ = adapter.encode(entry(4))
    XCTAssertNil(adapter.read(text(#"461-1[{"_placeholder":true,"num":0}]"#)).record)
    XCTAssertEqual(adapter.read(.binary([1])).delivered, [4])
  }

  func testStrayOrCutShortAttachmentsAreKeptWithAProblem() {
    var adapter = connected()
    let stray = adapter.read(.binary([9, 9]))
    XCTAssertEqual(stray.record?.payload, .binary([9, 9]))
    XCTAssertNotNil(stray.problem)
    _ = adapter.read(text(#"451-["f",{"_placeholder":true,"num":0}]"#))
    let cut = adapter.read(text(#"42["next"]"#))
    XCTAssertEqual(recordText(cut), #"{"event":"next","args":[]}"#)
    XCTAssertNotNil(cut.problem)
    XCTAssertNotNil(adapter.read(.binary([1])).problem, "the abandoned packet's attachment")
  }

  func testABinaryPacketWhoseDataDoesNotParseIsStoredAsItsHeaderFrame() {
    var adapter = connected()
    _ = adapter.read(text(#"451-[not json"#))
    let reading = adapter.read(.binary([7]))
    XCTAssertEqual(recordText(reading), #"451-[not json"#)
    XCTAssertEqual(reading.record?.scan, .notJSON)
    XCTAssertNotNil(reading.problem)
    XCTAssertEqual(recordText(adapter.read(text(#"450-[1]"#))), #"450-[1]"#, "no name")
  }

  func testABinaryEventWithoutAttachmentsIsStoredAtOnce() {
    var adapter = connected()
    XCTAssertEqual(
      recordText(adapter.read(text(#"450-["e",1]"#))), #"{"event":"e","args":[1]}"#)
  }
}
