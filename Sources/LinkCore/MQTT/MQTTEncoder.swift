/// Writes MQTT control packets (3.1.1 and 5.0) as bytes: a fixed header with the remaining
/// length, then the variable header and payload.
public struct MQTTEncoder: Sendable {
  /// The protocol level: MQTT 5 adds reason codes and properties to most packets.
  public var version: MQTTVersion

  /// Creates an encoder for `version`.
  public init(version: MQTTVersion) {
    self.version = version
  }

  /// The packet's bytes.
  public func encode(_ packet: MQTTPacket) -> [UInt8] {
    var body: [UInt8] = []
    let flags = writeBody(packet, to: &body)
    var out: [UInt8] = [packet.typeNumber << 4 | flags]
    out.reserveCapacity(body.count + 5)
    Self.writeVariableInteger(UInt32(body.count), to: &out)
    out += body
    return out
  }

  /// Writes everything after the fixed header; returns the fixed header's flags.
  private func writeBody(_ packet: MQTTPacket, to body: inout [UInt8]) -> UInt8 {
    var flags: UInt8 = 0
    switch packet {
    case .connect(let connect): writeConnect(connect, to: &body)
    case .connack(let present, let code, let properties):
      body.append(present ? 1 : 0)
      body.append(code)
      writeProperties(properties, to: &body)
    case .publish(let message):
      flags = (message.duplicate ? 0x08 : 0) | (message.qos & 3) << 1 | (message.retain ? 1 : 0)
      Self.writeString(message.topic, to: &body)
      if message.qos > 0 { Self.writeUInt16(message.packetID ?? 0, to: &body) }
      writeProperties(message.properties, to: &body)
      body += message.payload
    case .puback(let id, let code, let properties):
      writeAck(id, code, properties, to: &body)
    case .pubrec(let id, let code), .pubcomp(let id, let code):
      writeAck(id, code, MQTTProperties(), to: &body)
    case .pubrel(let id, let code):
      flags = 0x02
      writeAck(id, code, MQTTProperties(), to: &body)
    case .subscribe(let id, let filters, let properties):
      flags = 0x02
      Self.writeUInt16(id, to: &body)
      writeProperties(properties, to: &body)
      for subscription in filters {
        Self.writeString(subscription.filter, to: &body)
        let retain = version == .v5 ? (subscription.retainHandling & 3) << 4 : 0
        body.append(subscription.qos & 3 | retain)
      }
    case .suback(let id, let codes, let properties):
      Self.writeUInt16(id, to: &body)
      writeProperties(properties, to: &body)
      body += codes
    case .unsubscribe(let id, let filters, let properties):
      flags = 0x02
      Self.writeUInt16(id, to: &body)
      writeProperties(properties, to: &body)
      for filter in filters { Self.writeString(filter, to: &body) }
    case .unsuback(let id, let codes):
      Self.writeUInt16(id, to: &body)
      if version == .v5 {
        writeProperties(MQTTProperties(), to: &body)
        body += codes
      }
    case .pingreq, .pingresp: break
    case .disconnect(let code, let properties):
      if version == .v5 && (code != 0 || !properties.isEmpty) {
        body.append(code)
        writeProperties(properties, to: &body)
      }
    case .auth(let code):
      body.append(code)
      writeProperties(MQTTProperties(), to: &body)
    }
    return flags
  }

  private func writeConnect(_ connect: MQTTConnect, to out: inout [UInt8]) {
    Self.writeString("MQTT", to: &out)
    out.append(connect.version.rawValue)
    var flags: UInt8 = connect.cleanStart ? 0x02 : 0
    if connect.username != nil { flags |= 0x80 }
    if connect.password != nil { flags |= 0x40 }
    out.append(flags)
    Self.writeUInt16(connect.keepAlive, to: &out)
    writeProperties(connect.properties, to: &out)
    Self.writeString(connect.clientID, to: &out)
    if let username = connect.username { Self.writeString(username, to: &out) }
    if let password = connect.password { Self.writeBinary(password, to: &out) }
  }

  /// PUBACK, PUBREC, PUBREL, PUBCOMP: the id, and in MQTT 5 the reason code when it is not
  /// success (or properties follow).
  private func writeAck(
    _ id: UInt16, _ code: UInt8, _ properties: MQTTProperties, to out: inout [UInt8]
  ) {
    Self.writeUInt16(id, to: &out)
    guard version == .v5, code != 0 || !properties.isEmpty else { return }
    out.append(code)
    if !properties.isEmpty { writeProperties(properties, to: &out) }
  }

  /// The property length and the properties (MQTT 5 only).
  func writeProperties(_ p: MQTTProperties, to out: inout [UInt8]) {
    guard version == .v5 else { return }
    var body: [UInt8] = []
    func byte(_ id: UInt8, _ value: UInt8?) {
      if let value { body += [id, value] }
    }
    func two(_ id: UInt8, _ value: UInt16?) {
      if let value {
        body.append(id)
        Self.writeUInt16(value, to: &body)
      }
    }
    func four(_ id: UInt8, _ value: UInt32?) {
      if let value {
        body.append(id)
        body += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) }
      }
    }
    func string(_ id: UInt8, _ value: String?) {
      if let value {
        body.append(id)
        Self.writeString(value, to: &body)
      }
    }
    byte(0x01, p.payloadFormat)
    four(0x02, p.messageExpiry)
    string(0x03, p.contentType)
    string(0x08, p.responseTopic)
    if let data = p.correlationData {
      body.append(0x09)
      Self.writeBinary(data, to: &body)
    }
    for id in p.subscriptionIDs {
      body.append(0x0B)
      Self.writeVariableInteger(id, to: &body)
    }
    four(0x11, p.sessionExpiry)
    string(0x12, p.assignedClientID)
    two(0x13, p.serverKeepAlive)
    string(0x1F, p.reasonString)
    two(0x21, p.receiveMaximum)
    two(0x22, p.topicAliasMaximum)
    two(0x23, p.topicAlias)
    byte(0x24, p.maximumQoS)
    byte(0x25, p.retainAvailable.map { $0 ? 1 : 0 })
    for property in p.userProperties {
      body.append(0x26)
      Self.writeString(property.name, to: &body)
      Self.writeString(property.value, to: &body)
    }
    four(0x27, p.maximumPacketSize)
    Self.writeVariableInteger(UInt32(body.count), to: &out)
    out += body
  }

  static func writeUInt16(_ value: UInt16, to out: inout [UInt8]) {
    out.append(UInt8(value >> 8))
    out.append(UInt8(value & 0xFF))
  }

  static func writeString(_ text: String, to out: inout [UInt8]) {
    writeBinary(Array(text.utf8), to: &out)
  }

  static func writeBinary(_ bytes: [UInt8], to out: inout [UInt8]) {
    writeUInt16(UInt16(truncatingIfNeeded: bytes.count), to: &out)
    out += bytes.prefix(0xFFFF)
  }

  /// The variable byte integer: 7 bits per byte, least significant first, at most 4 bytes.
  static func writeVariableInteger(_ value: UInt32, to out: inout [UInt8]) {
    var rest = value
    repeat {
      var byte = UInt8(rest & 0x7F)
      rest >>= 7
      if rest > 0 { byte |= 0x80 }
      out.append(byte)
    } while rest > 0
  }
}
