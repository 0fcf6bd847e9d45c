import LinkCore
import TestSupport
import WebSocket
import XCTest

/// `[MQTT] IDProperty=`: an inbound PUBLISH's id from a user property or its Correlation Data,
/// read by the dialect alone and, under the core, acknowledged as any other record (the store
/// drops a duplicate and reports the last seq it stored).
final class MQTTIDPropertyTests: XCTestCase {
  private let broker = MQTTEncoder(version: .v5)

  private func connected(_ idProperty: String, qos: UInt8 = 1) -> MQTTProtocol {
    var settings = MQTTProtocol.Settings()
    settings.idProperty = idProperty
    settings.qos = qos
    var adapter = MQTTProtocol(settings)
    _ = adapter.open(handshake())
    let reading = adapter.read(
      .binary(broker.encode(.connack(sessionPresent: true, reasonCode: 0, properties: .init()))))
    XCTAssertEqual(reading.session, .ready)
    return adapter
  }

  private func publish(
    _ text: String = "hi", packetID: UInt16 = 5, qos: UInt8 = 1,
    _ configure: (inout MQTTProperties) -> Void = { _ in }
  ) -> [UInt8] {
    var properties = MQTTProperties()
    configure(&properties)
    return broker.encode(
      .publish(
        MQTTPublish(
          topic: "chat/7", payload: Array(text.utf8), qos: qos, packetID: packetID,
          properties: properties)))
  }

  /// The id of the record one PUBLISH with `configure`'s properties makes, as text.
  private func id(_ idProperty: String, _ configure: (inout MQTTProperties) -> Void) -> String? {
    var adapter = connected(idProperty)
    let reading = adapter.read(.binary(publish("hi", configure)))
    XCTAssertNotNil(reading.record, "stored with or without an id")
    return reading.record?.idBytes.map { String(decoding: $0, as: UTF8.self) }
  }

  func testTheNamedUserPropertyIsTheMessagesIDAndStaysInMeta() {
    var adapter = connected("msg-id")
    let reading = adapter.read(
      .binary(publish { $0.userProperties = [.init("k", "v"), .init("msg-id", "m-1")] }))
    XCTAssertEqual(reading.record?.idBytes, Array("m-1".utf8))
    XCTAssertEqual(
      String(decoding: reading.record?.meta ?? [], as: UTF8.self),
      #"{"qos":1,"user_properties":[["k","v"],["msg-id","m-1"]]}"#)
    XCTAssertNotNil(reading.acknowledgement, "acknowledged once durable, as without an id")
  }

  func testThePropertyIsReadWhereverThePacketIsSplit() {
    let bytes = publish("{\"a\":1}") { $0.userProperties = [.init("msg-id", "m-1")] }
    for split in 1..<bytes.count {
      var adapter = connected("msg-id")
      let first = adapter.read(.binary(Array(bytes[..<split])))
      XCTAssertNil(first.record, "split at \(split)")
      XCTAssertNil(first.session, "split at \(split)")
      let second = adapter.read(.binary(Array(bytes[split...])))
      XCTAssertEqual(second.record?.idBytes, Array("m-1".utf8), "split at \(split)")
    }
  }

  func testSeveralPacketsInOneFrameEachKeepTheirOwnID() {
    var adapter = connected("msg-id")
    let frame =
      publish("a", packetID: 1) { $0.userProperties = [.init("msg-id", "1")] }
      + publish("b", packetID: 2)
      + publish("c", packetID: 3) {
        $0.userProperties = [.init("msg-id", "3")]
      }
    let reading = adapter.read(.binary(frame))
    XCTAssertEqual(reading.record?.idBytes, Array("1".utf8))
    XCTAssertEqual(reading.moreRecords.map(\.record.idBytes), [nil, Array("3".utf8)])
  }

  func testAMessageWithoutThePropertyHasNoIDAndIsStoredAsBefore() {
    XCTAssertNil(id("msg-id") { _ in })
    XCTAssertNil(id("msg-id") { $0.userProperties = [.init("other", "m-1")] })
    XCTAssertNil(id("msg-id") { $0.userProperties = [.init("Msg-Id", "m-1")] }, "names are exact")
  }

  func testWithIDPropertyEmptyNoMessageHasAnIDWhateverItCarries() {
    XCTAssertNil(
      id("") {
        $0.userProperties = [.init("msg-id", "m-1"), .init("", "x")]
        $0.correlationData = Array("c-1".utf8)
      })
  }

  func testAnIDInAPropertyOfAnotherKindIsNoID() {
    XCTAssertNil(id("msg-id") { $0.correlationData = Array("m-1".utf8) })
    XCTAssertNil(id("msg-id") { $0.contentType = "msg-id" })
    XCTAssertNil(
      id(MQTTProtocol.correlationDataID) { $0.userProperties = [.init("correlation-data", "c")] },
      "correlation-data names the property, never a user property")
  }

  func testCorrelationDataIsTheIDAsTextOrElseAsLowercaseHex() {
    let correlation = MQTTProtocol.correlationDataID
    XCTAssertEqual(id(correlation) { $0.correlationData = Array("req-7".utf8) }, "req-7")
    XCTAssertEqual(id(correlation) { $0.correlationData = Array("é-1".utf8) }, "é-1")
    XCTAssertEqual(id(correlation) { $0.correlationData = [0xFF, 0x00, 0x1A] }, "ff001a")
    XCTAssertEqual(
      id(correlation) { $0.correlationData = Array("a\tb".utf8) }, "610962",
      "UTF-8 with a control character is binary")
    XCTAssertNil(id(correlation) { $0.correlationData = [] })
  }

  func testTheCorrelationIDIsKeptInMetaBesideTheDataItself() {
    var adapter = connected(MQTTProtocol.correlationDataID)
    let reading = adapter.read(.binary(publish { $0.correlationData = Array("a\"b".utf8) }))
    XCTAssertEqual(reading.record?.idBytes, Array("a\"b".utf8))
    XCTAssertEqual(
      String(decoding: reading.record?.meta ?? [], as: UTF8.self),
      #"{"qos":1,"correlation_data":"YSJi","correlation_id":"a\"b"}"#)
  }

  func testAnEmptyOrOverlongValueIsNoID() {
    let limit = MQTTProtocol.maximumIDLength
    XCTAssertNil(id("msg-id") { $0.userProperties = [.init("msg-id", "")] })
    XCTAssertEqual(
      id("msg-id") { $0.userProperties = [.init("msg-id", String(repeating: "x", count: limit))] }?
        .count, limit)
    XCTAssertNil(
      id("msg-id") {
        $0.userProperties = [.init("msg-id", String(repeating: "x", count: limit + 1))]
      })
    XCTAssertNil(
      id(MQTTProtocol.correlationDataID) {
        $0.correlationData = Array(repeating: 0xAB, count: limit + 1)
      })
  }

  func testTheFirstOfARepeatedPropertyCounts() {
    XCTAssertEqual(
      id("msg-id") { $0.userProperties = [.init("msg-id", "a"), .init("msg-id", "b")] }, "a")
  }

  // MARK: Under the core

  private func ready(qos: UInt8) -> Harness {
    var settings = MQTTProtocol.Settings()
    settings.idProperty = "msg-id"
    settings.qos = qos
    let core = LinkCore(
      settings: LinkSettings(
        url: testURL, pingInterval: .seconds(10), pongTimeout: .seconds(5),
        reconnectMin: .seconds(1), reconnectMax: .seconds(60)),
      rooms: [], backend: MQTTProtocol(settings),
      receipts: InboundReceipts(), random: SplitMix64())
    var link = Harness(core: core)
    link.open()
    link.on(
      .message(
        .binary(broker.encode(.connack(sessionPresent: true, reasonCode: 0, properties: .init())))
      ))
    return link
  }

  private func message(_ packetID: UInt16, qos: UInt8, id: String) -> LinkEvent {
    .message(
      .binary(publish(packetID: packetID, qos: qos) { $0.userProperties = [.init("msg-id", id)] }))
  }

  /// The event's actions, with the acknowledgements MQTT sends by name.
  private func lines(_ link: inout Harness, _ event: LinkEvent) -> [String] {
    link.actions(event).map { action in
      guard case .send(let frame) = action else { return Harness.line(action) }
      var decoder = MQTTDecoder(version: .v5, maximumPacketSize: 1 << 20)
      decoder.append(frame.bytes)
      switch try? decoder.next() {
      case .puback(let id, _, _)?: return "send PUBACK \(id)"
      case .pubrec(let id, _)?: return "send PUBREC \(id)"
      case .pubcomp(let id, _)?: return "send PUBCOMP \(id)"
      default: return Harness.line(action)
      }
    }
  }

  func testAQoS1DuplicateIsAcknowledgedOnceTheRecordItRepeatsIsDurable() {
    var link = ready(qos: 1)
    XCTAssertEqual(
      lines(&link, message(1, qos: 1, id: "m-1")), ["await durability", "store hi (ack held)"])
    link.on(.stored(seq: 5))
    // The same id again, published anew: the store drops it and reports its last seq, 5.
    XCTAssertEqual(lines(&link, message(2, qos: 1, id: "m-1")), ["store hi (ack held)"])
    link.on(.stored(seq: 5))
    XCTAssertEqual(
      lines(&link, .durable(through: 5)),
      ["send PUBACK 1", "send PUBACK 2", "durability not awaited"])
  }

  func testADuplicateOfARecordDurableAlreadyIsAcknowledgedAtOnceWithoutWaitingForAnFsync() {
    var link = ready(qos: 1)
    _ = lines(&link, message(1, qos: 1, id: "m-1"))
    link.on(.stored(seq: 5))
    XCTAssertEqual(lines(&link, .durable(through: 5)), ["send PUBACK 1", "durability not awaited"])
    // Nothing new is written, so no fsync and no durable report would ever come for it.
    XCTAssertEqual(
      lines(&link, message(2, qos: 1, id: "m-1")), ["await durability", "store hi (ack held)"])
    XCTAssertEqual(lines(&link, .stored(seq: 5)), ["send PUBACK 2", "durability not awaited"])
    // Behind an acknowledgement still waiting, it keeps its place.
    _ = lines(&link, message(3, qos: 1, id: "m-3"))
    _ = lines(&link, message(4, qos: 1, id: "m-1"))
    XCTAssertEqual(lines(&link, .stored(seq: 6)), [])
    XCTAssertEqual(lines(&link, .stored(seq: 6)), [], "m-1 dropped: the last seq is 6")
    XCTAssertEqual(
      lines(&link, .durable(through: 6)),
      ["send PUBACK 3", "send PUBACK 4", "durability not awaited"])
  }

  func testAQoS2DuplicateByIDIsReceivedAndReleasedAsAnyOtherDelivery() {
    var link = ready(qos: 2)
    _ = lines(&link, message(1, qos: 2, id: "m-1"))
    link.on(.stored(seq: 5))
    link.on(.durable(through: 5))
    // A second publish of m-1 (packet id 2, not a DUP): a new delivery to the receipts,
    // dropped by the store, which reports seq 5, durable already.
    XCTAssertEqual(
      lines(&link, message(2, qos: 2, id: "m-1")), ["await durability", "store hi (ack held)"])
    XCTAssertEqual(lines(&link, .stored(seq: 5)), ["send PUBREC 2", "durability not awaited"])
    XCTAssertEqual(link.core.receipts.pending, [1: 5, 2: 5])
    XCTAssertEqual(
      lines(&link, .message(.binary(broker.encode(.pubrel(packetID: 2, reasonCode: 0))))),
      ["journal released(id: 2, seq: 5)"])
    XCTAssertEqual(lines(&link, .journalDurable(through: 1)), ["send PUBCOMP 2"])
    XCTAssertEqual(link.core.receipts.pending, [1: 5], "the first delivery is untouched")
  }
}
