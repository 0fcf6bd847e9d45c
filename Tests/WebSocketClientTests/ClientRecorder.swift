import JSON
import WebSocket
import WebSocketClient

/// Records a client's events.
final class ClientRecorder: WebSocketClientDelegate {
  var opened: ClientHandshake.Result?
  var messages: [Message] = []
  /// The client's `receivedAt` as each message was delivered.
  var receiveTimes: [Timestamp] = []
  var pings: [[UInt8]] = []
  var pongs: [[UInt8]] = []
  var progress: [WebSocketClient.Progress] = []
  var disconnect: WebSocketClient.Disconnect?
  var onOpen: ((WebSocketClient) -> Void)?

  func webSocketDidOpen(_ client: WebSocketClient, handshake: ClientHandshake.Result) {
    opened = handshake
    onOpen?(client)
  }
  func webSocket(_ client: WebSocketClient, didReceive message: consuming Message) {
    messages.append(message)
    receiveTimes.append(client.receivedAt)
  }
  func webSocket(_ client: WebSocketClient, didReceivePing payload: [UInt8]) {
    pings.append(payload)
  }
  func webSocket(_ client: WebSocketClient, didReceivePong payload: [UInt8]) {
    pongs.append(payload)
  }
  func webSocket(_ client: WebSocketClient, didReach progress: WebSocketClient.Progress) {
    self.progress.append(progress)
  }
  func webSocket(_ client: WebSocketClient, didDisconnect reason: WebSocketClient.Disconnect) {
    disconnect = reason
  }
}
