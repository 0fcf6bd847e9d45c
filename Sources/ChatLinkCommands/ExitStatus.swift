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
    }
  }

  /// The message for a client error, without the "chatlinkctl: " prefix.
  public static func message(for error: ClientError) -> String {
    guard case .varlink(let varlink) = error else { return error.description }
    let parameters = varlink.parameters
    func parameter(_ key: String) -> String? {
      guard let value = parameters[key], !value.isNull else { return nil }
      return Format.printable(value.stringValue ?? value.description)
    }
    switch varlink.name {
    case ChatLinkInterface.Errors.notConnected:
      let state = parameter("state").map { " (state: \($0))" } ?? ""
      return "chatlinkd is not connected to the backend\(state); try again later"
    case ChatLinkInterface.Errors.outboxFull:
      let limit = parameter("limit").map { " (\($0) messages)" } ?? ""
      return "the outbox is full\(limit): the backend has not confirmed earlier messages yet"
    case ChatLinkInterface.Errors.storageFailed:
      return "chatlinkd could not store the request: \(parameter("reason") ?? "unknown reason")"
    case ChatLinkInterface.Errors.invalidParameter, "org.varlink.service.InvalidParameter":
      let name = parameter("parameter") ?? "?"
      if let reason = parameter("reason"), !reason.isEmpty {
        return "chatlinkd refused the parameter '\(name)': \(reason)"
      }
      return "chatlinkd refused the parameter '\(name)'"
    case "org.varlink.service.PermissionDenied":
      return
        "permission denied: only root and members of the socket's group (e.g. chatlink) may do this"
    case "org.varlink.service.MethodNotFound", "org.varlink.service.MethodNotImplemented":
      let method = parameter("method") ?? "?"
      return "chatlinkd does not implement \(method) (is it an older version than chatlinkctl?)"
    default:
      return Format.printable(varlink.description)
    }
  }
}
