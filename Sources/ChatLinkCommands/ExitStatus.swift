import ChatLinkAPI
import ChatLinkClient
@preconcurrency import Glibc
import Varlink

/// chatlinkctl's exit statuses, as its --help documents them.
public enum ExitStatus {
  /// The command did what it was asked.
  public static let success: Int32 = 0
  /// The daemon refused or failed the request (e.g. OutboxFull, NotConnected), or the
  /// connection broke.
  public static let failure: Int32 = 1
  /// The command line was wrong.
  public static let usage: Int32 = 2
  /// The control socket could not be reached: chatlinkd is not running.
  public static let unreachable: Int32 = 3
  /// The socket or the daemon refused this user.
  public static let permissionDenied: Int32 = 4

  /// The exit status for a client error.
  public static func code(for error: ClientError) -> Int32 {
    switch error {
    case .unreachable(_, let code): code == EACCES || code == EPERM ? permissionDenied : unreachable
    case .varlink(.permissionDenied): permissionDenied
    case .varlink, .connectionLost, .protocolError: failure
    case .badSocketChoice: usage
    }
  }

  /// The message for a client error, without the "chatlinkctl: " prefix.
  public static func message(for error: ClientError) -> String {
    guard let daemonError = error.daemonError else { return error.description }
    switch daemonError {
    case .notConnected(let state):
      return
        "chatlinkd is not connected to the backend (state: \(Format.printable(state.rawValue))); try again later"
    case .outboxFull(let limit):
      return
        "the outbox is full (\(limit) messages): the backend has not confirmed earlier messages yet"
    case .storageFailed(let reason):
      return "chatlinkd could not store the request: \(Format.printable(reason))"
    case .deliveryFailed(let id, let reason):
      return
        "the backend refused message \(Format.printable(id)): \(Format.printable(reason)) (it left the outbox)"
    case .invalidParameter(let name, let reason), .varlink(.invalidParameter(let name, let reason)):
      return refusedParameter(name, reason)
    case .varlink(.permissionDenied):
      return
        "permission denied: only root and members of the socket's group (e.g. chatlink) may do this"
    case .varlink(.methodNotFound(let method)), .varlink(.methodNotImplemented(let method)):
      let name = method.isEmpty ? "?" : Format.printable(method)
      return "chatlinkd does not implement \(name) (is it an older version than chatlinkctl?)"
    case .varlink(let other):
      return Format.printable(other.description)
    }
  }

  private static func refusedParameter(_ name: String, _ reason: String) -> String {
    let parameter = name.isEmpty ? "?" : Format.printable(name)
    guard !reason.isEmpty else { return "chatlinkd refused the parameter '\(parameter)'" }
    return "chatlinkd refused the parameter '\(parameter)': \(Format.printable(reason))"
  }
}
