import LinkCore
import XCTest

/// MQTT packets as the specifications lay them out, both versions, split at every byte.
final class MQTTCodecTests: XCTestCase {
  private func decode(
    _ bytes: [UInt8], version: MQTTVersion = .v5, limit: Int = 1 << 20
  ) throws -> [MQTTPacket] {
    var decoder = MQTTDecoder(version: version, maximumPacketSize: limit)
    decoder.append(bytes)
    var packets: [MQTTPacket] = []
    while let packet = try decoder.next() { packets.append(packet) }
    XCTAssertEqual(decoder.pendingCount, 0)
    return packets
  }

  func testAConnectIsLaidOutAsTheSpecSays() throws {
    var properties = MQTTProperties()
    properties.sessionExpiry = 60
    let connect = MQTTConnect(
      version: .v5, clientID: "c1", cleanStart: false, keepAlive: 30, username: "u",
      password: Array("pw".utf8), properties: properties)
    XCTAssertEqual(
      MQTTEncoder(version: .v5).encode(.connect(connect)),
      [
        0x10, 27, 0, 4, 0x4D, 0x51, 0x54, 0x54, 5, 0xC0, 0, 30, 5, 0x11, 0, 0, 0, 60, 0, 2, 0x63,
        0x31, 0, 1, 0x75, 0, 2, 0x70, 0x77,
      ])
    XCTAssertEqual(
      try decode(MQTTEncoder(version: .v5).encode(.connect(connect))), [.connect(connect)])
    let subscribe = MQTTPacket.subscribe(
      packetID: 60001, filters: [MQTTSubscription(filter: "a/#", qos: 1)], properties: .init())
    XCTAssertEqual(try decode(MQTTEncoder(version: .v5).encode(subscribe)), [subscribe])
    let v311 = MQTTConnect(version: .v311, clientID: "c", cleanStart: true, keepAlive: 10)
    XCTAssertEqual(
      MQTTEncoder(version: .v311).encode(.connect(v311)),
      [0x10, 13, 0, 4, 0x4D, 0x51, 0x54, 0x54, 4, 0x02, 0, 10, 0, 1, 0x63])
  }

  func testEveryPacketABrokerSendsRoundTripsInBothVersions() throws {
    var properties = MQTTProperties()
    properties.contentType = "application/json"
    properties.userProperties = [MQTTUserProperty("a", "1"), MQTTUserProperty("a", "2")]
    properties.correlationData = [1, 2]
    properties.responseTopic = "r/1"
    properties.subscriptionIDs = [300]
    properties.messageExpiry = 9
    properties.payloadFormat = 1
    var connack = MQTTProperties()
    connack.receiveMaximum = 20
    connack.maximumPacketSize = 4096
    connack.reasonString = "ok"
    connack.assignedClientID = "x"
    connack.serverKeepAlive = 15
    connack.maximumQoS = 1
    connack.retainAvailable = true
    connack.topicAliasMaximum = 0
    let v5: [MQTTPacket] = [
      .connack(sessionPresent: true, reasonCode: 0, properties: connack),
      .publish(
        MQTTPublish(
          topic: "chat/7", payload: Array("{\"a\":1}".utf8), qos: 1, retain: true,
          duplicate: true, packetID: 7, properties: properties)),
      .publish(MQTTPublish(topic: "t", payload: [], qos: 0)),
      .puback(packetID: 7, reasonCode: 0, properties: MQTTProperties()),
      .puback(packetID: 8, reasonCode: 0x87, properties: connack),
      .pubrel(packetID: 9, reasonCode: 0),
      .suback(packetID: 60001, reasonCodes: [1, 0x80], properties: MQTTProperties()),
      .unsuback(packetID: 60002, reasonCodes: [0]), .pingresp,
      .disconnect(reasonCode: 0x8B, properties: MQTTProperties()),
    ]
    for packet in v5 {
      XCTAssertEqual(try decode(MQTTEncoder(version: .v5).encode(packet)), [packet], "\(packet)")
    }
    let v311: [MQTTPacket] = [
      .connack(sessionPresent: false, reasonCode: 4, properties: MQTTProperties()),
      .publish(MQTTPublish(topic: "a/b", payload: [0xFF, 0], qos: 1, packetID: 3)),
      .puback(packetID: 3, reasonCode: 0, properties: MQTTProperties()),
      .suback(packetID: 60001, reasonCodes: [0x80], properties: MQTTProperties()), .pingresp,
    ]
    for packet in v311 {
      let bytes = MQTTEncoder(version: .v311).encode(packet)
      XCTAssertEqual(try decode(bytes, version: .v311), [packet], "\(packet)")
    }
  }

  func testPacketsSplitAtEveryByteOrPackedTogetherComeOutWhole() throws {
    let encoder = MQTTEncoder(version: .v5)
    let packets: [MQTTPacket] = [
      .publish(
        MQTTPublish(topic: "t/1", payload: Array(repeating: 65, count: 300), qos: 1, packetID: 1)),
      .pingresp, .puback(packetID: 1, reasonCode: 0, properties: MQTTProperties()),
    ]
    let stream = packets.flatMap { encoder.encode($0) }
    XCTAssertEqual(try decode(stream), packets)
    for split in 0...stream.count {
      var decoder = MQTTDecoder(version: .v5, maximumPacketSize: 1 << 20)
      var out: [MQTTPacket] = []
      decoder.append(Array(stream[..<split]))
      while let packet = try decoder.next() { out.append(packet) }
      decoder.append(Array(stream[split...]))
      while let packet = try decoder.next() { out.append(packet) }
      XCTAssertEqual(out, packets, "split at \(split)")
    }
  }

  /// A long stream fed in pieces that end mid-packet: the consumed front is dropped now and
  /// then (past 64 KiB) while a partial packet waits, and nothing is lost or altered.
  func testALongStreamInPiecesKeepsThePartialPacketAcrossCompactions() throws {
    let encoder = MQTTEncoder(version: .v5)
    let packets: [MQTTPacket] = (0..<600).map { i in
      .publish(
        MQTTPublish(
          topic: "t/\(i % 7)", payload: Array(repeating: UInt8(i % 251), count: 200 + i % 90),
          qos: 1, packetID: UInt16(i + 1)))
    }
    let stream = packets.flatMap { encoder.encode($0) }
    XCTAssertGreaterThan(stream.count, 2 * 65536)
    var decoder = MQTTDecoder(version: .v5, maximumPacketSize: 1 << 20)
    var out: [MQTTPacket] = []
    var at = 0
    while at < stream.count {
      let end = min(stream.count, at + 1009)  // never a packet boundary for long
      decoder.append(Array(stream[at..<end]))
      while let packet = try decoder.next() { out.append(packet) }
      at = end
    }
    XCTAssertEqual(out, packets)
    XCTAssertEqual(decoder.pendingCount, 0)
  }

  func testMalformedPacketsAreRefusedWithTheReason() {
    let cases: [([UInt8], String)] = [
      ([0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], "remaining length"),
      ([0x30, 0x03, 0x00, 0x05, 0x61], "cut short"),
      ([0x36, 0x03, 0x00, 0x01, 0x61], "QoS 3"),
      ([0x32, 0x06, 0x00, 0x01, 0x61, 0x00, 0x00, 0x00], "packet id 0"),
      ([0x30, 0x04, 0x00, 0x02, 0xC3, 0x28], "not UTF-8"),
      ([0x00, 0x00], "does not exist"), ([0x10, 0x00], "cut short"),
      ([0x20, 0x04, 0x00, 0x00, 0x01, 0x7F], "unknown property"),
      ([0x20, 0x04, 0x00, 0x00, 0x05, 0x21], "longer than the packet"),
    ]
    XCTAssertThrowsError(try decode([0xB0, 0x03, 0x00, 0x01, 0x00], version: .v311)) {
      XCTAssertTrue("\($0)".contains("UNSUBACK with a payload"), "\($0)")
    }
    for (bytes, reason) in cases {
      XCTAssertThrowsError(try decode(bytes), reason) { error in
        XCTAssertTrue("\(error)".contains(reason), "\(error) for \(reason)")
      }
    }
    XCTAssertThrowsError(
      try decode([0x30, 0x80, 0x08] + Array(repeating: 0, count: 1024), limit: 1000)
    ) {
      XCTAssertTrue("\($0)".contains("over the limit of 1000"), "\($0)")
    }
  }
}
