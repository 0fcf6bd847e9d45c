import ChatLinkAPI
import EventLoop
@preconcurrency import Glibc
import JSON
import LinkCore
import TestSupport
import Varlink
import XCTest

@testable import ChatLinkDaemon

/// A daemon as the control service sees it, with no backend, store or outbox behind it: it
/// records what it is asked and answers from its fields. Completions run from the loop, later,
/// as the real outbox and reader answer.
final class FakeTarget: ControlTarget {
  private let loop: EventLoop

  var status = DaemonStatus(
    state: .open, url: "ws://127.0.0.1:8765/", rooms: ["7", "ops"], received: 12, sent: 3,
    confirmed: 3, connects: 1, outbox: 0, lastSeq: 42, durableSeq: 42,
    storePath: "/var/lib/chatlink/messages.jsonl", version: "0.1.0")
  var rooms = ["7", "ops"]
  var hasRooms = true
  var defaultRoom = RoomID("7")
  var storeFailure: String?
  var metrics = "# TYPE chatlink_connects counter\nchatlink_connects_total 1\n# EOF\n"
  /// The formats GetMetrics asked for.
  var metricsFormats: [OpenMetricsRenderer.Format] = []
  func metricsText(_ format: OpenMetricsRenderer.Format) -> String {
    metricsFormats.append(format)
    return metrics
  }
  /// What Ping answers.
  var ping: Result<Duration, DaemonError> = .success(.microseconds(1250))
  /// What History answers.
  var records: Result<[StoredRecord], DaemonError> = .success([])
  /// The most messages queued; more are refused with OutboxFull.
  var outboxLimit = 1000

  private(set) var joined: [RoomID] = []
  private(set) var left: [RoomID] = []
  private(set) var reconnects = 0
  private(set) var queued: [(room: RoomID?, text: String, id: String)] = []
  private(set) var queries: [HistoryQuery] = []

  init(loop: EventLoop) {
    self.loop = loop
  }

  func join(_ room: RoomID) {
    joined.append(room)
  }

  func leave(_ room: RoomID) {
    left.append(room)
  }

  func reconnect(reason: String) {
    reconnects += 1
  }

  func ping(completion: @escaping (Result<Duration, DaemonError>) -> Void) {
    let answer = ping
    loop.post { completion(answer) }
  }

  func enqueue(
    room: RoomID?, text: String, id: String?,
    completion: @escaping (Result<SendReceipt, DaemonError>) -> Void
  ) {
    let result = add(room: room, texts: [text], id: id).map {
      SendReceipt(id: $0[$0.startIndex].id, state: .queued, count: Int($0[$0.startIndex].count))
    }
    loop.post { completion(result) }
  }

  func enqueue(
    room: RoomID?, texts: PackedStrings, waitForRoom: Bool,
    completion: @escaping (Result<ArraySlice<OutboxEntry>, DaemonError>) -> Void
  ) {
    batchesWaitingForRoom.append(waitForRoom)
    let result = add(room: room, texts: texts, id: nil)
    guard !holdsBatches else {
      heldBatch = { completion(result) }
      return
    }
    loop.post { completion(result) }
  }

  /// Each SendBatch's `waitForRoom`, in order.
  var batchesWaitingForRoom: [Bool] = []

  /// Keep SendBatch's completion in `heldBatch` (the outbox's fsync not yet done) instead of
  /// answering on the next loop iteration.
  var holdsBatches = false
  /// The held SendBatch completion: calling it is the batch becoming durable.
  var heldBatch: (() -> Void)?

  /// Queues texts with ids id1, id2, … (or `id`), and counts from 1.
  private func add(room: RoomID?, texts: PackedStrings, id: String?)
    -> Result<ArraySlice<OutboxEntry>, DaemonError>
  {
    guard queued.count + texts.count <= outboxLimit else {
      return .failure(.outboxFull(limit: outboxLimit))
    }
    let first = queued.count + 1
    for (offset, text) in texts.enumerated() {
      queued.append((room, text, id ?? "id\(first + offset)"))
    }
    let ids = queued[(first - 1)...].map { ClientID.given($0.id) }
    return .success(
      OutboxEntry.batch(
        room: room, texts: texts, ids: ids, firstCount: UInt64(first), created: .now())[...])
  }

  func history(
    _ query: HistoryQuery, completion: @escaping (Result<[StoredRecord], DaemonError>) -> Void
  ) {
    queries.append(query)
    let answer = records
    loop.post { completion(answer) }
  }
}

/// A control socket in a temporary directory, served on a real loop by a `ControlService`
/// over a `FakeTarget`.
final class ControlFixture {
  let directory = TemporaryDirectory()
  let loop: EventLoop
  let server: ControlServer
  let target: FakeTarget
  let service: ControlService

  init() throws {
    loop = try EventLoop()
    server = try ControlServer(
      loop: loop, path: directory.path + "/control.sock", mode: 0o600,
      groupName: "chatlink-test-no-such-group", inheritedFD: nil,
      logger: Logger(label: "test", level: .critical))
    target = FakeTarget(loop: loop)
    service = ControlService(server: server, target: target)
  }

  /// A client of the socket; with `readOnly`, one the server serves as an outsider.
  func client(readOnly: Bool = false) throws -> ControlTestClient {
    server.access = { _ in readOnly ? .readOnly : .full }
    return try ControlTestClient(path: directory.path + "/control.sock", loop: loop)
  }
}

/// A small Varlink client for tests, on the test's thread: it writes calls, and spins the
/// loop (which serves the socket) until a whole reply has arrived.
final class ControlTestClient {
  private let fd: Int32
  private let loop: EventLoop
  private var received: [UInt8] = []

  init(path: String, loop: EventLoop) throws {
    self.loop = loop
    fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (i, byte) in path.utf8.enumerated() { raw[i] = byte }
    }
    let rc = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard rc == 0 else { throw XCTSkip("cannot connect to \(path): errno \(errno)") }
  }

  deinit {
    close(fd)
  }

  /// Sends a call.
  func call(
    _ method: String, _ parameters: JSONValue = .object([]), more: Bool = false,
    oneway: Bool = false
  ) {
    write(VarlinkCall(method: method, parameters: parameters, oneway: oneway, more: more).encoded)
  }

  /// Sends a call of a typed method.
  func call<Method: VarlinkMethod>(
    _ method: Method.Type, _ parameters: Method.Parameters, more: Bool = false
  ) {
    call(Method.qualifiedName, parameters.json, more: more)
  }

  func write(_ bytes: [UInt8]) {
    _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
  }

  /// The next reply's bytes, without the NUL; nil when none came within the timeout.
  func rawReply(timeout: Microseconds = 5_000_000) throws -> [UInt8]? {
    let start = loop.now
    while received.firstIndex(of: 0) == nil {
      guard loop.now - start < timeout else { return nil }
      try loop.runOnce(timeout: 10_000)
      var buffer = [UInt8](repeating: 0, count: 65536)
      let n = buffer.withUnsafeMutableBytes {
        recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
      }
      if n > 0 { received += buffer[..<n] }
    }
    let end = received.firstIndex(of: 0)!
    defer { received.removeSubrange(...end) }
    return Array(received[..<end])
  }

  /// The next reply; fails the test when none comes.
  func reply(file: StaticString = #filePath, line: UInt = #line) throws -> VarlinkReply {
    let bytes = try XCTUnwrap(try rawReply(), "no reply", file: file, line: line)
    return try VarlinkReply.decode(bytes)
  }

  /// The next reply, which must be an error: its name and parameters.
  func error(file: StaticString = #filePath, line: UInt = #line) throws -> VarlinkError? {
    let reply = try reply(file: file, line: line)
    guard let name = reply.error else {
      XCTFail("not an error: \(reply.parameters)", file: file, line: line)
      return nil
    }
    return VarlinkError(name: name, parameters: reply.parameters)
  }

  /// Whether any reply arrives within `timeout`.
  /// What has arrived on the socket, without running the loop (so nothing the loop would
  /// write on its next iteration is in it).
  func receivedWithoutRunningTheLoop() -> [UInt8] {
    var buffer = [UInt8](repeating: 0, count: 65536)
    let n = buffer.withUnsafeMutableBytes {
      recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
    }
    return n > 0 ? Array(buffer[..<n]) : []
  }

  func hasReply(within timeout: Microseconds) throws -> Bool {
    try rawReply(timeout: timeout) != nil
  }
}
