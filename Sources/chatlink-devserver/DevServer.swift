import ChatLinkCore
import EventLoop
@preconcurrency import Glibc
import Transport
import WebSocket

/// The demo backend: rooms, broadcast, bearer check, chatter and flood.
final class DevServer {
  struct Options {
    var host = "127.0.0.1"
    var port = 8765
    var tokenFile: String?
    var chatter = 0.0
    var flood = 0
    var floodSize = 200
    var floodRoom = "1"
  }

  let options: Options
  let loop: EventLoop
  private var listener: Listener?
  private var peers: [ObjectIdentifier: Peer] = [:]
  private var rooms: [String: Set<ObjectIdentifier>] = [:]
  private var chatterTimer: Timer?
  private var chatterIndex = 0
  private let token: String?
  private let log = Logger(label: "devserver", level: .info)

  var port: Int { listener?.port ?? 0 }

  init(loop: EventLoop, options: Options) throws {
    self.loop = loop
    self.options = options
    token = try options.tokenFile.map { path in
      try TokenSource.read(tokenFile: path, credentialsDirectory: nil) ?? ""
    }
    listener = try Listener(loop: loop, host: options.host, port: options.port) {
      [unowned self] stream in
      let peer = Peer(server: self, stream: stream)
      self.peers[ObjectIdentifier(peer)] = peer
    }
    if options.chatter > 0 {
      chatterTimer = try loop.makeTimer(accuracy: 10_000) { [unowned self] in self.chatter() }
      chatterTimer?.schedule(after: Microseconds(options.chatter * 1_000_000))
    }
  }

  /// Checks the Authorization header when a token is configured.
  func authorized(_ request: HTTPRequestHead) -> Bool {
    guard let token else { return true }
    return request.headers[first: "Authorization"] == "Bearer \(token)"
  }

  func opened(_ peer: Peer) {
    log.info("client connected", ["peer": peer.name])
    if options.flood > 0 {
      peer.startFlood(count: options.flood, size: options.floodSize, room: options.floodRoom)
    }
  }

  func closed(_ peer: Peer, _ reason: String) {
    let id = ObjectIdentifier(peer)
    peers[id] = nil
    for key in rooms.keys { rooms[key]?.remove(id) }
    log.info("client disconnected", ["peer": peer.name, "reason": reason])
  }

  func join(_ peer: Peer, room: String) {
    rooms[room, default: []].insert(ObjectIdentifier(peer))
    log.info("joined", ["peer": peer.name, "room": room])
  }

  func leave(_ peer: Peer, room: String) {
    rooms[room]?.remove(ObjectIdentifier(peer))
  }

  /// Delivers a message to every member of the room and to the sender.
  func broadcast(room: String, message: [UInt8], sender: Peer?) {
    var targets = rooms[room] ?? []
    if let sender { targets.insert(ObjectIdentifier(sender)) }
    for id in targets { peers[id]?.send(message) }
  }

  private static let lines = [
    "build #%d is green", "deploy of web-frontend finished", "reminder: standup in 10 minutes",
    "disk usage on db-2 at 71%", "coffee machine on floor 3 is back online",
  ]

  private func chatter() {
    chatterTimer?.schedule(after: Microseconds(options.chatter * 1_000_000))
    chatterIndex += 1
    for (room, members) in rooms where !members.isEmpty {
      let text = Self.lines[chatterIndex % Self.lines.count].replacingOccurrences(
        "%d", "\(chatterIndex)")
      broadcast(
        room: room,
        message: Envelope.message(room: room, text: text, sender: "demo-bot", clientID: nil),
        sender: nil)
    }
  }
}

/// Builds the backend's outgoing envelopes.
enum Envelope {
  static func message(room: String, text: String, sender: String, clientID: String?) -> [UInt8] {
    var out = Array(#"{"event":"message","data":{"room_id":"#.utf8)
    out += RoomID(room)?.json ?? Array("null".utf8)
    out += Array(#","message":"#.utf8)
    JSONString.append(text, to: &out)
    out += Array(#","sender":"#.utf8)
    JSONString.append(sender, to: &out)
    if let clientID {
      out += Array(#","client_id":"#.utf8)
      JSONString.append(clientID, to: &out)
    }
    out += Array(#","time":""#.utf8)
    Timestamp.now().append(to: &out)
    out += Array("\"}}".utf8)
    return out
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
