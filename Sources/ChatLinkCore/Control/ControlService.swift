import ChatLinkAPI
import EventLoop
import Varlink
import WebSocket

/// The methods of io.chatlink.Daemon and org.varlink.service, and the Subscribe event feed.
public final class ControlService {
  private let server: ControlServer
  private let session: BackendSession
  private let store: MessageStore
  private let outbox: Outbox
  private let reader: BackgroundWorker
  private let status: () -> StatusLine
  private let defaultRoom: () -> RoomID?
  private let hasRooms: Bool

  /// Methods anyone who can open the socket may call; the rest need trusted credentials.
  static let readOnlyMethods: Set<String> = [
    "org.varlink.service.GetInfo", "org.varlink.service.GetInterfaceDescription",
    "io.chatlink.Daemon.GetStatus", "io.chatlink.Daemon.ListRooms",
  ]

  /// Creates the service and attaches it to `server`.
  public init(
    server: ControlServer, session: BackendSession, store: MessageStore, outbox: Outbox,
    reader: BackgroundWorker, hasRooms: Bool, status: @escaping () -> StatusLine,
    defaultRoom: @escaping () -> RoomID?
  ) {
    self.server = server
    self.session = session
    self.store = store
    self.outbox = outbox
    self.reader = reader
    self.hasRooms = hasRooms
    self.status = status
    self.defaultRoom = defaultRoom
    server.service = self
  }

  // MARK: Dispatch

  func handle(_ call: VarlinkCall, from connection: ControlConnection) {
    if connection.access == .readOnly && !Self.readOnlyMethods.contains(call.method) {
      connection.reply(VarlinkReply(.permissionDenied), to: call)
      return
    }
    do {
      switch call.method {
      case "org.varlink.service.GetInfo":
        connection.reply(VarlinkReply(parameters: info), to: call)
      case "org.varlink.service.GetInterfaceDescription":
        let name = try Self.string(call, "interface")
        guard let text = Self.descriptions[name] else { throw VarlinkError.interfaceNotFound(name) }
        connection.reply(
          VarlinkReply(parameters: .object(["description": .string(text)])), to: call)
      case "io.chatlink.Daemon.GetStatus":
        connection.reply(VarlinkReply(parameters: .object(["status": statusObject()])), to: call)
      case "io.chatlink.Daemon.Send":
        try send(call, connection)
      case "io.chatlink.Daemon.SendBatch":
        try sendBatch(call, connection)
      case "io.chatlink.Daemon.Join", "io.chatlink.Daemon.Leave":
        guard let target = try room(call, required: true) else { return }
        guard session.hasRooms else {
          throw VarlinkError.invalidParameter(name: "room", reason: "Protocol=raw has no rooms")
        }
        if call.method.hasSuffix(".Join") { session.join(target) } else { session.leave(target) }
        connection.reply(VarlinkReply(), to: call)
      case "io.chatlink.Daemon.ListRooms":
        connection.reply(
          VarlinkReply(
            parameters: .object(["rooms": .array(session.rooms.map { .string($0.name) })])),
          to: call)
      case "io.chatlink.Daemon.History":
        try history(call, connection)
      case "io.chatlink.Daemon.Subscribe":
        guard call.more else {
          throw VarlinkError.invalidParameter(
            name: "more", reason: "Subscribe streams: call it with \"more\": true")
        }
        connection.subscribe(call, room: try room(call, required: false))
        connection.push(
          VarlinkReply(
            parameters: .object(["event": event("status", ["text": .string(status().text)])]),
            continues: true))
      case "io.chatlink.Daemon.Reconnect":
        session.reconnect(reason: "requested over the control socket")
        connection.reply(VarlinkReply(), to: call)
      case "io.chatlink.Daemon.Ping":
        session.ping { [weak connection] result in
          guard let connection, connection.isOpen else { return }
          switch result {
          case .success(let seconds):
            connection.reply(
              VarlinkReply(parameters: .object(["rtt_ms": .double(seconds * 1000)])), to: call)
          case .failure:
            connection.reply(Self.notConnected(self.session.state), to: call)
          }
        }
      default:
        if Self.descriptions[call.interface] == nil {
          throw VarlinkError.interfaceNotFound(call.interface)
        }
        throw VarlinkError.methodNotFound(call.method)
      }
    } catch let error as VarlinkError {
      // Our own methods report bad parameters with our interface's error, which also names the
      // reason; org.varlink.service's InvalidParameter carries the parameter only.
      if case .invalidParameter(let name, let reason) = error,
        call.interface == ChatLinkInterface.name
      {
        connection.reply(
          VarlinkReply(
            .named(
              ChatLinkInterface.Errors.invalidParameter,
              .object(["parameter": .string(name), "reason": .string(reason)]))), to: call)
      } else {
        connection.reply(VarlinkReply(error), to: call)
      }
    } catch {
      connection.reply(
        VarlinkReply(.invalidParameter(name: "parameters", reason: "\(error)")), to: call)
    }
  }

  static let descriptions = [
    "org.varlink.service": ChatLinkInterface.serviceDescription,
    ChatLinkInterface.name: ChatLinkInterface.description,
  ]

  private var info: JSONValue {
    .object([
      "vendor": .string("ChatLink"), "product": .string("chatlinkd"),
      "version": .string(ChatLinkVersion.current),
      "url": .string("https://github.com/chatlink/chatlink"),
      "interfaces": .array([.string("org.varlink.service"), .string(ChatLinkInterface.name)]),
    ])
  }

  func statusObject() -> JSONValue {
    let line = status()
    var retry: JSONValue?
    if case .waiting(let seconds) = session.state { retry = .double(seconds) }
    return .object([
      "state": .string(session.state.name), "text": .string(line.text),
      "url": .string(session.displayURL),
      "rooms": .array(session.rooms.map { .string($0.name) }),
      "subprotocol": session.negotiated?.subprotocol.map(JSONValue.string),
      "extensions": session.negotiated?.deflate.map { .string($0.description) },
      "retry_in": retry, "last_error": session.lastError.map(JSONValue.string),
      "store_error": store.failure.map { .string($0.message) },
      "received": .int(Int64(session.counters.received)),
      "sent": .int(Int64(session.counters.sent)),
      "confirmed": .int(Int64(session.counters.confirmed)),
      "connects": .int(Int64(session.counters.connects)),
      "outbox": .int(Int64(outbox.pending.count)), "last_seq": .int(Int64(store.lastSeq)),
      "durable_seq": .int(Int64(store.durableSeq)), "store_path": .string(store.path),
      "version": .string(ChatLinkVersion.current),
    ])
  }

  // MARK: Methods

  private func send(_ call: VarlinkCall, _ connection: ControlConnection) throws {
    // The request limit (64 KiB) bounds the text; an empty message is refused.
    let text = try Self.string(call, "text")
    guard !text.isEmpty else {
      throw VarlinkError.invalidParameter(name: "text", reason: "is empty")
    }
    let id = try Self.optionalString(call, "id")
    let target = try sendTarget(call)
    outbox.enqueue(room: target, text: text, id: id) { [weak connection] result in
      guard let connection, connection.isOpen else { return }
      switch result {
      case .success(let entry):
        if call.more { connection.watchSend(entry.id, call: call) }
        // `chatlinkctl send -` streams these by the hundred thousand: written straight to
        // bytes, the same JSON `receipt` builds.
        connection.send(
          Self.encodedReceipt(entry, state: "queued", continues: call.more), to: call,
          final: !call.more)
      case .failure(let error):
        connection.reply(VarlinkReply(Self.varlinkError(error)), to: call)
      }
    }
  }

  /// Send's and SendBatch's room (the default room when none is given), once the store is
  /// known to be writable.
  private func sendTarget(_ call: VarlinkCall) throws(VarlinkError) -> RoomID? {
    var target = try room(call, required: false)
    if hasRooms && target == nil { target = defaultRoom() }
    if hasRooms && target == nil {
      throw .invalidParameter(name: "room", reason: "no room given and no Rooms= configured")
    }
    if !hasRooms && target != nil {
      throw .invalidParameter(name: "room", reason: "Protocol=raw has no rooms")
    }
    if let failure = store.failure {
      // The outbox shares the disk: refuse clearly instead of accepting what cannot be kept.
      throw .named(
        ChatLinkInterface.Errors.storageFailed,
        .object(["reason": .string("the store cannot write: \(failure.message)")]))
    }
    return target
  }

  /// The most texts one SendBatch call may carry.
  static let batchLimit = 10_000

  private func sendBatch(_ call: VarlinkCall, _ connection: ControlConnection) throws {
    guard case .array(let values) = call.parameters["texts"] ?? .null else {
      throw VarlinkError.invalidParameter(name: "texts", reason: "must be an array of strings")
    }
    guard (1...Self.batchLimit).contains(values.count) else {
      throw VarlinkError.invalidParameter(
        name: "texts", reason: "must hold from 1 to \(Self.batchLimit) messages")
    }
    var texts: [String] = []
    texts.reserveCapacity(values.count)
    for (index, value) in values.enumerated() {
      // All or none: one bad text refuses the whole call, so nothing is half sent.
      guard case .string(let text) = value, !text.isEmpty else {
        throw VarlinkError.invalidParameter(
          name: "texts",
          reason: "message \(index) is \(value.stringValue == nil ? "not a string" : "empty")")
      }
      texts.append(text)
    }
    let target = try sendTarget(call)
    outbox.enqueue(room: target, texts: texts) { [weak connection] result in
      guard let connection, connection.isOpen else { return }
      switch result {
      case .success(let entries):
        connection.send(Self.encodedBatchReceipt(entries), to: call, final: true)
      case .failure(let error):
        connection.reply(VarlinkReply(Self.varlinkError(error)), to: call)
      }
    }
  }

  private func history(_ call: VarlinkCall, _ connection: ControlConnection) throws {
    var query = HistoryQuery(room: try room(call, required: false))
    if let since = call.parameters["since_seq"], !since.isNull {
      guard let value = since.intValue, value >= 0 else {
        throw VarlinkError.invalidParameter(
          name: "since_seq", reason: "must be a non-negative integer")
      }
      query.sinceSeq = UInt64(value)
    }
    if let since = try Self.optionalString(call, "since_time") {
      guard let time = Timestamp(rfc3339: since) else {
        throw VarlinkError.invalidParameter(name: "since_time", reason: "must be an RFC 3339 time")
      }
      query.sinceTime = time
    }
    if let limit = call.parameters["limit"], !limit.isNull {
      guard let value = limit.intValue, (1...10_000).contains(value) else {
        throw VarlinkError.invalidParameter(name: "limit", reason: "must be from 1 to 10000")
      }
      query.limit = Int(value)
    }
    let paths = (0..<store.options.maxFiles).map { $0 == 0 ? store.path : "\(store.path).\($0)" }
    let frozen = query
    let indexDirectory = store.options.directory + "/" + RoomIndex.directoryName
    reader.submit(
      { HistoryReader.read(paths: paths, query: frozen, indexDirectory: indexDirectory) },
      completion: { [weak connection] result in
        guard let connection, connection.isOpen else { return }
        switch result {
        case .success(let lines):
          let records = lines.compactMap { try? JSONValue.parse($0) }
          connection.reply(
            VarlinkReply(parameters: .object(["records": .array(records)])), to: call)
        case .failure(let error):
          connection.reply(
            VarlinkReply(
              .named(
                ChatLinkInterface.Errors.storageFailed,
                .object(["reason": .string(error.description)]))),
            to: call)
        }
      })
  }

  // MARK: Events

  /// A stored inbound message, for subscribers.
  public func publishMessage(_ record: StoreRecord, scan: JSONScanner.Result??, room: RoomID?) {
    guard hasSubscribers else { return }
    var line: [UInt8] = []
    record.appendLine(to: &line, scan: scan)
    line.removeLast()
    let value = (try? JSONValue.parse(line)) ?? .null
    publish(event("message", ["record": value, "room": room.map { .string($0.name) }]), room: room)
  }

  /// Entries written to the backend.
  public func publishSent(_ entry: OutboxEntry) {
    notifySend(entry, state: "sent")
    guard hasSubscribers else { return }
    publish(
      event("sent", ["id": .string(entry.id), "room": entry.room.map { .string($0.name) }]),
      room: entry.room)
  }

  /// Entries the backend confirmed.
  public func publishConfirmed(_ entries: [OutboxEntry]) {
    for entry in entries {
      notifySend(entry, state: "confirmed")
      if hasSubscribers {
        publish(
          event(
            "confirmed", ["id": .string(entry.id), "room": entry.room.map { .string($0.name) }]),
          room: entry.room)
      }
    }
  }

  /// A connection opened.
  public func publishConnected(_ result: ClientHandshake.Result?) {
    publish(
      event(
        "connected",
        [
          "subprotocol": result?.subprotocol.map(JSONValue.string),
          "extensions": result?.deflate.map { .string($0.description) },
        ]),
      room: nil)
  }

  /// A connection ended.
  public func publishDisconnected(reason: String, code: Int?) {
    publish(
      event("disconnected", ["reason": .string(reason), "code": code.map { .int(Int64($0)) }]),
      room: nil)
  }

  /// A problem (store failure, connection error).
  public func publishError(_ text: String) {
    publish(event("error", ["text": .string(text)]), room: nil)
  }

  /// The status line changed.
  public func publishStatus(_ text: String) {
    publish(event("status", ["text": .string(text)]), room: nil)
  }

  /// Whether any client has a Subscribe stream open.
  public var hasSubscribers: Bool {
    server.all.contains { $0.subscription != nil }
  }

  private func publish(_ event: JSONValue, room: RoomID?) {
    let reply = VarlinkReply(parameters: .object(["event": event]), continues: true)
    for connection in server.all {
      guard case .some(let filter) = connection.subscription else { continue }
      // A room filter passes events of that room, and events about no room (connection).
      if let filter, let room, filter != room { continue }
      connection.push(reply)
    }
  }

  private func notifySend(_ entry: OutboxEntry, state: String) {
    // Streamed sends are not watched: no lookup per message then.
    guard server.watchedSendCount > 0 else { return }
    for connection in server.all where connection.watchedSends[entry.id] != nil {
      let final = state == "confirmed"
      connection.pushReceipt(
        VarlinkReply(parameters: Self.receipt(entry, state: state), continues: !final),
        id: entry.id)
    }
  }

  private func event(_ name: String, _ fields: KeyValuePairs<String, JSONValue?>) -> JSONValue {
    var members: [(key: String, value: JSONValue)] = [
      ("event", .string(name)), ("time", .string(Timestamp.now().rfc3339)),
    ]
    for (key, value) in fields { if let value { members.append((key, value)) } }
    return .object(members)
  }

  // MARK: Parameters

  static func receipt(_ entry: OutboxEntry, state: String) -> JSONValue {
    .object(["id": .string(entry.id), "state": .string(state), "count": .int(Int64(entry.count))])
  }

  /// The reply carrying `receipt(entry, state:)`, NUL included.
  static func encodedReceipt(_ entry: OutboxEntry, state: StaticString, continues: Bool)
    -> [UInt8]
  {
    var out: [UInt8] = []
    out.reserveCapacity(80 + entry.id.utf8.count)
    out.append(#"{"parameters":{"id":"# as StaticString)
    out.appendJSONString(entry.id)
    out.append(#","state":""# as StaticString)
    out.append(state)
    out.append(#"","count":"# as StaticString)
    out.appendDecimal(entry.count)
    out.append(continues ? #"},"continues":true}"# as StaticString : "}}" as StaticString)
    out.append(0)
    return out
  }

  /// SendBatch's reply, `{"ids":[…],"count":first,"state":"queued"}`, written straight to
  /// bytes: the entries' counts are consecutive, so the first one says them all.
  static func encodedBatchReceipt(_ entries: ArraySlice<OutboxEntry>) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(64 + entries.count * 19)
    out.append(#"{"parameters":{"ids":["# as StaticString)
    for (offset, entry) in entries.enumerated() {
      if offset > 0 { out.append(UInt8(ascii: ",")) }
      out.appendJSONString(entry.id)
    }
    out.append(#"],"count":"# as StaticString)
    out.appendDecimal(entries.first?.count ?? 0)
    out.append(#","state":"queued"}}"# as StaticString)
    out.append(0)
    return out
  }

  private static func string(_ call: VarlinkCall, _ name: String) throws(VarlinkError) -> String {
    guard let value = try optionalString(call, name) else {
      throw .invalidParameter(name: name, reason: "is required")
    }
    return value
  }

  private static func optionalString(_ call: VarlinkCall, _ name: String) throws(VarlinkError)
    -> String?
  {
    guard let value = call.parameters[name], !value.isNull else { return nil }
    guard let string = value.stringValue else {
      throw .invalidParameter(name: name, reason: "must be a string")
    }
    return string
  }

  private func room(_ call: VarlinkCall, required: Bool) throws(VarlinkError) -> RoomID? {
    guard let value = call.parameters["room"], !value.isNull else {
      if required { throw .invalidParameter(name: "room", reason: "is required") }
      return nil
    }
    // Accept a number too: backends number their rooms, and people type them that way.
    let text: String
    switch value {
    case .string(let s): text = s
    case .int(let i): text = String(i)
    default: throw .invalidParameter(name: "room", reason: "must be a string")
    }
    guard let room = RoomID(text) else {
      throw .invalidParameter(name: "room", reason: "invalid room name")
    }
    return room
  }

  static func notConnected(_ state: ConnectionState) -> VarlinkReply {
    VarlinkReply(
      .named(ChatLinkInterface.Errors.notConnected, .object(["state": .string(state.name)])))
  }

  static func varlinkError(_ error: OutboxError) -> VarlinkError {
    switch error {
    case .full(let limit):
      .named(ChatLinkInterface.Errors.outboxFull, .object(["limit": .int(Int64(limit))]))
    case .invalidID(let id):
      .invalidParameter(name: "id", reason: OutboxError.invalidID(id).description)
    case .invalidRoom(let room): .invalidParameter(name: "room", reason: "invalid room '\(room)'")
    case .storageFailed(let e):
      .named(ChatLinkInterface.Errors.storageFailed, .object(["reason": .string(e.message)]))
    }
  }
}
