import EventLoop
import Transport
import WebSocket

/// One client connection of the demo server: the HTTP upgrade, WebSocket frames, the flood
/// and the close. What the messages mean is a dialect's: `EnvelopePeer` and `SocketIOPeer`
/// override the hooks at the end.
class Peer: ByteStreamDelegate {
  unowned let server: DevServer
  let stream: SocketStream
  let name: String
  private var handshake = ServerHandshake()
  private var session: FrameSession?
  private var flood: (remaining: Int, counter: UInt64, frame: (UInt64) -> [UInt8])?
  private var floodTimer: Timer?
  /// Set once a close is under way: what still arrives is not acted on.
  private(set) var closing = false

  init(server: DevServer, stream: SocketStream) {
    self.server = server
    self.stream = stream
    name = stream.peerDescription
    stream.delegate = self
  }

  func send(_ text: [UInt8]) {
    guard let session, session.state == .open, !closing else { return }
    try? session.send(.text(text))
    stream.write(session.takeOutbound())
  }

  func stream(_ stream: any ByteStream, didReceive bytes: UnsafeRawBufferPointer) {
    guard !closing else { return }
    if let session {
      session.receive(bytes)
      drain(session)
      return
    }
    do {
      guard let (request, remainder) = try handshake.append(bytes) else { return }
      if let refusal = admit(request) {
        stream.write(refusal.response)
        close("refused: \(refusal.reason)")
        return
      }
      let accepted = try ServerHandshake.accept(request, deflate: true)
      let session = try FrameSession(
        role: .server, limits: limits, encoder: FrameEncoder(),
        compression: accepted.compression)
      self.session = session
      stream.write(accepted.response)
      server.opened(self)
      opened()
      remainder.withUnsafeBytes { session.receive($0) }
      drain(session)
    } catch let refusal as ServerHandshake.Refusal {
      stream.write(ServerHandshake.refusal(status: refusal.status, reason: "Bad Request"))
      close("refused: \(refusal.reason)")
    } catch {
      close("\(error)")
    }
  }

  private func drain(_ session: FrameSession) {
    while !closing, let event = session.nextEvent() {
      switch event {
      case .message(let message): received(message)
      case .ping, .pong: break
      case .closed(let info):
        stream.write(session.takeOutbound())
        close("\(info)")
        return
      }
    }
    if session.hasOutbound { stream.write(session.takeOutbound()) }
  }

  // MARK: Flood

  /// Sends `count` messages as fast as the socket takes them; `frame` builds message N.
  func startFlood(count: Int, frame: @escaping (UInt64) -> [UInt8]) {
    flood = (count, 0, frame)
    floodTimer = try? server.loop.makeTimer(accuracy: 1000) { [unowned self] in self.pumpFlood() }
    pumpFlood()
  }

  /// Writes flood frames while the socket keeps up, then waits a moment for it to drain.
  private func pumpFlood() {
    guard var state = flood, let session, session.state == .open, !closing else { return }
    var encoder = FrameEncoder()
    var batch: [UInt8] = []
    batch.reserveCapacity(1 << 20)
    while state.remaining > 0 && stream.pendingWriteCount < 4 << 20 && batch.count < 1 << 20 {
      state.remaining -= 1
      state.counter += 1
      encoder.encode(opcode: .text, payload: state.frame(state.counter), into: &batch)
    }
    stream.write(batch)
    flood = state.remaining > 0 ? state : nil
    if flood != nil { floodTimer?.schedule(after: 1000) }
  }

  func streamDidDrain(_ stream: any ByteStream) {
    if flood != nil { pumpFlood() }
  }

  func stream(_ stream: any ByteStream, didCloseWith error: TransportError?) {
    close(error.map { "\($0)" } ?? "connection closed")
  }

  /// Ends the connection with a close frame saying why: the client learns what it did wrong
  /// (a WebSocket close, not a reset). The client's answer is not waited for.
  func close(_ reason: String, code: CloseCode) {
    if let session, session.state == .open, !closing {
      try? session.close(code: code, reason: reason)
      stream.write(session.takeOutbound())
    }
    close(reason)
  }

  /// Ends the connection (once): the socket is closed and the server forgets the peer.
  func close(_ reason: String) {
    guard !closing else { return }
    closing = true
    floodTimer?.cancel()
    closed()
    let server = self.server
    // Closing from the loop keeps the stream alive until its callback returns.
    server.loop.post { [self] in
      self.stream.close()
      server.closed(self, reason)
    }
  }

  // MARK: The dialect's hooks

  /// The WebSocket limits for this dialect.
  var limits: ClientConnection.Limits { ClientConnection.Limits() }

  /// Checks the upgrade request: a refusal to answer instead of the 101, or nil to go on.
  func admit(_ request: HTTPRequestHead) -> HTTPRefusal? { nil }

  /// The WebSocket is open.
  func opened() {}

  /// One message from the client.
  func received(_ message: Message) {}

  /// A message for a room the peer is in (in `namespace`), or its own message echoed: its
  /// data object (`ChatMessage.appendData`).
  func deliver(data: [UInt8], namespace: String) {
    deliver(event: "message", data: data, namespace: namespace)
  }

  /// Another event about a room the peer is in, with its data object.
  func deliver(event: String, data: [UInt8], namespace: String) {}

  /// The connection is ending: timers stop.
  func closed() {}
}
