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
  /// The member of an inbound event's data that holds the backend's message id; empty: none
  /// (the catch-up extension, README "For backend authors").
  public var idField = ""
  /// The member of a join's data that carries the newest id stored for the room, so the
  /// backend replays what came after it; empty: joins carry none.
  public var sinceField = ""
  /// The event a backend sends when its history no longer reaches back to a join's since.
  public var truncatedEvent = "history-truncated"
  /// Creates the seeds' names.
  public init() {}
}

/// The seeds' JSON event envelopes, with configurable field and event names:
/// `{"event":"send-message","data":{"room_id":7,"message":"hi","sender":"ops-bot","count":1,"client_id":"…"}}`.
public struct EnvelopeProtocol: BackendProtocol {
  private let names: EnvelopeNames
  private let topKeys: JSONScanner.Keys
  private let nestedKeys: JSONScanner.Keys
  private let fields: MessageFields
  // `{"event":"send-message","data":`, quoted once instead of for every message.
  private let sendOpening: [UInt8]
  private let messageEventName: [UInt8]
  /// The truncation event's name, when joins ask for replays (SinceField= is set).
  private let truncatedEventName: [UInt8]?
  // The rooms of recent frames: a frame of a room seen lately shares its array.
  private var rooms = RoomCache()
  // The scan's result, kept between frames so that it is filled in place.
  private var scan = JSONScanner.Result()

  /// Creates the adapter.
  public init(names: EnvelopeNames = EnvelopeNames(), sender: String) {
    self.names = names
    topKeys = JSONScanner.Keys([names.eventField, names.dataField])
    nestedKeys = JSONScanner.Keys(
      [names.roomField, names.clientIDField] + (names.idField.isEmpty ? [] : [names.idField]))
    fields = MessageFields(names: names, sender: sender)
    sendOpening = Self.opening(names, names.sendEvent)
    messageEventName = Array(names.messageEvent.utf8)
    truncatedEventName = names.sinceField.isEmpty ? nil : Array(names.truncatedEvent.utf8)
  }

  public var hasRooms: Bool { true }
  public var framesAreSingleLineJSON: Bool { true }

  public mutating func join(_ room: RoomID) -> Message? { roomEvent(names.joinEvent, room) }

  public var joinsAfterStoredID: Bool { !names.sinceField.isEmpty }

  public mutating func join(_ room: RoomID, after position: RoomPosition?) -> Message? {
    guard let lastID = position?.id, !names.sinceField.isEmpty else { return join(room) }
    var out = Self.opening(names, names.joinEvent)
    fields.appendRoom(room, to: &out)
    out.removeLast()
    out.append(UInt8(ascii: ","))
    JSONString.append(names.sinceField, to: &out)
    out.append(UInt8(ascii: ":"))
    MessageID.appendJSON(lastID, to: &out)
    out.append(contentsOf: "}}".utf8)
    return .text(out)
  }

  public mutating func leave(_ room: RoomID) -> Message? { roomEvent(names.leaveEvent, room) }

  private func roomEvent(_ event: String, _ room: RoomID) -> Message {
    var out = Self.opening(names, event)
    fields.appendRoom(room, to: &out)
    out.append(UInt8(ascii: "}"))
    return .text(out)
  }

  public var writesFramesInPlace: Bool { true }

  public mutating func encode(_ entry: OutboxEntry, appendingTo frames: inout PackedStrings) {
    // Every streamed send passes here: written into the run's buffer.
    if fields.appendFrame(entry, prefix: sendOpening, suffix: UInt8(ascii: "}"), to: &frames) {
      return
    }
    encode(entry).withUnsafeBytes { frames.append(utf8: $0) }
  }

  public mutating func encode(_ entry: OutboxEntry) -> Message {
    // Every streamed send passes here: one allocation, sized up front.
    if let frame = fields.frame(entry, prefix: sendOpening, suffix: UInt8(ascii: "}")) {
      return .text(frame)
    }
    var out: [UInt8] = []
    out.reserveCapacity(sendOpening.count + fields.estimatedSize(entry) + 1)
    out += sendOpening
    fields.append(entry, to: &out)
    out.append(UInt8(ascii: "}"))
    return .text(out)
  }

  /// `{"event":"<event>","data":`.
  private static func opening(_ names: EnvelopeNames, _ event: String) -> [UInt8] {
    var out: [UInt8] = [UInt8(ascii: "{")]
    JSONString.append(names.eventField, to: &out)
    out.append(UInt8(ascii: ":"))
    JSONString.append(event, to: &out)
    out.append(UInt8(ascii: ","))
    JSONString.append(names.dataField, to: &out)
    out.append(UInt8(ascii: ":"))
    return out
  }

  public mutating func read(_ message: Message) -> ProtocolReading {
    var reading = ProtocolReading(record: nil)
    read(message, into: &reading)
    return reading
  }

  public mutating func read(_ message: consuming Message, into reading: inout ProtocolReading) {
    guard message.isText else {
      reading.record = InboundMessage(payload: consume message, scan: .unscanned)
      return
    }
    // The closures return plain values: the reading is filled here, in place, and so is the
    // scan's result. The bytes are read in place: the message itself moves into the record.
    let isJSON = message.withUnsafeBytes { raw in
      // Text messages arrive validated as UTF-8 by the WebSocket layer.
      JSONScanner.scan(
        raw, topLevel: topKeys, nestedIn: 1, nested: nestedKeys, knownUTF8: true,
        maxDepth: JSONScanner.embeddedMaxDepth, into: &scan)
    }
    guard isJSON else {
      reading.record = InboundMessage(payload: consume message, scan: .notJSON)
      return
    }
    var room: [UInt8]?
    if let range = scan.nested[0] {
      room = message.withUnsafeBytes { raw in
        let first = raw[range.lowerBound]
        // Only numbers and strings name a room; objects, arrays and null do not.
        guard first == UInt8(ascii: "\"") || first == UInt8(ascii: "-") || first.isDigit else {
          return nil
        }
        return rooms.room(UnsafeRawBufferPointer(rebasing: raw[range]))
      }
    }
    if let truncatedEventName {
      Self.noteTruncation(
        message, event: scan.topLevel[0], named: truncatedEventName, room: room, into: &reading)
    }
    // The ranges are read out first: a closure that reads the scan captures all of it.
    let event = scan.topLevel[0]
    let clientID = scan.nested[1]
    reading.echoedClientID = message.withUnsafeBytes { raw -> String? in
      // Only a message event echoes a send; other events may carry ids of their own.
      guard Self.string(raw, event, equals: messageEventName) else { return nil }
      return Self.string(raw, clientID)
    }
    var id: MessageIDText?
    if scan.nested.count > 2 {
      // The range is read out here: a method of `self` (474 bytes) called from this mutating
      // one is handed a copy of it, and so is a closure that reads the scan.
      let range = scan.nested[2]
      // The scan saw where strings had escapes: most frames have none, or none in the id.
      let plain = range.map { !scan.mayHaveEscapes(in: $0) } ?? true
      id = message.withUnsafeBytes { raw in MessageID.location(raw, range, plain: plain) }
    }
    reading.record = InboundMessage(
      payload: consume message, scan: .json(hasLineBreaks: scan.hasLineBreaks), room: room, id: id)
  }

  /// Whether the frame is the backend's truncation event: a history gap. Out of line: only
  /// joins that ask for replays make it possible, and the common frame must not pay for it.
  /// (Static: a method of `self` would be handed a copy of it.)
  @inline(never)
  private static func noteTruncation(
    _ message: borrowing Message, event: Range<Int>?, named truncatedEventName: [UInt8],
    room: [UInt8]?, into reading: inout ProtocolReading
  ) {
    let gap = message.withUnsafeBytes { raw in
      Self.string(raw, event, equals: truncatedEventName)
    }
    if gap { reading.historyGap = room.map { String(decoding: $0, as: UTF8.self) } ?? "null" }
  }

  /// Whether the JSON string at `range` holds `expected`: compared as bytes, decoded only when
  /// it has escapes.
  static func string(
    _ raw: UnsafeRawBufferPointer, _ range: Range<Int>?, equals expected: [UInt8]
  ) -> Bool {
    guard let content = stringContent(raw, range) else { return false }
    if content.count == expected.count {
      // Every inbound frame's event name is compared: a plain loop over the two buffers costs
      // a fraction of the generic elementsEqual.
      let equal = expected.withUnsafeBytes { want in
        var i = 0
        while i < want.count && content[i] == want[i] { i += 1 }
        return i == want.count
      }
      if equal { return true }
    }
    guard content.contains(UInt8(ascii: "\\")) else { return false }
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
