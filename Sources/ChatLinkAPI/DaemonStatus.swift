import JSON

/// Where the backend connection is: `idle`, `connecting`, `tls`, `upgrading`, `open`,
/// `closing` or `waiting`.
///
/// A string on the wire, and open-ended here: a client reads a state a newer daemon adds
/// rather than failing on it.
public struct DaemonState: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
  /// The name on the wire.
  public var rawValue: String

  /// A state by its wire name.
  public init(rawValue: String) {
    self.rawValue = rawValue
  }

  /// Not started, or stopped.
  public static let idle = DaemonState(rawValue: "idle")
  /// Resolving the host name and opening TCP.
  public static let connecting = DaemonState(rawValue: "connecting")
  /// Negotiating TLS.
  public static let tls = DaemonState(rawValue: "tls")
  /// Sent the upgrade request; waiting for 101.
  public static let upgrading = DaemonState(rawValue: "upgrading")
  /// Messages flow.
  public static let open = DaemonState(rawValue: "open")
  /// Closing handshake under way.
  public static let closing = DaemonState(rawValue: "closing")
  /// Waiting before the next attempt (`DaemonStatus.retryIn` says how long).
  public static let waiting = DaemonState(rawValue: "waiting")

  public var description: String { rawValue }
}

/// The daemon's state as GetStatus returns it (the IDL's `Status`), and the one-line text that
/// systemd's STATUS=, the Subscribe status event and `chatlinkctl status` all show.
public struct DaemonStatus: JSONRepresentable {
  /// Where the backend connection is.
  public var state: DaemonState
  /// The human status line, as the daemon rendered it (`summary` of the fields it had).
  public var text: String
  /// The instance (`chatlinkd@NAME`), or nil for the plain chatlinkd.service.
  public var instance: String?
  /// The backend URL, without credentials.
  public var url: String
  /// The backend protocol: envelope, raw, socketio, mqtt or stomp.
  public var `protocol`: String
  /// The rooms joined, in join order.
  public var rooms: [String]
  /// The subprotocol the server agreed to, while connected.
  public var subprotocol: String?
  /// The extensions the server agreed to (permessage-deflate and its parameters).
  public var extensions: String?
  /// The backend protocol's own session id (Socket.IO's sid), while connected.
  public var session: String?
  /// The Socket.IO namespace of that session.
  public var namespace: String?
  /// What the session falls short of, when it does (MQTT: "QoS 2 asked, broker granted 1
  /// for chat/7").
  public var sessionNote: String?
  /// Seconds until the next connection attempt, while waiting.
  public var retryIn: Double?
  /// Why the last connection attempt or connection failed.
  public var lastError: String?
  /// The last message the backend refused: "<id>: <reason>".
  public var lastFailure: String?
  /// Why the store cannot write, while it cannot.
  public var storeError: String?
  /// Messages received from the backend.
  public var received: Int
  /// Inbound messages the store already had (by their ids), dropped.
  public var duplicatesDropped: Int
  /// Times the backend said its history no longer reached back to the newest stored id: the
  /// messages in between may be missing.
  public var historyGaps: Int
  /// What the link promises of inbound messages now, in words ("exactly once: ids and
  /// catch-up", "at least once: QoS 1", …).
  public var delivery: String?
  /// The rooms catching up from the backend's history now, by room.
  public var catchingUp: [CatchUpProgress]
  /// Messages written to the backend.
  public var sent: Int
  /// Messages the backend confirmed.
  public var confirmed: Int
  /// Messages the backend refused (they left the outbox).
  public var failed: Int
  /// Connections opened.
  public var connects: Int
  /// Messages in the outbox, not yet confirmed.
  public var outbox: Int
  /// The seq of the last stored record.
  public var lastSeq: Int
  /// The seq of the last record known to be on disk.
  public var durableSeq: Int
  /// The live store file.
  public var storePath: String
  /// The daemon's release.
  public var version: String

  /// A status from its fields; `text` defaults to their `summary`, as the daemon renders it.
  public init(
    state: DaemonState, text: String? = nil, instance: String? = nil, url: String,
    protocol: String = "envelope",
    rooms: [String], subprotocol: String? = nil, extensions: String? = nil,
    session: String? = nil, namespace: String? = nil, sessionNote: String? = nil,
    retryIn: Double? = nil,
    lastError: String? = nil, lastFailure: String? = nil, storeError: String? = nil,
    received: Int, sent: Int, confirmed: Int, failed: Int = 0, connects: Int, outbox: Int,
    lastSeq: Int, durableSeq: Int, storePath: String, version: String,
    duplicatesDropped: Int = 0, historyGaps: Int = 0, delivery: String? = nil,
    catchingUp: [CatchUpProgress] = []
  ) {
    self.state = state
    self.text = ""
    self.instance = instance
    self.url = url
    self.protocol = `protocol`
    self.rooms = rooms
    self.subprotocol = subprotocol
    self.extensions = extensions
    self.session = session
    self.namespace = namespace
    self.sessionNote = sessionNote
    self.retryIn = retryIn
    self.lastError = lastError
    self.lastFailure = lastFailure
    self.storeError = storeError
    self.received = received
    self.duplicatesDropped = duplicatesDropped
    self.historyGaps = historyGaps
    self.delivery = delivery
    self.catchingUp = catchingUp
    self.sent = sent
    self.confirmed = confirmed
    self.failed = failed
    self.connects = connects
    self.outbox = outbox
    self.lastSeq = lastSeq
    self.durableSeq = durableSeq
    self.storePath = storePath
    self.version = version
    self.text = text ?? summary
  }

  /// The one-line human status of these fields, e.g.
  /// "Connected to wss://chat.example/ws (3 rooms) · 120 in, 4 out · outbox 0", after
  /// "NAME: " for an instance (several share one journal and one `systemctl status` page).
  ///
  /// It says what `systemctl status` should: where the connection is, the traffic, the
  /// backlog, and what is wrong (the store first: it is the one that loses data).
  public var summary: String {
    var head: String
    switch state {
    case .open: head = "Connected to \(url)"
    case .connecting: head = "Connecting to \(url)"
    case .tls: head = "TLS handshake with \(url)"
    case .upgrading: head = "Upgrading to WebSocket at \(url)"
    case .closing: head = "Closing the connection to \(url)"
    case .idle: head = "Idle"
    case .waiting: head = "Reconnecting to \(url) in \(Self.seconds(retryIn ?? 0)) s"
    default: head = "\(state.rawValue) \(url)"
    }
    if !rooms.isEmpty { head += " (\(rooms.count) room\(rooms.count == 1 ? "" : "s"))" }
    var text = "\(head) · \(received) in, \(confirmed) out · outbox \(outbox)"
    if failed > 0 { text += " · \(failed) refused" }
    if duplicatesDropped > 0 { text += " · \(duplicatesDropped) duplicates dropped" }
    if historyGaps > 0 {
      text +=
        " · \(historyGaps) history gap\(historyGaps == 1 ? "" : "s") (messages may be missing)"
    }
    if let sessionNote, state == .open { text += " · \(sessionNote)" }
    if let storeError { text += " · STORE DEGRADED: \(storeError)" }
    if let lastError, state != .open { text += " · last error: \(lastError)" }
    return instance.map { "\($0): \(text)" } ?? text
  }

  /// Seconds to one decimal, without a trailing ".0": "2.5", "3".
  public static func seconds(_ value: Double) -> String {
    let tenths = (value * 10).rounded() / 10
    // A value from the wire may be anything; only a whole number that fits prints as one.
    guard tenths.isFinite, abs(tenths) < 1e15 else { return String(value) }
    return tenths == tenths.rounded() ? String(Int(tenths)) : String(tenths)
  }

  public init(json: JSONValue) throws(APIDecodingError) {
    let object = try ObjectReader(json)
    state = DaemonState(rawValue: try object.string("state"))
    text = try object.string("text")
    instance = try object.optionalString("instance")
    url = try object.string("url")
    self.protocol = try object.optionalString("protocol") ?? "envelope"
    rooms = try object.strings("rooms")
    subprotocol = try object.optionalString("subprotocol")
    extensions = try object.optionalString("extensions")
    session = try object.optionalString("session")
    namespace = try object.optionalString("namespace")
    sessionNote = try object.optionalString("session_note")
    retryIn = try object.optionalDouble("retry_in")
    lastError = try object.optionalString("last_error")
    lastFailure = try object.optionalString("last_failure")
    storeError = try object.optionalString("store_error")
    received = try object.int("received")
    duplicatesDropped = try object.optionalInt("duplicates_dropped") ?? 0
    historyGaps = try object.optionalInt("history_gaps") ?? 0
    delivery = try object.optionalString("delivery")
    catchingUp =
      object.optional("catching_up") == nil
      ? [] : try object.decodeArray("catching_up", of: CatchUpProgress.self)
    sent = try object.int("sent")
    confirmed = try object.int("confirmed")
    failed = try object.optionalInt("failed") ?? 0
    connects = try object.int("connects")
    outbox = try object.int("outbox")
    lastSeq = try object.int("last_seq")
    durableSeq = try object.int("durable_seq")
    storePath = try object.string("store_path")
    version = try object.string("version")
  }

  /// The object, unset optional fields left out.
  public var json: JSONValue {
    .object([
      "state": .string(state.rawValue), "text": .string(text),
      "instance": instance.map(JSONValue.string), "url": .string(url),
      "protocol": .string(self.protocol), "rooms": .array(rooms.map(JSONValue.string)),
      "subprotocol": subprotocol.map(JSONValue.string),
      "extensions": extensions.map(JSONValue.string), "session": session.map(JSONValue.string),
      "namespace": namespace.map(JSONValue.string),
      "session_note": sessionNote.map(JSONValue.string),
      "retry_in": retryIn.map(JSONValue.double),
      "last_error": lastError.map(JSONValue.string),
      "last_failure": lastFailure.map(JSONValue.string),
      "store_error": storeError.map(JSONValue.string), "received": .int(Int64(received)),
      "duplicates_dropped": .int(Int64(duplicatesDropped)),
      "history_gaps": .int(Int64(historyGaps)), "delivery": delivery.map(JSONValue.string),
      "catching_up": catchingUp.isEmpty ? nil : .array(catchingUp.map(\.json)),
      "sent": .int(Int64(sent)), "confirmed": .int(Int64(confirmed)),
      "failed": .int(Int64(failed)),
      "connects": .int(Int64(connects)), "outbox": .int(Int64(outbox)),
      "last_seq": .int(Int64(lastSeq)), "durable_seq": .int(Int64(durableSeq)),
      "store_path": .string(storePath), "version": .string(version),
    ])
  }
}

/// GetStatus's reply: `(status: Status)`.
public struct GetStatusReply: JSONRepresentable {
  /// The daemon's status.
  public var status: DaemonStatus

  /// Creates the reply.
  public init(status: DaemonStatus) {
    self.status = status
  }

  public init(json: JSONValue) throws(APIDecodingError) {
    status = try ObjectReader(json).decode("status")
  }

  public var json: JSONValue { .object([("status", status.json)]) }
}
