import ChatLinkAPI
import ChatLinkClient
import ChatLinkCommands
import XCTest

/// `chatlinkctl instances`: the table of every instance found.
final class InstancesTests: XCTestCase {
  private func report(_ instance: String?, _ state: DaemonState, outbox: Int) -> InstanceReport {
    let status = DaemonStatus(
      state: state, instance: instance, url: "wss://chat.example/ws", rooms: ["7"],
      lastError: state == .waiting ? "HTTP 503" : nil, received: 1200, sent: 40, confirmed: 38,
      connects: 1, outbox: outbox, lastSeq: 1240, durableSeq: 1240,
      storePath: "/var/lib/chatlink/messages.jsonl", version: "0.1.0")
    let socket = "/run/chatlink/\(instance ?? "control").sock"
    return InstanceReport(instance: instance, socket: socket, status: Received(status))
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
}
