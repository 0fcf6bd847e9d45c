import WebSocket

/// What the daemon learned from one inbound frame.
public struct InboundMessage: Sendable {
  /// The frame's payload, untouched.
  public var payload: Message
  /// For text: the JSON scan (nil inside when the text is not JSON). For binary: `.none`.
  public var scan: JSONScanner.Result??
  /// The room as raw JSON, when the protocol names one.
  public var room: [UInt8]?
  /// The client id of one of our messages, when this frame echoes it.
  public var echoedClientID: String?
  /// Where the event name is in the payload (a JSON string), when the protocol has one: the
  /// name itself is made only when asked for, since it is compared as bytes.
  var eventRange: Range<Int>?

  /// The event name, when the protocol has one.
  public var event: String? {
    guard case .text(let bytes) = payload else { return nil }
    return bytes.withUnsafeBytes { EnvelopeProtocol.string($0, eventRange) }
  }
}

/// Translates between chat operations and WebSocket messages for one backend dialect.
///
/// Kept behind a protocol, as Starscream keeps its framer, so the connection logic is the
/// same for every dialect and each dialect is tested without sockets.
public protocol ChatProtocolAdapter {
  /// Whether the dialect has rooms to join.
  var hasRooms: Bool { get }
  /// The message that joins a room, if the dialect has one.
  func join(_ room: RoomID) -> Message?
  /// The message that leaves a room, if the dialect has one.
  func leave(_ room: RoomID) -> Message?
  /// The message that carries an outbox entry.
  func encode(_ entry: OutboxEntry) -> Message
  /// Reads an inbound frame; never fails: frames that do not parse are still stored.
  func decode(_ message: Message) -> InboundMessage
}

/// The seeds' JSON event envelopes, with configurable field and event names:
/// `{"event":"send-message","data":{"room_id":7,"message":"hi","sender":"ops-bot","count":1,"client_id":"…"}}`.
public struct EnvelopeProtocol: ChatProtocolAdapter {
  private let names: Configuration.Envelope
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
  public init(names: Configuration.Envelope = Configuration.Envelope(), sender: String) {
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

  public func join(_ room: RoomID) -> Message? { roomEvent(names.joinEvent, room) }

  public func leave(_ room: RoomID) -> Message? { roomEvent(names.leaveEvent, room) }

  private func roomEvent(_ event: String, _ room: RoomID) -> Message {
    var out: [UInt8] = []
    Self.open(names, event, into: &out)
    Self.key(names.roomField, into: &out, first: true)
    out += room.json
    out += Array("}}".utf8)
    return .text(out)
  }

  public func encode(_ entry: OutboxEntry) -> Message {
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
    _ names: Configuration.Envelope, _ event: String, into out: inout [UInt8]
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

  public func decode(_ message: Message) -> InboundMessage {
    guard case .text(let bytes) = message else {
      return InboundMessage(payload: message, scan: .none, room: nil, echoedClientID: nil)
    }
    return bytes.withUnsafeBytes { raw in
      // Text messages arrive validated as UTF-8 by the WebSocket layer.
      let scan = JSONScanner.scan(
        raw, topLevelKeys: topKeys, nestedIn: 1, nestedKeys: nestedKeys, knownUTF8: true,
        maxDepth: JSONScanner.embeddedMaxDepth)
      var inbound = InboundMessage(
        payload: message, scan: .some(scan), room: nil, echoedClientID: nil)
      guard let scan else { return inbound }
      if let range = scan.nested[0] {
        let first = raw[range.lowerBound]
        // Only numbers and strings name a room; objects, arrays and null do not.
        if first == UInt8(ascii: "\"") || first == UInt8(ascii: "-") || first.isDigit {
          inbound.room = Array(raw[range])
        }
      }
      inbound.eventRange = scan.topLevel[0]
      // Only a message event echoes a send; other events may carry ids of their own.
      if Self.string(raw, scan.topLevel[0], equals: messageEventName) {
        inbound.echoedClientID = Self.string(raw, scan.nested[1])
      }
      return inbound
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

/// Frames pass through untouched: outgoing text is sent as is, inbound frames are stored as
/// they arrived. There are no rooms and no client ids in the payload, so delivery is
/// confirmed by ping/pong only.
public struct RawProtocol: ChatProtocolAdapter {
  /// Creates the adapter.
  public init() {}

  public var hasRooms: Bool { false }
  public func join(_ room: RoomID) -> Message? { nil }
  public func leave(_ room: RoomID) -> Message? { nil }
  public func encode(_ entry: OutboxEntry) -> Message { .text(Array(entry.text.utf8)) }

  public func decode(_ message: Message) -> InboundMessage {
    guard case .text(let bytes) = message else {
      return InboundMessage(payload: message, scan: .none, room: nil, echoedClientID: nil)
    }
    let scan = bytes.withUnsafeBytes {
      JSONScanner.scan($0, knownUTF8: true, maxDepth: JSONScanner.embeddedMaxDepth)
    }
    return InboundMessage(payload: message, scan: .some(scan), room: nil, echoedClientID: nil)
  }
}
