import CSystemd

/// Talks to the service manager through `sd_notify` (sd_notify(3)).
///
/// Every call is a no-op outside systemd (NOTIFY_SOCKET unset), so the daemon runs the same
/// from a terminal.
public struct ServiceNotifier: Sendable {
  /// Creates a notifier.
  public init() {}

  /// READY=1 with the first STATUS line: the service is up.
  public func ready(status: String) {
    send("READY=1\nSTATUS=\(Self.oneLine(status))")
  }

  /// A new STATUS line, shown by `systemctl status`.
  public func status(_ text: String) {
    send("STATUS=\(Self.oneLine(text))")
  }

  /// RELOADING=1: configuration is being re-read; follow with `ready(status:)`.
  public func reloading() {
    send("RELOADING=1")
  }

  /// STOPPING=1: shutdown has begun.
  public func stopping(status: String) {
    send("STOPPING=1\nSTATUS=\(Self.oneLine(status))")
  }

  /// Sends raw assignments; returns false if the manager could not be reached.
  @discardableResult
  public func send(_ assignments: String) -> Bool {
    sd_notify(0, assignments) >= 0
  }

  /// STATUS must stay on one line: a newline would start a new assignment.
  static func oneLine(_ text: String) -> String {
    String(text.map { $0 == "\n" || $0 == "\r" ? " " : $0 })
  }
}
