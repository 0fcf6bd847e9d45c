import JSON
import WebSocket

/// A binary event or ack whose attachments are still arriving, one binary frame each.
struct PartialBinaryPacket: Sendable {
  /// The text frame that announced it, stored as it came if its data does not parse.
  var header: [UInt8]
  var kind: SocketIOPacket.Kind
  var ackID: UInt64?
  /// Its namespace as a prefix, for the ack it may ask for.
  var prefix: [UInt8]
  /// The packet's JSON data, with `{"_placeholder":true,"num":N}` for each attachment.
  var data: [UInt8]
  var needed: Int
  var attachments: [[UInt8]] = []

  var isComplete: Bool { attachments.count >= needed }
}

/// Inbound events as store records, and binary packets put back together.
extension SocketIOProtocol {
  /// `{"event":"<name>","args":[…]}` from an event's data `["<name>",…]`, with the room from
  /// the first argument's room field; nil when the data is not an array starting with a name.
  ///
  /// Built from the frame's bytes without a tree: every inbound event passes here.
  func eventRecord(_ data: UnsafeRawBufferPointer) -> InboundMessage? {
    guard
      let scan = JSONScanner.scanArray(
        data, elements: 2, nestedIn: 1, nested: roomKeys, knownUTF8: true,
        maxDepth: JSONScanner.embeddedMaxDepth - 1),
      let name = scan.topLevel[0], data[name.lowerBound] == UInt8(ascii: "\"")
    else { return nil }
    // The arguments: what follows the name and its comma, the closing bracket included.
    var rest = name.upperBound
    while rest < data.count, Self.isWhitespace(data[rest]) { rest += 1 }
    if data[rest] == UInt8(ascii: ",") { rest += 1 }
    var out: [UInt8] = []
    out.reserveCapacity(data.count + 24)
    out.append(#"{"event":"# as StaticString)
    out += data[name]
    out.append(#","args":["# as StaticString)
    let prefixLength = out.count
    out += data[rest...]
    out.append(UInt8(ascii: "}"))
    var record = InboundMessage(
      payload: .text(out), scan: .json(hasLineBreaks: scan.hasLineBreaks))
    record.room = Self.room(scan.nested[0].map { data[$0] })
    if scan.nested.count > 1, let id = scan.nested[1], id.lowerBound >= rest {
      // The first argument is in the record as it was in the frame, moved by what came before.
      let shift = prefixLength - rest
      record.id = out.withUnsafeBytes { raw in
        MessageID.location(raw, (id.lowerBound + shift)..<(id.upperBound + shift))
      }
    }
    return record
  }

  /// Whether the event's name (the first element of its data) is `name`.
  static func isEvent(_ data: UnsafeRawBufferPointer, named name: String) -> Bool {
    guard let scan = JSONScanner.scanArray(data, elements: 1, knownUTF8: true),
      let range = scan.topLevel[0], range.count >= 2
    else { return false }
    let content = UnsafeRawBufferPointer(
      rebasing: data[(range.lowerBound + 1)..<(range.upperBound - 1)])
    return JSONString.unescape(content) == Array(name.utf8)
  }

  /// A room value as the record keeps it: numbers and strings name a room; nothing else does.
  static func room(_ value: Slice<UnsafeRawBufferPointer>?) -> [UInt8]? {
    guard let value, let first = value.first else { return nil }
    guard first == UInt8(ascii: "\"") || first == UInt8(ascii: "-") || first.isDigit else {
      return nil
    }
    return Array(value)
  }

  private static func isWhitespace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
  }

  /// A binary frame: the next attachment of the packet being put together.
  mutating func attachment(_ bytes: [UInt8], _ message: Message) -> ProtocolReading {
    guard partial != nil else {
      var reading = ProtocolReading(
        record: InboundMessage(payload: message, scan: .unscanned))
      reading.problem = "a binary frame that no binary packet announced"
      return reading
    }
    partial?.attachments.append(bytes)
    return partial?.isComplete == true ? finishBinary() : ProtocolReading(record: nil)
  }

  /// Every attachment arrived: the event's record (each placeholder with its bytes in
  /// base64), or the ack's meaning.
  mutating func finishBinary() -> ProtocolReading {
    guard let packet = partial else { return ProtocolReading(record: nil) }
    partial = nil
    guard let value = try? JSONValue.parse(packet.data) else {
      return Self.unreadable(
        .text(packet.header), packet.header, "a binary packet whose data is not JSON")
    }
    let filled = Self.fill(value, with: packet.attachments)
    if packet.kind == .binaryAck {
      return acknowledged(packet.ackID, filled.bytes)
    }
    // The filled data is compact JSON text: it becomes a record as a text event's does, so
    // the room and the id are read the same way.
    guard case .array(let items) = filled, case .string? = items.first,
      let inbound = filled.bytes.withUnsafeBytes({ eventRecord($0) })
    else {
      return Self.unreadable(
        .text(packet.header), packet.header, "a binary event whose data is not [\"name\", …]")
    }
    var reading = ProtocolReading(record: inbound)
    if let id = packet.ackID {
      reading.acknowledgement = Self.acknowledgement(id, prefix: packet.prefix)
    }
    return reading
  }

  /// `value` with every `{"_placeholder":true,"num":N}` given `"base64"`: attachment N.
  static func fill(_ value: JSONValue, with attachments: [[UInt8]]) -> JSONValue {
    switch value {
    case .array(let items):
      return .array(items.map { fill($0, with: attachments) })
    case .object(let members):
      if value["_placeholder"]?.boolValue == true, let num = value["num"]?.intValue,
        num >= 0, num < attachments.count
      {
        return .object(members + [("base64", .string(Base64.encode(attachments[Int(num)])))])
      }
      return .object(members.map { ($0.key, fill($0.value, with: attachments)) })
    default:
      return value
    }
  }

  /// An ack's data as bytes (a binary ack, after its attachments were filled in).
  mutating func acknowledged(_ id: UInt64?, _ data: [UInt8]) -> ProtocolReading {
    data.withUnsafeBytes { acknowledged(id, $0) }
  }

  /// `unreadable` for bytes held in an array.
  static func unreadable(_ message: Message, _ bytes: [UInt8], _ problem: String)
    -> ProtocolReading
  {
    bytes.withUnsafeBytes { unreadable(message, $0, problem) }
  }
}

/// Acks both ways: the one the server asks for (sent once its record is durable), and the
/// server's answers to our events.
extension SocketIOProtocol {
  /// `43` + the namespace the event came in + the id + `[]`: the answer to an event that
  /// asked for one.
  static func acknowledgement(_ id: UInt64, prefix: [UInt8]) -> Message {
    var out: [UInt8] = Array("43".utf8)
    out += prefix
    out.appendDecimal(id)
    out.append("[]" as StaticString)
    return .text(out)
  }

  /// The server answered one of our events.
  mutating func acknowledged(_ id: UInt64?, _ data: UnsafeRawBufferPointer)
    -> ProtocolReading
  {
    var reading = ProtocolReading(record: nil)
    guard let id, let what = awaited.removeValue(forKey: id) else {
      reading.problem = "an ack for an id we did not ask for"
      return reading
    }
    let error = Self.ackError(data, errorKeys)
    switch what {
    case .send(let count):
      if let error {
        reading.failed = [DeliveryFailure(count: count, reason: error)]
      } else {
        reading.delivered = [count]
      }
    case .join(let room):
      if let error { reading.problem = "the server refused to join room \(room): \(error)" }
    case .leave(let room):
      if let error { reading.problem = "the server refused to leave room \(room): \(error)" }
    }
    return reading
  }

  /// The error an ack carries: its first argument's non-null `error` member, as text.
  static func ackError(_ data: UnsafeRawBufferPointer, _ keys: JSONScanner.Keys) -> String? {
    guard
      let scan = JSONScanner.scanArray(
        data, elements: 1, nestedIn: 0, nested: keys, knownUTF8: true),
      let range = scan.nested[0]
    else { return nil }
    let value = UnsafeRawBufferPointer(rebasing: data[range])
    if value.elementsEqual("null".utf8) || value.elementsEqual("false".utf8) { return nil }
    if value.first == UInt8(ascii: "\""), value.count >= 2 {
      let content = UnsafeRawBufferPointer(rebasing: value[1..<(value.count - 1)])
      let text = String(decoding: JSONString.unescape(content), as: UTF8.self)
      return text.isEmpty ? "refused without a reason" : text
    }
    return String(decoding: value.prefix(500), as: UTF8.self)
  }
}
