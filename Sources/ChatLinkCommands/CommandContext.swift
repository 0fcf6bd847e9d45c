@preconcurrency import Glibc

/// Where a command writes text. Commands write whole lines and call `flush()` when a line must
/// be seen at once (follow, status --watch).
public protocol TextSink: AnyObject {
  /// Queues text.
  func write(_ text: String)
  /// Makes queued text visible.
  func flush()
}

/// A file descriptor with an output buffer, written with write(2).
public final class FileDescriptorSink: TextSink {
  private let fd: Int32
  private let flushEachWrite: Bool
  private var buffer: [UInt8] = []

  /// Writes to `fd`; with `unbuffered`, every write reaches the descriptor at once.
  public init(fd: Int32, unbuffered: Bool = false) {
    self.fd = fd
    flushEachWrite = unbuffered
  }

  deinit {
    flush()
  }

  public func write(_ text: String) {
    buffer += text.utf8
    if flushEachWrite || buffer.count >= 64 * 1024 { flush() }
  }

  public func flush() {
    var offset = 0
    while offset < buffer.count {
      let n = buffer.withUnsafeBytes {
        Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset)
      }
      if n < 0 {
        if errno == EINTR { continue }
        break  // EPIPE and the like: nobody is reading any more.
      }
      offset += n
    }
    buffer.removeAll(keepingCapacity: true)
  }
}

/// Collects text in memory, for tests.
public final class StringSink: TextSink {
  /// Everything written so far.
  public private(set) var text = ""

  /// An empty sink.
  public init() {}

  public func write(_ text: String) {
    self.text += text
  }

  public func flush() {}
}

/// How times are shown in human output: the store keeps UTC, people read local time.
public enum TimeDisplay: Sendable, Hashable {
  /// Coordinated Universal Time, as stored (tests use it).
  case utc
  /// The local time zone (TZ, /etc/localtime), as chatlinkctl shows it.
  case local
}

/// Everything a command touches outside its arguments: streams, environment, clock.
///
/// `CommandContext.standard()` is the process's; tests build one with sinks that capture
/// output, fixed input lines and a clock that stops.
public struct CommandContext {
  /// Standard output.
  public var output: any TextSink
  /// Standard error.
  public var errors: any TextSink
  /// Whether standard output is a terminal (colour needs it).
  public var outputIsTerminal: Bool
  /// The environment (CHATLINK_SOCKET, NO_COLOR, TERM).
  public var environment: [String: String]
  /// Reads standard input into the buffer it is given: how many bytes it put there, 0 at the
  /// end of input.
  public var readInput: (UnsafeMutableRawBufferPointer) -> Int
  /// Waits between polls (status --watch); returning false ends the loop.
  public var pause: (_ seconds: Double) -> Bool
  /// The wall clock, in microseconds since the epoch.
  public var now: () -> Int64
  /// How human output shows times.
  public var timeDisplay: TimeDisplay

  /// Creates a context.
  public init(
    output: any TextSink, errors: any TextSink, outputIsTerminal: Bool = false,
    environment: [String: String] = [:],
    readInput: @escaping (UnsafeMutableRawBufferPointer) -> Int = { _ in 0 },
    pause: @escaping (Double) -> Bool = { _ in false }, now: @escaping () -> Int64 = { 0 },
    timeDisplay: TimeDisplay = .utc
  ) {
    self.output = output
    self.errors = errors
    self.outputIsTerminal = outputIsTerminal
    self.environment = environment
    self.readInput = readInput
    self.pause = pause
    self.now = now
    self.timeDisplay = timeDisplay
  }

  /// The process's standard streams, environment and clock.
  public static func standard() -> CommandContext {
    var environment: [String: String] = [:]
    var entry = environ
    while let pointer = entry.pointee {
      let pair = String(cString: pointer)
      if let equals = pair.firstIndex(of: "=") {
        environment[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
      }
      entry += 1
    }
    return CommandContext(
      output: FileDescriptorSink(fd: STDOUT_FILENO),
      errors: FileDescriptorSink(fd: STDERR_FILENO, unbuffered: true),
      outputIsTerminal: isatty(STDOUT_FILENO) == 1,
      environment: environment,
      readInput: { buffer in
        while true {
          let count = Glibc.read(STDIN_FILENO, buffer.baseAddress, buffer.count)
          // A read error ends the input, as the end of the file does.
          if count < 0 && errno == EINTR { continue }
          return max(count, 0)
        }
      },
      pause: { seconds in
        usleep(UInt32(seconds * 1_000_000))
        return true
      },
      now: {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
      },
      timeDisplay: .local)
  }

  /// Whether human output may use ANSI colour: only on a terminal, never with NO_COLOR set
  /// (https://no-color.org) or TERM=dumb.
  public var colour: Bool {
    outputIsTerminal && environment["NO_COLOR"] == nil && environment["TERM"] != "dumb"
  }

  /// Writes text to standard output, adding a newline unless it ends in one.
  public func write(_ text: String) {
    output.write(text.hasSuffix("\n") ? text : text + "\n")
  }

  /// Writes text to standard error, adding a newline unless it ends in one.
  public func writeError(_ text: String) {
    errors.write(text.hasSuffix("\n") ? text : text + "\n")
  }
}
