import EventLoop
@preconcurrency import Glibc
import TestSupport
import Transport
import XCTest

final class ConnectorTests: XCTestCase {
  private func connect(
    _ loop: EventLoop, host: String, port: Int, timeout: Microseconds = 3_000_000
  ) throws -> Result<SocketStream, TransportError> {
    let resolver = try Resolver(loop: loop)
    let connector = Connector(
      loop: loop, resolver: resolver, endpoint: Endpoint(host: host, port: port, useTLS: false),
      tlsContext: nil, timeout: timeout)
    var result: Result<SocketStream, TransportError>?
    connector.start { result = $0 }
    try spin(loop, timeout: timeout + 2_000_000) { result != nil }
    return try XCTUnwrap(result)
  }

  func testConnectsToIPv4AndIPv6LoopbackLiterals() throws {
    let loop = try EventLoop()
    for host in ["127.0.0.1", "::1"] {
      let listener = try LoopbackListener(host: host)
      try listener.acceptOnLoop(loop)
      let stream = try connect(loop, host: host, port: listener.port).get()
      XCTAssertTrue(stream.peerDescription.contains(host), stream.peerDescription)
      stream.close()
    }
  }

  /// "localhost" resolves off the loop (through the worker thread).
  func testResolvesHostNamesOffTheLoop() throws {
    let loop = try EventLoop()
    let listener = try LoopbackListener(host: "127.0.0.1")
    try listener.acceptOnLoop(loop)
    let stream = try connect(loop, host: "localhost", port: listener.port).get()
    XCTAssertTrue(stream.peerDescription.hasPrefix("127.0.0.1:"))
  }

  func testRefusedConnectionsNameEveryAddressTried() throws {
    let loop = try EventLoop()
    // Bind then close to find a port nobody listens on.
    let port = try LoopbackListener().port
    let result = try connect(loop, host: "127.0.0.1", port: port)
    guard case .failure(.connectFailed(let host, let failedPort, let attempts)) = result else {
      return XCTFail("\(result)")
    }
    XCTAssertEqual(host, "127.0.0.1")
    XCTAssertEqual(failedPort, port)
    XCTAssertEqual(attempts.count, 1)
    XCTAssertTrue(attempts[0].contains("Connection refused"), attempts[0])
  }

  func testUnknownHostsFailWithTheResolverMessage() throws {
    let loop = try EventLoop()
    let result = try connect(loop, host: "no-such-host.invalid", port: 80, timeout: 8_000_000)
    switch result {
    case .failure(.resolutionFailed(let host, let reason)):
      XCTAssertEqual(host, "no-such-host.invalid")
      XCTAssertFalse(reason.isEmpty)
    case .failure(.timedOut(let phase, _)):
      XCTAssertEqual(phase, "resolving")  // no DNS server reachable: still bounded
    default:
      XCTFail("\(result)")
    }
  }

  /// A listener whose accept queue is full drops SYNs: connect hangs until our deadline.
  func testConnectTimesOutWhenTheServerNeverAnswers() throws {
    let loop = try EventLoop()
    let listener = try LoopbackListener(backlog: 0)
    var fillers: [Int32] = []
    defer { for fd in fillers { close(fd) } }
    // Fill the accept queue without ever accepting.
    for _ in 0..<4 {
      let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
      var addr = sockaddr_in()
      addr.sin_family = sa_family_t(AF_INET)
      addr.sin_port = in_port_t(UInt16(listener.port).bigEndian)
      inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
      _ = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
      }
      fillers.append(fd)
    }
    usleep(100_000)
    let result = try connect(loop, host: "127.0.0.1", port: listener.port, timeout: 700_000)
    guard case .failure(.timedOut(let phase, let seconds)) = result else {
      return XCTFail("\(result)")
    }
    XCTAssertEqual(phase, "connecting")
    XCTAssertEqual(seconds, 0.7, accuracy: 0.001)
  }

  func testInterleavingAlternatesFamiliesStartingWithTheFirst() throws {
    let v6a = try XCTUnwrap(SocketAddress(ipLiteral: "::1", port: 1))
    let v6b = try XCTUnwrap(SocketAddress(ipLiteral: "::2", port: 1))
    let v4a = try XCTUnwrap(SocketAddress(ipLiteral: "127.0.0.1", port: 1))
    let v4b = try XCTUnwrap(SocketAddress(ipLiteral: "127.0.0.2", port: 1))
    XCTAssertEqual(SocketAddress.interleaved([v6a, v6b, v4a, v4b]), [v6a, v4a, v6b, v4b])
    XCTAssertEqual(SocketAddress.interleaved([v4a, v6a, v6b]), [v4a, v6a, v6b])
    XCTAssertEqual(v6a.description, "[::1]:1")
    XCTAssertTrue(SocketAddress.isIPLiteral("::1"))
    XCTAssertFalse(SocketAddress.isIPLiteral("localhost"))
  }
}
