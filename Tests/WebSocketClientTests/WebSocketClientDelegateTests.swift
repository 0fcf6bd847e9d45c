import EventLoop
import TestSupport
import Transport
import WebSocket
import WebSocketClient
import XCTest

/// The client holds its delegate once per read: a delegate set while a read's messages are
/// delivered must still get the rest of them.
final class WebSocketClientDelegateTests: XCTestCase {
  final class Recorder: WebSocketClientDelegate {
    var messages: [String] = []
    var opened = false
    var onMessage: ((WebSocketClient) -> Void)?
    func webSocketDidOpen(_ client: WebSocketClient, handshake: ClientHandshake.Result) {
      opened = true
    }
    func webSocket(_ client: WebSocketClient, didReceive message: consuming Message) {
      messages.append(message.text ?? "")
      onMessage?(client)
    }
    func webSocket(_ client: WebSocketClient, didDisconnect reason: WebSocketClient.Disconnect) {}
  }

  func testADelegateSetDuringAReadGetsTheRestOfItsMessages() throws {
    let loop = try EventLoop()
    let backend = try TestBackend(loop: loop)
    let client = WebSocketClient(
      loop: loop, resolver: try Resolver(loop: loop), tlsContext: nil,
      configuration: WebSocketClient.Configuration(url: backend.url))
    let first = Recorder()
    let second = Recorder()
    first.onMessage = { client in client.delegate = second }
    client.delegate = first
    client.connect()
    try spin(loop) { first.opened }
    backend.current?.sendTogether(["one", "two", "three"])
    try spin(loop) { second.messages.count == 2 }
    XCTAssertEqual(first.messages, ["one"])
    XCTAssertEqual(second.messages, ["two", "three"])
    // And a delegate taken away gets nothing more, even within one read.
    second.onMessage = { client in client.delegate = nil }
    backend.current?.sendTogether(["four", "five"])
    try spin(loop) { second.messages.count == 3 }
    try spin(loop, for: 100_000)
    XCTAssertEqual(second.messages, ["two", "three", "four"])
    XCTAssertEqual(first.messages, ["one"])
  }
}
