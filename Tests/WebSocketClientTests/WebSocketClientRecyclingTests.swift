import EventLoop
import TestSupport
import Transport
import WebSocket
import WebSocketClient
import XCTest

/// Hands every message back with `recycle` (keeping some), and notes where each payload lives.
private final class RecyclingRecorder: WebSocketClientDelegate {
  var texts: [String] = []
  var addresses: [UInt] = []
  var kept: [Message] = []
  var blockers: [[UInt8]] = []
  /// Which messages (by position) to keep as well as recycle.
  var keep: Set<Int> = []
  var onOpen: ((WebSocketClient) -> Void)?
  var disconnect: WebSocketClient.Disconnect?

  func webSocketDidOpen(_ client: WebSocketClient, handshake: ClientHandshake.Result) {
    onOpen?(client)
  }
  func webSocket(_ client: WebSocketClient, didReceive message: consuming Message) {
    texts.append(message.text ?? "")
    addresses.append(message.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) })
    if keep.contains(texts.count - 1) { kept.append(copy message) }
    let capacity = message.bytes.capacity
    client.recycle(message)
    // Memory of the same size, taken now: had the message been freed instead of kept for
    // reuse, this would get its block, and the next message other memory.
    blockers.append(Array(repeating: 0, count: capacity))
  }
  func webSocket(_ client: WebSocketClient, didDisconnect reason: WebSocketClient.Disconnect) {
    disconnect = reason
  }
}

/// A message handed back with `recycle` lends its memory to the next ones, through Python
/// `websockets` over a real socket; one the delegate still holds is never written over.
final class WebSocketClientRecyclingTests: XCTestCase {
  private func echo(_ texts: [String], compression: Bool, keep: Set<Int>) throws
    -> RecyclingRecorder
  {
    let loop = try EventLoop()
    let resolver = try Resolver(loop: loop)
    let server = try PythonServer([])
    let client = WebSocketClient(
      loop: loop, resolver: resolver, tlsContext: nil,
      configuration: WebSocketClient.Configuration(
        url: try WebSocketURL(parsing: "ws://127.0.0.1:\(server.port)/"),
        deflate: compression ? PerMessageDeflateOptions() : nil, connectTimeout: 5_000_000))
    let recorder = RecyclingRecorder()
    recorder.keep = keep
    client.delegate = recorder
    // One at a time: each echo arrives in a read of its own, after the one before was handed
    // back.
    var next = 0
    recorder.onOpen = { client in
      try? client.send(text: texts[0])
      next = 1
    }
    client.connect()
    try spin(loop) { next == 1 }
    while next < texts.count {
      let expected = next
      try spin(loop) { recorder.texts.count == expected }
      try client.send(text: texts[next])
      next += 1
    }
    try spin(loop) { recorder.texts.count == texts.count }
    client.close(code: .normalClosure, reason: "done")
    try spin(loop) { recorder.disconnect != nil }
    return recorder
  }

  func testARecycledMessagesMemoryCarriesTheNextMessagesWithAndWithoutCompression() throws {
    let texts = ["the first message, the longest", "second", "third", "4th"]
    for compression in [false, true] {
      let recorder = try echo(texts, compression: compression, keep: [])
      XCTAssertEqual(recorder.texts, texts, "compression \(compression)")
      // Every message after the first (with compression: the second, which is the first
      // inflated into recycled memory) lives where the one before it did.
      let reused = recorder.addresses.dropFirst(compression ? 1 : 0)
      XCTAssertEqual(Set(reused), [reused.first!], "compression \(compression)")
    }
  }

  func testAMessageTheDelegateStillHoldsIsNeverWrittenOver() throws {
    let texts = ["kept message one", "overwriting attempt", "and another one"]
    for compression in [false, true] {
      let recorder = try echo(texts, compression: compression, keep: [0])
      XCTAssertEqual(recorder.texts, texts)
      XCTAssertEqual(recorder.kept, [.text(Array(texts[0].utf8))], "compression \(compression)")
      XCTAssertNotEqual(recorder.addresses[1], recorder.addresses[0])
    }
  }
}
