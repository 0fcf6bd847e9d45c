import ChatLinkAPI
import ChatLinkClient
@preconcurrency import Glibc
import TestSupport
import Varlink
import XCTest

/// Finding a runtime directory's control sockets and asking each for its status.
final class InstanceProbeTests: XCTestCase {
  private let directory = TemporaryDirectory(prefix: "chatlink-instances")

  /// A Unix socket bound at `name`; listening (nobody accepts) or closed (left behind).
  @discardableResult
  private func socketFile(_ name: String, listening: Bool) throws -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let path = Array(directory.file(name).utf8)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (i, b) in path.enumerated() { raw[i] = b }
      raw[path.count] = 0
    }
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    XCTAssertEqual(bound, 0)
    if listening {
      XCTAssertEqual(listen(fd, 8), 0)
    } else {
      close(fd)
    }
    return fd
  }

  private func report(_ instance: String?, _ state: DaemonState, outbox: Int) -> InstanceReport {
    let status = DaemonStatus(
      state: state, instance: instance, url: "wss://chat.example/ws", rooms: ["7"],
      lastError: state == .waiting ? "HTTP 503" : nil, received: 1200, sent: 40, confirmed: 38,
      connects: 1, outbox: outbox, lastSeq: 1240, durableSeq: 1240,
      storePath: "/var/lib/chatlink/messages.jsonl", version: "0.1.0")
    let socket = "/run/chatlink/\(instance ?? "control").sock"
    return InstanceReport(instance: instance, socket: socket, status: Received(status))
  }

  func testSocketsAreFoundThePlainServiceFirstAndOtherFilesLeftOut() throws {
    try socketFile("staging.sock", listening: false)
    try socketFile("control.sock", listening: false)
    try socketFile("prod.sock", listening: false)
    try socketFile("not-a-socket-name", listening: false)
    directory.write("file.sock", "")
    let found = InstanceProbe.sockets(in: directory.path)
    XCTAssertEqual(found.map(\.instance), [nil, "prod", "staging"])
    XCTAssertEqual(found.first?.path, directory.path + "/control.sock")
    XCTAssertTrue(InstanceProbe.sockets(in: directory.path + "/missing").isEmpty)
  }

  func testASocketLeftBehindIsNotRunningAndASilentOneIsNotAnswering() throws {
    try socketFile("gone.sock", listening: false)
    let silent = try socketFile("hung.sock", listening: true)
    defer { close(silent) }
    let clock = ContinuousClock()
    let started = clock.now
    let reports = InstanceProbe.probe(directory: directory.path, timeout: .milliseconds(300))
    XCTAssertLessThan(clock.now - started, .seconds(3), "each waits at most its timeout")
    XCTAssertEqual(reports.map(\.instance), ["gone", "hung"])
    XCTAssertEqual(reports.map(\.problem), [.notRunning, .notAnswering])
    XCTAssertEqual(
      reports[0].json.description,
      #"{"instance":"gone","socket":"\#(directory.path)/gone.sock","reachable":false,"#
        + #""problem":"not_running","error":"not running (nothing listens on the socket)"}"#)
  }

  func testADaemonThatAnswersIsReachableWithItsStatusAsItCame() throws {
    let status = try XCTUnwrap(report("prod", .open, outbox: 3).status)
    let daemon = try FakeDaemon(["GetStatus": .object(["status": status.json])])
    let probed = InstanceProbe.probe(instance: "prod", socket: daemon.path, timeout: .seconds(5))
    XCTAssertEqual(probed.status, status)
    XCTAssertNil(probed.problem)
    XCTAssertNil(probed.error)
  }

  func testADaemonThatRefusesThisUserIsPermissionDenied() throws {
    let daemon = try FakeDaemon { _ in [VarlinkReply(.permissionDenied)] }
    let probed = InstanceProbe.probe(instance: nil, socket: daemon.path, timeout: .seconds(5))
    XCTAssertEqual(probed.problem, .permissionDenied)
    XCTAssertEqual(
      probed.error, "permission denied (join the socket's group, e.g. chatlink)")
  }

  func testAnAnswerThatIsNotAStatusIsAFailureSayingWhy() throws {
    let daemon = try FakeDaemon(["GetStatus": json(#"{"status":{"state":5}}"#)])
    let probed = InstanceProbe.probe(instance: "odd", socket: daemon.path, timeout: .seconds(5))
    XCTAssertEqual(probed.problem, .failed)
    XCTAssertEqual(
      probed.error, "unexpected answer from chatlinkd: status.state must be a string")
  }

  func testTheJSONLineOfAReachableInstanceCarriesItsStatus() {
    let line = report("prod", .open, outbox: 3).json.description
    XCTAssertTrue(
      line.hasPrefix(
        #"{"instance":"prod","socket":"/run/chatlink/prod.sock","reachable":true,"status":{"#),
      line)
    XCTAssertTrue(line.contains(#""outbox":3"#), line)
    XCTAssertEqual(
      report(nil, .open, outbox: 0).json.description.prefix(17), #"{"instance":null,"#)
  }
}
