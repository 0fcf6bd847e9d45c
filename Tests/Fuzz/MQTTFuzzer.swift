// libFuzzer target for what an MQTT broker can send: MQTTDecoder on a byte stream cut into
// any pieces, the encoder against it, and MQTTProtocol reading a hostile broker's frames.
//
// scripts/fuzz.sh builds JSON, WebSocket and LinkCore as modules and compiles this file
// against them (public API only); see its header comment for the exact commands.
//
// Input layout (Tests/Fuzz/make_seed_corpus.py writes the seeds in it):
//
//   byte 0   bit 0: the version (0 MQTT 5, 1 MQTT 3.1.1); bits 1-3: how many messages are
//            published (sent) first, 0-7; bits 4-6: a chunk seed for the split check; bit 7:
//            QoS 2 (the sends are published, and subscriptions made, at QoS 2)
//   then     frames, each: 1 byte kind (bit 0: a text frame instead of binary), 2 bytes
//            length (big endian, cut to what is left), the payload
//
// Oracles (each failure prints what broke, then traps with `precondition`):
//  - the decoder gives the same packets (or the same error) whether the stream comes whole
//    or in pieces, and keeps no more than it was given;
//  - every decoded packet encodes and decodes back to itself (CONNECT with its own level);
//  - the dialect never loses a message: every PUBLISH in the frames is a record (until the
//    stream breaks), with its topic as the room and a meta object that is JSON;
//  - under MQTT 5 the dialect reads ids ([MQTT] IDProperty=: the user property "id", or with
//    bit 4 of the first byte the Correlation Data): a record's id is UTF-8 (the store writes
//    it as a JSON string) of 1 to 2048 bytes, and a user property's is the value of the first
//    "id" pair its meta lists;
//  - an acknowledgement is the PUBACK (QoS 1) or PUBREC (QoS 2) of the message's packet id;
//  - delivered and failed counts are counts of messages sent, each settled at most once;
//  - at QoS 2: a two-step record's meta says qos 2 and its packet id (what the start-up
//    rebuild reads back), its acknowledgement is that id's PUBREC; a release's answer is the
//    PUBCOMP of its id; a count awaiting release was sent and is not settled, and the frame
//    that releases it is the PUBREL of its packet id.

import Glibc
import JSON
import LinkCore
import WebSocket

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  guard size >= 1 else { return 0 }
  let input = Array(UnsafeBufferPointer(start: data, count: size))
  let version: MQTTVersion = input[0] & 1 == 1 ? .v311 : .v5
  var frames: [(text: Bool, bytes: [UInt8])] = []
  var index = 1
  while index + 3 <= input.count {
    let length = min(Int(input[index + 1]) << 8 | Int(input[index + 2]), input.count - index - 3)
    frames.append((input[index] & 1 == 1, Array(input[(index + 3)..<(index + 3 + length)])))
    index += 3 + length
  }
  let stream = frames.flatMap(\.bytes)
  checkSplits(stream, version: version, seed: UInt64(input[0] >> 4) & 7)
  let idProperty =
    version == .v311 ? "" : input[0] & 0x10 != 0 ? MQTTProtocol.correlationDataID : "id"
  var session = BrokerSession(
    version: version, sends: Int(input[0] >> 1) & 7, qos: input[0] & 0x80 != 0 ? 2 : 1,
    idProperty: idProperty)
  for frame in frames {
    guard session.read(frame.text ? .text(frame.bytes) : .binary(frame.bytes)) else { break }
  }
  return 0
}

/// Whole or in pieces: the same packets and the same verdict; and each packet round-trips.
func checkSplits(_ stream: [UInt8], version: MQTTVersion, seed: UInt64) {
  let whole = decodeAll([stream], version: version)
  var pieces: [[UInt8]] = []
  var rest = stream[...]
  var state = seed &+ 1
  while !rest.isEmpty {
    state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
    let take = min(rest.count, Int(state >> 59) + 1)
    pieces.append(Array(rest.prefix(take)))
    rest = rest.dropFirst(take)
  }
  let split = decodeAll(pieces, version: version)
  require(whole.packets == split.packets, "packets differ when the stream is split")
  require(
    whole.error == split.error,
    "errors differ when split: \(whole.error ?? "") vs \(split.error ?? "")")
  for packet in whole.packets {
    let level: MQTTVersion
    if case .connect(let connect) = packet { level = connect.version } else { level = version }
    let again = decodeAll([MQTTEncoder(version: level).encode(packet)], version: level)
    require(again.packets == [packet] && again.error == nil, "round trip of \(packet)")
  }
}

func decodeAll(_ pieces: [[UInt8]], version: MQTTVersion) -> (packets: [MQTTPacket], error: String?)
{
  var decoder = MQTTDecoder(version: version, maximumPacketSize: 1 << 20)
  var packets: [MQTTPacket] = []
  var given = 0
  for piece in pieces {
    decoder.append(piece)
    given += piece.count
    do {
      while let packet = try decoder.next() { packets.append(packet) }
    } catch {
      return (packets, error.description)
    }
    require(decoder.pendingCount <= given, "the decoder holds more than it was given")
  }
  return (packets, nil)
}

/// The dialect after an accepted CONNACK, with a few messages published.
struct BrokerSession {
  var adapter: MQTTProtocol
  var sent: Set<UInt64> = []
  var settled: Set<UInt64> = []
  let version: MQTTVersion
  /// `[MQTT] IDProperty=`.
  let idProperty: String

  init(version: MQTTVersion, sends: Int, qos: UInt8, idProperty: String) {
    self.version = version
    self.idProperty = idProperty
    var settings = MQTTProtocol.Settings()
    settings.version = version
    settings.qos = qos
    settings.idProperty = idProperty
    adapter = MQTTProtocol(settings)
    _ = adapter.open(
      ClientHandshake.Result(
        response: HTTPResponseHead(status: 101, reason: "", headers: HTTPHeaders()),
        subprotocol: "mqtt", deflate: nil))
    let connack = MQTTEncoder(version: version).encode(
      .connack(sessionPresent: false, reasonCode: 0, properties: MQTTProperties()))
    require(adapter.read(.binary(connack)).session == .ready, "CONNACK accepted")
    _ = adapter.join(RoomID("chat/#")!)
    for count in 1...UInt64(sends + 1) {
      _ = adapter.encode(Self.entry(count))
      sent.insert(count)
    }
  }

  static func entry(_ count: UInt64) -> OutboxEntry {
    OutboxEntry(
      id: "id\(count)", room: RoomID("chat/\(count)"), text: "m\(count)", count: count,
      created: Timestamp(microseconds: 0))
  }

  /// The packets of one of the dialect's frames.
  func packets(_ message: Message) -> [MQTTPacket] {
    var decoder = MQTTDecoder(version: version, maximumPacketSize: 1 << 24)
    decoder.append(message.bytes)
    var out: [MQTTPacket] = []
    while let packet = try? decoder.next() { out.append(packet) }
    return out
  }

  /// A record's id: text the store can write, and under a user property the first such pair
  /// its meta lists.
  func checkID(_ record: InboundMessage) {
    guard let located = record.id, let id = record.idBytes else { return }
    require(located.place == .meta, "an id that does not lie in the meta")
    require(!idProperty.isEmpty, "an id without IDProperty=")
    require(
      (1...2 * MQTTProtocol.maximumIDLength).contains(id.count) && UTF8Validator.isValid(id),
      "an id that is empty, too long or not UTF-8")
    let meta = record.meta.flatMap { try? JSONValue.parse($0) }
    guard idProperty != MQTTProtocol.correlationDataID else {
      require(
        meta?["correlation_id"]?.stringValue == String(decoding: id, as: UTF8.self),
        "a correlation id that is not the meta's")
      return
    }
    let pair = meta?["user_properties"]?.arrayValue?.first {
      $0.arrayValue?.first?.stringValue == idProperty
    }
    require(
      pair?.arrayValue?.last?.stringValue == String(decoding: id, as: UTF8.self),
      "an id that is not the first value of its user property")
  }

  /// Reads one frame; false once the stream is broken (nothing after it counts).
  mutating func read(_ message: Message) -> Bool {
    var expected = MQTTDecoder(version: version, maximumPacketSize: 1 << 24)
    let reading = adapter.read(message)
    var records = reading.record.map { [($0, reading.acknowledgement)] } ?? []
    records += reading.moreRecords.map { ($0.record, $0.acknowledgement) }
    for (record, ack) in records {
      require(record.room.map(isJSONRoom) ?? false, "a record without a topic room")
      require(
        record.meta.map { bytes in (try? JSONValue.parse(bytes))?.objectValue != nil } ?? false,
        "a record whose meta is not a JSON object")
      checkID(record)
      if let ack {
        expected.append(ack.bytes)
        switch try? expected.next() {
        case .puback?, .pubrec?: break
        default: require(false, "an acknowledgement that is not a PUBACK or PUBREC")
        }
      }
    }
    for (record, ack) in records {
      guard let delivery = record.twoStep else { continue }
      let id = record.meta?.withUnsafeBytes { MQTTProtocol.twoStepDelivery(meta: $0) }
      require(id == delivery.id, "a two-step record whose meta does not say its packet id")
      require(
        ack.map { packets($0) } == [.pubrec(packetID: delivery.id, reasonCode: 0)],
        "a two-step record not acknowledged by the PUBREC of its id")
    }
    for release in reading.releases {
      require(
        packets(release.answer) == [.pubcomp(packetID: release.id, reasonCode: 0)],
        "a release not answered by the PUBCOMP of its id")
    }
    for count in reading.awaitingRelease {
      require(sent.contains(count) && !settled.contains(count), "count \(count) released unsent")
      var entry = BrokerSession.entry(count)
      entry.released = true
      require(
        packets(adapter.encode(entry)) == [
          .pubrel(packetID: UInt16(count % 60000 + 1), reasonCode: 0)
        ],
        "the release of count \(count) is not the PUBREL of its id")
    }
    for count in reading.delivered + reading.failed.map(\.count) {
      require(sent.contains(count), "settled count \(count) was never sent")
      require(settled.insert(count).inserted, "count \(count) settled twice")
    }
    if case .broken? = reading.session { return false }
    return true
  }
}

func isJSONRoom(_ bytes: [UInt8]) -> Bool {
  switch try? JSONValue.parse(bytes) {
  case .string?, .int?: true
  default: false
  }
}
