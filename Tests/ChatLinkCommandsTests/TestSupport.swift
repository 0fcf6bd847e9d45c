import ChatLinkAPI
import ChatLinkCommands
import Foundation
@preconcurrency import Glibc
import JSON
import Varlink
import XCTest

/// What one chatlinkctl run left behind.
struct Run {
  var status: Int32
  var output: String
  var errors: String

  var lines: [String] { output.split(separator: "\n").map(String.init) }
}

/// Runs chatlinkctl in-process with captured streams.
func chatlinkctl(
  _ arguments: [String], input: [String] = [], environment: [String: String] = [:],
  terminal: Bool = false, polls: Int = 0
) -> Run {
  let output = StringSink()
  let errors = StringSink()
  // Served in pieces that split lines, as a pipe would.
  var bytes = Array(input.map { $0 + "\n" }.joined().utf8)[...]
  var remainingPolls = polls
  var clock: Int64 = 1_796_212_800_000_000  // 2026-12-02T12:00:00Z
  let context = CommandContext(
    output: output, errors: errors, outputIsTerminal: terminal, environment: environment,
    readInput: { buffer in
      let count = min(buffer.count, bytes.count, 1000)
      for (offset, byte) in bytes.prefix(count).enumerated() { buffer[offset] = byte }
      bytes = bytes.dropFirst(count)
      return count
    },
    pause: { _ in
      remainingPolls -= 1
      clock += 1_000_000
      return remainingPolls > 0
    },
    now: { clock }, timeDisplay: .utc)
  let status = ChatLinkCtl.run(arguments: arguments, context: context)
  return Run(status: status, output: output.text, errors: errors.text)
}

/// Parses a command line as chatlinkctl would and returns the verb.
func parse<T: ParsableCommand>(
  _ arguments: [String], as type: T.Type, file: StaticString = #filePath, line: UInt = #line
) throws -> T {
  let command = try ChatLinkCtl.parseAsRoot(arguments)
  return try XCTUnwrap(
    command as? T, "parsed as \(Swift.type(of: command))", file: file, line: line)
}

/// Parses a JSON literal written in a test.
func json(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> JSONValue {
  do {
    return try JSONValue.parse(text)
  } catch {
    XCTFail("bad JSON in test: \(text)", file: file, line: line)
    return .null
  }
}

/// Reads a typed value of the contract from JSON written in a test (or a sample).
func typed<Value: JSONRepresentable>(
  _ value: JSONValue, as type: Value.Type = Value.self
) throws -> Value {
  try Value(json: value)
}

/// A path nothing listens on.
func missingSocketPath() -> String {
  "/tmp/chatlinkctl-test-missing-\(getpid())/control.sock"
}

/// A fresh path for a Unix socket, in a new directory.
func temporarySocketPath() -> String {
  var template = Array("/tmp/chatlinkctl-test-XXXXXX".utf8CString)
  let directory = template.withUnsafeMutableBufferPointer {
    String(cString: mkdtemp($0.baseAddress!))
  }
  return directory + "/control.sock"
}

/// A stand-in for chatlinkd's control socket: answers each Varlink call with the replies its
/// handler returns; an empty answer closes the connection.
final class FakeDaemon: Sendable {
  let path: String
  private let listener: Int32
  private let state: State

  /// Every call received so far.
  var calls: [VarlinkCall] { state.calls }

  init(handler: @escaping @Sendable (VarlinkCall) -> [VarlinkReply]) throws {
    path = temporarySocketPath()
    let state = State(handler: handler)
    self.state = state
    listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (i, byte) in path.utf8.enumerated() { raw[i] = byte }
    }
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard bound == 0, listen(listener, 16) == 0 else {
      throw XCTSkip("cannot listen on \(path): errno \(errno)")
    }
    let fd = listener
    // The accept loop holds only the state: deinit shuts the listener down, which ends it.
    Thread.detachNewThread {
      while true {
        let connection = accept(fd, nil, nil)
        guard connection >= 0 else { return }
        Thread.detachNewThread { state.serve(connection) }
      }
    }
  }

  /// Answers every method of io.chatlink.Daemon from a table of reply parameters.
  convenience init(_ table: [String: JSONValue]) throws {
    try self.init { call in
      let method = String(call.method.split(separator: ".").last ?? "")
      guard let parameters = table[method] else {
        return [VarlinkReply(.methodNotFound(call.method))]
      }
      return [VarlinkReply(parameters: parameters)]
    }
  }

  deinit {
    shutdown(listener, Int32(SHUT_RDWR))
    close(listener)
    unlink(path)
    rmdir(String(path.prefix(upTo: path.lastIndex(of: "/") ?? path.endIndex)))
  }

  /// What the connection threads share.
  private final class State: @unchecked Sendable {
    private let handler: @Sendable (VarlinkCall) -> [VarlinkReply]
    private let lock = NSLock()
    private var received: [VarlinkCall] = []

    init(handler: @escaping @Sendable (VarlinkCall) -> [VarlinkReply]) {
      self.handler = handler
    }

    var calls: [VarlinkCall] {
      lock.lock()
      defer { lock.unlock() }
      return received
    }

    func serve(_ connection: Int32) {
      defer { close(connection) }
      var framer = VarlinkFramer(limit: 1 << 20)
      var buffer = [UInt8](repeating: 0, count: 65536)
      while true {
        let n = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return }
        let messages: [[UInt8]]
        do {
          messages = try buffer.withUnsafeBytes { raw in
            try Result { () throws(VarlinkError) in
              try framer.append(UnsafeRawBufferPointer(rebasing: raw[..<n]))
            }.get()
          }
        } catch {
          return
        }
        for message in messages {
          guard let call = try? VarlinkCall.decode(message) else { return }
          lock.lock()
          received.append(call)
          lock.unlock()
          let replies = handler(call)
          if replies.isEmpty { return }
          for reply in replies where !write(reply.encoded, to: connection) { return }
        }
      }
    }

    private func write(_ bytes: [UInt8], to connection: Int32) -> Bool {
      var offset = 0
      while offset < bytes.count {
        let sent = bytes.withUnsafeBytes {
          send(connection, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
        }
        guard sent > 0 else { return false }
        offset += sent
      }
      return true
    }
  }
}

/// Sample daemon answers, as io.chatlink.Daemon documents them.
enum Sample {
  static let openStatus = json(
    """
    {"state":"open","text":"Connected to ws://127.0.0.1:8765/ (2 rooms) · 12 in, 3 out · outbox 0",\
    "url":"ws://127.0.0.1:8765/","rooms":["7","ops"],"subprotocol":null,\
    "extensions":"permessage-deflate","retry_in":null,"last_error":null,"store_error":null,\
    "received":12,"sent":3,"confirmed":3,"connects":1,"outbox":0,"last_seq":42,\
    "durable_seq":42,"store_path":"/var/lib/chatlink/messages.jsonl","version":"0.1.0"}
    """)

  static let waitingStatus = json(
    """
    {"state":"waiting","text":"Reconnecting to ws://127.0.0.1:8765/ in 2.5 s · 12 in, 3 out · \
    outbox 1 · last error: connection refused","url":"ws://127.0.0.1:8765/","rooms":[],\
    "retry_in":2.5,"last_error":"connection refused","store_error":"No space left on device",\
    "received":12,"sent":3,"confirmed":3,"connects":4,"outbox":1,"last_seq":42,\
    "durable_seq":41,"store_path":"/var/lib/chatlink/messages.jsonl","version":"0.1.0"}
    """)

  static let incoming = json(
    """
    {"seq":42,"time":"2026-12-02T12:00:00.123456Z","dir":"in","room":7,"type":"json",\
    "data":{"event":"message","data":{"room_id":7,"message":"hi","sender":"bob"}}}
    """)

  static let text = json(
    """
    {"seq":43,"time":"2026-12-02T12:00:00.200000Z","dir":"in","room":null,"type":"text",\
    "data":"a frame that is not JSON"}
    """)

  static let binary = json(
    """
    {"seq":44,"time":"2026-12-02T12:00:00.300000Z","dir":"in","room":null,"type":"binary",\
    "data":"AAEC/w=="}
    """)

  static let outgoing = json(
    """
    {"seq":1045,"time":"2026-12-02T12:00:01.000000Z","dir":"out","room":7,"type":"json",\
    "id":"5f1c9a2e0b7d4e31","data":{"event":"send-message","data":{"room_id":7,\
    "message":"deploy finished","sender":"ops-bot","count":12,"client_id":"5f1c9a2e0b7d4e31"}}}
    """)

  static let otherJSON = json(
    """
    {"seq":1046,"time":"2026-12-02T12:00:02.000000Z","dir":"in","room":"ops","type":"json",\
    "data":{"event":"user-joined","data":{"room_id":"ops","user":"carol"}}}
    """)

  static let receipt = json(#"{"id":"5f1c9a2e0b7d4e31","state":"queued","count":12}"#)
}
