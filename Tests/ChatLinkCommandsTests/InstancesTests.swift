import ChatLinkAPI
import ChatLinkClient
import ChatLinkCommands
import Foundation
@preconcurrency import Glibc
import XCTest

final class InstancesTests: XCTestCase {
  private var directory = ""

  override func setUpWithError() throws {
    var template = Array("/tmp/chatlink-instances-XXXXXX".utf8CString)
    let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    directory = String(cString: try XCTUnwrap(made))
  }

  override func tearDown() {
    if let dir = opendir(directory) {
      while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
          String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        if name != "." && name != ".." { unlink(directory + "/" + name) }
      }
      closedir(dir)
    }
    rmdir(directory)
  }

  /// A Unix socket bound at `name`; listening (nobody accepts) or closed (left behind).
  @discardableResult
  private func socketFile(_ name: String, listening: Bool) throws -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let path = Array((directory + "/" + name).utf8)
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
    XCTAssertTrue(FileManager.default.createFile(atPath: directory + "/file.sock", contents: nil))
    let found = InstanceProbe.sockets(in: directory)
    XCTAssertEqual(found.map(\.instance), [nil, "prod", "staging"])
    XCTAssertEqual(found.first?.path, directory + "/control.sock")
    XCTAssertTrue(InstanceProbe.sockets(in: directory + "/missing").isEmpty)
  }

  func testASocketLeftBehindIsNotRunningAndASilentOneIsNotAnswering() throws {
    try socketFile("gone.sock", listening: false)
    let silent = try socketFile("hung.sock", listening: true)
    defer { close(silent) }
    let clock = ContinuousClock()
    let started = clock.now
    let reports = InstanceProbe.probe(directory: directory, timeout: .milliseconds(300))
    XCTAssertLessThan(clock.now - started, .seconds(3), "each waits at most its timeout")
    XCTAssertEqual(reports.map(\.instance), ["gone", "hung"])
    XCTAssertEqual(reports.map(\.problem), [.notRunning, .notAnswering])
    XCTAssertEqual(
      Format.json(reports[0].json),
      #"{"instance":"gone","socket":"\#(directory)/gone.sock","reachable":false,"#
        + #""problem":"not_running","error":"not running (nothing listens on the socket)"}"#)
  }

  func testTheTableAlignsReachableAndUnreachableInstances() {
    let reports = [
      report(nil, .open, outbox: 0), report("prod", .waiting, outbox: 12),
      InstanceReport(
        instance: "staging", socket: "/run/chatlink/staging.sock", problem: .notRunning,
        error: "not running (nothing listens on the socket)"),
    ]
    XCTAssertEqual(
      Format.instances(reports, directory: "/run/chatlink", colour: false),
      """
      INSTANCE  STATE        OUTBOX    IN  OUT  URL
      -         open              0  1200   38  wss://chat.example/ws
      prod      waiting          12  1200   38  wss://chat.example/ws
      staging   unreachable       -     -    -  not running (nothing listens on the socket)
      """)
    XCTAssertEqual(
      Format.instances([], directory: "/run/chatlink", colour: false),
      "No chatlinkd control sockets in /run/chatlink.")
  }

  func testTheJSONLineOfAReachableInstanceCarriesItsStatus() {
    let line = Format.json(report("prod", .open, outbox: 3).json)
    XCTAssertTrue(
      line.hasPrefix(
        #"{"instance":"prod","socket":"/run/chatlink/prod.sock","reachable":true,"status":{"#),
      line)
    XCTAssertTrue(line.contains(#""outbox":3"#), line)
    XCTAssertEqual(
      Format.json(report(nil, .open, outbox: 0).json).prefix(17), #"{"instance":null,"#)
  }
}
