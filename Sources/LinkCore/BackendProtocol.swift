import JSON
import WebSocket

/// One backend dialect spoken over an open WebSocket: the seam between the link core, which
/// owns the connection's life, and what a particular backend expects on the wire.
///
/// An adapter is a value with the state of one connection (acknowledgement ids, a session
/// handshake in progress); the core calls `open` on every new connection, so nothing carries
/// over from the last one. Every requirement is pure: adapters are tested without sockets.
///
/// What an adapter owns:
/// - its set-up after the upgrade (`open`, then `.ready` or `.refused` from `read`);
/// - its heartbeat (`heartbeat`; nil keeps WebSocket pings);
/// - joining and leaving rooms;
/// - how a send is framed (`encode`), how large it may be (`maxFrameSize`) and what confirms
///   or fails it (`confirmsByPong`, an echoed client id, `ProtocolReading.delivered` and
///   `ProtocolReading.failed`);
/// - how an inbound frame becomes a store record, and an acknowledgement sent only once that
///   record is durable;
/// - for a backend that delivers in two steps (MQTT QoS 2), which records are such deliveries
///   (`InboundMessage.twoStep`), their releases and answers, and the two steps of its sends
///   (`ProtocolReading.awaitingRelease`; `encode` of a released entry is its release).
public protocol BackendProtocol {
  /// Subprotocols to offer in the upgrade, besides those configured with Subprotocol=.
  var offeredSubprotocols: [String] { get }
  /// Whether the dialect has rooms to join.
  var hasRooms: Bool { get }
  /// Whether a pong confirms every message sent before its ping (TCP keeps order, so the
  /// backend has read them). Dialects with acknowledgements of their own confirm with those.
  var confirmsByPong: Bool { get }
  /// Whether every frame `encode` makes, as `storedForm` keeps it, is a JSON object on one
  /// line, so the store keeps it as JSON without scanning it again.
  var framesAreSingleLineJSON: Bool { get }
  /// The largest frame the backend accepts on this connection; a message whose frame is
  /// larger fails instead of going out. Nil: no limit beyond the WebSocket's.
  var maxFrameSize: Int? { get }
  /// The dialect's own session on this connection, for status.
  var session: ProtocolSession? { get }
  /// The most sent messages the backend accepts unconfirmed at once (MQTT's receive
  /// maximum); the outbox waits for confirmations beyond it. Nil: no limit.
  var maxInFlight: Int? { get }
  /// Whether the dialect delivers messages in two steps (MQTT QoS 2), so the core keeps their
  /// receipts (`InboundReceipts`) and a journal of them.
  var keepsReceipts: Bool { get }
  /// Whether each acknowledgement covers every one before it (XEP-0198's `<a h='N'/>` counts
  /// stanzas): of those released together only the last goes out.
  var acknowledgementsAreCumulative: Bool { get }

  /// Starts the dialect on a new connection: the frames that open its session, and whether the
  /// session is ready at once (otherwise a later `read` reports `.ready` or `.refused`).
  mutating func open(_ handshake: ClientHandshake.Result) -> ProtocolOpening
  /// The frame that joins a room, if the dialect has one.
  mutating func join(_ room: RoomID) -> Message?
  /// Whether joining a room tells the backend the newest id stored for it, so the backend
  /// replays what came after (`join(_:after:)`); the core then asks for those ids first.
  var joinsAfterStoredID: Bool { get }
  /// The frame that joins a room, asking for what came after `position` (nil: a room never
  /// stored). By default, `join(_:)`.
  mutating func join(_ room: RoomID, after position: RoomPosition?) -> Message?
  /// The frame that asks, once a session that joins after stored ids is ready, for what the
  /// backend kept for us outside the rooms (XMPP: the account's archive of chats) since
  /// `newestStored`, the time of the newest inbound record with an id; nil for none.
  mutating func catchUp(newestStored: Timestamp?) -> Message?
  /// The frame that leaves a room, if the dialect has one.
  mutating func leave(_ room: RoomID) -> Message?
  /// Why `entry` cannot be sent at all with this dialect (e.g. no topic), or nil: such an
  /// entry fails instead of going out.
  func refusal(of entry: OutboxEntry) -> String?
  /// The frame that carries an outbox entry; for an entry the backend holds and we released
  /// (`OutboxEntry.released`), the frame that releases it again.
  mutating func encode(_ entry: OutboxEntry) -> Message
  /// Whether the dialect writes its outbox frames with `encode(_:appendingTo:)`: text frames,
  /// which the store keeps as they are (`storedForm` is the frame itself). A run of them then
  /// goes out from one buffer, without an allocation for each.
  var writesFramesInPlace: Bool { get }
  /// Appends the text frame that carries `entry` to `frames` (used when
  /// `writesFramesInPlace`). By default, the bytes of `encode(_:)`'s frame.
  mutating func encode(_ entry: OutboxEntry, appendingTo frames: inout PackedStrings)
  /// The dialect's own keepalive probe, sent every PingIntervalSec instead of a WebSocket ping;
  /// nil sends a WebSocket ping. The answer is reported as `ProtocolReading.heartbeatAnswered`.
  /// While the backend sends heartbeats of its own (`ProtocolReading.peerHeartbeat`), the frame
  /// still goes out every interval and needs no answer (STOMP's heart-beats go both ways).
  mutating func heartbeat() -> Message?
  /// The frame that ends the dialect's session when the link stops (XMPP's `<close/>`: the
  /// server then ends the session at once instead of keeping it for a resumption no process
  /// will ask for). Nil by default: the WebSocket close is all.
  mutating func farewell() -> Message?
  /// Reads one inbound frame; never fails: frames that do not parse are still stored.
  mutating func read(_ message: Message) -> ProtocolReading
  /// Reads one inbound frame into `reading`, which starts empty. The core calls this one: a
  /// dialect that reads every frame of a flood fills the caller's reading in place, where a
  /// returned one would be copied and destroyed once more; the frame is the dialect's to keep
  /// (a record of it as it came takes it without a copy). By default, `read(_:)`.
  mutating func read(_ message: consuming Message, into reading: inout ProtocolReading)
  /// What the store's "out" record keeps of a frame `encode` made.
  func storedForm(of frame: Message) -> Message
  /// What the store's "out" record keeps of the frame `encode` made for `entry`. By default,
  /// `storedForm(of:)`.
  func storedForm(of frame: Message, for entry: OutboxEntry) -> Message
  /// Why the backend refused us, read from a close it sent before the session was ready
  /// (brokers may hang up on bad credentials without an answer of the protocol's own).
  func refusal(closedDuringSetUp info: CloseInfo) -> String
}

extension BackendProtocol {
  public var offeredSubprotocols: [String] { [] }
  public var joinsAfterStoredID: Bool { false }
  public mutating func join(_ room: RoomID, after position: RoomPosition?) -> Message? {
    join(room)
  }
  public mutating func catchUp(newestStored: Timestamp?) -> Message? { nil }
  public var confirmsByPong: Bool { true }
  public var framesAreSingleLineJSON: Bool { false }
  public var maxFrameSize: Int? { nil }
  public var session: ProtocolSession? { nil }
  public var maxInFlight: Int? { nil }
  public var keepsReceipts: Bool { false }
  public var acknowledgementsAreCumulative: Bool { false }
  public func refusal(of entry: OutboxEntry) -> String? { nil }
  public func storedForm(of frame: Message) -> Message { frame }
  public func storedForm(of frame: Message, for entry: OutboxEntry) -> Message {
    storedForm(of: frame)
  }
  public var writesFramesInPlace: Bool { false }
  public mutating func encode(_ entry: OutboxEntry, appendingTo frames: inout PackedStrings) {
    encode(entry).withUnsafeBytes { frames.append(utf8: $0) }
  }
  public func refusal(closedDuringSetUp info: CloseInfo) -> String {
    "the backend closed the connection during its set-up: \(info)"
  }
  public mutating func open(_ handshake: ClientHandshake.Result) -> ProtocolOpening {
    ProtocolOpening(frames: [], ready: true)
  }
  public mutating func heartbeat() -> Message? { nil }
  public mutating func farewell() -> Message? { nil }
  public mutating func read(_ message: consuming Message, into reading: inout ProtocolReading) {
    reading = read(message)
  }
}

/// A dialect's own session, as status shows it.
public struct ProtocolSession: Sendable, Hashable {
  /// The session's id (Socket.IO: the namespace's sid).
  public var id: String
  /// The namespace it belongs to, when the dialect has namespaces.
  public var namespace: String?
  /// What the operator should know of the session, when something is less than configured
  /// (MQTT: a subscription the broker granted at a lower QoS than asked).
  public var note: String?

  /// Creates a description.
  public init(id: String, namespace: String? = nil, note: String? = nil) {
    self.id = id
    self.namespace = namespace
    self.note = note
  }
}

/// A message the backend refused, by outbox count, with its reason.
public struct DeliveryFailure: Sendable, Hashable {
  /// The outbox count of the message.
  public var count: UInt64
  /// Why, as the backend said it.
  public var reason: String

  /// Creates a failure.
  public init(count: UInt64, reason: String) {
    self.count = count
    self.reason = reason
  }
}

/// How a text payload was scanned as JSON, so the store need not scan it again. (Only what
/// the store needs is kept: the scan's field table is large, and this travels with every
/// inbound frame.)
public enum PayloadScan: Sendable, Hashable {
  /// Not scanned (binary, or a frame the store must scan itself).
  case unscanned
  /// Scanned: the text is not JSON (or is nested too deeply), so it is stored as a string.
  case notJSON
  /// Scanned: JSON; with line breaks it must be minified to fit on one line.
  case json(hasLineBreaks: Bool)

  /// What a scan's result says: JSON (and how it is laid out) or not.
  public init(_ result: JSONScanner.Result?) {
    self = result.map { .json(hasLineBreaks: $0.hasLineBreaks) } ?? .notJSON
  }
}

/// What a dialect made of one inbound frame.
///
/// Every inbound frame makes one, and most carry a record and nothing else: the fields only a
/// dialect's control frames set live in one shared box, allocated only when one of them is
/// set, so that a plain record's reading is copied and destroyed without touching them.
public struct ProtocolReading: Sendable {
  /// What the session set-up learned from this frame.
  public enum Session: Sendable, Hashable {
    /// The session is ready: rooms are joined and the outbox goes out.
    case ready
    /// The backend refused the session (e.g. bad credentials in the dialect's own handshake).
    case refused(String)
    /// The backend broke the dialect's rules (a malformed packet): the connection ends and is
    /// retried with the usual backoff.
    case broken(String)
    /// The backend ended the session on purpose, saying why (XMPP's stream errors: a server
    /// shutting down, our resource taken over): the connection ends and is retried with the
    /// usual backoff, and nothing is blamed on the protocol.
    case ended(String)
    /// The backend ended the session and sent us to another URL (XMPP's see-other-uri, RFC
    /// 7395 §3.6.1): the next connection goes there, if the core accepts it.
    case movedTo(String)
  }

  /// The fields a plain record leaves at their defaults.
  private struct Rare: Sendable {
    var moreRecords: [(record: InboundMessage, acknowledgement: Message?)] = []
    var delivered: [UInt64] = []
    var failed: [DeliveryFailure] = []
    var replies: [Message] = []
    var heartbeatAnswered = false
    var session: Session?
    var peerHeartbeat: Duration?
    var problem: String?
    var heartbeatInterval: Duration?
    var historyGap: String?
    var releases: [(id: UInt16, answer: Message)] = []
    var deliveriesForgotten = false
    var awaitingRelease: [UInt64] = []
    var notice: ProtocolNotice?
    var afterStored: Message?
    var fromHistory = 0
  }

  // Copy on write: a shared box is copied before it is changed, so it is never mutated
  // while another reading (or thread) can see it.
  private final class RareBox: @unchecked Sendable {
    var fields: Rare
    init(_ fields: Rare) { self.fields = fields }
  }

  private var box: RareBox?

  /// Whether any field besides the record, its acknowledgement and an echoed client id is
  /// set: most frames' readings have none, and the core then skips them all.
  var hasControlFields: Bool { box != nil }

  private var rare: Rare {
    get { box?.fields ?? Rare() }
    _modify {
      if box == nil {
        box = RareBox(Rare())
      } else if !isKnownUniquelyReferenced(&box!) {
        box = RareBox(box!.fields)
      }
      yield &box!.fields
    }
  }

  /// The record to store; nil for the dialect's own control frames.
  public var record: InboundMessage?
  /// A frame to send once `record` is durable (the dialect's delivery acknowledgement).
  public var acknowledgement: Message?
  /// The client id of one of our messages, when this frame echoes it.
  public var echoedClientID: String?

  /// Further records from the same frame (a broker may pack several messages in one), each
  /// with its acknowledgement, stored after `record`.
  public var moreRecords: [(record: InboundMessage, acknowledgement: Message?)] {
    get { box?.fields.moreRecords ?? [] }
    _modify { yield &rare.moreRecords }
  }
  /// Outbox counts the backend confirmed with the dialect's own acknowledgements.
  public var delivered: [UInt64] {
    get { box?.fields.delivered ?? [] }
    _modify { yield &rare.delivered }
  }
  /// Messages the backend refused with the dialect's own acknowledgements.
  public var failed: [DeliveryFailure] {
    get { box?.fields.failed ?? [] }
    _modify { yield &rare.failed }
  }
  /// Frames to send at once (e.g. the answer to the backend's heartbeat).
  public var replies: [Message] {
    get { box?.fields.replies ?? [] }
    _modify { yield &rare.replies }
  }
  /// Whether this frame answers our `heartbeat()` probe.
  public var heartbeatAnswered: Bool {
    get { box?.fields.heartbeatAnswered ?? false }
    _modify { yield &rare.heartbeatAnswered }
  }
  /// A change in the session set-up.
  public var session: Session? {
    get { box?.fields.session }
    _modify { yield &rare.session }
  }
  /// The backend's own heartbeat arrived: it promises the next within this span, and is
  /// dead without one (no keepalive probes go out while the backend sends heartbeats).
  public var peerHeartbeat: Duration? {
    get { box?.fields.peerHeartbeat }
    _modify { yield &rare.peerHeartbeat }
  }
  /// Something about the backend's frames worth a line in the log.
  public var problem: String? {
    get { box?.fields.problem }
    _modify { yield &rare.problem }
  }
  /// The backend wants the dialect's heartbeat this often on this connection (MQTT 5's
  /// server keep alive), instead of PingIntervalSec=.
  public var heartbeatInterval: Duration? {
    get { box?.fields.heartbeatInterval }
    _modify { yield &rare.heartbeatInterval }
  }
  /// The backend said its history no longer reaches back to the id a join asked to replay
  /// from (the room, as text): messages in between may be missing.
  public var historyGap: String? {
    get { box?.fields.historyGap }
    _modify { yield &rare.historyGap }
  }

  /// Two-step deliveries the backend released (MQTT's PUBREL), each with its answer
  /// (PUBCOMP), which goes out once the release is durable (`InboundReceipts`).
  public var releases: [(id: UInt16, answer: Message)] {
    get { box?.fields.releases ?? [] }
    _modify { yield &rare.releases }
  }
  /// The backend forgot every two-step delivery it had not released (MQTT: a CONNACK without
  /// the session): rooms are joined once that is durable.
  public var deliveriesForgotten: Bool {
    get { box?.fields.deliveriesForgotten ?? false }
    _modify { yield &rare.deliveriesForgotten }
  }
  /// Outbox counts the backend received and holds until we release them (MQTT QoS 2's
  /// PUBREC): each is marked released in the outbox (`LinkAction.release`), durably, before
  /// the release goes out, and confirmed later (`delivered`).
  public var awaitingRelease: [UInt64] {
    get { box?.fields.awaitingRelease ?? [] }
    _modify { yield &rare.awaitingRelease }
  }
  /// A frame to send once every record stored before this frame is durable, in order with
  /// their acknowledgements (XEP-0198's `<a/>` answering the server's `<r/>`: its count
  /// covers every stanza read so far, so it may not go out before their records are durable).
  public var afterStored: Message? {
    get { box?.fields.afterStored }
    _modify { yield &rare.afterStored }
  }
  /// How many of this frame's records a history catch-up brought (XMPP's archive results).
  public var fromHistory: Int {
    get { box?.fields.fromHistory ?? 0 }
    _modify { yield &rare.fromHistory }
  }
  /// Something for the log that is not a fault (`ProtocolNotice`).
  public var notice: ProtocolNotice? {
    get { box?.fields.notice }
    _modify { yield &rare.notice }
  }

  /// An empty reading, for a dialect to fill in place. The core makes one for every inbound
  /// frame, and the initializer below, through its defaults' conditional setters, builds its
  /// value twice, copying one and destroying the other.
  public init() {}

  /// Creates a reading; by default a frame stored as `record` and nothing else.
  public init(
    record: InboundMessage?, acknowledgement: Message? = nil, echoedClientID: String? = nil,
    delivered: [UInt64] = [], replies: [Message] = [], heartbeatAnswered: Bool = false,
    session: Session? = nil
  ) {
    self.record = record
    self.acknowledgement = acknowledgement
    self.echoedClientID = echoedClientID
    if !delivered.isEmpty { self.delivered = delivered }
    if !replies.isEmpty { self.replies = replies }
    if heartbeatAnswered { self.heartbeatAnswered = true }
    if let session { self.session = session }
  }
}
