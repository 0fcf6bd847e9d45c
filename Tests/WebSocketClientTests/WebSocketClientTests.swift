import EventLoop
import Foundation
import TestSupport
import Transport
import WebSocket
import WebSocketClient
import XCTest

/// The engine against Python `websockets` over real sockets, ws and wss.
final class WebSocketClientTests: XCTestCase {
  private var loop: EventLoop!
  private var resolver: Resolver!

  override func setUpWithError() throws {
    loop = try EventLoop()
    resolver = try Resolver(loop: loop)
  }

  private func client(
    _ url: String, caFile: String? = nil, headers: HTTPHeaders = HTTPHeaders(),
    subprotocols: [String] = [], proxy: ProxyAddress? = nil
  ) throws -> (WebSocketClient, ClientRecorder) {
    let parsed = try WebSocketURL(parsing: url)
    let tls = parsed.secure ? try TLSContext.make(TLSConfiguration(caFile: caFile)) : nil
    let client = WebSocketClient(
      loop: loop, resolver: resolver, tlsContext: tls,
      configuration: WebSocketClient.Configuration(
        url: parsed, headers: headers, subprotocols: subprotocols, connectTimeout: 5_000_000,
        proxy: proxy))
    let recorder = ClientRecorder()
    client.delegate = recorder
    return (client, recorder)
  }

  private func disconnectReason(_ url: String, caFile: String? = nil) throws
    -> WebSocketClient.Disconnect
  {
    let (client, recorder) = try client(url, caFile: caFile)
    client.connect()
    try spin(loop) { recorder.disconnect != nil }
    XCTAssertNil(recorder.opened)
    return try XCTUnwrap(recorder.disconnect)
  }

  func testEchoesTextAndBinaryWithDeflateAndCustomHeadersThroughPythonWebsockets() throws {
    let server = try PythonServer(["--subprotocols", "chat.v2", "--subprotocols-optional"])
    let (client, recorder) = try client(
      "ws://127.0.0.1:\(server.port)/room?x=1",
      headers: ["Authorization": "Bearer test-token", "Origin": "https://chatlink.test"],
      subprotocols: ["chat.v2"])
    let big = String(repeating: "compressible chat line ", count: 5000)
    recorder.onOpen = { client in
      try? client.send(text: "héllo")
      try? client.send(.binary([0, 1, 2, 255]))
      try? client.send(text: big)
      try? client.send(text: "__headers__")
    }
    client.connect()
    try spin(loop) { recorder.messages.count == 4 }
    XCTAssertEqual(recorder.opened?.subprotocol, "chat.v2")
    // websockets answers the offer with 12-bit windows both ways.
    XCTAssertEqual(recorder.opened?.deflate?.clientMaxWindowBits, 12)
    XCTAssertEqual(recorder.messages[0], .text(Array("héllo".utf8)))
    XCTAssertEqual(recorder.messages[1], .binary([0, 1, 2, 255]))
    XCTAssertEqual(recorder.messages[2].text, big)
    let info =
      try JSONSerialization.jsonObject(with: Data(recorder.messages[3].bytes)) as? [String: Any]
    let headers = info?["headers"] as? [String: String]
    XCTAssertEqual(info?["path"] as? String, "/room?x=1")
    XCTAssertEqual(headers?["authorization"], "Bearer test-token")
    XCTAssertEqual(headers?["origin"], "https://chatlink.test")
    XCTAssertEqual(
      headers?["sec-websocket-extensions"], "permessage-deflate; client_max_window_bits")
    client.close(code: .normalClosure, reason: "done")
    try spin(loop) { recorder.disconnect != nil }
    guard case .closed(let close) = recorder.disconnect else {
      return XCTFail("\(String(describing: recorder.disconnect))")
    }
    XCTAssertEqual(close.code, .normalClosure)
    XCTAssertTrue(close.clean)
  }

  func testServerCloseCodesAndDroppedConnectionsAreReported() throws {
    let server = try PythonServer([])
    let (client, recorder) = try client("ws://127.0.0.1:\(server.port)/")
    recorder.onOpen = { try? $0.send(text: "__close__ 1012 restarting") }
    client.connect()
    try spin(loop) { recorder.disconnect != nil }
    guard case .closed(let info) = recorder.disconnect else { return XCTFail() }
    XCTAssertEqual(info.code, .serviceRestart)
    XCTAssertEqual(info.reason, "restarting")
    XCTAssertEqual(info.initiator, .peer)

    let (dropped, dropRecorder) = try self.client("ws://127.0.0.1:\(server.port)/")
    dropRecorder.onOpen = { try? $0.send(text: "__drop__") }
    dropped.connect()
    try spin(loop) { dropRecorder.disconnect != nil }
    switch dropRecorder.disconnect {
    case .closed(let info): XCTAssertEqual(info.code, .abnormalClosure)
    case .transportFailed: break
    default: XCTFail("\(String(describing: dropRecorder.disconnect))")
    }
  }

  func testIPv6LoopbackWorks() throws {
    let server = try PythonServer(["--host", "::1"])
    let (client, recorder) = try client("ws://[::1]:\(server.port)/")
    recorder.onOpen = { try? $0.send(text: "v6") }
    client.connect()
    try spin(loop) { recorder.messages.count == 1 }
    XCTAssertTrue(client.peerDescription?.hasPrefix("[::1]:") ?? false)
  }

  func testRefusedUpgradesSurfaceStatusAndHeaders() throws {
    for (status, check) in [
      (
        401,
        { (head: HTTPResponseHead) in XCTAssertNotNil(head.headers[first: "WWW-Authenticate"]) }
      ),
      (403, { (_: HTTPResponseHead) in }),
      (503, { (head: HTTPResponseHead) in XCTAssertEqual(head.retryAfter, .seconds(7)) }),
      (
        302,
        { (head: HTTPResponseHead) in XCTAssertEqual(head.location, "ws://127.0.0.1:1/elsewhere") }
      ),
    ] {
      let server = try PythonServer(["--mode", "status", String(status)])
      let reason = try disconnectReason("ws://127.0.0.1:\(server.port)/")
      guard case .handshakeFailed(.unexpectedStatus(let head)) = reason else {
        XCTFail("\(status): \(reason)")
        continue
      }
      XCTAssertEqual(head.status, status)
      check(head)
    }
  }

  func testWSSConnectsWithTheTestCAAndNegotiatesModernTLS() throws {
    let server = try PythonServer(["--tls", "valid"])
    for host in ["localhost", "127.0.0.1"] {
      let (client, recorder) = try client("wss://\(host):\(server.port)/", caFile: server.caFile)
      recorder.onOpen = { try? $0.send(text: "secure") }
      client.connect()
      try spin(loop) { recorder.messages.count == 1 || recorder.disconnect != nil }
      XCTAssertEqual(
        recorder.messages.first?.text, "secure", "\(String(describing: recorder.disconnect))")
      XCTAssertTrue(client.peerDescription?.contains("TLSv1.") ?? false)
    }
  }

  func testWSSRefusesAWrongHostnameAnUnknownCAAndAnExpiredCertificate() throws {
    let wrong = try PythonServer(["--tls", "wronghost"])
    for host in ["localhost", "127.0.0.1"] {
      let reason = try disconnectReason("wss://\(host):\(wrong.port)/", caFile: wrong.caFile)
      guard case .transportFailed(.certificateRejected(.hostnameMismatch(let named))) = reason
      else {
        XCTFail("\(host): \(reason)")
        continue
      }
      XCTAssertEqual(named, host)
      XCTAssertTrue("\(reason)".contains("hostname mismatch"))
    }
    let unknown = try PythonServer(["--tls", "unknownca"])
    let unknownReason = try disconnectReason(
      "wss://localhost:\(unknown.port)/", caFile: unknown.caFile)
    guard case .transportFailed(.certificateRejected(.unknownAuthority)) = unknownReason else {
      return XCTFail("\(unknownReason)")
    }
    XCTAssertTrue("\(unknownReason)".contains("unknown CA"))
    // Without a CA file the system store applies, which does not trust the test CA either.
    let systemReason = try disconnectReason("wss://localhost:\(unknown.port)/")
    guard case .transportFailed(.certificateRejected(.unknownAuthority)) = systemReason else {
      return XCTFail("\(systemReason)")
    }
    let expired = try PythonServer(["--tls", "expired"])
    let expiredReason = try disconnectReason(
      "wss://localhost:\(expired.port)/", caFile: expired.caFile)
    guard case .transportFailed(.certificateRejected(.expired)) = expiredReason else {
      return XCTFail("\(expiredReason)")
    }
    XCTAssertTrue("\(expiredReason)".contains("expired"))
  }

  func testPlaintextToATLSPortFailsTheHandshakeRatherThanHanging() throws {
    let server = try PythonServer(["--tls", "valid"])
    let reason = try disconnectReason("ws://127.0.0.1:\(server.port)/")
    switch reason {
    case .handshakeFailed, .transportFailed: break
    default: XCTFail("\(reason)")
    }
  }

  func testConnectsThroughAnHTTPConnectProxyForWSAndWSS() throws {
    let proxy = try PythonServer([], script: "connect_proxy.py")
    let address = ProxyAddress(host: "127.0.0.1", port: proxy.port)
    let plain = try PythonServer([])
    let secure = try PythonServer(["--tls", "valid"])
    for (url, ca) in [
      ("ws://127.0.0.1:\(plain.port)/", nil), ("wss://localhost:\(secure.port)/", secure.caFile),
    ] {
      let (client, recorder) = try client(url, caFile: ca, proxy: address)
      recorder.onOpen = { try? $0.send(text: "tunnelled") }
      client.connect()
      try spin(loop) { recorder.messages.count == 1 || recorder.disconnect != nil }
      XCTAssertEqual(
        recorder.messages.first?.text, "tunnelled",
        "\(url): \(String(describing: recorder.disconnect))")
      XCTAssertTrue(client.peerDescription?.contains("via proxy") ?? false)
    }
    let log = proxy.stderrText()
    XCTAssertTrue(log.contains("CONNECT 127.0.0.1:\(plain.port) HTTP/1.1"), log)
    XCTAssertTrue(log.contains("CONNECT localhost:\(secure.port) HTTP/1.1"), log)
  }

  func testAProxyThatRefusesTheTunnelIsAClearError() throws {
    let proxy = try PythonServer(["--refuse", "407"], script: "connect_proxy.py")
    let (client, recorder) = try client(
      "ws://127.0.0.1:9/", proxy: ProxyAddress(host: "127.0.0.1", port: proxy.port))
    client.connect()
    try spin(loop) { recorder.disconnect != nil }
    guard case .transportFailed(.proxyFailed(let why)) = recorder.disconnect else {
      return XCTFail("\(String(describing: recorder.disconnect))")
    }
    XCTAssertTrue(why.contains("407"), why)
  }
}
