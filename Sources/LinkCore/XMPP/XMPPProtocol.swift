import JSON
import WebSocket
import XMPP

/// XMPP over WebSocket (`Protocol=xmpp`, RFC 7395): a chat server people run (Prosody,
/// ejabberd) as the backend.
///
/// - Set-up: `StreamNegotiation` (the stream's `<open/>`, SASL SCRAM-SHA-256 or -1, PLAIN only
///   over wss:// or loopback, the restart, resource binding, XEP-0198 enabled with resumption);
///   a SASL `<failure/>` refuses the session like HTTP 401, and anything the XML parser refuses
///   (`XMLStreamError`) breaks it, with the reason.
/// - Rooms are MUC rooms (XEP-0045), each joined with a presence asking for no history; the
///   room's presence of ourselves (status 110) confirms it; a nick conflict retries with a
///   suffix, any other refusal is reported and the other rooms go on.
/// - Inbound: `groupchat` messages of joined rooms and `chat` messages to us are stored
///   (`XMPPProtocol+Messages.swift`); each record's acknowledgement is XEP-0198's `<a h/>`
///   counting it, sent once the record is durable.
/// - Sends: a `<message/>` with the outbox entry's client id as its `id` and origin-id
///   (XEP-0359); a groupchat send is confirmed by the room's reflection of that id, a chat send
///   by the server's `<a h/>` covering it; an `<error/>` fails it.
/// - Keepalive: `<r/>` every PingIntervalSec=, answered by `<a/>`; the server's `<r/>` and
///   XEP-0199 pings are answered.
public struct XMPPProtocol: BackendProtocol {
  /// What `XMPPProtocol` is configured with ([XMPP] in chatlinkd.conf).
  public struct Settings: Sendable, Hashable {
    /// The account (a bare JID).
    public var jid: JID
    /// The nick in every room.
    public var nick: String
    /// The resource to bind.
    public var resource: String
    /// The account's password (TokenFile=).
    public var password: String
    /// How the connection is protected, which decides whether PLAIN may be used.
    public var transport: SASLTransport
    /// The largest frame accepted from the server (MaxMessageSize=).
    public var maxFrameBytes = 1 << 20
    /// Whether a room never stored imports its whole archive (`CatchUp=all`) instead of
    /// starting from now.
    public var catchUpAll = false

    /// Settings for `jid`; the nick defaults to its local part.
    public init(
      jid: JID, password: String, resource: String, transport: SASLTransport, nick: String? = nil
    ) {
      self.jid = jid.bare
      self.password = password
      self.resource = resource
      self.transport = transport
      self.nick = nick ?? (jid.local.isEmpty ? "chatlink" : jid.local)
    }
  }

  /// How many times a nick conflict is retried with a suffix before the join is given up.
  static let nickAttempts = 5

  let settings: Settings
  let services: DialectServices
  /// SCRAM's crypto (the daemon's keeps the salted password across connections).
  let crypto: SCRAMCrypto
  /// The frame parser of the current connection.
  var parser: XMLFrameParser
  /// The stream negotiation until it ends; nil once the session is ready.
  var negotiation: StreamNegotiation?
  /// The full JID the server bound, once ready.
  var boundJID: JID?
  /// Whether XEP-0198 is enabled on this session.
  var streamManagement = false
  /// Stanzas read from the server on this session (XEP-0198's `h`, modulo 2^32).
  var handled: UInt32 = 0
  /// Stanzas we sent on this session (the server's `h` counts them).
  var sentStanzas: UInt32 = 0
  /// Chat sends that the server's `<a h/>` confirms: the stanza's number, the outbox count and
  /// the stanza id.
  var awaitingAck = FIFOBuffer<(stanza: UInt32, count: UInt64, id: String)>()
  /// Sends waiting for their reflection or error, by stanza id.
  var pendingSends: [String: UInt64] = [:]
  /// The rooms joined or being joined, by bare JID.
  var rooms: [String: RoomState] = [:]
  /// The catch-up of the account's own archive (chats), while under way or held.
  var account: RoomState?
  /// Why stream management is off, if the server refused it.
  var sessionNote: String?
  /// The stream management session's id, when the server will resume it (XEP-0198 §5).
  var resumableID: String?
  /// The session the next connection asks to resume, kept until a session is ready or the
  /// server refuses it (a connection lost during the attempt tries again).
  var resumption: Resumption?
  /// The rooms of the last session, kept while a resumption may bring them back.
  var previousRooms: [String: RoomState] = [:]
  /// The last session's count of stanzas read, which a resumption goes on from.
  var previousHandled: UInt32 = 0
  /// Whether the current session resumed the last one.
  var resumed = false
  /// Archive queries sent, for their ids.
  var archiveQueries = 0

  /// Creates the dialect; `services` give SCRAM its crypto and nonces.
  public init(_ settings: Settings, services: DialectServices = DialectServices()) {
    self.settings = settings
    self.services = services
    crypto = services.scram
    parser = XMLFrameParser(limits: XMLLimits(maxFrameBytes: settings.maxFrameBytes))
  }

  public var offeredSubprotocols: [String] { [XMPPFraming.subprotocol] }
  public var hasRooms: Bool { true }
  /// Without stream management nothing else confirms a chat send.
  public var confirmsByPong: Bool { !streamManagement }
  public var acknowledgementsAreCumulative: Bool { true }

  public var session: ProtocolSession? {
    guard let boundJID else { return nil }
    var notes: [String] = []
    if let sessionNote { notes.append(sessionNote) }
    for (jid, room) in rooms.sorted(by: { $0.key < $1.key }) {
      if case .refused(let why) = room.status { notes.append("\(jid) refused: \(why)") }
    }
    let catchingUp = catchingUp
    if !catchingUp.isEmpty { notes.append("catching up " + catchingUp.joined(separator: ", ")) }
    if rooms.values.contains(where: { $0.status == .joining }) {
      let joining = rooms.filter { $0.value.status == .joining }.map(\.key).sorted()
      notes.append("joining " + joining.joined(separator: ", "))
    }
    return ProtocolSession(
      id: boundJID.description, note: notes.isEmpty ? nil : notes.joined(separator: "; "))
  }

  public mutating func open(_ handshake: ClientHandshake.Result) -> ProtocolOpening {
    // The last session, if the server keeps it: `handled` counts every stanza read, and every
    // one read has gone to the store, which this process writes whatever happens to the
    // connection (a new process has no session to resume).
    if let resumableID, let boundJID {
      resumption = Resumption(id: resumableID, jid: boundJID.description, handled: handled)
      previousRooms = rooms
      previousHandled = handled
    }
    resumableID = nil
    resumed = false
    parser = XMLFrameParser(limits: XMLLimits(maxFrameBytes: settings.maxFrameBytes))
    boundJID = nil
    streamManagement = false
    handled = 0
    sentStanzas = 0
    awaitingAck.removeAll()
    pendingSends = [:]
    rooms = [:]
    account = nil
    sessionNote = nil
    var negotiation = StreamNegotiation(
      settings: NegotiationSettings(
        username: settings.jid.local, domain: settings.jid.domain, resource: settings.resource,
        password: settings.password, transport: settings.transport, resume: resumption),
      clientNonce: services.nonce(), crypto: crypto)
    let frames = negotiation.start().compactMap { action -> Message? in
      if case .send(let element) = action { Self.frame(element) } else { nil }
    }
    self.negotiation = negotiation
    return ProtocolOpening(frames: frames, ready: false)
  }

  public func refusal(of entry: OutboxEntry) -> String? {
    guard let room = entry.room else {
      return "XMPP needs a room (a room's or a user's JID) for every message"
    }
    guard let jid = try? JID(parsing: room.name), jid.isBare, !jid.local.isEmpty else {
      return "'\(room.name)' is not a bare JID (room@conference.example.org or user@example.org)"
    }
    return nil
  }

  /// A `<message/>` to the room (groupchat, for a room we join) or the user (chat), its `id`
  /// and origin-id the entry's client id, so a reflection and a resend are recognised.
  public mutating func encode(_ entry: OutboxEntry) -> Message {
    let to = (try? JID(parsing: entry.room?.name ?? ""))?.bareText ?? entry.room?.name ?? ""
    let groupchat = rooms[to] != nil
    let id = entry.id
    let message = XMLElement(
      "message", namespace: XMPPNamespace.client,
      attributes: [
        XMLAttribute("to", to), XMLAttribute("type", groupchat ? "groupchat" : "chat"),
        XMLAttribute("id", id),
      ],
      children: [
        XMLElement("body", namespace: XMPPNamespace.client, text: entry.text),
        XMLElement(
          "origin-id", namespace: Self.stanzaIDNamespace, attributes: [XMLAttribute("id", id)]),
      ])
    pendingSends[id] = entry.count
    countSent()
    if !groupchat && streamManagement { awaitingAck.append((sentStanzas, entry.count, id)) }
    return Self.frame(message)
  }

  /// The "out" record keeps the message's text, not the stanza.
  public func storedForm(of frame: Message, for entry: OutboxEntry) -> Message {
    .text(entry.textBytes)
  }

  /// `<r/>` while stream management is on; otherwise WebSocket pings probe.
  public mutating func heartbeat() -> Message? {
    streamManagement ? .text(Array(Self.request.utf8)) : nil
  }

  /// `<close/>` (RFC 7395 §3.6): the server ends the session now, and the rooms see us leave;
  /// the next start catches up from the archives.
  public mutating func farewell() -> Message? {
    .text(Array(XMPPFraming.close.utf8))
  }

  public func refusal(closedDuringSetUp info: CloseInfo) -> String {
    "the XMPP server closed the connection during the stream negotiation (\(info)); "
      + "check [XMPP] JID= and TokenFile="
  }

  /// One more of our stanzas on this session.
  mutating func countSent() {
    if streamManagement { sentStanzas &+= 1 }
  }

  static let stanzaIDNamespace = "urn:xmpp:sid:0"
  static let request = "<r xmlns='urn:xmpp:sm:3'/>"

  /// An element as a text frame.
  static func frame(_ element: XMLElement) -> Message {
    var bytes: [UInt8] = []
    XMLWriter.write(element, into: &bytes)
    return .text(bytes)
  }
}
