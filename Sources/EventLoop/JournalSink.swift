import CSystemd
@preconcurrency import Glibc

/// Sends records to journald with structured fields through `sd_journal_sendv`.
///
/// Fields: MESSAGE (the rendered text), PRIORITY, SYSLOG_IDENTIFIER, CODE_FILE, CODE_LINE,
/// CHATLINK_LOGGER and one CHATLINK_<KEY> per metadata key, so
/// `journalctl -u chatlinkd -o json` shows the data without parsing the message.
public struct JournalSink: LogSink {
  private let identifier: String

  /// Creates a sink; the identifier defaults to the program name.
  public init(identifier: String? = nil) {
    self.identifier = identifier ?? Self.programName()
  }

  public func write(_ record: LogRecord) {
    var fields = [
      "MESSAGE=\(record.renderedText)",
      "PRIORITY=\(record.level.syslogPriority)",
      "SYSLOG_IDENTIFIER=\(identifier)",
      "CODE_FILE=\(record.file)",
      "CODE_LINE=\(record.line)",
      "CHATLINK_LOGGER=\(record.label)",
    ]
    for (key, value) in record.metadata {
      fields.append("CHATLINK_\(Self.fieldName(key))=\(value)")
    }
    let buffers = fields.map { Array($0.utf8) }
    var vectors: [iovec] = []
    vectors.reserveCapacity(buffers.count)
    // Keep every buffer pinned while sd_journal_sendv reads it.
    withPinned(buffers, index: 0, into: &vectors) { vectors in
      let rc = vectors.withUnsafeBufferPointer { sd_journal_sendv($0.baseAddress, Int32($0.count)) }
      if rc < 0 { StderrSink().write(record) }
    }
  }

  private func withPinned(
    _ buffers: [[UInt8]], index: Int, into vectors: inout [iovec], _ body: ([iovec]) -> Void
  ) {
    if index == buffers.count {
      body(vectors)
      return
    }
    buffers[index].withUnsafeBytes { raw in
      vectors.append(
        iovec(iov_base: UnsafeMutableRawPointer(mutating: raw.baseAddress), iov_len: raw.count))
      withPinned(buffers, index: index + 1, into: &vectors, body)
    }
  }

  /// Journal field names are upper-case letters, digits and underscores (systemd.journal-fields(7)).
  static func fieldName(_ key: String) -> String {
    String(
      key.uppercased().map { ch -> Character in
        (ch.isASCII && (ch.isLetter || ch.isNumber)) ? ch : "_"
      })
  }

  private static func programName() -> String {
    let path = CommandLine.arguments.first ?? "chatlink"
    return path.split(separator: "/").last.map(String.init) ?? "chatlink"
  }
}
