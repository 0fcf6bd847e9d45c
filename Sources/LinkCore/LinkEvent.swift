import JSON
import WebSocket

/// Everything that happens to the link, as the driver reports it to the core.
public enum LinkEvent {
  /// Connect for the first time.
  case start
  /// The attempt got further.
  case progress(ConnectProgress)
  /// The WebSocket upgrade succeeded. (Indirect: rare and large.)
  indirect case upgraded(ClientHandshake.Result)
  /// A complete message arrived.
  case message(Message)
  /// A ping arrived (the WebSocket layer already answered it).
  case pingReceived
  /// A pong arrived.
  case pongReceived([UInt8])
  /// The attempt or the connection ended.
  case ended(ConnectionOutcome)
  /// A timer the core armed fired.
  case timerFired(LinkTimer)
  /// The store fell behind (true) or caught up (false).
  case storeBehind(Bool)
  /// The store appended the record of a `.store` action that holds an acknowledgement, as
  /// `seq`: reported at once, before anything else is stored.
  case stored(seq: UInt64)
  /// Every record through `seq` is durable: the acknowledgements of those records go out.
  case durable(through: UInt64)
  /// The newest id stored for each of the rooms `.requestPositions` named, with its record's
  /// time (a room the store has no id for is left out), as asked for before joining them; and
  /// the time of the newest inbound record with an id, of any room (nil: none), from which a
  /// session's catch-up of what is not a room's starts (`BackendProtocol.catchUp`).
  case positions([RoomID: RoomPosition], newest: Timestamp? = nil)
  /// The inbound receipts' journal is durable through this entry (`LinkAction.journal`).
  case journalDurable(through: UInt64)
  /// These entries' releases are durable in the outbox (`LinkAction.release`): their
  /// releases go out.
  case released([OutboxEntry])
  /// The outbox's pending entries (oldest first) and the bytes the socket holds unsent, as
  /// asked for with `LinkAction.requestOutbox` or because new entries became durable.
  case outbox(ArraySlice<OutboxEntry>, buffered: Int)
  /// An operator asked for a round trip; answered with `pingAnswered` or `pingFailed`.
  case pingRequested(id: UInt64)
  /// Join a room now and after every reconnect.
  case join(RoomID)
  /// Leave a room now and stop joining it.
  case leave(RoomID)
  /// Drop the connection and connect again at once.
  case reconnect(reason: String)
  /// New settings and the configured rooms (a reload): what needs a new connection reconnects,
  /// the rest applies live. Indirect: rare and large, it would otherwise make every event as
  /// large as itself.
  indirect case reload(LinkSettings, rooms: [RoomID])
  /// Close with 1001 and stop.
  case stop
}

/// How far a connection attempt got before the upgrade answer.
public enum ConnectProgress: Sendable, Hashable {
  /// TCP is up; TLS is being negotiated.
  case tlsHandshake
  /// The upgrade request went out.
  case upgrading
}

/// Why an operator ping failed.
public enum PingError: Error, Sendable, Hashable, CustomStringConvertible {
  /// There is no open connection.
  case notConnected
  /// No pong came within PongTimeoutSec.
  case timedOut

  public var description: String {
    switch self {
    case .notConnected: "not connected to the backend"
    case .timedOut: "no pong within the timeout"
    }
  }
}
