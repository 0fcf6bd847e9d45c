import JSON
import WebSocket

/// Sending on the open connection: every send lands in the connection's output buffer, and the
/// sends of one loop iteration leave in one write.
extension WebSocketClient {
  /// Sends a text message.
  public func send(text: String) throws(ClientConnection.SendError) {
    guard let connection else { throw .notOpen(.handshaking) }
    try connection.send(text: text)
    traffic?.messagesSent += 1
    scheduleFlush()
  }

  /// Sends a text message from UTF-8 bytes.
  public func send(text: UnsafeRawBufferPointer) throws(ClientConnection.SendError) {
    guard let connection else { throw .notOpen(.handshaking) }
    try connection.send(text: text)
    traffic?.messagesSent += 1
    scheduleFlush()
  }

  /// Takes back a received message the delegate is done with: its memory holds the next
  /// small frames' payloads. Optional; a message still referenced elsewhere is never changed.
  public func recycle(_ message: consuming Message) {
    // Kept until the frame being handled is done (`stream(_:didReceive:)` hands it on), where
    // the connection is at hand: loading it here would count a reference for every frame.
    spentMessage = consume message
  }

  /// Sends a message.
  public func send(_ message: Message) throws(ClientConnection.SendError) {
    guard let connection else { throw .notOpen(.handshaking) }
    try connection.send(message)
    traffic?.messagesSent += 1
    scheduleFlush()
  }

  /// Sends messages, in order: a run of them is one flush, not one per message.
  public func send(contentsOf messages: [Message]) throws(ClientConnection.SendError) {
    guard let connection else { throw .notOpen(.handshaking) }
    var queued = 0
    defer {
      traffic?.messagesSent += queued
      scheduleFlush()
    }
    try connection.send(contentsOf: messages, queued: &queued)
  }

  /// Sends text messages kept in one buffer, in order: one flush for the lot.
  public func send(texts: PackedStrings) throws(ClientConnection.SendError) {
    guard let connection else { throw .notOpen(.handshaking) }
    var queued = 0
    defer {
      traffic?.messagesSent += queued
      scheduleFlush()
    }
    try connection.send(texts: texts, queued: &queued)
  }

  /// Sends a ping.
  public func ping(_ payload: [UInt8] = []) throws(ClientConnection.SendError) {
    guard let connection else { throw .notOpen(.handshaking) }
    try connection.ping(payload)
    scheduleFlush()
  }
}
