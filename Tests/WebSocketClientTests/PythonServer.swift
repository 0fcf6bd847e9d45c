import Foundation
import XCTest

/// A `Tests/Fixtures/backend.py` process (its echo protocol): Python `websockets`, an independent
/// implementation.
///
/// The interpreter comes from CHATLINK_TEST_PYTHON (the Makefile points it at the venv that
/// `scripts/setup.sh --test` builds). When it is unset the tests skip, so a bare `swift test`
/// still works; `make test` always sets it, so CI never skips them.
final class PythonServer {
  let process = Process()
  private let stdinPipe = Pipe()
  private let stdoutPipe = Pipe()
  private let stderrPipe = Pipe()

  /// What the process wrote on stderr so far (call after it has done the work).
  func stderrText() -> String {
    let handle = stderrPipe.fileHandleForReading
    var data = Data()
    // Non-blocking drain: the process keeps running.
    let flags = fcntl(handle.fileDescriptor, F_GETFL)
    _ = fcntl(handle.fileDescriptor, F_SETFL, flags | O_NONBLOCK)
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
      let n = read(handle.fileDescriptor, &buffer, buffer.count)
      if n <= 0 { break }
      data.append(contentsOf: buffer[..<n])
    }
    return String(decoding: data, as: UTF8.self)
  }
  let port: Int
  let caFile: String?
  let url: String

  static var repoRoot: URL {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
  }

  static func python() throws -> String {
    if let python = ProcessInfo.processInfo.environment["CHATLINK_TEST_PYTHON"] { return python }
    let venv = repoRoot.appendingPathComponent(".venv/bin/python").path
    if FileManager.default.isExecutableFile(atPath: venv) { return venv }
    throw XCTSkip(
      "no Python with websockets: run scripts/setup.sh --test or set CHATLINK_TEST_PYTHON")
  }

  init(_ arguments: [String], script: String = "backend.py") throws {
    process.executableURL = URL(fileURLWithPath: try Self.python())
    process.arguments =
      [Self.repoRoot.appendingPathComponent("Tests/Fixtures/\(script)").path] + arguments
    process.standardError = stderrPipe
    process.standardInput = stdinPipe
    process.standardOutput = stdoutPipe
    process.environment = ProcessInfo.processInfo.environment.merging(
      ["CHATLINK_TEST_CERTDIR": Self.repoRoot.appendingPathComponent(".cache/test-certs").path]
    ) { $1 }
    try process.run()
    var line = Data()
    let reader = stdoutPipe.fileHandleForReading
    while !line.contains(UInt8(ascii: "\n")) {
      let chunk = reader.availableData
      if chunk.isEmpty { throw XCTSkip("\(script) exited before listening") }
      line.append(chunk)
    }
    let info = try JSONSerialization.jsonObject(with: line) as? [String: Any] ?? [:]
    port = info["port"] as? Int ?? 0
    caFile = info["ca"] as? String
    url = info["url"] as? String ?? ""
  }

  deinit {
    process.terminate()
    process.waitUntilExit()
  }
}
