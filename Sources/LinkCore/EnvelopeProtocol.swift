import JSON
import WebSocket

/// Field and event names of the envelope protocol ([Envelope] in chatlinkd.conf).
public struct EnvelopeNames: Sendable, Hashable {
  public var eventField = "event"
  public var dataField = "data"
  public var roomField = "room_id"
  public var messageField = "message"
  public var senderField = "sender"
  public var countField = "count"
  public var clientIDField = "client_id"
  public var joinEvent = "join-room"
  public var leaveEvent = "leave-room"
  public var sendEvent = "send-message"
  public var messageEvent = "message"
  /// Creates the seeds' names.
  public init() {}
}

/// The seeds' JSON event envelopes, with configurable field and event names:
/// `{"event":"send-message","data":{"room_id":7,"message":"hi","sender":"ops-bot","count":1,"client_id":"…"}}`.
public struct EnvelopeProtocol: BackendProtocol {
  private let names: EnvelopeNames
  private let sender: String
  private let topKeys: [[UInt8]]
  private let nestedKeys: [[UInt8]]
  // The constant pieces of a send-message envelope, quoted once here instead of for every
  // message: `{"event":"send-message","data":{"room_id":`, `,"message":`,
  // `,"sender":"…","count":` and `,"client_id":`.
  private let sendOpening: [UInt8]
  private let messageKey: [UInt8]
  private let senderAndCountKey: [UInt8]
  private let clientIDKey: [UInt8]
  private let messageEventName: [UInt8]

  /// Creates the adapter.
  public init(names: EnvelopeNames = EnvelopeNames(), sender: String) {
    self.names = names
    self.sender = sender
    topKeys = [Array(names.eventField.utf8), Array(names.dataField.utf8)]
    nestedKeys = [Array(names.roomField.utf8), Array(names.clientIDField.utf8)]
    var opening: [UInt8] = []
    Self.open(names, names.sendEvent, into: &opening)
    Self.key(names.roomField, into: &opening, first: true)
    sendOpening = opening
    var message: [UInt8] = []
    Self.key(names.messageField, into: &message)
    messageKey = message
    var senderAndCount: [UInt8] = []
    Self.key(names.senderField, into: &senderAndCount)
    JSONString.append(sender, to: &senderAndCount)
    Self.key(names.countField, into: &senderAndCount)
    senderAndCountKey = senderAndCount
    var clientID: [UInt8] = []
    Self.key(names.clientIDField, into: &clientID)
    clientIDKey = clientID
    messageEventName = Array(names.messageEvent.utf8)
  }

  public var hasRooms: Bool { true }
  public var framesAreSingleLineJSON: Bool { true }

  public mutating func join(_ room: RoomID) -> Message? { roomEvent(names.joinEvent, room) }

  public mutating func leave(_ room: RoomID) -> Message? { roomEvent(names.leaveEvent, room) }

  private func roomEvent(_ event: String, _ room: RoomID) -> Message {
    var out: [UInt8] = []
    Self.open(names, event, into: &out)
    Self.key(names.roomField, into: &out, first: true)
    out += room.json
    out += Array("}}".utf8)
    return .text(out)
  }

  public mutating func encode(_ entry: OutboxEntry) -> Message {
    // Every streamed send passes here: one allocation, sized up front.
    var out: [UInt8] = []
    out.reserveCapacity(
      sendOpening.count + messageKey.count + senderAndCountKey.count + clientIDKey.count
        + entry.text.utf8.count + entry.id.utf8.count + 48)
    out += sendOpening
    if let room = entry.room { out += room.json } else { out.append("null" as StaticString) }
    out += messageKey
    out.appendJSONString(entry.text)
    out += senderAndCountKey
    out.appendDecimal(entry.count)
    out += clientIDKey
    out.appendJSONString(entry.id)
    out.append(UInt8(ascii: "}"))
    out.append(UInt8(ascii: "}"))
    return .text(out)
  }

  private static func open(
    _ names: EnvelopeNames, _ event: String, into out: inout [UInt8]
  ) {
    out.append(UInt8(ascii: "{"))
    JSONString.append(names.eventField, to: &out)
    out.append(UInt8(ascii: ":"))
    JSONString.append(event, to: &out)
    out.append(UInt8(ascii: ","))
    JSONString.append(names.dataField, to: &out)
    out += Array(":{".utf8)
  }

  private static func key(_ name: String, into out: inout [UInt8], first: Bool = false) {
    if !first { out.append(UInt8(ascii: ",")) }
    JSONString.append(name, to: &out)
    out.append(UInt8(ascii: ":"))
  }

  public mutating func read(_ message: Message) -> ProtocolReading {
    guard case .text(let bytes) = message else {
      return ProtocolReading(record: InboundMessage(payload: message, scan: .unscanned))
    }
    return bytes.withUnsafeBytes { raw in
      // Text messages arrive validated as UTF-8 by the WebSocket layer.
      let scan = JSONScanner.scan(
        raw, topLevelKeys: topKeys, nestedIn: 1, nestedKeys: nestedKeys, knownUTF8: true,
        maxDepth: JSONScanner.embeddedMaxDepth)
      guard let scan else {
        return ProtocolReading(record: InboundMessage(payload: message, scan: .notJSON))
      }
      var record = InboundMessage(
        payload: message, scan: .json(hasLineBreaks: scan.hasLineBreaks))
      if let range = scan.nested[0] {
        let first = raw[range.lowerBound]
        // Only numbers and strings name a room; objects, arrays and null do not.
        if first == UInt8(ascii: "\"") || first == UInt8(ascii: "-") || first.isDigit {
          record.room = Array(raw[range])
        }
      }
      var reading = ProtocolReading(record: record)
      // Only a message event echoes a send; other events may carry ids of their own.
      if Self.string(raw, scan.topLevel[0], equals: messageEventName) {
        reading.echoedClientID = Self.string(raw, scan.nested[1])
      }
      return reading
    }
  }

  /// Whether the JSON string at `range` holds `expected`: compared as bytes, decoded only when
  /// it has escapes.
  static func string(
    _ raw: UnsafeRawBufferPointer, _ range: Range<Int>?, equals expected: [UInt8]
  ) -> Bool {
    guard let content = stringContent(raw, range) else { return false }
    if !content.contains(UInt8(ascii: "\\")) { return content.elementsEqual(expected) }
    return JSONString.unescape(content) == expected
  }

  static func string(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>?) -> String? {
    guard let content = stringContent(raw, range) else { return nil }
    return String(decoding: JSONString.unescape(content), as: UTF8.self)
  }

  /// The bytes between the quotes of the JSON string at `range`, still escaped; nil when the
  /// value there is not a string.
  private static func stringContent(
    _ raw: UnsafeRawBufferPointer, _ range: Range<Int>?
  ) -> UnsafeRawBufferPointer? {
    guard let range, range.count >= 2, raw[range.lowerBound] == UInt8(ascii: "\"") else {
      return nil
    }
    return UnsafeRawBufferPointer(rebasing: raw[(range.lowerBound + 1)..<(range.upperBound - 1)])
  }
}
