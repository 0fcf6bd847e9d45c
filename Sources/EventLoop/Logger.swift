@preconcurrency import Glibc
import Synchronization

/// A structured logger shaped like swift-log's: constant messages, data in metadata.
///
/// `logger.info("connected", ["url": url, "rooms": "3"])` becomes a journal entry with
/// MESSAGE, PRIORITY and one `CHATLINK_<KEY>` field per metadata key, or one readable line on
/// stderr when no journal is attached.
public struct Logger: Sendable {
  /// Severity, mapped onto syslog priorities (sd-journal(3)).
  public enum Level: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    case trace, debug, info, notice, warning, error, critical

    /// The syslog priority (PRIORITY= in the journal).
    public var syslogPriority: Int {
      switch self {
      case .trace, .debug: 7
      case .info: 6
      case .notice: 5
      case .warning: 4
      case .error: 3
      case .critical: 2
      }
    }

    /// Parses "debug", "info", … as config files spell them.
    public init?(name: String) {
      guard let level = Self.allCases.first(where: { $0.description == name.lowercased() }) else {
        return nil
      }
      self = level
    }

    public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String {
      switch self {
      case .trace: "trace"
      case .debug: "debug"
      case .info: "info"
      case .notice: "notice"
      case .warning: "warning"
      case .error: "error"
      case .critical: "critical"
      }
    }
  }

  /// Metadata in the order given; keys become journal field names.
  public typealias Metadata = [(key: String, value: String)]

  /// The component name, e.g. "chatlinkd.connection"; sent as CHATLINK_LOGGER.
  public var label: String
  /// Messages below this level are dropped before any formatting. Copies of a logger share
  /// it, so a reload that changes it reaches every component at once.
  public var logLevel: Level {
    get { Level(rawValue: levelBox.value.load(ordering: .relaxed)) ?? .info }
    nonmutating set { levelBox.value.store(newValue.rawValue, ordering: .relaxed) }
  }
  private let levelBox: LevelBox
  /// Metadata attached to every message of this logger.
  public var metadata: Metadata = []
  private let sink: any LogSink

  /// Creates a logger writing to `sink` (by default the journal when attached, else stderr).
  public init(label: String, level: Level = .info, sink: (any LogSink)? = nil) {
    self.label = label
    levelBox = LevelBox(level.rawValue)
    self.sink = sink ?? Logger.defaultSink
  }

  /// The sink chosen from the environment: journald when stderr is connected to it
  /// (JOURNAL_STREAM, systemd.exec(5)), else text lines on stderr.
  public static let defaultSink: any LogSink =
    getenv("JOURNAL_STREAM") != nil ? JournalSink() : StderrSink()

  /// Logs `message` at `level` with extra metadata.
  public func log(
    _ level: Level, _ message: @autoclosure () -> String,
    _ extra: KeyValuePairs<String, String> = [:],
    file: String = #fileID, line: Int = #line
  ) {
    guard level >= logLevel else { return }
    var all = metadata
    for (key, value) in extra { all.append((key, value)) }
    sink.write(
      LogRecord(
        level: level, label: label, message: message(), metadata: all, file: file, line: line))
  }

  /// Logs at trace level.
  public func trace(
    _ message: @autoclosure () -> String, _ metadata: KeyValuePairs<String, String> = [:],
    file: String = #fileID, line: Int = #line
  ) { log(.trace, message(), metadata, file: file, line: line) }

  /// Logs at debug level.
  public func debug(
    _ message: @autoclosure () -> String, _ metadata: KeyValuePairs<String, String> = [:],
    file: String = #fileID, line: Int = #line
  ) { log(.debug, message(), metadata, file: file, line: line) }

  /// Logs at info level.
  public func info(
    _ message: @autoclosure () -> String, _ metadata: KeyValuePairs<String, String> = [:],
    file: String = #fileID, line: Int = #line
  ) { log(.info, message(), metadata, file: file, line: line) }

  /// Logs at notice level.
  public func notice(
    _ message: @autoclosure () -> String, _ metadata: KeyValuePairs<String, String> = [:],
    file: String = #fileID, line: Int = #line
  ) { log(.notice, message(), metadata, file: file, line: line) }

  /// Logs at warning level.
  public func warning(
    _ message: @autoclosure () -> String, _ metadata: KeyValuePairs<String, String> = [:],
    file: String = #fileID, line: Int = #line
  ) { log(.warning, message(), metadata, file: file, line: line) }

  /// Logs at error level.
  public func error(
    _ message: @autoclosure () -> String, _ metadata: KeyValuePairs<String, String> = [:],
    file: String = #fileID, line: Int = #line
  ) { log(.error, message(), metadata, file: file, line: line) }

  /// Logs at critical level.
  public func critical(
    _ message: @autoclosure () -> String, _ metadata: KeyValuePairs<String, String> = [:],
    file: String = #fileID, line: Int = #line
  ) { log(.critical, message(), metadata, file: file, line: line) }
}

/// The level shared by a logger and its copies.
final class LevelBox: Sendable {
  let value: Atomic<Int>
  init(_ level: Int) { value = Atomic(level) }
}

/// One log message on its way to a sink.
public struct LogRecord: Sendable {
  /// Severity.
  public var level: Logger.Level
  public var label: String
  public var message: String
  public var metadata: Logger.Metadata
  public var file: String
  public var line: Int

  /// Creates a record.
  public init(
    level: Logger.Level, label: String, message: String, metadata: Logger.Metadata, file: String,
    line: Int
  ) {
    self.level = level
    self.label = label
    self.message = message
    self.metadata = metadata
    self.file = file
    self.line = line
  }

  /// The message followed by `key=value` pairs, quoted where needed: what a human reads.
  public var renderedText: String {
    var text = message
    for (key, value) in metadata {
      text += " \(key)="
      let needsQuotes =
        value.isEmpty || value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" })
      if needsQuotes {
        text += "\"" + value.replacingAll("\"", with: "\\\"") + "\""
      } else {
        text += value
      }
    }
    return text
  }
}

/// Where log records go.
public protocol LogSink: Sendable {
  /// Writes one record; must not block for long (it runs on the event loop).
  func write(_ record: LogRecord)
}

/// Writes `<priority>level message key=value` lines to stderr.
///
/// The `<N>` prefix is what journald and systemd understand on stderr (sd-daemon(3)), so
/// even this sink keeps priorities when the journal reads it.
public struct StderrSink: LogSink {
  public init() {}

  public func write(_ record: LogRecord) {
    let line = "<\(record.level.syslogPriority)>\(record.level) \(record.renderedText)\n"
    let bytes = Array(line.utf8)
    bytes.withUnsafeBytes { raw in
      guard let base = raw.baseAddress else { return }
      var offset = 0
      while offset < raw.count {
        let n = Glibc.write(2, base + offset, raw.count - offset)
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { return }
        offset += n
      }
    }
  }
}

/// Collects records in memory, for tests.
public final class MemorySink: LogSink, @unchecked Sendable {
  // Tests use it from one thread; the lock-free unchecked conformance keeps it simple.
  public private(set) var records: [LogRecord] = []
  public init() {}
  public func write(_ record: LogRecord) { records.append(record) }
}

extension String {
  /// Replaces every occurrence of `target` (FoundationEssentials-free).
  func replacingAll(_ target: Character, with replacement: String) -> String {
    var out = ""
    for ch in self {
      if ch == target { out += replacement } else { out.append(ch) }
    }
    return out
  }
}
