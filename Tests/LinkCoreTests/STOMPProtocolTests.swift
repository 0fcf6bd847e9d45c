import LinkCore
import WebSocket
import XCTest

/// The STOMP dialect on its own: what it sends, and what each server frame means.
final class STOMPProtocolTests: XCTestCase {
  private func adapter(_ configure: (inout STOMPProtocol.Settings) -> Void = { _ in })
    -> STOMPProtocol
  {
    var settings = STOMPProtocol.Settings()
    settings.login = "u"
    settings.passcode = "tok"
    configure(&settings)
    return STOMPProtocol(settings)
  }

  private func frames(_ message: Message?) -> [STOMPFrame] {
    guard let message else { return [] }
    var decoder = STOMPDecoder(maximumFrameSize: 1 << 24)
    decoder.append(message.bytes)
    var out: [STOMPFrame] = []
    while let item = try? decoder.next() {
      if case .frame(let frame) = item { out.append(frame) }
    }
    return out
  }

  private func server(_ command: STOMPCommand, _ headers: [(String, String)], body: String = "")
    -> Message
  {
    .text(
      STOMPEncoder.encode(
        STOMPFrame(command, headers.map { STOMPHeader($0.0, $0.1) }, body: Array(body.utf8))))
  }

  private func connected(
    heartBeat: String? = "10000,10000", version: String = "1.2",
    _ configure: (inout STOMPProtocol.Settings) -> Void = { _ in }
  ) -> STOMPProtocol {
    var adapter = adapter(configure)
    _ = adapter.open(handshake(subprotocol: "v12.stomp"))
    var headers = [("version", version), ("session", "session-1"), ("server", "RabbitMQ/4")]
    if let heartBeat { headers.append(("heart-beat", heartBeat)) }
    let reading = adapter.read(server(.connected, headers))
    XCTAssertEqual(reading.session, .ready)
    return adapter
  }

  private func message(_ id: Int, destination: String = "/topic/chat.7", body: String = "hi")
    -> STOMPFrame
  {
    STOMPFrame(
      .message,
      [
        STOMPHeader("destination", destination), STOMPHeader("message-id", "m-\(id)"),
        STOMPHeader("subscription", "sub-1"), STOMPHeader("ack", "a-\(id)"),
      ], body: Array(body.utf8))
  }

  func testTheSessionOpensWithAConnectCarryingHostLoginPasscodeAndHeartBeats() {
    var adapter = adapter { $0.virtualHost = "chat" }
    XCTAssertEqual(adapter.offeredSubprotocols, ["v12.stomp", "v11.stomp"])
    XCTAssertFalse(adapter.confirmsByPong)
    let opening = adapter.open(handshake())
    XCTAssertFalse(opening.ready)
    XCTAssertEqual(
      frames(opening.frames.first),
      [
        STOMPFrame(
          .connect,
          [
            STOMPHeader("accept-version", "1.2,1.1"), STOMPHeader("host", "chat"),
            STOMPHeader("login", "u"), STOMPHeader("passcode", "tok"),
            STOMPHeader("heart-beat", "10000,10000"),
          ])
      ])
    var anonymous = STOMPProtocol(STOMPProtocol.Settings())
    XCTAssertEqual(
      frames(anonymous.open(handshake()).frames.first).first?.headers.map(\.name),
      ["accept-version", "host", "heart-beat"])
    XCTAssertNil(anonymous.session, "not before CONNECTED")
  }

  func testConnectedReadiesTheSessionAndAgreesOnHeartBeats() {
    var adapter = connected(heartBeat: "20000,5000")
    XCTAssertEqual(adapter.session, ProtocolSession(id: "session-1"))
    XCTAssertEqual(
      adapter.read(.text([0x0A])).peerHeartbeat, .seconds(60),
      "the server beats every max(20000, 10000) ms; three of those may pass")
    XCTAssertEqual(adapter.heartbeat(), .text([0x0A]))

    var quiet = connected(heartBeat: "0,10000")
    XCTAssertNil(quiet.read(.text([0x0A])).peerHeartbeat, "the server sends no heart-beats")
    XCTAssertNil(quiet.heartbeat(), "nothing would prove it alive: WebSocket pings probe")
    var deaf = connected(heartBeat: "10000,0")
    XCTAssertEqual(deaf.read(.text([0x0A])).peerHeartbeat, .seconds(30))
    XCTAssertNil(deaf.heartbeat(), "the server wants none of ours")
    var none = connected(heartBeat: nil)
    XCTAssertNil(none.heartbeat())
    var off = connected { $0.heartBeat = .zero }
    XCTAssertNil(off.read(.text([0x0A])).peerHeartbeat, "we asked for none")
    XCTAssertNil(off.heartbeat())

    var odd = self.adapter()
    _ = odd.open(handshake())
    let reading = odd.read(server(.connected, [("version", "1.1"), ("heart-beat", "soon")]))
    XCTAssertEqual(reading.session, .ready)
    XCTAssertEqual(reading.problem, "a heart-beat header that is not two numbers: 'soon'")
    XCTAssertEqual(odd.session, ProtocolSession(id: "STOMP 1.1"))
  }

  func testAnErrorDuringTheConnectIsARefusalWithTheServersText() {
    var adapter = adapter()
    _ = adapter.open(handshake())
    let reading = adapter.read(
      server(.error, [("message", "Bad CONNECT")], body: "Access refused for user 'u'\n"))
    XCTAssertEqual(
      reading.session,
      .refused(
        "the STOMP server refused the connection: Bad CONNECT: Access refused for user 'u'; "
          + "check [STOMP] Username= and TokenFile="))
    var vhost = self.adapter()
    _ = vhost.open(handshake())
    XCTAssertEqual(
      vhost.read(server(.error, [("message", "Virtual host 'x' not found")])).session,
      .refused("the STOMP server refused the connection: Virtual host 'x' not found"))
    var old = self.adapter()
    _ = old.open(handshake())
    XCTAssertEqual(
      old.read(server(.connected, [("session", "s")])).session,
      .refused("the server speaks STOMP 1.0, not 1.2 or 1.1"))
  }

  func testTheIDHeaderNamesAMessagesStableIDWhenSet() {
    var plain = connected()
    let headers = [
      ("destination", "/queue/a"), ("ack", "a-1"), ("subscription", "sub-1"),
      ("message-id", "T_sub-1@@1"), ("amqp-message-id", "order-42"),
    ]
    XCTAssertNil(plain.read(server(.message, headers, body: "x")).record?.id, "IDHeader= empty")
    var withID = connected { $0.idHeader = "amqp-message-id" }
    XCTAssertEqual(
      withID.read(server(.message, headers, body: "x")).record?.idBytes, Array("order-42".utf8))
    XCTAssertNil(
      withID.read(server(.message, Array(headers.prefix(4)), body: "x")).record?.id,
      "a message without the header has no id: stored, never dropped")
    XCTAssertNil(
      withID.read(server(.message, headers.prefix(4) + [("amqp-message-id", "")], body: "x"))
        .record?.id, "nor with an empty one")
    var byMessageID = connected { $0.idHeader = "message-id" }
    XCTAssertEqual(
      byMessageID.read(server(.message, [("message-id", "a\"b")] + headers, body: "x")).record?
        .idBytes, Array("a\"b".utf8), "an id with a quote is read back unescaped from the meta")
  }

  func testRoomsAreSubscribedOnceWithClientIndividualAcksAndLeftByID() {
    var adapter = connected()
    let subscribe = frames(adapter.join(RoomID("/topic/chat.7")!))
    XCTAssertEqual(
      subscribe,
      [
        STOMPFrame(
          .subscribe,
          [
            STOMPHeader("id", "sub-1"), STOMPHeader("destination", "/topic/chat.7"),
            STOMPHeader("ack", "client-individual"), STOMPHeader("receipt", "sub-1"),
          ])
      ])
    XCTAssertNil(adapter.join(RoomID("/topic/chat.7")!), "already subscribed")
    XCTAssertEqual(frames(adapter.join(RoomID("/queue/ops")!)).first?["id"], "sub-2")
    let receipt = adapter.read(server(.receipt, [("receipt-id", "sub-1")]))
    XCTAssertNil(receipt.problem)
    XCTAssertEqual(
      frames(adapter.leave(RoomID("/topic/chat.7")!)),
      [STOMPFrame(.unsubscribe, [STOMPHeader("id", "sub-1")])])
    XCTAssertNil(adapter.leave(RoomID("/topic/chat.7")!), "not subscribed any more")
  }

  func testARefusedSubscriptionIsReportedAndMayBeJoinedAgain() {
    var adapter = connected()
    _ = adapter.join(RoomID("/amq/queue/missing")!)
    let reading = adapter.read(
      server(.error, [("message", "not_found"), ("receipt-id", "sub-1")], body: "no queue"))
    XCTAssertNil(reading.session)
    XCTAssertEqual(
      reading.problem,
      "the STOMP server refused the subscription to '/amq/queue/missing': not_found: no queue")
    XCTAssertNotNil(adapter.join(RoomID("/amq/queue/missing")!))
  }

  func testInboundMessagesAreStoredWithTheirHeadersAndAckedOnceDurable() {
    var adapter = connected()
    var first = message(1, body: #"{"a":1}"#)
    first.headers += [STOMPHeader("content-type", "application/json"), STOMPHeader("x", "1")]
    let binary = STOMPFrame(
      .message,
      [
        STOMPHeader("destination", "7"), STOMPHeader("ack", "a-2"),
        STOMPHeader("content-length", "2"),
      ], body: [0xFF, 0x00])
    let reading = adapter.read(
      .binary(STOMPEncoder.encode(first) + [0x0A] + STOMPEncoder.encode(binary)))
    XCTAssertEqual(reading.record?.payload, .text(Array(#"{"a":1}"#.utf8)))
    XCTAssertEqual(reading.record?.scan, .json(hasLineBreaks: false))
    XCTAssertEqual(reading.record?.room, Array("\"/topic/chat.7\"".utf8))
    XCTAssertEqual(
      String(decoding: reading.record?.meta ?? [], as: UTF8.self),
      #"{"headers":{"message-id":"m-1","subscription":"sub-1","ack":"a-1","#
        + #""content-type":"application/json","x":"1"}}"#)
    XCTAssertEqual(frames(reading.acknowledgement), [STOMPFrame(.ack, [STOMPHeader("id", "a-1")])])
    XCTAssertEqual(reading.moreRecords.count, 1)
    XCTAssertEqual(reading.moreRecords.first?.record.payload, .binary([0xFF, 0x00]))
    XCTAssertEqual(
      reading.moreRecords.first?.record.room, Array("7".utf8), "a room as sends name it")
    XCTAssertEqual(
      frames(reading.moreRecords.first?.acknowledgement),
      [STOMPFrame(.ack, [STOMPHeader("id", "a-2")])])
    XCTAssertEqual(reading.peerHeartbeat, .seconds(30))
  }

  func testAFrameSplitAcrossMessagesIsStoredOnceWhole() {
    var adapter = connected()
    let bytes = STOMPEncoder.encode(message(1, body: "hello"))
    let head = adapter.read(.text(Array(bytes[..<20])))
    XCTAssertNil(head.record)
    XCTAssertEqual(head.peerHeartbeat, .seconds(30), "a piece of a frame proves the server alive")
    XCTAssertEqual(adapter.read(.text(Array(bytes[20...]))).record?.payload, text("hello"))
  }

  func testSTOMP11MessagesAreAckedBySubscriptionAndMessageID() {
    var adapter = connected(version: "1.1")
    let reading = adapter.read(.text(STOMPEncoder.encode(message(4))))
    XCTAssertEqual(
      frames(reading.acknowledgement),
      [
        STOMPFrame(
          .ack, [STOMPHeader("subscription", "sub-1"), STOMPHeader("message-id", "m-4")])
      ])
    var bare = connected()
    let unackable = bare.read(server(.message, [("destination", "/queue/a")], body: "x"))
    XCTAssertNotNil(unackable.record, "stored all the same")
    XCTAssertNil(unackable.acknowledgement)
    XCTAssertEqual(
      unackable.problem, "a MESSAGE without an ack or message-id header, which cannot be ACKed")
  }

  func testSendsCarryAReceiptFromTheirCountAndReceiptsOrErrorsSettleThem() {
    var adapter = connected()
    XCTAssertNil(adapter.refusal(of: entry(1, room: "/queue/a")))
    XCTAssertEqual(
      adapter.refusal(of: entry(1, room: nil)),
      "STOMP needs a room (the destination) for every message")
    let frame = adapter.encode(entry(1, "héllo", room: "/queue/a"))
    XCTAssertEqual(
      frames(frame),
      [
        STOMPFrame(
          .send,
          [
            STOMPHeader("destination", "/queue/a"), STOMPHeader("content-type", "text/plain"),
            STOMPHeader("content-length", "6"), STOMPHeader("receipt", "send-1"),
            STOMPHeader("persistent", "true"), STOMPHeader("client-id", "id-1"),
          ], body: Array("héllo".utf8))
      ])
    XCTAssertEqual(adapter.storedForm(of: frame), text("héllo"))
    XCTAssertEqual(
      frames(adapter.encode(entry(2, #" {"a":[1]}"#))).first?["content-type"], "application/json")
    XCTAssertEqual(frames(adapter.encode(entry(3, "{nope"))).first?["content-type"], "text/plain")
    XCTAssertEqual(adapter.read(server(.receipt, [("receipt-id", "send-1")])).delivered, [1])
    XCTAssertEqual(
      adapter.read(server(.receipt, [("receipt-id", "send-1")])).problem,
      "a RECEIPT for 'send-1', which nothing waits for")
    let refused = adapter.read(
      server(.error, [("message", "access_refused"), ("receipt-id", "send-2")], body: "no"))
    XCTAssertEqual(refused.failed, [DeliveryFailure(count: 2, reason: "access_refused: no")])
    XCTAssertNil(refused.session, "the message fails; the server decides about the connection")
    _ = adapter.open(handshake())
    XCTAssertNil(
      adapter.read(server(.receipt, [("receipt-id", "send-3")])).delivered.first,
      "a new connection waits for nothing sent on the last")
  }

  /// RabbitMQ's ERRORs name no receipt; it answers frames in order, so one that comes while a
  /// SUBSCRIBE waits for its RECEIPT is that SUBSCRIBE's.
  func testAnErrorNamingNoReceiptWhileASubscriptionWaitsIsThatSubscriptionsRefusal() {
    var adapter = connected()
    _ = adapter.join(RoomID("/nowhere/x")!)
    _ = adapter.join(RoomID("/queue/ok")!)
    let reading = adapter.read(
      server(.error, [("message", "Unknown destination")], body: "'/nowhere/x' is not valid"))
    XCTAssertNil(reading.session, "the other rooms go on")
    XCTAssertEqual(
      reading.problem,
      "the STOMP server refused the subscription to '/nowhere/x': Unknown destination: "
        + "'/nowhere/x' is not valid")
    XCTAssertNil(adapter.read(server(.receipt, [("receipt-id", "sub-2")])).problem)
    XCTAssertEqual(
      adapter.read(server(.error, [("message", "later")])).session,
      .broken("the STOMP server sent an ERROR: later"), "nothing waits: the session ends")
    XCTAssertNil(adapter.join(RoomID("/queue/ok")!), "still subscribed")
    XCTAssertNotNil(adapter.join(RoomID("/nowhere/x")!), "refused: may be joined again")
  }

  func testAnErrorNamingNoReceiptAnswersTheOldestFrameThatWaitsEvenASend() {
    var adapter = connected()
    _ = adapter.join(RoomID("/queue/ok")!)
    _ = adapter.encode(entry(1, "first", room: "/nowhere/a"))
    _ = adapter.encode(entry(2, "second", room: "/queue/ok"))
    XCTAssertNil(adapter.read(server(.receipt, [("receipt-id", "sub-1")])).problem)
    let refused = adapter.read(
      server(.error, [("message", "Unknown destination")], body: "'/nowhere/a' is not valid"))
    XCTAssertEqual(
      refused.failed,
      [DeliveryFailure(count: 1, reason: "Unknown destination: '/nowhere/a' is not valid")],
      "the server answers in order: the oldest waiting frame is the first SEND")
    XCTAssertNil(refused.session, "the rest of the outbox goes on")
    XCTAssertEqual(adapter.read(server(.receipt, [("receipt-id", "send-2")])).delivered, [2])
    XCTAssertEqual(
      adapter.read(server(.error, [("message", "later")])).session,
      .broken("the STOMP server sent an ERROR: later"), "nothing waits: the session ends")
  }

  func testAnyOtherErrorEndsTheSessionWithItsText() {
    var adapter = connected()
    XCTAssertEqual(
      adapter.read(server(.error, [("message", "Server cancelled subscription")])).session,
      .broken("the STOMP server sent an ERROR: Server cancelled subscription"))
  }

  func testBrokenStreamsEndTheConnectionAndClientFramesAreReported() {
    var adapter = connected()
    guard case .broken(let reason)? = adapter.read(text("HELLO\n\n\0")).session else {
      return XCTFail("a malformed frame")
    }
    XCTAssertEqual(reason, "malformed STOMP: an unknown command 'HELLO'")
    var early = self.adapter()
    _ = early.open(handshake())
    XCTAssertEqual(
      early.read(.text(STOMPEncoder.encode(message(1)))).session,
      .broken("a MESSAGE before CONNECTED"))
    var other = connected()
    XCTAssertEqual(
      other.read(server(.send, [("destination", "/a")])).problem,
      "a SEND frame, which only clients send")
    XCTAssertEqual(
      other.read(server(.connected, [("version", "1.2")])).problem, "a second CONNECTED")
    XCTAssertEqual(
      other.read(server(.receipt, [])).problem, "a RECEIPT without a receipt-id")
  }
}
