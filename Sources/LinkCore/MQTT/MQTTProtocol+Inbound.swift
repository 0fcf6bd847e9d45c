import JSON
import WebSocket

/// What the broker sends: packets out of binary frames, and what each one means.
extension MQTTProtocol {
  public mutating func read(_ message: Message) -> ProtocolReading {
    var reading = ProtocolReading()
    guard case .binary(let bytes) = message else {
      reading.session = .broken("a text frame (MQTT travels in binary frames)")
      return reading
    }
    decoder.append(bytes)
    do {
      while let packet = try decoder.next() {
        handle(packet, into: &reading)
        if reading.session != nil && reading.session != .ready { break }
      }
    } catch {
      reading.session = .broken(error.description)
    }
    return reading
  }

  private mutating func handle(_ packet: MQTTPacket, into reading: inout ProtocolReading) {
    switch packet {
    case .connack(let present, let code, let properties):
      connack(present: present, code: code, properties, into: &reading)
    case .publish(let message):
      received(message, into: &reading)
    case .pubrel(let id, _):
      let answer = frame(.pubcomp(packetID: id, reasonCode: 0))
      // At QoS 2 the release is forgotten durably before the PUBCOMP lets the broker reuse
      // the id; a QoS 2 message that came under a lower QoS remembers nothing.
      if keepsReceipts {
        reading.releases.append((id, answer))
      } else {
        reading.replies.append(answer)
      }
    case .puback(let id, let code, let properties):
      acknowledged(id, code, properties, into: &reading)
    case .suback(let id, let codes, let properties):
      guard let filter = awaitedSubscriptions.removeValue(forKey: id) else { return }
      if let code = codes.first, code >= 0x80 {
        reading.problem =
          "the broker refused the subscription to '\(filter)': "
          + Self.reason(code, properties.reasonString)
      } else {
        sessionFilters.insert(filter)
        granted(codes.first ?? settings.qos, for: filter, into: &reading)
      }
    case .unsuback(let id, _):
      awaitedSubscriptions.removeValue(forKey: id)
    case .pingresp:
      reading.heartbeatAnswered = true
    case .disconnect(let code, let properties):
      let text = "the broker disconnected: " + Self.reason(code, properties.reasonString)
      if Self.refusalCodes.contains(code) {
        reading.session = .refused(text)
      } else {
        reading.problem = text
      }
    case .auth:
      reading.session = .broken("extended authentication (AUTH) is not supported")
    case .pubrec(let id, let code):
      receivedByBroker(id, code, into: &reading)
    case .pubcomp(let id, let code):
      completed(id, code, into: &reading)
    case .connect, .subscribe, .unsubscribe, .pingreq:
      reading.problem = "a packet only clients send"
    }
  }

  /// The broker's answer to our CONNECT.
  private mutating func connack(
    present: Bool, code: UInt8, _ properties: MQTTProperties, into reading: inout ProtocolReading
  ) {
    guard code == 0 else {
      reading.session = .refused(Self.refusal(connack: code, properties.reasonString))
      return
    }
    connected = true
    sessionPresent = present
    if !present {
      sessionFilters = []
      // A new session: the broker will neither release nor redeliver the old one's QoS 2
      // messages, and may reuse their ids.
      if keepsReceipts { reading.deliveriesForgotten = true }
    }
    receiveMaximum = properties.receiveMaximum.map(Int.init)
    brokerMaximumPacketSize = properties.maximumPacketSize.map(Int.init)
    if let seconds = properties.serverKeepAlive, seconds > 0 {
      // The broker's keepalive replaces ours (MQTT 5 §3.2.2.3.14): PINGREQ within it.
      reading.heartbeatInterval = .seconds(Int(seconds))
    }
    reading.session = .ready
  }

  /// An inbound message: its record, acknowledged (QoS 1 and 2) once durable.
  private func received(_ message: MQTTPublish, into reading: inout ProtocolReading) {
    var record = Self.record(message, twoStep: keepsReceipts, idProperty: settings.idProperty)
    if keepsReceipts, message.qos == 2, let id = message.packetID {
      record.twoStep = TwoStepDelivery(id: id, redelivered: message.duplicate)
    }
    var acknowledgement: Message?
    if let id = message.packetID {
      acknowledgement =
        message.qos == 1
        ? frame(.puback(packetID: id, reasonCode: 0, properties: MQTTProperties()))
        : frame(.pubrec(packetID: id, reasonCode: 0))
    }
    if reading.record == nil {
      reading.record = record
      reading.acknowledgement = acknowledgement
    } else {
      reading.moreRecords.append((record, acknowledgement))
    }
  }

  /// A PUBACK: our message arrived (or, MQTT 5, was refused with a reason code).
  private mutating func acknowledged(
    _ id: UInt16, _ code: UInt8, _ properties: MQTTProperties,
    into reading: inout ProtocolReading
  ) {
    guard let count = awaitedPublishes.removeValue(forKey: id) else {
      reading.problem = "a PUBACK for packet id \(id), which is not in flight"
      return
    }
    if code < 0x80 {
      reading.delivered.append(count)
    } else {
      reading.failed.append(
        DeliveryFailure(count: count, reason: Self.reason(code, properties.reasonString)))
    }
  }

  /// Disconnect reasons that will not go away by reconnecting at once.
  static let refusalCodes: Set<UInt8> = [0x86, 0x87, 0x8A, 0x8C, 0x9C, 0x9D]

  /// The record of an inbound message: the topic as the room, the payload as it came, and
  /// the MQTT details as `meta`.
  static func record(
    _ message: MQTTPublish, twoStep: Bool = false, idProperty: String = ""
  ) -> InboundMessage {
    // As a send's room is written (`RoomID`), so a topic "7" is the same room both ways.
    var room = RoomID(message.topic)?.json ?? []
    if room.isEmpty { JSONString.append(message.topic, to: &room) }
    var record: InboundMessage
    if UTF8Validator.isValid(message.payload) {
      let scan = message.payload.withUnsafeBytes {
        JSONScanner.scan($0, knownUTF8: true, maxDepth: JSONScanner.embeddedMaxDepth)
      }
      record = InboundMessage(payload: .text(message.payload), scan: PayloadScan(scan), room: room)
    } else {
      record = InboundMessage(payload: .binary(message.payload), scan: .unscanned, room: room)
    }
    let meta = meta(message, packetID: twoStep && message.qos == 2, idProperty: idProperty)
    record.meta = meta.bytes
    record.id = meta.id
    return record
  }

  /// `{"qos":1,"retain":true,…}`: what the store keeps besides the payload; with `packetID`,
  /// a QoS 2 message's id, which says after a crash that it was stored
  /// (`twoStepDelivery(meta:)`). With `idProperty` (`[MQTT] IDProperty=`), also where in it
  /// the message's id is: a user property's value, or `correlation_id`, the Correlation
  /// Data as the id reads it (`messageID(_:named:)`).
  static func meta(
    _ message: MQTTPublish, packetID: Bool = false, idProperty: String = ""
  ) -> (bytes: [UInt8], id: MessageIDText?) {
    let p = message.properties
    var meta = MetaWriter()
    meta.member("qos", .int(Int64(message.qos)))
    if packetID, let id = message.packetID { meta.member("packet_id", .int(Int64(id))) }
    if message.retain { meta.member("retain", .bool(true)) }
    if message.duplicate { meta.member("dup", .bool(true)) }
    if let value = p.contentType { meta.member("content_type", .string(value)) }
    if let value = p.responseTopic { meta.member("response_topic", .string(value)) }
    if let value = p.correlationData {
      meta.member("correlation_data", .string(Base64.encode(value)))
    }
    var id: MessageIDText?
    if idProperty == correlationDataID, let text = messageID(p, named: idProperty) {
      id = meta.member("correlation_id", .string(String(decoding: text, as: UTF8.self)))
    }
    var userPropertyID = !idProperty.isEmpty && idProperty != correlationDataID
    if !p.userProperties.isEmpty {
      meta.key("user_properties")
      meta.out.append(UInt8(ascii: "["))
      for (i, pair) in p.userProperties.enumerated() {
        if i > 0 { meta.out.append(UInt8(ascii: ",")) }
        meta.out.append(UInt8(ascii: "["))
        JSONString.append(pair.name, to: &meta.out)
        meta.out.append(UInt8(ascii: ","))
        let value = meta.value(.string(pair.value))
        meta.out.append(UInt8(ascii: "]"))
        // Of a user property given more than once, the first counts.
        if userPropertyID, pair.name == idProperty {
          userPropertyID = false
          if (1...maximumIDLength).contains(pair.value.utf8.count) { id = value }
        }
      }
      meta.out.append(UInt8(ascii: "]"))
    }
    if let value = p.messageExpiry { meta.member("message_expiry", .int(Int64(value))) }
    if !p.subscriptionIDs.isEmpty {
      meta.member("subscription_ids", .array(p.subscriptionIDs.map { .int(Int64($0)) }))
    }
    return (meta.finished(), id)
  }

  /// A refused CONNACK as the operator should read it.
  static func refusal(connack code: UInt8, _ reasonString: String?) -> String {
    let text: String
    switch code {
    case 1, 0x84: text = "the broker does not speak this MQTT version (set [MQTT] Version=)"
    case 2, 0x85: text = "the broker refused the client id (set [MQTT] ClientID=)"
    case 3, 0x88, 0x89: text = "the broker is unavailable"
    case 4, 0x86: text = "bad user name or password; check [MQTT] Username= and TokenFile="
    case 5, 0x87: text = "not authorized"
    case 0x8A: text = "this client is banned"
    default: text = reason(code, nil)
    }
    let detail = reasonString.map { " (\($0))" } ?? ""
    return "the MQTT broker refused the connection: \(text)\(detail), code \(code)"
  }

  /// An MQTT 5 reason code as text.
  static func reason(_ code: UInt8, _ reasonString: String?) -> String {
    let names: [UInt8: String] = [
      0x80: "unspecified error", 0x81: "malformed packet", 0x82: "protocol error",
      0x83: "implementation specific error", 0x87: "not authorized", 0x8B: "server shutting down",
      0x8D: "keep alive timeout", 0x8E: "session taken over", 0x8F: "topic filter invalid",
      0x90: "topic name invalid", 0x93: "receive maximum exceeded", 0x95: "packet too large",
      0x97: "quota exceeded", 0x99: "payload format invalid", 0x9A: "retain not supported",
      0x9B: "QoS not supported", 0x9E: "shared subscriptions not supported",
      0xA1: "subscription identifiers not supported", 0xA2: "wildcard subscriptions not supported",
    ]
    let name = names[code] ?? "reason code 0x\(String(code, radix: 16))"
    return reasonString.map { "\(name): \($0)" } ?? name
  }
}

/// A JSON object written member by member, which can say where a member's string value is.
private struct MetaWriter {
  var out: [UInt8] = [UInt8(ascii: "{")]

  mutating func key(_ key: String) {
    if out.count > 1 { out.append(UInt8(ascii: ",")) }
    JSONString.append(key, to: &out)
    out.append(UInt8(ascii: ":"))
  }

  /// Appends `value`; where its text is when it is a string or a number.
  mutating func value(_ value: JSONValue) -> MessageIDText? {
    let start = out.count
    value.append(to: &out)
    return out.withUnsafeBytes { MessageID.location($0, start..<out.count, in: .meta) }
  }

  @discardableResult
  mutating func member(_ key: String, _ value: JSONValue) -> MessageIDText? {
    self.key(key)
    return self.value(value)
  }

  mutating func finished() -> [UInt8] {
    out.append(UInt8(ascii: "}"))
    return out
  }
}
