import ChatLinkCore
import EventLoop
import Transport
import WebSocket

/// One client connection of the demo server.
final class Peer: ByteStreamDelegate {
  unowned let server: DevServer
  let stream: SocketStream
  let name: String
  private var handshake = ServerHandshake()
  private var session: FrameSession?
  private var flood: (remaining: Int, message: [UInt8], counter: Int)?
  private var floodTimer: Timer?

  private static let keys = [Array("event".utf8), Array("data".utf8)]
  private static let dataKeys = ["room_id", "message", "sender", "client_id"].map { Array($0.utf8) }

  init(server: DevServer, stream: SocketStream) {
    self.server = server
    self.stream = stream
    name = stream.peerDescription
    stream.delegate = self
  }

  func send(_ text: [UInt8]) {
    guard let session, session.state == .open else { return }
    try? session.send(.text(text))
    stream.write(session.takeOutbound())
  }

  func stream(_ stream: any ByteStream, didReceive bytes: UnsafeRawBufferPointer) {
    if let session {
      session.receive(bytes)
      drain(session)
      return
    }
    do {
      guard let (request, remainder) = try handshake.append(bytes) else { return }
      guard server.authorized(request) else {
        stream.write(
          ServerHandshake.refusal(
            status: 401, reason: "Unauthorized",
            headers: ["WWW-Authenticate": "Bearer realm=\"chatlink-devserver\""]))
        close("refused: bad or missing token")
        return
      }
      let accepted = try ServerHandshake.accept(request, deflate: true)
      let session = try FrameSession(
        role: .server, limits: ClientConnection.Limits(), encoder: FrameEncoder(),
        compression: accepted.compression)
      self.session = session
      stream.write(accepted.response)
      server.opened(self)
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
    while let event = session.nextEvent() {
      switch event {
      case .message(let message): handle(message)
      case .ping, .pong: break
      case .closed(let info):
        stream.write(session.takeOutbound())
        close("\(info)")
        return
      }
    }
    if session.hasOutbound { stream.write(session.takeOutbound()) }
  }

  private func handle(_ message: Message) {
    guard case .text(let bytes) = message else { return }
    bytes.withUnsafeBytes { raw in
      guard
        let scan = JSONScanner.scan(
          raw, topLevelKeys: Self.keys, nestedIn: 1, nestedKeys: Self.dataKeys),
        let event = string(raw, scan.topLevel[0]), let roomRange = scan.nested[0]
      else {
        send(
          Array(
            #"{"event":"error","data":{"message":"expected an envelope with data.room_id"}}"#.utf8))
        return
      }
      let roomRaw = UnsafeRawBufferPointer(rebasing: raw[roomRange])
      guard let room = RoomID(json: roomRaw)?.name else { return }
      switch event {
      case "join-room": server.join(self, room: room)
      case "leave-room": server.leave(self, room: room)
      case "send-message":
        let text = string(raw, scan.nested[1]) ?? ""
        let sender = string(raw, scan.nested[2]) ?? "anonymous"
        server.broadcast(
          room: room,
          message: Envelope.message(
            room: room, text: text, sender: sender, clientID: string(raw, scan.nested[3])),
          sender: self)
      default:
        send(Array(#"{"event":"error","data":{"message":"unknown event"}}"#.utf8))
      }
    }
  }

  private func string(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>?) -> String? {
    guard let range, range.count >= 2, raw[range.lowerBound] == UInt8(ascii: "\"") else {
      return nil
    }
    return String(
      decoding: JSONString.unescape(
        UnsafeRawBufferPointer(rebasing: raw[(range.lowerBound + 1)..<(range.upperBound - 1)])),
      as: UTF8.self)
  }

  // MARK: Flood

  func startFlood(count: Int, size: Int, room: String) {
    let filler = String(repeating: "x", count: max(0, size - 120))
    flood = (count, Envelope.message(room: room, text: filler, sender: "flood", clientID: nil), 0)
    floodTimer = try? server.loop.makeTimer(accuracy: 1000) { [unowned self] in self.pumpFlood() }
    pumpFlood()
  }

  /// Writes flood frames while the socket keeps up, then waits a moment for it to drain.
  private func pumpFlood() {
    guard var state = flood, let session, session.state == .open else { return }
    var encoder = FrameEncoder()
    var batch: [UInt8] = []
    batch.reserveCapacity(1 << 20)
    while state.remaining > 0 && stream.pendingWriteCount < 4 << 20 && batch.count < 1 << 20 {
      encoder.encode(opcode: .text, payload: state.message, into: &batch)
      state.remaining -= 1
      state.counter += 1
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

  private func close(_ reason: String) {
    floodTimer?.cancel()
    let server = self.server
    // Closing from the loop keeps the stream alive until its callback returns.
    server.loop.post { [self] in
      self.stream.close()
      server.closed(self, reason)
    }
  }
}
