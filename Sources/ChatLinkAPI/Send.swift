import JSON

/// How far a sent message got: `queued` (durable in the outbox), `sent` (written to the
/// backend) or `confirmed` (the backend has it).
public struct SendState: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
  /// The name on the wire.
  public var rawValue: String

  /// A state by its wire name.
  public init(rawValue: String) {
    self.rawValue = rawValue
  }

  /// Durable in the outbox: it will be delivered.
  public static let queued = SendState(rawValue: "queued")
  /// Written to the backend, not yet confirmed.
  public static let sent = SendState(rawValue: "sent")
  /// The backend confirmed it: it leaves the outbox.
  public static let confirmed = SendState(rawValue: "confirmed")

  public var description: String { rawValue }
}

/// Send's parameters: `(room: ?string, text: string, id: ?string)`.
public struct SendParameters: JSONRepresentable {
  /// The room; nil for the daemon's default room (or for a protocol without rooms).
  public var room: String?
  /// The message, not empty.
  public var text: String
  /// The client message id; nil lets the daemon make one.
  public var id: String?

  /// Creates the parameters.
  public init(room: String? = nil, text: String, id: String? = nil) {
    self.room = room
    self.text = text
    self.id = id
  }

  /// Reads the parameters, refusing an empty text (there is nothing to send).
  public init(json: JSONValue) throws(APIDecodingError) {
    let object = try ObjectReader(json)
    text = try object.string("text")
    guard !text.isEmpty else { throw APIDecodingError(field: "text", reason: "is empty") }
    id = try object.optionalString("id")
    room = try object.optionalRoom("room")
  }

  public var json: JSONValue {
    .object([
      "room": room.map(JSONValue.string), "text": .string(text), "id": id.map(JSONValue.string),
    ])
  }
}

/// One answer to Send: `(id: string, state: string, count: int)`; with "more", one per state.
public struct SendReceipt: JSONRepresentable {
  /// The client message id.
  public var id: String
  /// How far the message got.
  public var state: SendState
  /// The outbox counter: monotonic, sent to the backend as the envelope's `count`.
  public var count: Int

  /// Creates a receipt.
  public init(id: String, state: SendState, count: Int) {
    self.id = id
    self.state = state
    self.count = count
  }

  public init(json: JSONValue) throws(APIDecodingError) {
    let object = try ObjectReader(json)
    id = try object.string("id")
    state = SendState(rawValue: try object.string("state"))
    count = try object.int("count")
  }

  public var json: JSONValue {
    .object([
      ("id", .string(id)), ("state", .string(state.rawValue)), ("count", .int(Int64(count))),
    ])
  }
}

/// SendBatch's parameters: `(room: ?string, texts: []string, wait_for_room: ?bool)`, 1 to
/// `limit` texts, none empty: the batch is all or none, so one bad text refuses it whole.
public struct SendBatchParameters: JSONRepresentable {
  /// The most texts one call may carry.
  public static let limit = 10_000

  /// The room; nil for the daemon's default room.
  public var room: String?
  /// The messages, in order, in one buffer for the lot (as the daemon keeps them).
  public var texts: PackedStrings
  /// Whether a full outbox holds the call until it has room (the calls that wait are taken in
  /// the order they came), instead of refusing it with OutboxFull: a stream's backpressure.
  public var waitForRoom: Bool

  /// Creates the parameters.
  public init(room: String? = nil, texts: PackedStrings, waitForRoom: Bool = false) {
    self.room = room
    self.texts = texts
    self.waitForRoom = waitForRoom
  }

  public init(json: JSONValue) throws(APIDecodingError) {
    let object = try ObjectReader(json)
    guard case .array(let values) = object.optional("texts") ?? .null else {
      throw Self.notAnArray
    }
    guard (1...Self.limit).contains(values.count) else { throw Self.wrongCount }
    var messages = PackedStrings()
    for (index, value) in values.enumerated() {
      guard case .string(let text) = value, !text.isEmpty else {
        let what = value.stringValue == nil ? "not a string" : "empty"
        throw APIDecodingError(field: "texts", reason: "message \(index) is \(what)")
      }
      messages.append(text)
    }
    texts = messages
    room = try object.optionalRoom("room")
    waitForRoom = try object.optionalBool("wait_for_room") ?? false
  }

  private static let members = JSONScanner.Keys(["room", "texts", "wait_for_room"])

  /// Reads the texts straight from the call's JSON into one buffer: no tree, and no string
  /// for each message. Parameters that do not read go the way of `init(json:)`, for the same
  /// error.
  public init(validJSON text: UnsafeRawBufferPointer) throws(APIDecodingError) {
    if let found = JSONScanner.scan(text, topLevel: Self.members, knownUTF8: true),
      found.isObject, let textsRange = found.topLevel[1],
      case .strings(let messages) = PackedStrings.readJSONArray(
        UnsafeRawBufferPointer(rebasing: text[textsRange])),
      (1...Self.limit).contains(messages.count),
      !messages.indices.contains(where: { messages.utf8Count(at: $0) == 0 })
    {
      let room = found.topLevel[0].map {
        JSONValue.parsed(UnsafeRawBufferPointer(rebasing: text[$0])) ?? .null
      }
      let wait = found.topLevel[2].map {
        JSONValue.parsed(UnsafeRawBufferPointer(rebasing: text[$0])) ?? .null
      }
      switch wait {
      case nil, .null?, .bool?:
        self.init(
          room: try ObjectReader.room(room, "room"), texts: messages,
          waitForRoom: wait?.boolValue ?? false)
        return
      default: break  // not a bool: init(json:) says so
      }
    }
    try self.init(json: JSONValue.parsed(text) ?? .null)
  }

  private static let notAnArray = APIDecodingError(
    field: "texts", reason: "must be an array of strings")
  private static let wrongCount = APIDecodingError(
    field: "texts", reason: "must hold from 1 to \(limit) messages")

  public var json: JSONValue {
    .object([
      "room": room.map(JSONValue.string), "texts": .array(texts.map(JSONValue.string)),
      "wait_for_room": waitForRoom ? .bool(true) : nil,
    ])
  }
}

/// SendBatch's reply: `(ids: []string, count: int, state: string)`. `ids[i]` is the i-th
/// text's client id, and its outbox counter is `count + i`.
public struct SendBatchReceipt: JSONRepresentable {
  /// The client ids, in the order of the texts, in one buffer for the lot.
  public var ids: PackedStrings
  /// The first message's outbox counter; the others follow it.
  public var count: Int
  /// How far the messages got: `queued`.
  public var state: SendState

  /// Creates a receipt.
  public init(ids: PackedStrings, count: Int, state: SendState = .queued) {
    self.ids = ids
    self.count = count
    self.state = state
  }

  public init(json: JSONValue) throws(APIDecodingError) {
    let object = try ObjectReader(json)
    ids = PackedStrings(try object.strings("ids"))
    count = try object.int("count")
    state = SendState(rawValue: try object.string("state"))
  }

  private static let members = JSONScanner.Keys(["ids", "count", "state"])

  /// Reads the ids straight from the reply's text into one buffer: no string for each.
  /// A reply that does not read goes the way of `init(json:)`, for the same error.
  public init(validJSON text: UnsafeRawBufferPointer) throws(APIDecodingError) {
    if let found = JSONScanner.scan(text, topLevel: Self.members, knownUTF8: true),
      found.isObject, let idsRange = found.topLevel[0],
      case .strings(let ids) = PackedStrings.readJSONArray(
        UnsafeRawBufferPointer(rebasing: text[idsRange])),
      let countRange = found.topLevel[1], let stateRange = found.topLevel[2]
    {
      func value(_ range: Range<Int>) -> JSONValue? {
        JSONValue.parsed(UnsafeRawBufferPointer(rebasing: text[range]))
      }
      if let count = value(countRange)?.intValue, let state = value(stateRange)?.stringValue {
        self.init(ids: ids, count: Int(count), state: SendState(rawValue: state))
        return
      }
    }
    try self.init(json: JSONValue.parsed(text) ?? .null)
  }

  public var json: JSONValue {
    .object([
      ("ids", .array(ids.map(JSONValue.string))), ("count", .int(Int64(count))),
      ("state", .string(state.rawValue)),
    ])
  }

  /// One receipt per message, as Send would have answered each.
  public var receipts: [SendReceipt] {
    ids.enumerated().map { SendReceipt(id: $1, state: state, count: count + $0) }
  }
}
