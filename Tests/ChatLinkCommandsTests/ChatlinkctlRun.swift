import ChatLinkAPI
import ChatLinkCommands
@preconcurrency import Glibc
import JSON
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
