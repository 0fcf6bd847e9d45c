import EventLoop
@preconcurrency import Glibc
import JSON
import LinkCore
import Transport
import WebSocket

/// The demo backend: rooms, broadcast, the token check, chatter and flood, for peers of
/// either dialect.
final class DevServer {
  /// What the clients speak.
  enum WireProtocol: String {
    /// JSON envelopes `{"event":…,"data":{…}}` on any path.
    case envelope
    /// Socket.IO 5 over Engine.IO 4, WebSocket transport only, at `/socket.io/`.
    case socketio
  }

  /// What main.swift read from the command line.
  struct Options {
    var host = "127.0.0.1"
    var port = 8765
    var wire = WireProtocol.envelope
    var tokenFile: String?
    var chatter = 0.0
    var flood = 0
    var floodSize = 200
    var floodRoom = "1"
    /// Engine.IO's heartbeat and size limit, in milliseconds and bytes (socketio only).
    var pingInterval = 25_000
    var pingTimeout = 20_000
    var maxPayload = 1_000_000
    /// Messages kept per room for joins after an id; 0 keeps none and gives out no ids.
    var history = 1000
  }

  /// A room as members join it: rooms belong to a Socket.IO namespace (envelope peers are
  /// all in `/`), as on a real Socket.IO server.
  struct RoomKey: Hashable {
    var namespace: String
    var room: String
  }

  let options: Options
  let loop: EventLoop
  let log = Logger(label: "devserver", level: .info)
  private var listener: Listener?
  private var peers: [ObjectIdentifier: Peer] = [:]
  private var rooms: [RoomKey: Set<ObjectIdentifier>] = [:]
  private var chatterTimer: Timer?
  private var chatterIndex = 0
  private let token: String?
  private var histories: [RoomKey: RoomHistory] = [:]
  /// The ids of this run, when messages are kept (`--history`).
  private let ids: MessageIDs?

  var port: Int { listener?.port ?? 0 }

  init(loop: EventLoop, options: Options) throws {
    self.loop = loop
    self.options = options
    token = try options.tokenFile.map { path in try TokenFile.read(path) }
    var random = SecureRandomGenerator()
    ids = options.history > 0 ? MessageIDs(random: &random) : nil
    listener = try Listener(loop: loop, host: options.host, port: options.port) {
      [unowned self] stream in
      let peer: Peer =
        switch self.options.wire {
        case .envelope: EnvelopePeer(server: self, stream: stream)
        case .socketio: SocketIOPeer(server: self, stream: stream)
        }
      self.peers[ObjectIdentifier(peer)] = peer
    }
    if options.chatter > 0 {
      chatterTimer = try loop.makeTimer(accuracy: 10_000) { [unowned self] in self.chatter() }
      chatterTimer?.schedule(after: Microseconds(options.chatter * 1_000_000))
    }
  }

  /// Whether a token is required at all.
  var requiresToken: Bool { token != nil }

  /// Checks the Authorization header when a token is configured.
  func authorized(_ request: HTTPRequestHead) -> Bool {
    guard let token else { return true }
    return request.headers[first: "Authorization"] == "Bearer \(token)"
  }

  /// Checks a token given another way (Socket.IO's `auth.token`).
  func authorized(token given: String?) -> Bool {
    guard let token else { return true }
    return given == token
  }

  func opened(_ peer: Peer) {
    log.info("client connected", ["peer": peer.name])
  }

  /// Starts the flood on `peer` when --flood asks for one; `frame` builds message N (from 1).
  func floodIfAsked(_ peer: Peer, frame: @escaping (UInt64) -> [UInt8]) {
    guard options.flood > 0 else { return }
    peer.startFlood(count: options.flood, frame: frame)
  }

  /// The flood's message before a dialect frames it: --flood-size bytes in all, about, once
  /// the dialect's `overhead` is added.
  func floodMessage(overhead: Int) -> ChatMessage {
    ChatMessage(
      room: options.floodRoom,
      text: String(repeating: "x", count: max(0, options.floodSize - overhead)),
      sender: "flood", clientID: nil)
  }

  func closed(_ peer: Peer, _ reason: String) {
    let id = ObjectIdentifier(peer)
    peers[id] = nil
    for key in rooms.keys { rooms[key]?.remove(id) }
    log.info("client disconnected", ["peer": peer.name, "reason": reason])
  }

  /// Puts `peer` in the room; with `since` (an id, or a number's JSON text), it is first sent
  /// the room's messages after it, announced as truncated when the history no longer reaches
  /// back to it.
  func join(_ peer: Peer, _ key: RoomKey, since: String? = nil) {
    rooms[key, default: []].insert(ObjectIdentifier(peer))
    log.info(
      "joined",
      ["peer": peer.name, "room": key.room, "namespace": key.namespace, "since": since ?? "-"])
    guard let ids, let since else { return }
    let history = histories[key] ?? RoomHistory(capacity: options.history)
    let replay = history.replay(after: ids.number(of: since))
    if replay.truncated {
      var data = Array(#"{"room_id":"#.utf8) + (RoomID(key.room)?.json ?? Array("null".utf8))
      data.append(#","since":"# as StaticString)
      JSONString.append(since, to: &data)
      data.append(#","first":"# as StaticString)
      if let first = replay.first {
        JSONString.append(ids.id(first), to: &data)
      } else {
        data += Array("null".utf8)
      }
      data.append(UInt8(ascii: "}"))
      peer.deliver(event: Self.truncatedEvent, data: data, namespace: key.namespace)
      log.info("history truncated", ["peer": peer.name, "room": key.room, "since": since])
    }
    for message in replay.messages { peer.deliver(data: message, namespace: key.namespace) }
  }

  /// What a join after an id the history no longer reaches back to gets first.
  static let truncatedEvent = "history-truncated"

  func leave(_ peer: Peer, _ key: RoomKey) {
    rooms[key]?.remove(ObjectIdentifier(peer))
  }

  /// Takes `peer` out of every room of `namespace` (it left the namespace).
  func leaveAll(_ peer: Peer, namespace: String) {
    let id = ObjectIdentifier(peer)
    for key in rooms.keys where key.namespace == namespace { rooms[key]?.remove(id) }
  }

  /// Delivers a message to every member of its room in `namespace` and to the sender; with
  /// `--history`, it gets the room's next id and is kept.
  func broadcast(_ message: ChatMessage, namespace: String = "/", sender: Peer?) {
    let key = RoomKey(namespace: namespace, room: message.room)
    let data: [UInt8]
    if let ids {
      data = histories[key, default: RoomHistory(capacity: options.history)].record { number in
        var numbered = message
        numbered.id = ids.id(number)
        return numbered.data()
      }
    } else {
      data = message.data()
    }
    var targets = rooms[key] ?? []
    if let sender { targets.insert(ObjectIdentifier(sender)) }
    for id in targets { peers[id]?.deliver(data: data, namespace: namespace) }
  }

  private static let lines = [
    "build #%d is green", "deploy of web-frontend finished", "reminder: standup in 10 minutes",
    "disk usage on db-2 at 71%", "coffee machine on floor 3 is back online",
  ]

  private func chatter() {
    chatterTimer?.schedule(after: Microseconds(options.chatter * 1_000_000))
    chatterIndex += 1
    for (key, members) in rooms where !members.isEmpty {
      let text = Self.lines[chatterIndex % Self.lines.count].replacingOccurrences(
        "%d", "\(chatterIndex)")
      broadcast(
        ChatMessage(room: key.room, text: text, sender: "demo-bot", clientID: nil),
        namespace: key.namespace, sender: nil)
    }
  }
}

extension String {
  func replacingOccurrences(_ target: String, _ replacement: String) -> String {
    var result = ""
    var rest = Substring(self)
    while let range = rest.firstRange(of: target) {
      result += rest[..<range.lowerBound] + replacement
      rest = rest[range.upperBound...]
    }
    return result + rest
  }
}
