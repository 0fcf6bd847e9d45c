@preconcurrency import Glibc

/// A failed system or library call, with the errno it reported.
public struct SystemError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The call that failed, e.g. "connect" or "sd_event_add_io".
  public var call: String
  /// The positive errno value.
  public var errno: Int32

  /// Creates an error for `call` from an errno value (the sign is ignored, since libsystemd
  /// returns negative errnos).
  public init(_ call: String, errno: Int32) {
    self.call = call
    self.errno = abs(errno)
  }

  /// Creates an error for `call` from the thread's current errno.
  public static func last(_ call: String) -> SystemError {
    SystemError(call, errno: Glibc.errno)
  }

  /// The text of `strerror` for this errno.
  public var message: String { Self.describe(errno) }

  public var description: String { "\(call): \(message)" }

  /// The text of `strerror` for an errno value.
  public static func describe(_ errno: Int32) -> String {
    guard let text = strerror(errno) else { return "errno \(errno)" }
    return String(cString: text)
  }
}
