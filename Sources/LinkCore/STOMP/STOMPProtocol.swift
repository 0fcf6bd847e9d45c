import JSON
import WebSocket

/// STOMP 1.2 (or 1.1) over WebSocket (`Protocol=stomp`): a message broker as the backend
/// (RabbitMQ web-stomp, ActiveMQ, Spring's broker relay).
///
/// - Set-up: CONNECT with accept-version 1.2,1.1, the virtual host, login and passcode (the
///   token) and the heart-beats wanted; CONNECTED accepts, an ERROR refuses.
/// - Rooms are destinations (/topic/chat.7, /queue/ops, /exchange/x/key), each a SUBSCRIBE
///   with its own id and ack:client-individual.
/// - Sends are persistent SENDs to the room's destination with a receipt named after the
///   outbox count; the RECEIPT confirms, an ERROR naming that receipt fails the message.
/// - Inbound MESSAGEs are stored (room: the destination; the body as JSON, text or binary;
///   the headers as `meta`), and each is ACKed only once its record is durable: the broker
///   redelivers anything unacknowledged, across a crash or an outage.
/// - Heart-beats as negotiated in both directions: while the server sends its own, an EOL
///   goes out every HeartBeatMSec= and no data from the server for three of its intervals
///   means it is gone; without them, WebSocket pings probe as usual.
/// - An ERROR naming a SUBSCRIBE's receipt, or naming none while a SUBSCRIBE waits for its
///   RECEIPT (RabbitMQ's ERRORs name none), is that subscription's refusal: logged, and the
///   session goes on. Any other ERROR ends the session (the server closes after one anyway),
///   with its text.
public struct STOMPProtocol: BackendProtocol {
  /// What `STOMPProtocol` is configured with ([STOMP] in chatlinkd.conf).
  public struct Settings: Sendable, Hashable {
    /// The `host` header: the broker's virtual host.
    public var virtualHost = "/"
    /// The `login` header, if any.
    public var login: String?
    /// The `passcode` header: the token.
    public var passcode: String?
    /// How often heart-beats go out, and how often the server is asked for its own; zero
    /// turns them off.
    public var heartBeat: Duration = .seconds(10)
    /// The largest frame accepted from the server.
    public var maximumFrameSize = 16 << 20
    /// The header of a MESSAGE that holds a stable id its sender set (e.g. `message-id` as
    /// publishers set it, `amqp-message-id` on RabbitMQ): the store drops a message whose id
    /// it has; empty: none.
    public var idHeader = ""

    /// Creates the defaults.
    public init() {}
  }

  /// How many of the server's heart-beat intervals may pass without any data from it. (A
  /// server beats only when it sent nothing else for an interval, so two may pass
  /// legitimately.)
  static let serverIntervalsAllowed = 3
  /// A send's receipt is this and its outbox count, so a resend carries the same one.
  static let sendReceipt = "send-"
  /// A subscription's id (and its SUBSCRIBE's receipt) is this and a number.
  static let subscriptionPrefix = "sub-"

  let settings: Settings
  /// `settings.idHeader` as the record's meta writes it (escaped as a JSON string's content),
  /// the key a scan of the meta looks for.
  let idHeaderKey: JSONScanner.Keys
  var decoder: STOMPDecoder
  /// CONNECTED arrived on this connection.
  var connected = false
  /// The version the server chose.
  var version = "1.2"
  /// The server's session id, for status.
  var sessionID: String?
  /// The longest the server may stay silent, when it sends heart-beats.
  var serverSilenceLimit: Duration?
  /// Whether the server wants our heart-beats.
  var beatsWanted = false
  /// Subscription ids by destination.
  var subscriptions: [String: String] = [:]
  /// Frames sent with a receipt whose RECEIPT (or ERROR) has not come, oldest first. A server
  /// answers a connection's frames in order, so an ERROR that names no receipt (RabbitMQ's
  /// never do) answers the oldest of them: that SUBSCRIBE is refused, or that SEND fails.
  var awaiting = FIFOBuffer<AwaitedReceipt>()
  var lastSubscription = 0

  /// Creates the adapter.
  public init(_ settings: Settings) {
    self.settings = settings
    var key: [UInt8] = []
    JSONString.append(settings.idHeader, to: &key)
    idHeaderKey = JSONScanner.Keys([Array(key.dropFirst().dropLast())])
    decoder = STOMPDecoder(maximumFrameSize: settings.maximumFrameSize)
  }

  public var offeredSubprotocols: [String] { ["v12.stomp", "v11.stomp"] }
  public var hasRooms: Bool { true }
  public var confirmsByPong: Bool { false }

  public var session: ProtocolSession? {
    connected ? ProtocolSession(id: sessionID ?? "STOMP \(version)") : nil
  }

  /// The heart-beat interval asked for and offered, in milliseconds (as the header says it).
  var heartBeatMilliseconds: Int64 {
    let (seconds, attoseconds) = settings.heartBeat.components
    return seconds * 1000 + attoseconds / 1_000_000_000_000_000
  }

  public mutating func open(_ handshake: ClientHandshake.Result) -> ProtocolOpening {
    decoder = STOMPDecoder(maximumFrameSize: settings.maximumFrameSize)
    connected = false
    version = "1.2"
    sessionID = nil
    serverSilenceLimit = nil
    beatsWanted = false
    subscriptions = [:]
    awaiting.removeAll()
    var headers = [
      STOMPHeader("accept-version", "1.2,1.1"), STOMPHeader("host", settings.virtualHost),
    ]
    if let login = settings.login { headers.append(STOMPHeader("login", login)) }
    if let passcode = settings.passcode { headers.append(STOMPHeader("passcode", passcode)) }
    let beat = heartBeatMilliseconds
    headers.append(STOMPHeader("heart-beat", "\(beat),\(beat)"))
    return ProtocolOpening(frames: [frame(STOMPFrame(.connect, headers))], ready: false)
  }

  public mutating func join(_ room: RoomID) -> Message? {
    guard subscriptions[room.name] == nil else { return nil }
    lastSubscription += 1
    let id = Self.subscriptionPrefix + String(lastSubscription)
    subscriptions[room.name] = id
    awaiting.append(.subscription(id: id, room: room.name))
    return frame(
      STOMPFrame(
        .subscribe,
        [
          STOMPHeader("id", id), STOMPHeader("destination", room.name),
          STOMPHeader("ack", "client-individual"), STOMPHeader("receipt", id),
        ]))
  }

  public mutating func leave(_ room: RoomID) -> Message? {
    guard let id = subscriptions.removeValue(forKey: room.name) else { return nil }
    return frame(STOMPFrame(.unsubscribe, [STOMPHeader("id", id)]))
  }

  public func refusal(of entry: OutboxEntry) -> String? {
    entry.room == nil ? "STOMP needs a room (the destination) for every message" : nil
  }

  public mutating func encode(_ entry: OutboxEntry) -> Message {
    let body = entry.textBytes
    awaiting.append(.send(entry.count))
    let headers = [
      STOMPHeader("destination", entry.room?.name ?? ""),
      STOMPHeader("content-type", Self.contentType(body)),
      STOMPHeader("content-length", String(body.count)),
      STOMPHeader("receipt", Self.sendReceipt + String(entry.count)),
      // Brokers (RabbitMQ, ActiveMQ, Artemis) keep a persistent message across a restart.
      STOMPHeader("persistent", "true"),
      STOMPHeader("client-id", entry.id),
    ]
    return frame(STOMPFrame(.send, headers, body: body))
  }

  /// JSON objects and arrays go as application/json (so e.g. Spring converts them), the rest
  /// as text/plain (UTF-8, as STOMP implies for text/*).
  static func contentType(_ body: [UInt8]) -> String {
    let first = body.first { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }
    guard first == UInt8(ascii: "{") || first == UInt8(ascii: "[") else { return "text/plain" }
    let valid = body.withUnsafeBytes { JSONScanner.isValid($0) }
    return valid ? "application/json" : "text/plain"
  }

  /// The "out" record keeps the message's text, not the frame.
  public func storedForm(of frame: Message) -> Message {
    var decoder = STOMPDecoder(maximumFrameSize: Int.max)
    decoder.append(frame.bytes)
    guard case .frame(let sent)? = try? decoder.next(), sent.command == .send else { return frame }
    return .text(sent.body)
  }

  /// A server may hang up on a CONNECT it refuses without an ERROR frame.
  public func refusal(closedDuringSetUp info: CloseInfo) -> String {
    "the STOMP server closed the connection before CONNECTED (\(info)); "
      + "check [STOMP] Username=, VirtualHost= and TokenFile="
  }

  /// An EOL, while the server sends heart-beats of its own and wants ours: the core then
  /// sends it every interval and expects no answer. Otherwise nil: WebSocket pings probe.
  public mutating func heartbeat() -> Message? {
    serverSilenceLimit != nil && beatsWanted ? .text(STOMPEncoder.heartbeat) : nil
  }

  /// Frames go out as text messages: every one we send is UTF-8.
  func frame(_ frame: STOMPFrame) -> Message {
    .text(STOMPEncoder.encode(frame))
  }
}

/// A frame sent with a `receipt` header, until its RECEIPT or ERROR comes.
enum AwaitedReceipt: Sendable, Hashable {
  /// A SUBSCRIBE: its id (also its receipt) and destination.
  case subscription(id: String, room: String)
  /// A SEND of the outbox entry with this count.
  case send(UInt64)

  /// The receipt id the frame carried.
  var receipt: String {
    switch self {
    case .subscription(let id, _): id
    case .send(let count): STOMPProtocol.sendReceipt + String(count)
    }
  }
}
