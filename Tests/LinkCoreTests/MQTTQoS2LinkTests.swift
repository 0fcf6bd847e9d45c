import LinkCore
import TestSupport
import WebSocket
import XCTest

/// The link core driving the MQTT dialect at QoS 2, as transcripts (packets shown by name):
/// PUBREC after durability, redeliveries answered without a record, PUBCOMP after a durable
/// release, a new session forgotten before subscribing, and sends in four steps.
final class MQTTQoS2LinkTests: XCTestCase {
  private var version = MQTTVersion.v5
  private var broker: MQTTEncoder { MQTTEncoder(version: version) }

  /// A core at QoS 2 with `pending` deliveries restored, everything through `durable` stored.
  private func link(
    pending: [UInt16: UInt64] = [:], durable: UInt64 = 0, rooms: [String] = ["chat/7"]
  ) -> Harness {
    var settings = MQTTProtocol.Settings()
    settings.version = version
    settings.clientID = "c1"
    settings.qos = 2
    let core = LinkCore(
      settings: LinkSettings(
        url: testURL, pingInterval: .seconds(10), pongTimeout: .seconds(5),
        reconnectMin: .seconds(1), reconnectMax: .seconds(60)),
      rooms: rooms.compactMap(RoomID.init),
      backend: MQTTProtocol(settings),
      receipts: InboundReceipts(pending: pending, durableThrough: durable), random: SplitMix64())
    return Harness(core: core)
  }

  /// A link whose CONNACK arrived (session present unless told otherwise), its rooms
  /// subscribed as asked.
  private func ready(
    pending: [UInt16: UInt64] = [:], durable: UInt64 = 0, present: Bool = true
  ) -> Harness {
    var link = link(pending: pending, durable: durable)
    link.open()
    _ = lines(&link, connack(present: present))
    return link
  }

  private func connack(present: Bool) -> LinkEvent {
    .message(
      .binary(broker.encode(.connack(sessionPresent: present, reasonCode: 0, properties: .init()))))
  }

  private func publish(_ id: UInt16, _ text: String = "hi", dup: Bool = false) -> LinkEvent {
    .message(
      .binary(
        broker.encode(
          .publish(
            MQTTPublish(
              topic: "chat/7", payload: Array(text.utf8), qos: 2, duplicate: dup, packetID: id)))))
  }

  private func packet(_ packet: MQTTPacket) -> LinkEvent {
    .message(.binary(broker.encode(packet)))
  }

  /// The event's actions as lines, MQTT packets by name.
  private func lines(_ link: inout Harness, _ event: LinkEvent) -> [String] {
    link.actions(event).flatMap { action -> [String] in
      switch action {
      case .send(let message): return ["send " + name(message)]
      case .sendOutbox(let frames, let entries):
        return zip(frames.messages, entries).map { "send \(name($0)) for \($1.id)" }
      case .store(let record, let acknowledged):
        let meta = String(decoding: record.meta ?? [], as: UTF8.self)
        return [
          "store \(record.payload.text ?? "binary") \(meta)" + (acknowledged ? " (ack held)" : "")
        ]
      default: return Harness.lines(action)
      }
    }
  }

  private func name(_ message: Message) -> String {
    var decoder = MQTTDecoder(version: version, maximumPacketSize: 1 << 20)
    decoder.append(message.bytes)
    guard let packet = try? decoder.next() else { return "?" }
    switch packet {
    case .publish(let p):
      return "PUBLISH \(p.packetID ?? 0) qos \(p.qos)" + (p.duplicate ? " dup" : "")
    case .pubrec(let id, let code): return "PUBREC \(id)" + (code == 0 ? "" : " \(code)")
    case .pubrel(let id, _): return "PUBREL \(id)"
    case .pubcomp(let id, _): return "PUBCOMP \(id)"
    case .puback(let id, _, _): return "PUBACK \(id)"
    case .subscribe(_, let filters, _):
      return "SUBSCRIBE " + filters.map { "\($0.filter) qos \($0.qos)" }.joined(separator: ",")
    default: return "\(packet)"
    }
  }

  private func bothVersions(_ body: () throws -> Void) rethrows {
    for v in [MQTTVersion.v5, .v311] {
      version = v
      try body()
    }
  }

  // MARK: Inbound

  func testTheRoomsAreSubscribedAtQoS2() {
    var link = link()
    link.open()
    XCTAssertTrue(lines(&link, connack(present: true)).contains("send SUBSCRIBE chat/7 qos 2"))
  }

  func testAMessageIsStoredWithItsPacketIDAndItsPubrecWaitsForItsRecordToBeDurable() {
    bothVersions {
      var link = ready()
      XCTAssertEqual(
        lines(&link, publish(9)),
        ["await durability", #"store hi {"qos":2,"packet_id":9} (ack held)"#])
      XCTAssertEqual(lines(&link, .stored(seq: 5)), [])
      XCTAssertEqual(lines(&link, .durable(through: 4)), [], "its record is not durable yet")
      XCTAssertEqual(
        lines(&link, .durable(through: 5)), ["send PUBREC 9", "durability not awaited"])
      XCTAssertEqual(link.core.receipts.pending, [9: 5])
    }
  }

  func testAPubrelIsCompletedOnlyOnceItsReleaseIsDurableAndTheIDIsForgotten() {
    bothVersions {
      var link = ready()
      _ = lines(&link, publish(9))
      link.on(.stored(seq: 5))
      link.on(.durable(through: 5))
      XCTAssertEqual(
        lines(&link, packet(.pubrel(packetID: 9, reasonCode: 0))),
        ["journal released(id: 9, seq: 5)"], "no PUBCOMP before the release is durable")
      XCTAssertEqual(link.core.receipts.pending, [:])
      XCTAssertEqual(lines(&link, .journalDurable(through: 1)), ["send PUBCOMP 9"])
      XCTAssertEqual(
        lines(&link, packet(.pubrel(packetID: 9, reasonCode: 0))), ["send PUBCOMP 9"],
        "a PUBREL again (our PUBCOMP was lost): nothing to write, answered at once")
    }
  }

  func testAPubrelWaitsForEveryReleaseBeforeItEvenOfAnIDNotPending() {
    var link = ready(pending: [3: 1, 4: 2], durable: 2)
    XCTAssertEqual(
      lines(&link, packet(.pubrel(packetID: 3, reasonCode: 0))),
      ["journal released(id: 3, seq: 1)"])
    XCTAssertEqual(
      lines(&link, packet(.pubrel(packetID: 77, reasonCode: 0))), [],
      "waits behind the release of 3, which may be its own")
    XCTAssertEqual(
      lines(&link, .journalDurable(through: 1)), ["send PUBCOMP 3", "send PUBCOMP 77"])
  }

  func testARedeliveryOfAStoredIDIsAnsweredOnceItsRecordIsDurableWithoutASecondRecord() {
    var link = ready()
    _ = lines(&link, publish(9))
    link.on(.stored(seq: 5))
    // The connection ends before the record is durable: its PUBREC is void.
    link.on(.ended(closed(.goingAway)))
    link.on(.timerFired(.retry))
    link.on(.upgraded(handshake()))
    _ = lines(&link, connack(present: true))
    XCTAssertEqual(
      lines(&link, publish(9, dup: true)), ["await durability"], "no store: it was stored")
    XCTAssertEqual(link.core.counters.received, 1)
    XCTAssertEqual(
      lines(&link, .durable(through: 5)), ["send PUBREC 9", "durability not awaited"])
  }

  func testARedeliveryOfAnIDPendingAtStartIsAnsweredAtOnce() {
    var link = ready(pending: [9: 40], durable: 41)
    XCTAssertEqual(lines(&link, publish(9, dup: true)), ["send PUBREC 9"])
    XCTAssertEqual(link.core.counters.received, 0)
  }

  func testARedeliveryKeepsItsPlaceAmongTheAcknowledgementsWaiting() {
    var link = ready(pending: [9: 40], durable: 41)
    _ = lines(&link, publish(10))
    link.on(.stored(seq: 42))
    XCTAssertEqual(lines(&link, publish(9, dup: true)), [], "behind the PUBREC of 10")
    XCTAssertEqual(
      lines(&link, .durable(through: 42)),
      ["send PUBREC 10", "send PUBREC 9", "durability not awaited"])
  }

  func testAMessageWithoutDupIsAlwaysStoredAndReleasesTheIDItReuses() {
    var link = ready(pending: [9: 40], durable: 41)
    XCTAssertEqual(
      lines(&link, publish(9, "again")),
      [
        "journal released(id: 9, seq: 40)", "await durability",
        #"store again {"qos":2,"packet_id":9} (ack held)"#,
      ])
    link.on(.stored(seq: 42))
    XCTAssertEqual(link.core.receipts.pending, [9: 42])
  }

  func testADuplicateOfAnIDNotPendingIsStored() {
    var link = ready(pending: [9: 40], durable: 41)
    XCTAssertEqual(
      lines(&link, publish(10, dup: true)),
      ["await durability", #"store hi {"qos":2,"packet_id":10,"dup":true} (ack held)"#])
  }

  func testANewSessionForgetsThePendingIDsDurablyBeforeItSubscribes() {
    bothVersions {
      var link = link(pending: [9: 40], durable: 41)
      link.open()
      let opened = lines(&link, connack(present: false))
      XCTAssertTrue(opened.contains("journal forgotten(through: 40)"), "\(opened)")
      XCTAssertFalse(opened.contains { $0.hasPrefix("send SUBSCRIBE") }, "\(opened)")
      XCTAssertEqual(link.core.receipts.pending, [:])
      XCTAssertEqual(lines(&link, .journalDurable(through: 1)), ["send SUBSCRIBE chat/7 qos 2"])
      XCTAssertEqual(
        lines(&link, publish(9, dup: true)).last,
        #"store hi {"qos":2,"packet_id":9,"dup":true} (ack held)"#)
    }
  }

  func testASubscribeHeldForAForgettingIsVoidWhenTheConnectionEnds() {
    var link = link(pending: [9: 40], durable: 41)
    link.open()
    _ = lines(&link, connack(present: false))
    link.on(.ended(closed(.goingAway)))
    XCTAssertEqual(lines(&link, .journalDurable(through: 1)), [])
  }

  func testAKeptSessionSubscribesAtOnce() {
    var link = link(pending: [9: 40], durable: 41)
    link.open()
    XCTAssertTrue(lines(&link, connack(present: true)).contains("send SUBSCRIBE chat/7 qos 2"))
    XCTAssertEqual(link.core.receipts.pending, [9: 40])
  }

  func testThePendingIDsGoToTheJournalBelowAWatermarkNowAndThen() {
    var link = ready()
    _ = lines(&link, publish(9))
    link.on(.stored(seq: 100))
    _ = lines(&link, publish(10))
    link.on(.stored(seq: 5000))
    let stride = InboundReceipts.watermarkStride
    XCTAssertEqual(
      lines(&link, .durable(through: stride)),
      ["journal received(id: 9, seq: 100)", "journal watermark(\(stride))", "send PUBREC 9"])
    XCTAssertEqual(lines(&link, .durable(through: 4999)), [], "not again before another stride")
    XCTAssertEqual(
      lines(&link, .durable(through: 2 * stride)),
      [
        "journal received(id: 10, seq: 5000)", "journal watermark(\(2 * stride))", "send PUBREC 10",
        "durability not awaited",
      ])
  }

  // MARK: Outbound

  private func sendReady() -> Harness {
    var link = ready()
    XCTAssertEqual(
      lines(
        &link,
        .outbox([entry(1, "one", room: "chat/7"), entry(2, "two", room: "chat/7")], buffered: 0)),
      ["send PUBLISH 2 qos 2 for id-1", "send PUBLISH 3 qos 2 for id-2"], "no confirming ping")
    return link
  }

  private func released(_ entry: OutboxEntry) -> OutboxEntry {
    var entry = entry
    entry.released = true
    return entry
  }

  func testASendIsReleasedOnceThatIsDurableAndConfirmedByThePubcomp() {
    bothVersions {
      var link = sendReady()
      XCTAssertEqual(lines(&link, packet(.pubrec(packetID: 2, reasonCode: 0))), ["release id-1"])
      XCTAssertEqual(
        lines(&link, .released([released(entry(1, "one", room: "chat/7"))])), ["send PUBREL 2"])
      let actions = link.actions(packet(.pubcomp(packetID: 2, reasonCode: 0)))
      guard case .confirmed(let sent)? = actions.first else { return XCTFail("\(actions)") }
      XCTAssertEqual(sent.entry.id, "id-1")
      XCTAssertEqual(sent.frame.message, .text(Array("one".utf8)), "the out record keeps the text")
      XCTAssertEqual(link.core.counters.confirmed, 1)
    }
  }

  func testAReleasedSendIsOnlyReleasedAgainAfterAReconnect() {
    var link = sendReady()
    link.on(packet(.pubrec(packetID: 2, reasonCode: 0)))
    link.on(.ended(closed(.goingAway)))
    XCTAssertEqual(
      lines(&link, .released([released(entry(1, "one", room: "chat/7"))])), [],
      "not connected: the outbox offers it again")
    link.on(.timerFired(.retry))
    link.on(.upgraded(handshake()))
    _ = lines(&link, connack(present: true))
    XCTAssertEqual(
      lines(
        &link,
        .outbox(
          [released(entry(1, "one", room: "chat/7")), entry(2, "two", room: "chat/7")], buffered: 0)
      ),
      ["send PUBREL 2 for id-1", "send PUBLISH 3 qos 2 dup for id-2"])
    XCTAssertEqual(
      lines(&link, packet(.pubcomp(packetID: 2, reasonCode: 0))).first, "confirmed id-1")
  }

  func testAPubrecThatComesAgainAsksForTheReleaseAgain() {
    var link = sendReady()
    link.on(packet(.pubrec(packetID: 2, reasonCode: 0)))
    XCTAssertEqual(lines(&link, packet(.pubrec(packetID: 2, reasonCode: 0))), ["release id-1"])
  }

  func testAPubrecWithAFailureCodeFailsThatMessageOnly() {
    var link = sendReady()
    XCTAssertEqual(
      lines(&link, packet(.pubrec(packetID: 2, reasonCode: 0x97))),
      ["failed id-1: quota exceeded"])
    XCTAssertEqual(lines(&link, packet(.pubrec(packetID: 3, reasonCode: 0))), ["release id-2"])
    XCTAssertEqual(link.core.counters.failed, 1)
  }

  func testAPubcompForNoSendInFlightIsReportedAndChangesNothing() {
    var link = sendReady()
    XCTAssertEqual(
      lines(&link, packet(.pubcomp(packetID: 99, reasonCode: 0))),
      ["report protocolProblem(\"a PUBCOMP for packet id 99, which is not in flight\")"])
  }

  // MARK: Grants

  func testASubscriptionGrantedALowerQoSIsLoggedOnceAndShownInTheSession() throws {
    var link = link()
    link.open()
    let subscribe = link.actions(connack(present: true)).compactMap { action -> UInt16? in
      guard case .send(let message) = action else { return nil }
      var decoder = MQTTDecoder(version: version, maximumPacketSize: 1 << 20)
      decoder.append(message.bytes)
      if case .subscribe(let id, _, _)? = try? decoder.next() { return id }
      return nil
    }
    let id = try XCTUnwrap(subscribe.first)
    let granted = packet(.suback(packetID: id, reasonCodes: [1], properties: .init()))
    XCTAssertEqual(
      lines(&link, granted),
      [
        #"report protocolNotice(LinkCore.ProtocolNotice.grantedLess(filter: "chat/7", asked: 2, granted: 1))"#
      ])
    XCTAssertEqual(link.core.session?.note, "QoS 2 asked, broker granted 1 for chat/7")
    link.on(.reconnect(reason: "test"))
    link.on(.upgraded(handshake()))
    let again = link.actions(connack(present: true)).compactMap { action -> UInt16? in
      guard case .send(let message) = action else { return nil }
      var decoder = MQTTDecoder(version: version, maximumPacketSize: 1 << 20)
      decoder.append(message.bytes)
      if case .subscribe(let id, _, _)? = try? decoder.next() { return id }
      return nil
    }
    let second = try XCTUnwrap(again.first)
    XCTAssertEqual(
      lines(&link, packet(.suback(packetID: second, reasonCodes: [1], properties: .init()))), [],
      "logged once per room")
    XCTAssertEqual(link.core.session?.note, "QoS 2 asked, broker granted 1 for chat/7")
    link.on(.leave(RoomID("chat/7")!))
    XCTAssertNil(link.core.session?.note)
  }
}
