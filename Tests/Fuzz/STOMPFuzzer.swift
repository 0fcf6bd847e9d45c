// libFuzzer target for what a STOMP server can send: STOMPDecoder splitting a byte stream
// into frames and heart-beats, STOMPEncoder writing them back, and STOMPProtocol reading a
// hostile server's frames (set-up, heart-beats, messages, receipts, errors).
//
// scripts/fuzz.sh builds JSON, WebSocket and LinkCore as modules and compiles this file
// against them (public API only); see its header comment for the exact commands.
//
// Input layout (Tests/Fuzz/make_seed_corpus.py writes the seeds in it):
//
//   byte 0   bit 0: heart-beats off (HeartBeatMSec=0); bit 1: a frame limit of 256 bytes
//            (else 64 KiB); bits 2-4: how many messages are encoded (sent) before the frames,
//            0-7, so receipts have sends to settle
//   then     frames, each: 1 byte kind (bit 0: binary), 2 bytes length (big endian, cut to
//            what is left), the payload. A text frame that is not UTF-8 is skipped: the
//            WebSocket layer never delivers one.
//
// Oracles (each failure prints what broke, then traps with `precondition`):
//  - the decoder gives the same items, and fails or not alike, whether the stream arrives in
//    one piece or in the input's messages;
//  - every frame decoded, encoded again, decodes to itself;
//  - a record is never lost: while the session is up, every MESSAGE in a WebSocket message
//    becomes one record, its body byte for byte, in order; a stream the decoder refuses
//    ends the session;
//  - a record whose scan says JSON is valid JSON, on one line when it says so; its room is a
//    JSON string or number; its meta a JSON object {"headers": {…}} on one line;
//  - an acknowledgement is one ACK frame, with an id (1.2) or a subscription and message-id;
//  - delivered and failed counts are counts of messages sent, each settled at most once;
//  - the dialect never replies at once; its heartbeat is an EOL or nothing;
//  - storedForm of every encoded message is the message's text.

import Glibc
import JSON
import LinkCore
import WebSocket

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  guard size >= 1 else { return 0 }
  let input = Array(UnsafeBufferPointer(start: data, count: size))
  var messages: [Message] = []
  var index = 1
  while index + 3 <= input.count {
    let binary = input[index] & 1 == 1
    let length = min(Int(input[index + 1]) << 8 | Int(input[index + 2]), input.count - index - 3)
    let payload = Array(input[(index + 3)..<(index + 3 + length)])
    index += 3 + length
    if binary {
      messages.append(.binary(payload))
    } else if UTF8Validator.isValid(payload) {
      messages.append(.text(payload))
    }
  }
  let limit = input[0] & 2 == 2 ? 256 : 65536
  checkDecoder(messages.map(\.bytes), limit: limit)
  var session = Session(flags: input[0], limit: limit)
  for message in messages where !session.ended {
    session.read(message)
  }
  return 0
}

/// The whole stream and the same bytes in pieces decode alike; frames survive re-encoding.
func checkDecoder(_ pieces: [[UInt8]], limit: Int) {
  let whole = decodeAll([pieces.flatMap { $0 }], limit: limit)
  let split = decodeAll(pieces, limit: limit)
  require(
    whole.items == split.items,
    "items differ when split: \(whole.items.count) vs \(split.items.count)")
  require(whole.failed == split.failed, "one failed, the other did not: \(whole.failed)")
  for case .frame(let frame) in whole.items {
    let again = decodeAll([STOMPEncoder.encode(frame)], limit: Int.max)
    require(again.items == [.frame(frame)] && !again.failed, "\(frame.command) does not round-trip")
  }
}

func decodeAll(_ pieces: [[UInt8]], limit: Int) -> (items: [STOMPDecoder.Item], failed: Bool) {
  var decoder = STOMPDecoder(maximumFrameSize: limit)
  var items: [STOMPDecoder.Item] = []
  do {
    for piece in pieces {
      decoder.append(piece)
      while let item = try decoder.next() { items.append(item) }
    }
  } catch {
    require(error.reason.count < 400, "an unbounded reason")
    return (items, true)
  }
  return (items, false)
}

/// The adapter, a decoder in step with it, the messages it sent, and what has been settled.
struct Session {
  var adapter: STOMPProtocol
  var reference: STOMPDecoder
  var sentCounts: Set<UInt64> = []
  var settled: Set<UInt64> = []
  var ended = false

  init(flags: UInt8, limit: Int) {
    var settings = STOMPProtocol.Settings()
    settings.login = "u"
    settings.passcode = "t"
    settings.heartBeat = flags & 1 == 1 ? .zero : .seconds(10)
    settings.maximumFrameSize = limit
    adapter = STOMPProtocol(settings)
    reference = STOMPDecoder(maximumFrameSize: limit)
    _ = adapter.open(
      ClientHandshake.Result(
        response: HTTPResponseHead(status: 101, reason: "", headers: HTTPHeaders()),
        subprotocol: "v12.stomp", deflate: nil))
    _ = adapter.join(RoomID("/topic/chat.7")!)
    _ = adapter.join(RoomID("/queue/ops")!)
    for count in UInt64(1)...UInt64(1 + (flags >> 2) & 7) {
      let entry = OutboxEntry(
        id: "id\(count)", room: RoomID("/queue/q"), text: "m\(count) \"é\"", count: count,
        created: Timestamp(microseconds: 0))
      let frame = adapter.encode(entry)
      require(adapter.storedForm(of: frame) == .text(Array(entry.text.utf8)), "storedForm")
      sentCounts.insert(count)
    }
  }

  mutating func read(_ message: Message) {
    let wasUp = adapter.session != nil
    reference.append(message.bytes)
    var bodies: [[UInt8]] = []
    var refused = false
    do {
      while let item = try reference.next() {
        if case .frame(let frame) = item, frame.command == .message { bodies.append(frame.body) }
      }
    } catch {
      refused = true
    }
    let reading = adapter.read(message)
    switch reading.session {
    case .broken?, .refused?, .ended?, .movedTo?: ended = true
    case .ready?, nil: require(!refused, "a stream the decoder refused did not end the session")
    }
    var records: [InboundMessage] = []
    if let record = reading.record {
      records.append(record)
      checkAcknowledgement(reading.acknowledgement)
    }
    for (record, acknowledgement) in reading.moreRecords {
      records.append(record)
      checkAcknowledgement(acknowledgement)
    }
    if wasUp && reading.session == nil {
      require(records.map(\.payload.bytes) == bodies, "records are not the MESSAGEs' bodies")
    }
    records.forEach(checkRecord)
    require(reading.replies.isEmpty, "a reply")
    for count in reading.delivered + reading.failed.map(\.count) {
      require(sentCounts.contains(count), "settled count \(count) was never sent")
      require(settled.insert(count).inserted, "count \(count) settled twice")
    }
    let beat = adapter.heartbeat()
    require(beat == nil || beat == .text([0x0A]), "a heartbeat that is not an EOL")
  }

  func checkRecord(_ record: InboundMessage) {
    if let room = record.room {
      switch try? JSONValue.parse(room) {
      case .int?, .string?: break
      default: require(false, "room \(hex(room))")
      }
    }
    let meta = (record.meta ?? []).withUnsafeBytes { JSONScanner.scan($0) }
    require(
      meta?.isObject == true && meta?.hasLineBreaks == false, "meta \(hex(record.meta ?? []))")
    require(
      (try? JSONValue.parse(record.meta ?? []))?["headers"]?.objectValue != nil, "meta.headers")
    switch record.scan {
    case .unscanned:
      require(!UTF8Validator.isValid(record.payload.bytes), "UTF-8 stored as binary")
    case .notJSON:
      require(!isJSON(record.payload.bytes), "notJSON but it parses")
    case .json(let hasLineBreaks):
      let bytes = record.payload.bytes
      let scan = bytes.withUnsafeBytes {
        JSONScanner.scan($0, maxDepth: JSONScanner.embeddedMaxDepth)
      }
      require(scan != nil, "a JSON record that does not scan: \(hex(bytes))")
      if !hasLineBreaks { require(scan?.hasLineBreaks == false, "line breaks not reported") }
    }
  }

  func checkAcknowledgement(_ ack: Message?) {
    guard let ack else { return }
    let decoded = decodeAll([ack.bytes], limit: Int.max)
    guard !decoded.failed, decoded.items.count == 1, case .frame(let frame) = decoded.items[0],
      frame.command == .ack
    else { return require(false, "ack \(hex(ack.bytes))") }
    let byID = frame.headers.map(\.name) == ["id"]
    let byMessage = frame.headers.map(\.name) == ["subscription", "message-id"]
    require(byID || byMessage, "ack headers \(frame.headers.map(\.name))")
  }
}

func isJSON(_ bytes: [UInt8]) -> Bool {
  bytes.withUnsafeBytes { JSONScanner.scan($0, maxDepth: JSONScanner.embeddedMaxDepth) != nil }
}
