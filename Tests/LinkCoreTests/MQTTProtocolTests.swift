import LinkCore
import WebSocket
import XCTest

/// The MQTT dialect on its own: what it sends, and what each broker packet means.
final class MQTTProtocolTests: XCTestCase {
  private let broker = MQTTEncoder(version: .v5)

  private func adapter(_ configure: (inout MQTTProtocol.Settings) -> Void = { _ in })
    -> MQTTProtocol
  {
    var settings = MQTTProtocol.Settings()
    settings.clientID = "chatlink-1"
    settings.username = "u"
    settings.password = Array("tok".utf8)
    configure(&settings)
    return MQTTProtocol(settings)
  }

  private func packets(_ message: Message?, version: MQTTVersion = .v5) -> [MQTTPacket] {
    guard let message else { return [] }
    var decoder = MQTTDecoder(version: version, maximumPacketSize: 1 << 24)
    decoder.append(message.bytes)
    var out: [MQTTPacket] = []
    while let packet = try? decoder.next() { out.append(packet) }
    return out
  }

  private func connected(
    present: Bool = false, receiveMaximum: UInt16? = nil,
    _ configure: (inout MQTTProtocol.Settings) -> Void = { _ in }
  ) -> MQTTProtocol {
    var adapter = adapter(configure)
    _ = adapter.open(handshake())
    var properties = MQTTProperties()
    properties.receiveMaximum = receiveMaximum
    let reading = adapter.read(
      .binary(
        broker.encode(.connack(sessionPresent: present, reasonCode: 0, properties: properties))))
    XCTAssertEqual(reading.session, .ready)
    return adapter
  }

  func testTheSessionOpensWithAConnectCarryingTheClientIDAndToken() {
    var adapter = adapter()
    XCTAssertEqual(adapter.offeredSubprotocols, ["mqtt"])
    let opening = adapter.open(handshake())
    XCTAssertFalse(opening.ready)
    guard case .connect(let connect)? = packets(opening.frames.first).first else {
      return XCTFail("no CONNECT")
    }
    XCTAssertEqual(connect.clientID, "chatlink-1")
    XCTAssertEqual(connect.password, Array("tok".utf8))
    XCTAssertFalse(connect.cleanStart)
    XCTAssertEqual(connect.properties.sessionExpiry, 7 * 86400)
    XCTAssertEqual(connect.keepAlive, 30)
    XCTAssertNil(connect.properties.receiveMaximum, "at QoS 1 the broker's own limit")
    var qos2 = self.adapter { $0.qos = 2 }
    guard case .connect(let bounded)? = packets(qos2.open(handshake()).frames.first).first else {
      return XCTFail("no CONNECT")
    }
    XCTAssertEqual(bounded.properties.receiveMaximum, 1000, "QoS 2 keeps the pending ids bounded")
  }

  func testARefusedConnackIsARefusalTheOperatorCanAct() {
    for (code, text) in [(UInt8(0x86), "bad user name or password"), (0x87, "not authorized")] {
      var adapter = adapter()
      _ = adapter.open(handshake())
      let reading = adapter.read(
        .binary(
          broker.encode(.connack(sessionPresent: false, reasonCode: code, properties: .init()))))
      guard case .refused(let reason)? = reading.session else { return XCTFail("\(code)") }
      XCTAssertTrue(reason.contains(text), reason)
    }
  }

  func testABrokerThatHangsUpBeforeConnackIsARefusalOfTheCredentials() {
    var link = Harness(rooms: [], backend: adapter())
    link.open()
    let lines = link.on(.ended(closed(.protocolError, "unauthenticated")))
    XCTAssertTrue(lines.contains("arm retry 60"), "\(lines)")
    XCTAssertEqual(
      link.core.lastError,
      "the backend refused the session: the MQTT broker closed the connection before CONNACK "
        + "(1002 (protocol error) \"unauthenticated\", closed by the peer); "
        + "check [MQTT] Username= and TokenFile=")
  }

  func testRoomsAreSubscribedAndARefusedSubscriptionIsReported() {
    var adapter = connected()
    guard case .subscribe(let id, let filters, _)? = packets(adapter.join(RoomID("chat/#")!)).first
    else { return XCTFail("no SUBSCRIBE") }
    XCTAssertEqual(filters, [MQTTSubscription(filter: "chat/#", qos: 1, retainHandling: 1)])
    XCTAssertGreaterThan(id, 60000)
    let refused = adapter.read(
      .binary(broker.encode(.suback(packetID: id, reasonCodes: [0x87], properties: .init()))))
    XCTAssertEqual(
      refused.problem, "the broker refused the subscription to 'chat/#': not authorized")
  }

  func testAPersistent311SessionIsNotSubscribedAgain() {
    var adapter = connected { $0.version = .v311 }
    let v311 = MQTTEncoder(version: .v311)
    guard case .subscribe(let id, _, _)? = packets(adapter.join(RoomID("a")!), version: .v311).first
    else { return XCTFail("no SUBSCRIBE") }
    _ = adapter.read(
      .binary(v311.encode(.suback(packetID: id, reasonCodes: [1], properties: .init()))))
    _ = adapter.open(handshake())
    _ = adapter.read(
      .binary(v311.encode(.connack(sessionPresent: true, reasonCode: 0, properties: .init()))))
    XCTAssertNil(adapter.join(RoomID("a")!), "the broker kept it")
    XCTAssertNotNil(adapter.join(RoomID("b")!), "a new room")
  }

  func testInboundMessagesAreStoredAndAcknowledgedOnceDurable() {
    var adapter = connected()
    var properties = MQTTProperties()
    properties.contentType = "text/plain"
    properties.userProperties = [MQTTUserProperty("k", "v")]
    let first = MQTTPublish(
      topic: "chat/7", payload: Array("{\"a\":1}".utf8), qos: 1, retain: true, packetID: 5,
      properties: properties)
    let second = MQTTPublish(topic: "bin", payload: [0xFF, 0x00], qos: 0)
    let reading = adapter.read(
      .binary(broker.encode(.publish(first)) + broker.encode(.publish(second))))
    XCTAssertEqual(reading.record?.payload, .text(Array("{\"a\":1}".utf8)))
    XCTAssertEqual(reading.record?.scan, .json(hasLineBreaks: false))
    XCTAssertEqual(reading.record?.room, Array("\"chat/7\"".utf8))
    XCTAssertEqual(
      String(decoding: reading.record?.meta ?? [], as: UTF8.self),
      #"{"qos":1,"retain":true,"content_type":"text/plain","user_properties":[["k","v"]]}"#)
    XCTAssertEqual(
      packets(reading.acknowledgement), [.puback(packetID: 5, reasonCode: 0, properties: .init())])
    XCTAssertEqual(reading.moreRecords.count, 1)
    XCTAssertEqual(reading.moreRecords.first?.record.payload, .binary([0xFF, 0x00]))
    XCTAssertNil(reading.moreRecords.first?.acknowledgement, "QoS 0 needs none")
  }

  func testAQoS2MessageIsReceivedThenCompletedOnRelease() {
    var adapter = connected()
    let message = MQTTPublish(topic: "t", payload: [65], qos: 2, packetID: 9)
    let reading = adapter.read(.binary(broker.encode(.publish(message))))
    XCTAssertEqual(packets(reading.acknowledgement), [.pubrec(packetID: 9, reasonCode: 0)])
    let release = adapter.read(.binary(broker.encode(.pubrel(packetID: 9, reasonCode: 0))))
    XCTAssertEqual(packets(release.replies.first), [.pubcomp(packetID: 9, reasonCode: 0)])
  }

  func testSendsArePublishedWithIDsFromTheirCountAndPubacksSettleThem() {
    var adapter = connected(receiveMaximum: 20)
    XCTAssertEqual(adapter.maxInFlight, 20)
    XCTAssertEqual(adapter.refusal(of: entry(1, room: "chat/7")), nil)
    let frame = adapter.encode(entry(1, "hello", room: "chat/7"))
    guard case .publish(let message)? = packets(frame).first else { return XCTFail("no PUBLISH") }
    XCTAssertEqual(message.topic, "chat/7")
    XCTAssertEqual(message.packetID, 2)
    XCTAssertFalse(message.duplicate)
    XCTAssertEqual(adapter.storedForm(of: frame), .text(Array("hello".utf8)))
    _ = adapter.encode(entry(2, room: "chat/7"))
    XCTAssertEqual(
      adapter.read(.binary(broker.encode(.puback(packetID: 2, reasonCode: 0, properties: .init()))))
        .delivered, [1])
    var reason = MQTTProperties()
    reason.reasonString = "quota"
    XCTAssertEqual(
      adapter.read(
        .binary(broker.encode(.puback(packetID: 3, reasonCode: 0x97, properties: reason)))
      )
      .failed, [DeliveryFailure(count: 2, reason: "quota exceeded: quota")])
    XCTAssertNotNil(
      adapter.read(.binary(broker.encode(.puback(packetID: 3, reasonCode: 0, properties: .init()))))
        .problem, "a second PUBACK")
    _ = adapter.open(handshake())
    guard case .publish(let again)? = packets(adapter.encode(entry(2, room: "chat/7"))).first else {
      return XCTFail("no PUBLISH")
    }
    XCTAssertEqual(again.packetID, 3, "the same id after a reconnect")
    XCTAssertTrue(again.duplicate)
  }

  func testMessagesWithoutATopicToPublishToAreRefused() {
    let adapter = connected()
    XCTAssertNotNil(adapter.refusal(of: entry(1, room: "chat/+")))
    XCTAssertNotNil(adapter.refusal(of: entry(1, room: "chat/#")))
    XCTAssertNotNil(adapter.refusal(of: entry(1, room: nil)))
  }

  func testTheBrokersKeepAliveReplacesOursForTheConnection() {
    var link = Harness(rooms: [], backend: adapter())
    link.open()
    var properties = MQTTProperties()
    properties.serverKeepAlive = 7
    let lines = link.on(
      .message(
        .binary(
          broker.encode(.connack(sessionPresent: false, reasonCode: 0, properties: properties)))))
    XCTAssertTrue(lines.contains("arm keepalive 7"), "\(lines)")
    XCTAssertEqual(
      link.on(.timerFired(.keepalive)).first, "arm keepalive 7", "and every interval after")
    link.on(.ended(closed(.goingAway)))
    link.on(.timerFired(.retry))
    link.on(.upgraded(handshake()))
    let plain = link.on(
      .message(
        .binary(broker.encode(.connack(sessionPresent: false, reasonCode: 0, properties: .init()))))
    )
    XCTAssertTrue(plain.contains("arm keepalive 10"), "a new connection starts from ours: \(plain)")
  }

  func testTheKeepaliveIsAPingreqAnsweredByAPingresp() {
    var adapter = connected()
    XCTAssertEqual(packets(adapter.heartbeat()), [.pingreq])
    XCTAssertTrue(adapter.read(.binary(broker.encode(.pingresp))).heartbeatAnswered)
  }

  func testBrokenStreamsEndTheConnectionAndServerDisconnectsAreReported() {
    var adapter = connected()
    XCTAssertEqual(
      adapter.read(text("hello")).session,
      .broken("a text frame (MQTT travels in binary frames)"))
    var other = connected()
    guard case .broken(let reason)? = other.read(.binary([0x36, 0x01, 0x00])).session else {
      return XCTFail("a malformed packet")
    }
    XCTAssertTrue(reason.contains("QoS 3"), reason)
    var kicked = connected()
    XCTAssertEqual(
      kicked.read(.binary(broker.encode(.disconnect(reasonCode: 0x87, properties: .init()))))
        .session,
      .refused("the broker disconnected: not authorized"))
    XCTAssertEqual(
      kicked.read(.binary(broker.encode(.disconnect(reasonCode: 0x8B, properties: .init()))))
        .problem,
      "the broker disconnected: server shutting down")
  }

  // MARK: QoS 2

  func testAtQoS2AMessageIsATwoStepDeliveryWhoseRecordCarriesItsPacketID() {
    var adapter = connected { $0.qos = 2 }
    XCTAssertTrue(adapter.keepsReceipts)
    let message = MQTTPublish(topic: "t", payload: [65], qos: 2, duplicate: true, packetID: 9)
    let reading = adapter.read(.binary(broker.encode(.publish(message))))
    XCTAssertEqual(reading.record?.twoStep, TwoStepDelivery(id: 9, redelivered: true))
    XCTAssertEqual(
      String(decoding: reading.record?.meta ?? [], as: UTF8.self),
      #"{"qos":2,"packet_id":9,"dup":true}"#)
    XCTAssertEqual(packets(reading.acknowledgement), [.pubrec(packetID: 9, reasonCode: 0)])
    let qos1 = adapter.read(
      .binary(broker.encode(.publish(MQTTPublish(topic: "t", payload: [65], qos: 1, packetID: 3)))))
    XCTAssertNil(qos1.record?.twoStep, "a QoS 1 message the broker downgraded is no such delivery")
    let release = adapter.read(.binary(broker.encode(.pubrel(packetID: 9, reasonCode: 0))))
    XCTAssertEqual(release.replies, [], "the PUBCOMP waits for the release to be durable")
    XCTAssertEqual(release.releases.map(\.id), [9])
    XCTAssertEqual(packets(release.releases.first?.answer), [.pubcomp(packetID: 9, reasonCode: 0)])
  }

  func testAQoS2RecordsPacketIDIsReadBackFromItsMeta() {
    var adapter = connected { $0.qos = 2 }
    let message = MQTTPublish(topic: "t", payload: [65], qos: 2, retain: true, packetID: 700)
    let meta = adapter.read(.binary(broker.encode(.publish(message)))).record?.meta ?? []
    XCTAssertEqual(meta.withUnsafeBytes { MQTTProtocol.twoStepDelivery(meta: $0) }, 700)
    for other in [
      #"{"qos":1,"packet_id":7}"#, #"{"qos":2}"#, #"{"qos":2,"packet_id":70000}"#,
      #"{"qos":2,"packet_id":"7"}"#, "not json", #"{"qos":2,"packet_id":-1}"#,
    ] {
      XCTAssertNil(
        Array(other.utf8).withUnsafeBytes { MQTTProtocol.twoStepDelivery(meta: $0) }, other)
    }
  }

  func testANewSessionAtQoS2SaysTheBrokerForgotItsDeliveries() {
    var adapter = adapter { $0.qos = 2 }
    _ = adapter.open(handshake())
    let fresh = adapter.read(
      .binary(broker.encode(.connack(sessionPresent: false, reasonCode: 0, properties: .init()))))
    XCTAssertTrue(fresh.deliveriesForgotten)
    _ = adapter.open(handshake())
    let kept = adapter.read(
      .binary(broker.encode(.connack(sessionPresent: true, reasonCode: 0, properties: .init()))))
    XCTAssertFalse(kept.deliveriesForgotten)
    var qos1 = connected()
    XCTAssertFalse(qos1.keepsReceipts)
    _ = qos1.open(handshake())
    XCTAssertFalse(
      qos1.read(
        .binary(broker.encode(.connack(sessionPresent: false, reasonCode: 0, properties: .init())))
      ).deliveriesForgotten)
  }

  func testAtQoS2ASendIsPublishedThenReleasedAndItsOutRecordKeepsTheText() {
    var adapter = connected { $0.qos = 2 }
    let frame = adapter.encode(entry(1, "hello", room: "chat/7"))
    guard case .publish(let message)? = packets(frame).first else { return XCTFail("no PUBLISH") }
    XCTAssertEqual(message.qos, 2)
    XCTAssertEqual(message.packetID, 2)
    let received = adapter.read(.binary(broker.encode(.pubrec(packetID: 2, reasonCode: 0))))
    XCTAssertEqual(received.awaitingRelease, [1])
    XCTAssertEqual(received.delivered, [])
    var released = entry(1, "hello", room: "chat/7")
    released.released = true
    let release = adapter.encode(released)
    XCTAssertEqual(packets(release), [.pubrel(packetID: 2, reasonCode: 0)])
    XCTAssertEqual(adapter.storedForm(of: release, for: released), .text(Array("hello".utf8)))
    XCTAssertEqual(
      adapter.read(.binary(broker.encode(.pubcomp(packetID: 2, reasonCode: 0)))).delivered, [1])
    XCTAssertNotNil(
      adapter.read(.binary(broker.encode(.pubrec(packetID: 2, reasonCode: 0)))).problem,
      "nothing in flight any more")
  }

  func testAReleasedSendIsReleasedAgainWhateverTheQoSIsNow() {
    var adapter = connected { $0.qos = 1 }
    var released = entry(4, "held", room: "chat/7")
    released.released = true
    XCTAssertEqual(
      packets(adapter.encode(released)), [.pubrel(packetID: 5, reasonCode: 0)],
      "the broker holds it from a run at QoS 2: PUBLISHed, it would come twice")
    XCTAssertEqual(
      adapter.read(.binary(broker.encode(.pubcomp(packetID: 5, reasonCode: 0)))).delivered, [4])
  }

  func testAPubcompWithAReasonCodeStillEndsTheSendAndSaysTheBrokerMayHaveLostIt() {
    var adapter = connected { $0.qos = 2 }
    _ = adapter.encode(entry(1, room: "chat/7"))
    let done = adapter.read(.binary(broker.encode(.pubcomp(packetID: 2, reasonCode: 0x92))))
    XCTAssertEqual(done.delivered, [1])
    XCTAssertEqual(done.problem?.contains("it may have lost the message"), true)
  }

  func testAGrantBelowTheQoSAskedIsNotedForStatusUntilAGrantAsAsked() {
    var adapter = connected { $0.qos = 2 }
    var ids: [UInt16] = []
    for room in ["b/1", "a/1", "c/1"] {
      guard case .subscribe(let id, _, _)? = packets(adapter.join(RoomID(room)!)).first else {
        return XCTFail("no SUBSCRIBE")
      }
      ids.append(id)
    }
    for (id, code) in zip(ids, [UInt8(1), 1, 0]) {
      _ = adapter.read(
        .binary(broker.encode(.suback(packetID: id, reasonCodes: [code], properties: .init()))))
    }
    XCTAssertEqual(
      adapter.session?.note,
      "QoS 2 asked, broker granted 1 for a/1, b/1; QoS 2 asked, broker granted 0 for c/1")
    guard case .subscribe(let again, _, _)? = packets(adapter.join(RoomID("c/1")!)).first else {
      return XCTFail("no SUBSCRIBE")
    }
    let full = adapter.read(
      .binary(broker.encode(.suback(packetID: again, reasonCodes: [2], properties: .init()))))
    XCTAssertNil(full.notice)
    XCTAssertEqual(adapter.session?.note, "QoS 2 asked, broker granted 1 for a/1, b/1")
  }
}
