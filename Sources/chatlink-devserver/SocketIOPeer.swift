import EventLoop
import JSON
import LinkCore
import Transport
import WebSocket

/// A Socket.IO 5 client over Engine.IO 4 on the WebSocket transport.
///
/// Engine.IO: the open packet first, then a ping every pingInterval; a client that leaves
/// one unanswered for pingTimeout is dropped. Socket.IO: namespace connects (checked against
/// the token, given either as the bearer header or as `auth.token`), events (see
/// `SocketIOPeer+Events.swift`), disconnects. Malformed packets end the connection, as they
/// do on a Socket.IO server, so that a client under test learns of them.
final class SocketIOPeer: Peer {
  /// The Engine.IO session's id.
  private let sessionID = SocketIOFrames.newID()
  /// The connected namespaces and each one's socket id.
  private(set) var namespaces: [String: String] = [:]
  /// Whether the upgrade request carried the token (or none is required).
  private var headerAuthorized = false
  private var heartbeat: EngineIOHeartbeat?
  private var heartbeatTimer: Timer?
  /// A binary packet whose attachments (binary frames) are still coming: the demo serves
  /// no binary events, so they are counted off and the event refused.
  private var skipping: (remaining: Int, namespace: String, ackID: UInt64?)?
  private var flooding = false

  override var limits: ClientConnection.Limits {
    // Engine.IO servers close the connection on a message over maxPayload; a WebSocket
    // close 1009 says the same.
    ClientConnection.Limits(
      maxFrameSize: server.options.maxPayload, maxMessageSize: server.options.maxPayload)
  }

  override func admit(_ request: HTTPRequestHead) -> HTTPRefusal? {
    if let problem = EngineIORequest.problem(target: request.target) {
      return .explained(status: 400, reason: "Bad Request", text: problem)
    }
    // No 401 here: the token may still come with the namespace connect.
    headerAuthorized = server.authorized(request)
    return nil
  }

  override func opened() {
    send(SocketIOFrames.open(sid: sessionID, options: server.options))
    let beat = EngineIOHeartbeat(
      intervalMS: server.options.pingInterval, timeoutMS: server.options.pingTimeout)
    heartbeat = beat
    heartbeatTimer = try? server.loop.makeTimer(accuracy: 1000) { [unowned self] in self.beat() }
    heartbeatTimer?.schedule(after: beat.first)
  }

  override func closed() {
    heartbeatTimer?.cancel()
  }

  private func beat() {
    switch heartbeat?.fired() {
    case .ping(let deadline):
      send(SocketIOFrames.ping)
      heartbeatTimer?.schedule(after: deadline)
    case .timedOut:
      close("no pong within pingTimeout (\(server.options.pingTimeout) ms)", code: .normalClosure)
    case nil:
      break
    }
  }

  override func deliver(event: String, data: [UInt8], namespace: String) {
    guard namespaces[namespace] != nil else { return }
    send(SocketIOFrames.event(event, data: data, namespace))
  }

  override func received(_ message: Message) {
    switch message {
    case .binary: attachment()
    case .text(let bytes):
      guard skipping == nil else {
        protocolError("a text frame among a binary packet's attachments")
        return
      }
      bytes.withUnsafeBytes { engineIO($0) }
    }
  }

  /// One Engine.IO packet.
  private func engineIO(_ raw: UnsafeRawBufferPointer) {
    guard let packet = EngineIOPacket.parse(raw) else {
      protocolError("a text frame that is not an Engine.IO packet")
      return
    }
    switch packet {
    case .pong:
      if let delay = heartbeat?.pong() { heartbeatTimer?.schedule(after: delay) }
    case .ping:
      // Engine.IO 4 clients do not ping; answering costs nothing and echoes a probe.
      send([UInt8(ascii: "3")] + Array(raw.dropFirst()))
    case .close:
      close("the client closed the Engine.IO session", code: .normalClosure)
    case .message(let range):
      socketIO(raw, range)
    case .open, .upgrade, .noop:
      break
    }
  }

  /// One Socket.IO packet, in `raw[range]`.
  private func socketIO(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>) {
    let packet: SocketIOPacket
    do {
      packet = try SocketIOPacket.parse(raw, in: range)
    } catch {
      protocolError("\(error)")
      return
    }
    let namespace = packet.namespace.map { String(decoding: raw[$0], as: UTF8.self) } ?? "/"
    let data = UnsafeRawBufferPointer(rebasing: raw[packet.data])
    switch packet.kind {
    case .connect:
      connect(namespace, auth: data)
    case .disconnect:
      namespaces[namespace] = nil
      server.leaveAll(self, namespace: namespace)
      server.log.info("namespace left", ["peer": name, "namespace": namespace])
    case .event:
      guard namespaces[namespace] != nil else {
        server.log.info("event for a namespace not connected", ["namespace": namespace])
        return
      }
      event(namespace, data, ackID: packet.ackID)
    case .binaryEvent, .binaryAck:
      skipping = (packet.attachments, namespace, packet.kind == .binaryEvent ? packet.ackID : nil)
      if packet.attachments == 0 { attachment() }
    case .ack, .connectError:
      // The server asks for no acks, and connect errors are the server's to send.
      break
    }
  }

  /// Ends a connection whose client broke the protocol, as Socket.IO servers do.
  func protocolError(_ problem: String) {
    close("parse error: \(problem)", code: .policyViolation)
  }

  /// A binary frame: one attachment of the packet being skipped.
  private func attachment() {
    guard var state = skipping else {
      protocolError("a binary frame that no binary packet announced")
      return
    }
    state.remaining -= 1
    skipping = state.remaining > 0 ? state : nil
    guard state.remaining <= 0 else { return }
    refuse(state.namespace, ackID: state.ackID, "binary events are not served by the devserver")
  }

  /// `40[/ns,]{auth}`: joins the namespace when the token checks out, else `44`.
  private func connect(_ namespace: String, auth data: UnsafeRawBufferPointer) {
    let auth = data.isEmpty ? JSONValue.object([]) : try? JSONValue.parse(data)
    guard auth?.objectValue != nil else {
      send(SocketIOFrames.connectError(namespace, message: "the auth payload is not an object"))
      return
    }
    guard headerAuthorized || server.authorized(token: auth?["token"]?.stringValue) else {
      send(SocketIOFrames.connectError(namespace, message: "unauthorized"))
      server.log.info("namespace refused", ["peer": name, "namespace": namespace])
      return
    }
    // A second connect to the same namespace starts it afresh.
    server.leaveAll(self, namespace: namespace)
    let sid = SocketIOFrames.newID()
    namespaces[namespace] = sid
    send(SocketIOFrames.connected(namespace, sid: sid))
    server.log.info("namespace connected", ["peer": name, "namespace": namespace, "sid": sid])
    if !flooding {
      flooding = true
      let message = server.floodMessage(overhead: 130)
      server.floodIfAsked(self) { SocketIOFrames.message(message, namespace, count: $0) }
    }
  }
}
