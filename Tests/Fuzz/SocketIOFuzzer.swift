// libFuzzer target for what a Socket.IO server can send: EngineIOPacket and SocketIOPacket
// parsing, and SocketIOProtocol reading a hostile server's frames (set-up, acks, events,
// binary attachments), with the JSONScanner array scan under them.
//
// scripts/fuzz.sh builds JSON, WebSocket and LinkCore as modules and compiles this file
// against them (public API only); see its header comment for the exact commands.
//
// Input layout (Tests/Fuzz/make_seed_corpus.py writes the seeds in it):
//
//   byte 0   bit 0: the namespace (0 "/", 1 "/chat"); bits 1-3: how many messages are
//            encoded (sent) before the frames, 0-7, so acks have ids to answer
//   then     frames, each: 1 byte kind (bit 0: binary), 2 bytes length (big endian, cut to
//            what is left), the payload. A text frame that is not UTF-8 is skipped: the
//            WebSocket layer never delivers one.
//
// Oracles (each failure prints what broke, then traps with `precondition`):
//  - packet parsing: every range lies inside the input; a namespace starts with '/';
//  - a record is never lost: every text frame that is not a packet of the protocol is stored
//    as it came, byte for byte (unless it is a control packet the protocol consumes);
//  - a record whose scan says JSON is valid JSON, on one line when it says so, and within
//    the embedding depth; an event record is an object {"event": string, "args": array};
//  - a record's room is a JSON number or string;
//  - an acknowledgement is `43` + the event's namespace + digits + `[]`;
//  - delivered and failed counts are counts of messages sent, each settled at most once;
//  - replies are `3` or the namespace connect;
//  - storedForm of every encoded message is a JSON object on one line.

import Glibc
import JSON
import LinkCore
import WebSocket

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  guard size >= 1 else { return 0 }
  let input = Array(UnsafeBufferPointer(start: data, count: size))
  checkPacketParsers(Array(input.dropFirst()))
  var session = Session(flags: input[0])
  var index = 1
  while index + 3 <= input.count {
    let binary = input[index] & 1 == 1
    let length = min(Int(input[index + 1]) << 8 | Int(input[index + 2]), input.count - index - 3)
    let payload = Array(input[(index + 3)..<(index + 3 + length)])
    index += 3 + length
    if binary {
      session.read(.binary(payload))
    } else if UTF8Validator.isValid(payload) {
      session.read(.text(payload))
    }
  }
  return 0
}

/// The adapter, the messages it sent, and what has been settled.
struct Session {
  var adapter: SocketIOProtocol
  let namespace: String
  var sentCounts: Set<UInt64> = []
  var settled: Set<UInt64> = []

  init(flags: UInt8) {
    var settings = SocketIOProtocol.Settings()
    namespace = flags & 1 == 1 ? "/chat" : "/"
    settings.namespace = namespace
    settings.auth = Array(#"{"token":"t"}"#.utf8)
    adapter = SocketIOProtocol(settings)
    _ = adapter.open(
      ClientHandshake.Result(
        response: HTTPResponseHead(status: 101, reason: "", headers: HTTPHeaders()),
        subprotocol: nil, deflate: nil))
    _ = adapter.join(RoomID("7")!)
    for count in 1...UInt64(1 + (flags >> 1) & 7) {
      let entry = OutboxEntry(
        id: "id\(count)", room: RoomID("7"), text: "m\(count) \"é\"", count: count,
        created: Timestamp(microseconds: 0))
      let frame = adapter.encode(entry)
      checkJSONObject(adapter.storedForm(of: frame), oneLine: true, "storedForm")
      sentCounts.insert(count)
    }
  }

  mutating func read(_ message: Message) {
    let reading = adapter.read(message)
    if let record = reading.record { checkRecord(record, message) }
    if let ack = reading.acknowledgement { checkAcknowledgement(ack) }
    for reply in reading.replies {
      let text = reply.text ?? ""
      require(text == "3" || text.hasPrefix("40"), "reply \(text)")
    }
    for count in reading.delivered + reading.failed.map(\.count) {
      require(sentCounts.contains(count), "settled count \(count) was never sent")
      require(settled.insert(count).inserted, "count \(count) settled twice")
    }
  }

  func checkRecord(_ record: InboundMessage, _ message: Message) {
    if let room = record.room {
      let value = try? JSONValue.parse(room)
      switch value {
      case .int?, .double?, .string?: break
      default: require(false, "room \(hex(room))")
      }
    }
    switch record.scan {
    case .unscanned:
      require(record.payload == message, "an unscanned record is the frame itself")
    case .notJSON:
      // A binary packet whose data does not parse is stored as its header frame's text.
      if case .text = message {
        require(record.payload == message, "a record stored as text is the frame itself")
      }
      require(!isJSON(record.payload.bytes), "notJSON but it parses")
    case .json(let hasLineBreaks):
      let bytes = record.payload.bytes
      let scan = bytes.withUnsafeBytes {
        JSONScanner.scan($0, maxDepth: JSONScanner.embeddedMaxDepth)
      }
      require(scan != nil, "a JSON record that does not scan: \(hex(bytes))")
      if !hasLineBreaks { require(scan?.hasLineBreaks == false, "line breaks not reported") }
      if record.payload != message {
        // Built by the adapter: an event record.
        let value = try? JSONValue.parse(bytes)
        require(value?["event"]?.stringValue != nil, "event record without a name")
        require(value?["args"]?.arrayValue != nil, "event record without args")
      }
    }
  }

  func checkAcknowledgement(_ ack: Message) {
    // `43`, the namespace the event came in (`/…,`, or none for `/`), the id, `[]`.
    let text = ack.text ?? ""
    require(text.hasPrefix("43") && text.hasSuffix("[]"), "ack \(text)")
    var rest = text.dropFirst(2).dropLast(2)
    if rest.first == "/" {
      guard let comma = rest.lastIndex(of: ",") else { return require(false, "ack \(text)") }
      rest = rest[rest.index(after: comma)...]
    }
    require(!rest.isEmpty && rest.allSatisfy { $0.isASCII && $0.isNumber }, "ack id in \(text)")
  }
}

/// Both parsers on the raw bytes: ranges stay inside, namespaces start with '/'.
func checkPacketParsers(_ bytes: [UInt8]) {
  bytes.withUnsafeBytes { raw in
    switch EngineIOPacket.parse(raw) {
    case .open(let range)?, .message(let range)?:
      require(range.lowerBound >= 0 && range.upperBound <= raw.count, "engine.io range")
    default: break
    }
    guard let packet = try? SocketIOPacket.parse(raw, in: 0..<raw.count) else { return }
    require(packet.data.upperBound == raw.count && packet.data.lowerBound >= 1, "data range")
    if let namespace = packet.namespace {
      require(namespace.upperBound <= packet.data.lowerBound, "namespace range")
      require(raw[namespace.lowerBound] == UInt8(ascii: "/"), "namespace start")
    }
    require(packet.attachments <= SocketIOPacket.maxAttachments, "attachment count")
  }
}

func checkJSONObject(_ message: Message, oneLine: Bool, _ what: String) {
  let bytes = message.bytes
  let scan = bytes.withUnsafeBytes { JSONScanner.scan($0) }
  require(scan?.isObject == true, "\(what) is not a JSON object: \(hex(bytes))")
  if oneLine { require(scan?.hasLineBreaks == false, "\(what) spans lines") }
}

func isJSON(_ bytes: [UInt8]) -> Bool {
  bytes.withUnsafeBytes { JSONScanner.scan($0, maxDepth: JSONScanner.embeddedMaxDepth) != nil }
}
