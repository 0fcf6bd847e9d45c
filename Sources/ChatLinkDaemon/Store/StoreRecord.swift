import CSystem
import JSON
import LinkCore
import WebSocket

/// One line of messages.jsonl: the store's schema, written and read here only.
///
/// ```
/// {"seq":42,"time":"2026-12-02T12:00:00.123456Z","dir":"in","room":7,"type":"json","data":{…}}
/// {"seq":43,"time":"…","dir":"in","room":null,"type":"text","data":"not json"}
/// {"seq":44,"time":"…","dir":"in","room":null,"type":"binary","data":"AAEC"}
/// {"seq":45,"time":"…","dir":"out","room":7,"type":"json","id":"c1a2…","data":{…}}
/// ```
/// `type` says how `data` holds the payload losslessly: `json` embeds the backend's JSON
/// (minified if it spanned lines), `text` is a JSON string, `binary` is base64. `id` is the
/// message's id: the client message id of outgoing messages, and the backend's id of incoming
/// ones when the protocol gives one (a string, as the backend wrote it or a number's digits);
/// `meta` (an object) what a protocol keeps besides the payload (MQTT's QoS, retain flag and
/// properties), only when it keeps some.
public struct StoreRecord: Sendable, Hashable {
  /// Inbound or outbound.
  public enum Direction: String, Sendable, Hashable {
    case inbound = "in"
    case outbound = "out"
  }

  /// How the payload is kept.
  public enum Kind: String, Sendable, Hashable {
    case json, text, binary
  }

  /// The daemon-assigned sequence number, strictly increasing across restarts.
  public var seq: UInt64
  /// When the message was received (or confirmed, for outbound).
  public var time: Timestamp
  /// Inbound or outbound.
  public var direction: Direction
  /// The room as raw JSON (a number or a string), or nil.
  public var room: [UInt8]?
  /// The message's id: the client message id of an outbound message, the backend's id of an
  /// inbound one.
  public var clientID: String?
  /// A JSON object the protocol keeps besides the payload.
  public var meta: [UInt8]?
  /// The payload.
  public var payload: Message

  /// Creates a record.
  public init(
    seq: UInt64, time: Timestamp, direction: Direction, room: [UInt8]?, clientID: String? = nil,
    meta: [UInt8]? = nil, payload: Message
  ) {
    self.seq = seq
    self.time = time
    self.direction = direction
    self.room = room
    self.clientID = clientID
    self.meta = meta
    self.payload = payload
  }

  // StaticStrings, not arrays: appending them costs no retain/release on the hot path.
  private static let seqPrefix: StaticString = #"{"seq":"#
  private static let timeKey: StaticString = #","time":""#
  private static let dirIn: StaticString = #"","dir":"in","room":"#
  private static let dirOut: StaticString = #"","dir":"out","room":"#
  private static let null: StaticString = "null"
  private static let typeJSON: StaticString = #","type":"json""#
  private static let typeText: StaticString = #","type":"text""#
  private static let typeBinary: StaticString = #","type":"binary""#
  private static let idKey: StaticString = #","id":"#
  private static let metaKey: StaticString = #","meta":"#
  private static let dataKey: StaticString = #","data":"#
  private static let typeJSONData: StaticString = #","type":"json","data":"#
  private static let lineEnd: StaticString = "}\n"

  /// Appends the record as one JSON line, newline included.
  ///
  /// - Parameter scan: the result of scanning a text payload, if the caller already has it
  ///   (the envelope protocol scans every frame); saves a second pass.
  public func appendLine(to out: inout [UInt8], scan: PayloadScan = .unscanned) {
    var formatter = TimestampFormatter()
    appendLine(to: &out, scan: scan, formatter: &formatter)
  }

  /// Appends the line, formatting the time with a formatter that caches the date part.
  public func appendLine(
    to out: inout [UInt8], scan: PayloadScan = .unscanned, formatter: inout TimestampFormatter
  ) {
    let messageID = direction == .inbound ? clientID.map { Array($0.utf8) } : nil
    messageID.withUnsafeBytesIfPresent { id in
      Self.appendLine(
        seq: seq, time: time, direction: direction, room: room,
        clientID: direction == .outbound ? clientID.map(ClientID.given) : nil, messageID: id,
        meta: meta, payload: payload, scan: scan, to: &out, formatter: &formatter)
    }
  }

  /// Appends a record's line from its parts, without building the record: the store does
  /// this for every inbound frame, and a record built for it would retain and release each
  /// part once more.
  static func appendLine(
    seq: UInt64, time: Timestamp, direction: Direction, room: [UInt8]?, clientID: ClientID?,
    messageID: UnsafeRawBufferPointer? = nil, meta: [UInt8]?, payload: Message,
    scan: PayloadScan, to out: inout [UInt8], formatter: inout TimestampFormatter
  ) {
    payload.withUnsafeBytes { raw in
      appendLine(
        seq: seq, time: time, direction: direction, room: room, clientID: clientID,
        messageID: messageID, meta: meta, payload: raw, isText: payload.isText, scan: scan,
        to: &out, formatter: &formatter)
    }
  }

  /// `appendLine` with the payload given as its bytes (a frame read where it lies) and kind.
  /// Not inlined into the store's `append`: a profile then tells formatting from bookkeeping
  /// (`make profile`'s stages).
  @inline(never)
  ///
  /// `messageID` is an inbound message's id (its text, written as a JSON string; with
  /// `messageIDIsPlain` it is known to need no escapes); `clientID` an outbound one's.
  static func appendLine(
    seq: UInt64, time: Timestamp, direction: Direction, room: [UInt8]?, clientID: ClientID?,
    messageID: UnsafeRawBufferPointer? = nil, messageIDIsPlain: Bool = false, meta: [UInt8]?,
    payload raw: UnsafeRawBufferPointer, isText: Bool,
    scan: PayloadScan, to out: inout [UInt8], formatter: inout TimestampFormatter
  ) {
    let prefixBytes = 64 + TimestampFormatter.length + (room?.count ?? 4)
    // The fixed members up to the room, written in one piece (the store does this for every
    // record).
    func writePrefix(_ line: inout ByteWriter) {
      line.write(seqPrefix)
      line.writeDecimal(seq)
      line.write(timeKey)
      formatter.write(time, to: &line)
      line.write(direction == .inbound ? dirIn : dirOut)
      if let room { room.withUnsafeBytes { line.write($0) } } else { line.write(null) }
    }
    guard isText else {
      out.append(maxCount: prefixBytes, writePrefix)
      let id = RecordID(clientID: clientID, messageID: messageID, plain: messageIDIsPlain)
      appendBinary(raw, id, meta, to: &out)
      return
    }
    do {
      let known =
        if case .unscanned = scan {
          PayloadScan(JSONScanner.scan(raw, maxDepth: JSONScanner.embeddedMaxDepth))
        } else {
          scan
        }
      // The usual record reads its id where it is: a `RecordID` would copy a client id (and
      // count a reference to a given one's text) for every line.
      let idCount = clientID?.utf8Count ?? messageID?.count
      // An id rides along when it needs no escapes, as ids mostly do.
      let lineBytes =
        prefixBytes + typeJSONData.utf8CodeUnitCount + raw.count + 2
        + (idCount.map { idKey.utf8CodeUnitCount + $0 + 2 } ?? 0)
      if case .json(hasLineBreaks: false) = known, meta == nil, lineBytes <= inlineLineLimit,
        idIsPlain(clientID, messageID, messageIDIsPlain)
      {
        // The whole line in one append, the payload copied twice (into the stack, then into
        // `out`), which costs less than three more appends.
        out.append(maxCount: lineBytes) { line in
          writePrefix(&line)
          writeTypeAndID(clientID, messageID, to: &line)
          line.write(raw)
          line.write(lineEnd)
        }
      } else {
        out.append(maxCount: prefixBytes, writePrefix)
        let id = RecordID(clientID: clientID, messageID: messageID, plain: messageIDIsPlain)
        appendText(raw, known, id, meta, to: &out)
      }
    }
  }

  /// The one-append line's members between the room and the payload: the type, the id (when
  /// there is one, quoted as it is) and the `data` key.
  @inline(__always)
  private static func writeTypeAndID(
    _ clientID: ClientID?, _ messageID: UnsafeRawBufferPointer?, to line: inout ByteWriter
  ) {
    guard clientID != nil || messageID != nil else {
      line.write(typeJSONData)
      return
    }
    line.write(typeJSON)
    line.write(idKey)
    if let clientID {
      clientID.withUTF8 { line.writeQuoted(UnsafeRawBufferPointer($0)) }
    } else if let messageID {
      line.writeQuoted(messageID)
    }
    line.write(dataKey)
  }

  /// Whether the id, if there is one, goes into quotes as it is (nothing to escape).
  @inline(__always)
  private static func idIsPlain(
    _ clientID: ClientID?, _ messageID: UnsafeRawBufferPointer?, _ messageIDIsPlain: Bool
  ) -> Bool {
    // A drawn client id (every `send -` line's) is plain: known here without a call.
    if case .generated = clientID { return true }
    if let clientID { return clientID.isPlain }
    guard let messageID, !messageIDIsPlain else { return true }
    return JSONString.isPlain(messageID.assumingMemoryBound(to: UInt8.self))
  }

  /// The rest of a text record's line, after the room, member by member.
  private static func appendText(
    _ raw: UnsafeRawBufferPointer, _ scan: PayloadScan, _ id: RecordID?, _ meta: [UInt8]?,
    to out: inout [UInt8]
  ) {
    if case .json(let hasLineBreaks) = scan {
      if id == nil && meta == nil {
        out.append(typeJSONData)
      } else {
        out.append(typeJSON)
        appendID(id, meta, to: &out)
        out.append(dataKey)
      }
      if hasLineBreaks {
        JSONString.minify(raw, to: &out)
      } else {
        out.append(contentsOf: raw)
      }
    } else {
      out.append(typeText)
      appendID(id, meta, to: &out)
      out.append(dataKey)
      JSONString.append(raw, to: &out)
    }
    out.append(lineEnd)
  }

  /// The longest line written in one piece through a stack buffer; longer ones are appended
  /// member by member, where the payload's copy outweighs the appends.
  public static let inlineLineLimit = 1024

  /// The rest of a binary record's line, after the room.
  private static func appendBinary(
    _ bytes: UnsafeRawBufferPointer, _ id: RecordID?, _ meta: [UInt8]?, to out: inout [UInt8]
  ) {
    out.append(typeBinary)
    appendID(id, meta, to: &out)
    out.append(dataKey)
    out.append(UInt8(ascii: "\""))
    Base64.encode(bytes, into: &out)
    out.append(UInt8(ascii: "\""))
    out.append(lineEnd)
  }

  /// The members between `type` and `data`: the id and the meta object, when set.
  private static func appendID(_ id: RecordID?, _ meta: [UInt8]?, to out: inout [UInt8]) {
    if let id {
      out.append(idKey)
      id.appendJSON(to: &out)
    }
    if let meta {
      out.append(metaKey)
      out.append(contentsOf: meta)
    }
  }

  /// The seq of a stored line, read from its fixed prefix; nil if the line is not ours.
  public static func seq(ofLine line: UnsafeRawBufferPointer) -> UInt64? {
    let prefix = UnsafeBufferPointer(start: seqPrefix.utf8Start, count: seqPrefix.utf8CodeUnitCount)
    guard line.count > prefix.count else { return nil }
    for (i, byte) in prefix.enumerated() where line[i] != byte { return nil }
    var value: UInt64 = 0
    var index = prefix.count
    var digits = 0
    while index < line.count, line[index].isDigit {
      let (times, o1) = value.multipliedReportingOverflow(by: 10)
      let (sum, o2) = times.addingReportingOverflow(UInt64(line[index] - UInt8(ascii: "0")))
      if o1 || o2 { return nil }
      value = sum
      index += 1
      digits += 1
    }
    guard digits > 0, index < line.count, line[index] == UInt8(ascii: ",") else { return nil }
    return value
  }

  private static let roomKey: StaticString = #","room":"#

  /// Where the room value of a stored line is (raw JSON: a number, a string or `null`), found
  /// in its fixed prefix; nil if the line is not one of ours.
  static func roomRange(ofLine line: UnsafeRawBufferPointer) -> Range<Int>? {
    let key = UnsafeRawBufferPointer(start: roomKey.utf8Start, count: roomKey.utf8CodeUnitCount)
    // The key sits in the first hundred bytes; never search the payload.
    let limit = min(line.count, 160)
    guard let base = line.baseAddress,
      let found = chatlink_memmem(base, limit, key.baseAddress!, key.count)
    else { return nil }
    let start = base.distance(to: found) + key.count
    guard start < line.count else { return nil }
    var end = start
    if line[start] == UInt8(ascii: "\"") {
      end += 1
      while end < line.count && line[end] != UInt8(ascii: "\"") {
        end += line[end] == UInt8(ascii: "\\") ? 2 : 1
      }
      guard end < line.count else { return nil }
      end += 1
    } else {
      while end < line.count && line[end] != UInt8(ascii: ",") { end += 1 }
    }
    guard end < line.count, line[end] == UInt8(ascii: ","), end > start else { return nil }
    return start..<end
  }
}

/// A record's id as it is written: an outbound message's client id, or an inbound message's id
/// as the backend gave it (its text).
private enum RecordID {
  case client(ClientID)
  case message(UnsafeRawBufferPointer, plain: Bool)

  init?(clientID: ClientID?, messageID: UnsafeRawBufferPointer?, plain: Bool = false) {
    if let clientID {
      self = .client(clientID)
    } else if let messageID {
      self = .message(messageID, plain: plain)
    } else {
      return nil
    }
  }

  /// Appends it as a JSON string.
  func appendJSON(to out: inout [UInt8]) {
    switch self {
    case .client(let id): id.appendJSON(to: &out)
    case .message(let bytes, _): JSONString.append(bytes, to: &out)
    }
  }
}

extension Optional where Wrapped == [UInt8] {
  /// Calls `body` with the bytes, or with nil.
  fileprivate func withUnsafeBytesIfPresent<R>(_ body: (UnsafeRawBufferPointer?) -> R) -> R {
    switch self {
    case .some(let bytes): bytes.withUnsafeBytes { body($0) }
    case .none: body(nil)
    }
  }
}
