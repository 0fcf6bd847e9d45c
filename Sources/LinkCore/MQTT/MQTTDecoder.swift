import JSON

/// Why the broker's bytes are not MQTT.
public struct MQTTDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
  /// What is wrong, for the log and the close reason.
  public var reason: String

  /// Creates an error.
  public init(_ reason: String) {
    self.reason = reason
  }

  public var description: String { "malformed MQTT: \(reason)" }
}

/// Splits the broker's byte stream into MQTT control packets (every type is read, so tests and
/// fuzzing can read what the client sends too).
///
/// Over WebSocket a binary message may hold part of a packet or several (MQTT 5 §6.0), so the
/// decoder keeps what has arrived and `next()` returns each packet once it is complete: nil
/// means "need more bytes". A malformed packet is an error, after which the connection must
/// end (the spec's rule: nothing after it can be trusted).
public struct MQTTDecoder: Sendable {
  /// The protocol level, which decides the layout of most packets.
  public var version: MQTTVersion
  /// The largest packet accepted (its remaining length).
  public var maximumPacketSize: Int
  private var pending = PendingBytes()

  /// Creates a decoder.
  public init(version: MQTTVersion, maximumPacketSize: Int) {
    self.version = version
    self.maximumPacketSize = maximumPacketSize
  }

  /// Bytes received and not yet returned as packets.
  public var pendingCount: Int { pending.count }

  /// Adds received bytes.
  public mutating func append(_ bytes: [UInt8]) {
    pending.append(bytes)
  }

  /// The next complete packet, or nil when more bytes are needed.
  public mutating func next() throws(MQTTDecodingError) -> MQTTPacket? {
    let available = pending.bytes.count - pending.start
    guard available >= 2 else { return nil }
    var length = 0
    var multiplier = 1
    var index = pending.start + 1
    while true {
      guard index < pending.bytes.count else { return nil }
      let byte = pending.bytes[index]
      length += Int(byte & 0x7F) * multiplier
      index += 1
      if byte & 0x80 == 0 { break }
      multiplier *= 128
      guard index - pending.start <= 4 else {
        throw MQTTDecodingError("a remaining length over 4 bytes")
      }
    }
    guard length <= maximumPacketSize else {
      throw MQTTDecodingError(
        "a packet of \(length) bytes, over the limit of \(maximumPacketSize)")
    }
    guard pending.bytes.count - index >= length else { return nil }
    let header = pending.bytes[pending.start]
    let body = Array(pending.bytes[index..<(index + length)])
    pending.start = index + length
    var reader = MQTTPacketReader(version: version, body: body)
    return try reader.packet(header: header)
  }
}

/// Reads one packet's variable header and payload.
struct MQTTPacketReader {
  let version: MQTTVersion
  let body: [UInt8]
  var index = 0

  init(version: MQTTVersion, body: [UInt8]) {
    self.version = version
    self.body = body
  }

  mutating func packet(header: UInt8) throws(MQTTDecodingError) -> MQTTPacket {
    let flags = header & 0x0F
    switch header >> 4 {
    case 2:
      let present = try byte() & 1 == 1
      let code = try byte()
      return .connack(sessionPresent: present, reasonCode: code, properties: try properties())
    case 3: return .publish(try publish(flags: flags))
    case 4:
      let (id, code, properties) = try ack()
      return .puback(packetID: id, reasonCode: code, properties: properties)
    case 5:
      let (id, code, _) = try ack()
      return .pubrec(packetID: id, reasonCode: code)
    case 6:
      let (id, code, _) = try ack()
      return .pubrel(packetID: id, reasonCode: code)
    case 7:
      let (id, code, _) = try ack()
      return .pubcomp(packetID: id, reasonCode: code)
    case 9:
      let id = try uint16()
      let properties = try properties()
      return .suback(packetID: id, reasonCodes: Array(body[index...]), properties: properties)
    case 11:
      let id = try uint16()
      guard version == .v5 else {
        guard body.count == 2 else { throw MQTTDecodingError("an UNSUBACK with a payload") }
        return .unsuback(packetID: id, reasonCodes: [])
      }
      _ = try properties()
      return .unsuback(packetID: id, reasonCodes: Array(body[index...]))
    case 1: return .connect(try connect())
    case 8: return try subscribe()
    case 10:
      let id = try uint16()
      let properties = try properties()
      var filters: [String] = []
      while index < body.count { filters.append(try string()) }
      return .unsubscribe(packetID: id, filters: filters, properties: properties)
    case 12: return .pingreq
    case 13: return .pingresp
    case 14:
      guard version == .v5, !body.isEmpty else {
        return .disconnect(reasonCode: 0, properties: MQTTProperties())
      }
      let code = try byte()
      return .disconnect(
        reasonCode: code, properties: index < body.count ? try properties() : .init())
    case 15: return .auth(reasonCode: body.isEmpty ? 0 : try byte())
    case let type:
      throw MQTTDecodingError("packet type \(type) does not exist")
    }
  }

  /// A SUBSCRIBE (what a broker reads).
  private mutating func subscribe() throws(MQTTDecodingError) -> MQTTPacket {
    let id = try uint16()
    let properties = try properties()
    var filters: [MQTTSubscription] = []
    while index < body.count {
      let filter = try string()
      let options = try byte()
      filters.append(
        MQTTSubscription(
          filter: filter, qos: options & 3,
          retainHandling: version == .v5 ? (options >> 4) & 3 : 0))
    }
    return .subscribe(packetID: id, filters: filters, properties: properties)
  }

  /// A CONNECT (what a broker reads; tests and fuzzing read ours with it). Its own level
  /// decides its layout.
  private mutating func connect() throws(MQTTDecodingError) -> MQTTConnect {
    guard try string() == "MQTT", let level = MQTTVersion(rawValue: try byte()) else {
      throw MQTTDecodingError("a CONNECT for another protocol or level")
    }
    let flags = try byte()
    let keepAlive = try uint16()
    var reader = MQTTPacketReader(version: level, body: body)
    reader.index = index
    let properties = try reader.properties()
    let clientID = try reader.string()
    if flags & 0x04 != 0 {
      _ = try reader.properties()
      _ = try reader.string()
      _ = try reader.binary()
    }
    let username = flags & 0x80 != 0 ? try reader.string() : nil
    let password = flags & 0x40 != 0 ? try reader.binary() : nil
    index = reader.index
    return MQTTConnect(
      version: level, clientID: clientID, cleanStart: flags & 0x02 != 0, keepAlive: keepAlive,
      username: username, password: password, properties: properties)
  }

  private mutating func publish(flags: UInt8) throws(MQTTDecodingError) -> MQTTPublish {
    let qos = (flags >> 1) & 3
    guard qos < 3 else { throw MQTTDecodingError("a PUBLISH with QoS 3") }
    let topic = try string()
    let id: UInt16? = qos > 0 ? try uint16() : nil
    if id == 0 { throw MQTTDecodingError("a PUBLISH with packet id 0") }
    let properties = try properties()
    return MQTTPublish(
      topic: topic, payload: Array(body[index...]), qos: qos, retain: flags & 1 == 1,
      duplicate: flags & 8 == 8, packetID: id, properties: properties)
  }

  /// An acknowledgement's id, reason code (success when left out) and properties.
  private mutating func ack() throws(MQTTDecodingError) -> (UInt16, UInt8, MQTTProperties) {
    let id = try uint16()
    guard version == .v5, index < body.count else { return (id, 0, MQTTProperties()) }
    let code = try byte()
    return (id, code, index < body.count ? try properties() : MQTTProperties())
  }

  mutating func byte() throws(MQTTDecodingError) -> UInt8 {
    guard index < body.count else { throw MQTTDecodingError("a packet cut short") }
    defer { index += 1 }
    return body[index]
  }

  mutating func uint16() throws(MQTTDecodingError) -> UInt16 {
    UInt16(try byte()) << 8 | UInt16(try byte())
  }

  mutating func uint32() throws(MQTTDecodingError) -> UInt32 {
    UInt32(try uint16()) << 16 | UInt32(try uint16())
  }

  mutating func binary() throws(MQTTDecodingError) -> [UInt8] {
    let count = Int(try uint16())
    guard body.count - index >= count else { throw MQTTDecodingError("a packet cut short") }
    defer { index += count }
    return Array(body[index..<(index + count)])
  }

  mutating func string() throws(MQTTDecodingError) -> String {
    let bytes = try binary()
    // UTF-8 without U+0000 (MQTT 5 §1.5.4).
    guard UTF8Validator.isValid(bytes), !bytes.contains(0) else {
      throw MQTTDecodingError("a string that is not UTF-8")
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  mutating func variableInteger() throws(MQTTDecodingError) -> UInt32 {
    var value: UInt32 = 0
    for shift in stride(from: UInt32(0), through: 21, by: 7) {
      let byte = try self.byte()
      value |= UInt32(byte & 0x7F) << shift
      if byte & 0x80 == 0 { return value }
    }
    throw MQTTDecodingError("a variable byte integer over 4 bytes")
  }

  /// The properties (MQTT 5), or none (3.1.1).
  mutating func properties() throws(MQTTDecodingError) -> MQTTProperties {
    var p = MQTTProperties()
    guard version == .v5 else { return p }
    let length = Int(try variableInteger())
    let end = index + length
    guard end <= body.count else { throw MQTTDecodingError("properties longer than the packet") }
    while index < end {
      try property(try variableInteger(), into: &p)
    }
    guard index == end else { throw MQTTDecodingError("a property past the properties' end") }
    return p
  }

  private mutating func property(_ id: UInt32, into p: inout MQTTProperties)
    throws(MQTTDecodingError)
  {
    switch id {
    case 0x01: p.payloadFormat = try byte()
    case 0x02: p.messageExpiry = try uint32()
    case 0x03: p.contentType = try string()
    case 0x08: p.responseTopic = try string()
    case 0x09: p.correlationData = try binary()
    case 0x0B: p.subscriptionIDs.append(try variableInteger())
    case 0x11: p.sessionExpiry = try uint32()
    case 0x12: p.assignedClientID = try string()
    case 0x13: p.serverKeepAlive = try uint16()
    case 0x1F: p.reasonString = try string()
    case 0x21: p.receiveMaximum = try uint16()
    case 0x22: p.topicAliasMaximum = try uint16()
    case 0x23: p.topicAlias = try uint16()
    case 0x24: p.maximumQoS = try byte()
    case 0x25: p.retainAvailable = try byte() != 0
    case 0x26: p.userProperties.append(MQTTUserProperty(try string(), try string()))
    case 0x27: p.maximumPacketSize = try uint32()
    // Read and dropped: server reference, authentication, wildcard/shared subscription
    // availability and the like say nothing this client acts on.
    case 0x15, 0x1A, 0x1C: _ = try string()
    case 0x16: _ = try binary()
    case 0x17, 0x19, 0x28, 0x29, 0x2A: _ = try byte()
    case 0x18: _ = try uint32()
    default: throw MQTTDecodingError("an unknown property 0x\(String(id, radix: 16))")
    }
  }
}
