import JSON
import WebSocket

/// Socket.IO 5 over Engine.IO 4 on a WebSocket (`Protocol=socketio`).
///
/// - Set-up: the server's open packet (`0{…}`) gives the heartbeat and `maxPayload`; the
///   adapter answers with the namespace connect (`40` + namespace + the auth object), and the
///   server's `40{"sid":…}` makes the session ready. `44{…}` (a connect error) and `41` (the
///   server disconnected the namespace) are refusals.
/// - Heartbeat: the server pings (`2`), answered at once (`3`); without a ping within
///   pingInterval + pingTimeout the server is dead.
/// - Rooms: `42<id>["join-room",{"room_id":7}]` after every namespace connect, with an ack id
///   so a refusal is seen; leaving likewise.
/// - Sends: `42<id>["send-message",{…}]`; the server's `43<id>[…]` confirms the message, or
///   fails it when its first argument is an object with a non-null `error`.
/// - Inbound: every event is stored as `{"event":"<name>","args":[…]}`, binary attachments
///   base64 inside their placeholders; an ack the server asks for is sent once the record is
///   durable.
public struct SocketIOProtocol: BackendProtocol {
  /// What `SocketIOProtocol` is configured with ([SocketIO] and [Envelope] in chatlinkd.conf).
  public struct Settings: Sendable, Hashable {
    /// The namespace to connect to, `/` by default.
    public var namespace = "/"
    /// The auth object sent with the namespace connect, as JSON text.
    public var auth: [UInt8] = Array("{}".utf8)
    /// Event and field names (the [Envelope] section's).
    public var names = EnvelopeNames()
    /// The sender name put on outgoing messages.
    public var sender = "chatlink"

    /// Creates the defaults.
    public init() {}
  }

  /// What an ack id was asked for.
  enum Awaited: Sendable, Hashable {
    case send(count: UInt64)
    case join(RoomID)
    case leave(RoomID)
  }

  let settings: Settings
  let fields: MessageFields
  /// The namespace as it prefixes packets (`/admin,`), empty for the main namespace.
  let namespacePrefix: [UInt8]
  let roomKeys: JSONScanner.Keys
  let errorKeys = JSONScanner.Keys(["error"])
  let sendEventName: [UInt8]

  /// The namespace's sid, once connected.
  private(set) var sid: String?
  /// pingInterval + pingTimeout from the open packet.
  private(set) var heartbeatLimit: Duration?
  /// maxPayload from the open packet.
  private(set) var maxPayload: Int?
  private var nextAckID: UInt64 = 0
  var awaited: [UInt64: Awaited] = [:]
  /// A binary event or ack waiting for its attachments.
  var partial: PartialBinaryPacket?

  /// Creates the adapter.
  public init(_ settings: Settings) {
    self.settings = settings
    fields = MessageFields(names: settings.names, sender: settings.sender)
    namespacePrefix =
      settings.namespace == "/" || settings.namespace.isEmpty
      ? [] : Array(settings.namespace.utf8) + [UInt8(ascii: ",")]
    roomKeys = JSONScanner.Keys(
      [settings.names.roomField]
        + (settings.names.idField.isEmpty ? [] : [settings.names.idField]))
    var name: [UInt8] = []
    JSONString.append(settings.names.sendEvent, to: &name)
    sendEventName = name
  }

  public var hasRooms: Bool { true }
  public var confirmsByPong: Bool { false }
  public var framesAreSingleLineJSON: Bool { true }
  public var maxFrameSize: Int? { maxPayload }

  public var session: ProtocolSession? {
    sid.map { ProtocolSession(id: $0, namespace: settings.namespace) }
  }

  public mutating func open(_ handshake: ClientHandshake.Result) -> ProtocolOpening {
    sid = nil
    heartbeatLimit = nil
    maxPayload = nil
    nextAckID = 0
    awaited = [:]
    partial = nil
    // The server speaks first: its open packet, then our namespace connect.
    return ProtocolOpening(frames: [], ready: false)
  }

  public mutating func join(_ room: RoomID) -> Message? {
    event(settings.names.joinEvent, room, awaiting: .join(room))
  }

  public var joinsAfterStoredID: Bool { !settings.names.sinceField.isEmpty }

  public mutating func join(_ room: RoomID, after position: RoomPosition?) -> Message? {
    guard let lastID = position?.id, !settings.names.sinceField.isEmpty else { return join(room) }
    var out = header(.join(room))
    out.append(UInt8(ascii: "["))
    JSONString.append(settings.names.joinEvent, to: &out)
    out.append(UInt8(ascii: ","))
    fields.appendRoom(room, to: &out)
    out.removeLast()
    out.append(UInt8(ascii: ","))
    JSONString.append(settings.names.sinceField, to: &out)
    out.append(UInt8(ascii: ":"))
    MessageID.appendJSON(lastID, to: &out)
    out.append(contentsOf: "}]".utf8)
    return .text(out)
  }

  public mutating func leave(_ room: RoomID) -> Message? {
    event(settings.names.leaveEvent, room, awaiting: .leave(room))
  }

  private mutating func event(_ name: String, _ room: RoomID, awaiting: Awaited) -> Message {
    var out = header(awaiting)
    out.append(UInt8(ascii: "["))
    JSONString.append(name, to: &out)
    out.append(UInt8(ascii: ","))
    fields.appendRoom(room, to: &out)
    out.append(UInt8(ascii: "]"))
    return .text(out)
  }

  public mutating func encode(_ entry: OutboxEntry) -> Message {
    var out = header(.send(count: entry.count), capacity: fields.estimatedSize(entry) + 64)
    out.append(UInt8(ascii: "["))
    out += sendEventName
    out.append(UInt8(ascii: ","))
    fields.append(entry, to: &out)
    out.append(UInt8(ascii: "]"))
    return .text(out)
  }

  /// `42` + the namespace + a new ack id, remembered as `awaiting`.
  private mutating func header(_ awaiting: Awaited, capacity: Int = 64) -> [UInt8] {
    nextAckID += 1
    awaited[nextAckID] = awaiting
    var out: [UInt8] = []
    out.reserveCapacity(capacity)
    out.append("42" as StaticString)
    out += namespacePrefix
    out.appendDecimal(nextAckID)
    return out
  }

  /// A server may hang up instead of answering the namespace connect (a middleware that
  /// rejects the handshake).
  public func refusal(closedDuringSetUp info: CloseInfo) -> String {
    "the Socket.IO server closed the connection before the namespace connect (\(info)); "
      + "check [SocketIO] Namespace=, Auth= and TokenFile="
  }

  /// `{"event":"send-message","args":[{…}]}` from `42<id>["send-message",{…}]`.
  public func storedForm(of frame: Message) -> Message {
    guard case .text(let bytes) = frame,
      let open = bytes.firstIndex(of: UInt8(ascii: "[")),
      bytes.count >= open + sendEventName.count + 3
    else { return frame }
    let dataStart = open + 1 + sendEventName.count + 1
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count + 16)
    out.append(#"{"event":"# as StaticString)
    out += sendEventName
    out.append(#","args":["# as StaticString)
    out += bytes[dataStart..<(bytes.count - 1)]
    out.append("]}" as StaticString)
    return .text(out)
  }

  public mutating func read(_ message: Message) -> ProtocolReading {
    switch message {
    case .binary(let bytes): return attachment(bytes, message)
    case .text(let bytes): return bytes.withUnsafeBytes { text($0, message) }
    }
  }

  private mutating func text(_ raw: UnsafeRawBufferPointer, _ message: Message) -> ProtocolReading {
    guard let packet = EngineIOPacket.parse(raw) else {
      return Self.unreadable(message, raw, "a text frame that is not an Engine.IO packet")
    }
    switch packet {
    case .open(let range): return opened(UnsafeRawBufferPointer(rebasing: raw[range]))
    case .ping:
      var reading = ProtocolReading(record: nil, replies: [.text([UInt8(ascii: "3")])])
      reading.peerHeartbeat = heartbeatLimit
      return reading
    case .pong, .noop, .upgrade:
      return ProtocolReading(record: nil)
    case .close:
      var reading = ProtocolReading(record: nil)
      reading.problem = "the Socket.IO server closed the Engine.IO session"
      return reading
    case .message(let range):
      if partial != nil {
        partial = nil
        var reading = socketIO(raw, range, message)
        reading.problem = "a binary packet's attachments were cut short by a text frame"
        return reading
      }
      return socketIO(raw, range, message)
    }
  }

  /// The open packet: the heartbeat and size limit, and our namespace connect.
  private mutating func opened(_ json: UnsafeRawBufferPointer) -> ProtocolReading {
    guard let value = try? JSONValue.parse(json),
      let interval = value["pingInterval"]?.intValue, interval > 0,
      let timeout = value["pingTimeout"]?.intValue, timeout > 0
    else {
      return ProtocolReading(
        record: nil, session: .refused("the Socket.IO server's open packet did not parse"))
    }
    heartbeatLimit = .milliseconds(interval) + .milliseconds(timeout)
    if let limit = value["maxPayload"]?.intValue, limit > 0 { maxPayload = Int(limit) }
    var connect: [UInt8] = Array("40".utf8)
    if !namespacePrefix.isEmpty { connect += namespacePrefix }
    connect += settings.auth
    var reading = ProtocolReading(record: nil, replies: [.text(connect)])
    reading.peerHeartbeat = heartbeatLimit
    return reading
  }

  private mutating func socketIO(
    _ raw: UnsafeRawBufferPointer, _ range: Range<Int>, _ message: Message
  ) -> ProtocolReading {
    let packet: SocketIOPacket
    do {
      packet = try SocketIOPacket.parse(raw, in: range)
    } catch {
      return Self.unreadable(message, raw, error.description)
    }
    let data = UnsafeRawBufferPointer(rebasing: raw[packet.data])
    switch packet.kind {
    case .connect:
      guard isOurs(packet, raw) else { return ProtocolReading(record: nil) }
      let value = try? JSONValue.parse(data)
      sid = value?["sid"]?.stringValue ?? ""
      return ProtocolReading(record: nil, session: .ready)
    case .connectError:
      guard isOurs(packet, raw) else { return ProtocolReading(record: nil) }
      return ProtocolReading(record: nil, session: .refused(Self.refusal(data)))
    case .disconnect:
      guard isOurs(packet, raw) else { return ProtocolReading(record: nil) }
      sid = nil
      return ProtocolReading(
        record: nil,
        session: .refused("the Socket.IO server disconnected namespace \(settings.namespace)"))
    case .event:
      return event(data, ackID: packet.ackID, prefix: Self.prefix(packet, raw), message, raw)
    case .ack:
      return acknowledged(packet.ackID, data)
    case .binaryEvent, .binaryAck:
      partial = PartialBinaryPacket(
        header: message.bytes, kind: packet.kind, ackID: packet.ackID,
        prefix: Self.prefix(packet, raw), data: Array(data), needed: packet.attachments)
      return partial?.isComplete == true ? finishBinary() : ProtocolReading(record: nil)
    }
  }

  /// Whether a connect, connect error or disconnect is for our namespace.
  private func isOurs(_ packet: SocketIOPacket, _ raw: UnsafeRawBufferPointer) -> Bool {
    guard let range = packet.namespace else { return namespacePrefix.isEmpty }
    let name = raw[range]
    return name.elementsEqual(settings.namespace.utf8)
      || (namespacePrefix.isEmpty && name.elementsEqual("/".utf8))
  }

  /// The text of a connect error: its `message`, else the data as sent.
  static func refusal(_ data: UnsafeRawBufferPointer) -> String {
    let value = try? JSONValue.parse(data)
    let text =
      value?["message"]?.stringValue ?? value?.stringValue
      ?? (data.isEmpty ? "no reason given" : String(decoding: data.prefix(200), as: UTF8.self))
    return "the Socket.IO server refused the connection: \(text)"
  }

  /// An event: the record, and the ack the server asked for once it is durable.
  private func event(
    _ data: UnsafeRawBufferPointer, ackID: UInt64?, prefix: [UInt8], _ message: Message,
    _ raw: UnsafeRawBufferPointer
  ) -> ProtocolReading {
    guard let record = eventRecord(data) else {
      return Self.unreadable(message, raw, "an event whose data is not [\"name\", …]")
    }
    var reading = ProtocolReading(record: record)
    if let ackID { reading.acknowledgement = Self.acknowledgement(ackID, prefix: prefix) }
    if !settings.names.sinceField.isEmpty, Self.isEvent(data, named: settings.names.truncatedEvent)
    {
      reading.historyGap = record.room.map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }
    return reading
  }

  /// The packet's namespace as a prefix (`/chat,`), empty for the main namespace.
  static func prefix(_ packet: SocketIOPacket, _ raw: UnsafeRawBufferPointer) -> [UInt8] {
    guard let range = packet.namespace, !raw[range].elementsEqual("/".utf8) else { return [] }
    return Array(raw[range]) + [UInt8(ascii: ",")]
  }

  /// A frame that is not a packet we understand: stored as it came (lossless), with a note.
  static func unreadable(
    _ message: Message, _ raw: UnsafeRawBufferPointer, _ problem: String
  ) -> ProtocolReading {
    let scan = JSONScanner.scan(raw, knownUTF8: true, maxDepth: JSONScanner.embeddedMaxDepth)
    var reading = ProtocolReading(record: InboundMessage(payload: message, scan: PayloadScan(scan)))
    reading.problem = problem
    return reading
  }
}

extension SocketIOProtocol {
  /// The Engine.IO endpoint for a configured URL: the path `/socket.io/` when it is `/` or
  /// empty, and `EIO=4&transport=websocket` added to the query (the user's own parameters
  /// kept, in order; an `EIO` or `transport` of theirs replaced).
  public static func endpoint(for url: WebSocketURL) -> WebSocketURL {
    var endpoint = url
    let parts = url.resource.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
    let path = parts.first.map(String.init) ?? ""
    var parameters =
      parts.count > 1
      ? parts[1].split(separator: "&").map(String.init).filter {
        !$0.hasPrefix("EIO=") && !$0.hasPrefix("transport=")
      } : []
    parameters += ["EIO=4", "transport=websocket"]
    endpoint.resource =
      (path.isEmpty || path == "/" ? "/socket.io/" : path) + "?"
      + parameters.joined(separator: "&")
    return endpoint
  }

  /// The auth object sent with the namespace connect: `auth` (a JSON object) with the token
  /// as its `"token"` member when there is one.
  public static func authPayload(_ auth: JSONValue, token: String?) -> [UInt8] {
    var members = auth.objectValue ?? []
    if let token {
      members.removeAll { $0.key == "token" }
      members.append(("token", .string(token)))
    }
    return JSONValue.object(members).bytes
  }
}
