import ChatLinkClient
import ChatLinkCommands
@preconcurrency import Glibc
import JSON
import TestSupport
import Varlink
import XCTest

final class ExitStatusTests: XCTestCase {
  func testAMissingOrRefusingSocketMeansTheDaemonIsUnreachable() {
    XCTAssertEqual(ExitStatus.code(for: .unreachable(path: "/x", errno: ENOENT)), 3)
    XCTAssertEqual(ExitStatus.code(for: .unreachable(path: "/x", errno: ECONNREFUSED)), 3)
  }

  func testASocketThisUserMayNotOpenMeansPermissionDenied() {
    XCTAssertEqual(ExitStatus.code(for: .unreachable(path: "/x", errno: EACCES)), 4)
    XCTAssertTrue(
      ExitStatus.message(for: .unreachable(path: "/x", errno: EACCES)).contains(
        "cannot connect to /x: Permission denied"))
  }

  func testTheDaemonsPermissionDeniedErrorMeansPermissionDenied() {
    XCTAssertEqual(ExitStatus.code(for: .varlink(.permissionDenied)), 4)
  }

  func testOtherVarlinkErrorsAndBrokenConnectionsAreFailures() {
    XCTAssertEqual(
      ExitStatus.code(for: .varlink(.named("io.chatlink.Daemon.OutboxFull", .null))), 1)
    XCTAssertEqual(ExitStatus.code(for: .connectionLost("eof")), 1)
    XCTAssertEqual(ExitStatus.code(for: .protocolError("junk")), 1)
  }

  func testDaemonErrorsAreWordedForPeople() {
    func message(_ name: String, _ parameters: String) -> String {
      ExitStatus.message(for: .varlink(VarlinkError(name: name, parameters: json(parameters))))
    }
    XCTAssertEqual(
      message("io.chatlink.Daemon.StorageFailed", #"{"reason":"No space left on device"}"#),
      "chatlinkd could not store the request: No space left on device")
    XCTAssertEqual(
      message(
        "io.chatlink.Daemon.InvalidParameter", #"{"parameter":"room","reason":"unknown room"}"#),
      "chatlinkd refused the parameter 'room': unknown room")
    XCTAssertEqual(
      message("org.varlink.service.MethodNotFound", #"{"method":"io.chatlink.Daemon.Ping"}"#),
      "chatlinkd does not implement io.chatlink.Daemon.Ping (is it an older version than chatlinkctl?)"
    )
    XCTAssertEqual(message("com.example.Other", "{}"), "com.example.Other")
  }
}
