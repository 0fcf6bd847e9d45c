/// The Engine.IO endpoint check of an upgrade request (socketio mode): the path
/// `/socket.io/`, `EIO=4`, `transport=websocket`, and no `sid`, since there is no HTTP
/// long-polling session to upgrade.
enum EngineIORequest {
  /// The path Socket.IO clients use by default.
  static let path = "/socket.io/"

  /// What is wrong with the request target, in words for the client's user; nil when it is a
  /// WebSocket connection this server serves.
  static func problem(target: String) -> String? {
    let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
    let path = parts.first.map(String.init) ?? ""
    let expected = "connect to \(Self.path)?EIO=4&transport=websocket"
    // A missing trailing slash names the same endpoint; python-socketio and socket.io-client
    // both add it, other clients may not.
    guard path == Self.path || path + "/" == Self.path else {
      return "this is a Socket.IO server (chatlink-devserver --protocol socketio): "
        + "\(expected), not \(path.prefix(100))"
    }
    var query: [Substring: Substring] = [:]
    for pair in parts.count > 1 ? parts[1].split(separator: "&") : [] {
      let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
      query[kv[0]] = kv.count > 1 ? kv[1] : ""
    }
    guard let version = query["EIO"] else {
      return "the query has no EIO: this server speaks Engine.IO 4 (Socket.IO 5); \(expected)"
    }
    guard version == "4" else {
      return "Engine.IO version EIO=\(version.prefix(10)) is not served, only EIO=4 "
        + "(Socket.IO 5; socket.io-client 3 or later, python-socketio 5 or later)"
    }
    guard query["transport"] == "websocket" else {
      return "only transport=websocket is served (no HTTP long-polling); \(expected)"
    }
    guard query["sid"] == nil else {
      return "there is no polling session to upgrade: \(expected) and no sid"
    }
    return nil
  }
}
