import ChatLinkAPI
import ChatLinkClient
@preconcurrency import Glibc
import JSON
import TestSupport
import Varlink
import XCTest

/// The blocking connection under the client: pipelined replies, and every way a socket fails.
final class VarlinkConnectionTests: XCTestCase {
  func testPipelinedRepliesComeBackOneAtATimeInOrder() throws {
    let daemon = try FakeDaemon { call in [VarlinkReply(parameters: call.parameters)] }
    let connection = try VarlinkConnection(path: daemon.path)
    XCTAssertGreaterThanOrEqual(connection.fileDescriptor, 0)
    for n in 0..<50 {
      try connection.send(
        VarlinkCall(method: "test.Echo", parameters: .object([("n", .int(Int64(n)))])))
    }
    for n in 0..<50 {
      XCTAssertEqual(try connection.receive().parameters, .object([("n", .int(Int64(n)))]))
    }
    XCTAssertEqual(try connection.call("test.Echo", json(#"{"x":1}"#)), json(#"{"x":1}"#))
  }

  func testASocketNobodyListensOnIsUnreachable() {
    let directory = TemporaryDirectory()
    let path = directory.file("control.sock")
    XCTAssertThrowsError(try VarlinkConnection(path: path)) { error in
      XCTAssertEqual(error as? ClientError, .unreachable(path: path, errno: ENOENT))
    }
  }

  func testAPathTooLongForASocketIsRefusedBeforeConnecting() {
    let path = "/tmp/" + String(repeating: "x", count: 200) + ".sock"
    XCTAssertThrowsError(try VarlinkConnection(path: path)) { error in
      XCTAssertEqual(error as? ClientError, .unreachable(path: path, errno: ENAMETOOLONG))
    }
  }

  func testADaemonThatHangsUpLosesTheConnection() throws {
    let daemon = try FakeDaemon { _ in [] }
    XCTAssertThrowsError(try VarlinkConnection(path: daemon.path).call("test.Anything")) {
      error in
      XCTAssertEqual(error as? ClientError, .connectionLost("the daemon closed the connection"))
    }
  }

  func testADaemonSilentPastTheTimeoutLosesTheConnectionSayingSo() throws {
    let daemon = try FakeDaemon { _ in
      usleep(1_000_000)
      return []
    }
    let clock = ContinuousClock()
    let started = clock.now
    let connection = try VarlinkConnection(path: daemon.path, timeout: .milliseconds(200))
    XCTAssertThrowsError(try connection.call("test.Anything")) { error in
      XCTAssertEqual(error as? ClientError, .connectionLost("chatlinkd did not answer in time"))
    }
    XCTAssertLessThan(clock.now - started, .milliseconds(900))
  }

  func testAnUnreachableSocketNamesTheUnitThatServesIt() {
    func text(_ path: String, _ code: Int32 = ECONNREFUSED) -> String {
      ClientError.unreachable(path: path, errno: code).description
    }
    XCTAssertTrue(text(Instance.defaultSocket).hasSuffix("(systemctl start chatlinkd)"))
    XCTAssertTrue(
      text(Instance.runtimeDirectory + "/prod.sock").hasSuffix("(systemctl start chatlinkd@prod)"))
    XCTAssertTrue(text("/tmp/elsewhere.sock").hasSuffix("(systemctl start chatlinkd)"))
    XCTAssertTrue(text("/x", EACCES).hasSuffix("(are you in the socket's group, e.g. chatlink?)"))
    XCTAssertEqual(
      ClientError.connectionLost("eof").description, "connection to chatlinkd lost: eof")
    XCTAssertEqual(
      ClientError.protocolError("junk").description, "unexpected answer from chatlinkd: junk")
  }
}
