import JSON
import WebSocket

/// What the server sends: frames out of text or binary messages, and what each one means.
extension STOMPProtocol {
  public mutating func read(_ message: Message) -> ProtocolReading {
    var reading = ProtocolReading()
    decoder.append(message.bytes)
    do {
      while let item = try decoder.next() {
        guard case .frame(let frame) = item else { continue }
        handle(frame, into: &reading)
        if reading.session != nil && reading.session != .ready { break }
      }
    } catch {
      reading.session = .broken(error.description)
    }
    // Any data proves the server alive, heart-beat or not (STOMP 1.2 "Heart-beating").
    if connected, let limit = serverSilenceLimit { reading.peerHeartbeat = limit }
    return reading
  }

  private mutating func handle(_ frame: STOMPFrame, into reading: inout ProtocolReading) {
    switch frame.command {
    case .connected:
      accepted(frame, into: &reading)
    case .message:
      guard connected else {
        reading.session = .broken("a MESSAGE before CONNECTED")
        return
      }
      received(frame, into: &reading)
    case .receipt:
      receipt(frame, into: &reading)
    case .error:
      failed(frame, into: &reading)
    default:
      reading.problem = "a \(frame.command.rawValue) frame, which only clients send"
    }
  }

  /// CONNECTED: the version and the heart-beats; the session is ready.
  private mutating func accepted(_ frame: STOMPFrame, into reading: inout ProtocolReading) {
    guard !connected else {
      reading.problem = "a second CONNECTED"
      return
    }
    // A 1.0 server names no version: it would not know client-individual acks or heart-beats.
    let version = frame["version"] ?? "1.0"
    guard version == "1.2" || version == "1.1" else {
      reading.session = .refused(
        "the server speaks STOMP \(STOMPFrame.printable(version)), not 1.2 or 1.1")
      return
    }
    self.version = version
    connected = true
    sessionID = frame["session"]
    let ours = heartBeatMilliseconds
    var server: (send: Int64, want: Int64) = (0, 0)
    if let header = frame["heart-beat"] {
      if let parsed = Self.heartBeat(header) {
        server = parsed
      } else {
        reading.problem = "a heart-beat header that is not two numbers: '\(header)'"
      }
    }
    // STOMP 1.2 "Heart-beating": each side beats at the larger of what one offers and the
    // other wants; zero on either side means none that way.
    if server.send > 0 && ours > 0 {
      let interval = Duration.milliseconds(max(server.send, ours))
      serverSilenceLimit = interval * Self.serverIntervalsAllowed
    }
    beatsWanted = server.want > 0 && ours > 0
    reading.session = .ready
  }

  /// "sx,sy" in milliseconds.
  static func heartBeat(_ header: String) -> (send: Int64, want: Int64)? {
    let parts = header.split(separator: ",", omittingEmptySubsequences: false)
    guard parts.count == 2,
      let send = Int64(parts[0].trimmingBlanks), let want = Int64(parts[1].trimmingBlanks),
      send >= 0, want >= 0, send <= 86_400_000, want <= 86_400_000
    else { return nil }
    return (send, want)
  }

  /// An inbound message: its record, ACKed once durable.
  private mutating func received(_ frame: STOMPFrame, into reading: inout ProtocolReading) {
    var record = Self.record(frame)
    if !settings.idHeader.isEmpty {
      record.id = Self.messageID(in: record.meta, header: idHeaderKey)
    }
    let acknowledgement = acknowledgement(of: frame)
    if acknowledgement == nil {
      reading.problem = "a MESSAGE without an ack or message-id header, which cannot be ACKed"
    }
    if reading.record == nil {
      reading.record = record
      reading.acknowledgement = acknowledgement
    } else {
      reading.moreRecords.append((record, acknowledgement))
    }
  }

  /// The ACK of a message: by its ack header (1.2), or by subscription and message-id (1.1).
  private func acknowledgement(of frame: STOMPFrame) -> Message? {
    if version == "1.1" {
      guard let subscription = frame["subscription"], let id = frame["message-id"] else {
        return nil
      }
      return self.frame(
        STOMPFrame(
          .ack, [STOMPHeader("subscription", subscription), STOMPHeader("message-id", id)]))
    }
    guard let id = frame["ack"] ?? frame["message-id"] else { return nil }
    return self.frame(STOMPFrame(.ack, [STOMPHeader("id", id)]))
  }

  /// A RECEIPT: one of our sends arrived, or a subscription is in place.
  private mutating func receipt(_ frame: STOMPFrame, into reading: inout ProtocolReading) {
    guard let id = frame["receipt-id"] else {
      reading.problem = "a RECEIPT without a receipt-id"
      return
    }
    switch takeAwaited(id) {
    case .send(let count)?: reading.delivered.append(count)
    case .subscription?: break
    case nil:
      if !id.hasPrefix(Self.subscriptionPrefix) {
        reading.problem = "a RECEIPT for '\(STOMPFrame.printable(id))', which nothing waits for"
      }
    }
  }

  /// Takes what waits for receipt `id` (or, for nil, the oldest that waits). Receipts come in
  /// order, so the search ends at the front but for a frame the server refused.
  private mutating func takeAwaited(_ id: String?) -> AwaitedReceipt? {
    let elements = awaiting.elements
    let index: Int?
    if let id {
      index = elements.firstIndex { $0.receipt == id }
    } else {
      index = elements.indices.first
    }
    return index.map { awaiting.remove(at: $0) }
  }

  /// An ERROR: a refused set-up, a refused send or subscription, or the end of the session.
  private mutating func failed(_ frame: STOMPFrame, into reading: inout ProtocolReading) {
    let text = frame.errorText
    guard connected else {
      reading.session = .refused(Self.refusal(text))
      return
    }
    switch takeAwaited(frame["receipt-id"]) {
    case .send(let count)?:
      reading.failed.append(DeliveryFailure(count: count, reason: text))
    case .subscription(let id, let room)?:
      if subscriptions[room] == id { subscriptions[room] = nil }
      reading.problem = "the STOMP server refused the subscription to '\(room)': \(text)"
    case nil:
      // The server closes the connection after an ERROR; ending it here keeps the text (for
      // status and the backoff) instead of a bare close.
      reading.session = .broken("the STOMP server sent an ERROR: \(text)")
    }
  }

  /// A refused CONNECT as the operator should read it.
  static func refusal(_ text: String) -> String {
    let lowered = text.lowercased()
    let credentials = ["access refused", "login", "passcode", "password", "credential", "auth"]
    let hint =
      credentials.contains { lowered.contains($0) }
      ? "; check [STOMP] Username= and TokenFile=" : ""
    return "the STOMP server refused the connection: \(text)\(hint)"
  }

  /// The record of an inbound message: the destination as the room, the body as it came,
  /// the other headers as `meta`.
  static func record(_ frame: STOMPFrame) -> InboundMessage {
    var room: [UInt8]?
    if let destination = frame["destination"] {
      // As a send's room is written (`RoomID`), so a destination "7" is the same room both ways.
      var json = RoomID(destination)?.json ?? []
      if json.isEmpty { JSONString.append(destination, to: &json) }
      room = json
    }
    var record: InboundMessage
    let body = frame.body
    if UTF8Validator.isValid(body) {
      let scan = body.withUnsafeBytes {
        JSONScanner.scan($0, knownUTF8: true, maxDepth: JSONScanner.embeddedMaxDepth)
      }
      record = InboundMessage(payload: .text(body), scan: PayloadScan(scan), room: room)
    } else {
      record = InboundMessage(payload: .binary(body), scan: .unscanned, room: room)
    }
    record.meta = meta(frame)
    return record
  }

  /// Where the id header's value is in the record's meta (`{"headers":{NAME:"…"}}`), or nil
  /// when the frame has none or an empty one.
  static func messageID(in meta: [UInt8]?, header: JSONScanner.Keys) -> MessageIDText? {
    meta?.withUnsafeBytes { raw in
      guard
        let scan = JSONScanner.scan(
          raw, topLevel: headersKey, nestedIn: 0, nested: header, knownUTF8: true)
      else { return nil }
      return MessageID.location(raw, scan.nested[0], in: .meta)
    }
  }

  private static let headersKey = JSONScanner.Keys(["headers"])

  /// `{"headers":{"message-id":"…","subscription":"sub-1",…}}`: every header but destination
  /// (the room) and content-length (the body's), the first of each name.
  static func meta(_ frame: STOMPFrame) -> [UInt8] {
    var seen: Set<String> = ["destination", "content-length"]
    var members: [(key: String, value: JSONValue)] = []
    for header in frame.headers where seen.insert(header.name).inserted {
      members.append((header.name, .string(header.value)))
    }
    let meta: [(key: String, value: JSONValue)] = [("headers", .object(members))]
    return JSONValue.object(meta).bytes
  }
}

extension Substring {
  /// Without spaces and tabs around it.
  fileprivate var trimmingBlanks: Substring {
    let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
    guard let first = firstIndex(where: { !blank($0) }) else { return "" }
    let last = lastIndex(where: { !blank($0) }) ?? first
    return self[first...last]
  }
}
