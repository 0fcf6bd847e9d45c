import WebSocket
import WebSocketClient

/// Records a client's events.
final class ClientRecorder: WebSocketClientDelegate {
  var opened: ClientHandshake.Result?
  var messages: [Message] = []
  var disconnect: WebSocketClient.Disconnect?
  var onOpen: ((WebSocketClient) -> Void)?

  func webSocketDidOpen(_ client: WebSocketClient, handshake: ClientHandshake.Result) {
    opened = handshake
    onOpen?(client)
  }
  func webSocket(_ client: WebSocketClient, didReceive message: consuming Message) {
    messages.append(message)
  }
  func webSocket(_ client: WebSocketClient, didDisconnect reason: WebSocketClient.Disconnect) {
    disconnect = reason
  }
}
