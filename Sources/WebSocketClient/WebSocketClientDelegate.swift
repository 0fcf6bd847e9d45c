import WebSocket

/// Receives a client's events on the loop.
public protocol WebSocketClientDelegate: AnyObject {
  /// The handshake completed; messages may be sent.
  func webSocketDidOpen(_ client: WebSocketClient, handshake: ClientHandshake.Result)
  /// A complete message arrived; the delegate owns it (and may hand its memory back with
  /// `WebSocketClient.recycle`).
  func webSocket(_ client: WebSocketClient, didReceive message: consuming Message)
  /// A pong arrived.
  func webSocket(_ client: WebSocketClient, didReceivePong payload: [UInt8])
  /// A ping arrived (already answered).
  func webSocket(_ client: WebSocketClient, didReceivePing payload: [UInt8])
  /// The connection is over and its socket closed; the client can be dropped.
  func webSocket(_ client: WebSocketClient, didDisconnect reason: WebSocketClient.Disconnect)
  /// The attempt got further (for status lines).
  func webSocket(_ client: WebSocketClient, didReach progress: WebSocketClient.Progress)
}

extension WebSocketClientDelegate {
  public func webSocket(_ client: WebSocketClient, didReach progress: WebSocketClient.Progress) {}
  public func webSocket(_ client: WebSocketClient, didReceivePing payload: [UInt8]) {}
  public func webSocket(_ client: WebSocketClient, didReceivePong payload: [UInt8]) {}
}
