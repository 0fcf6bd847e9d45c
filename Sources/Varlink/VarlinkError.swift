import JSON

/// A Varlink error: a qualified name and parameters.
public enum VarlinkError: Error, Sendable, Hashable, CustomStringConvertible {
  /// org.varlink.service.InterfaceNotFound
  case interfaceNotFound(String)
  /// org.varlink.service.MethodNotFound
  case methodNotFound(String)
  /// org.varlink.service.MethodNotImplemented
  case methodNotImplemented(String)
  /// org.varlink.service.InvalidParameter
  case invalidParameter(name: String, reason: String)
  /// org.varlink.service.PermissionDenied
  case permissionDenied
  /// A request that is not a Varlink message at all (answered, then the connection closes).
  case invalidMessage(String)
  /// A request larger than the limit (the connection closes).
  case messageTooLarge(limit: Int)
  /// An error of our interface, e.g. io.chatlink.Daemon.OutboxFull.
  case named(String, JSONValue)

  /// The error name on the wire.
  public var name: String {
    switch self {
    case .interfaceNotFound: "org.varlink.service.InterfaceNotFound"
    case .methodNotFound: "org.varlink.service.MethodNotFound"
    case .methodNotImplemented: "org.varlink.service.MethodNotImplemented"
    case .invalidParameter: "org.varlink.service.InvalidParameter"
    case .permissionDenied: "org.varlink.service.PermissionDenied"
    case .invalidMessage, .messageTooLarge: "org.varlink.service.InvalidParameter"
    case .named(let name, _): name
    }
  }

  /// The error parameters on the wire.
  public var parameters: JSONValue {
    switch self {
    case .interfaceNotFound(let i): .object(["interface": .string(i)])
    case .methodNotFound(let m), .methodNotImplemented(let m): .object(["method": .string(m)])
    case .invalidParameter(let name, let reason):
      .object(["parameter": .string(name), "reason": .string(reason)])
    case .permissionDenied: .object([])
    case .invalidMessage(let why):
      .object(["parameter": .string("message"), "reason": .string(why)])
    case .messageTooLarge(let limit):
      .object(["parameter": .string("message"), "reason": .string("larger than \(limit) bytes")])
    case .named(_, let parameters): parameters
    }
  }

  /// Rebuilds an error from a reply.
  public init(name: String, parameters: JSONValue) {
    switch name {
    case "org.varlink.service.InterfaceNotFound":
      self = .interfaceNotFound(parameters["interface"]?.stringValue ?? "")
    case "org.varlink.service.MethodNotFound":
      self = .methodNotFound(parameters["method"]?.stringValue ?? "")
    case "org.varlink.service.MethodNotImplemented":
      self = .methodNotImplemented(parameters["method"]?.stringValue ?? "")
    case "org.varlink.service.InvalidParameter":
      self = .invalidParameter(
        name: parameters["parameter"]?.stringValue ?? "",
        reason: parameters["reason"]?.stringValue ?? "")
    case "org.varlink.service.PermissionDenied":
      self = .permissionDenied
    default:
      self = .named(name, parameters)
    }
  }

  public var description: String {
    switch self {
    case .interfaceNotFound(let i): "interface \(i) not found"
    case .methodNotFound(let m): "method \(m) not found"
    case .methodNotImplemented(let m): "method \(m) not implemented"
    case .invalidParameter(let name, let reason):
      reason.isEmpty ? "invalid parameter \(name)" : "invalid parameter \(name): \(reason)"
    case .permissionDenied: "permission denied"
    case .invalidMessage(let why): why
    case .messageTooLarge(let limit): "request larger than \(limit) bytes"
    case .named(let name, let parameters):
      if let reason = parameters["reason"]?.stringValue {
        "\(name.split(separator: ".").last ?? ""): \(reason)"
      } else {
        name
      }
    }
  }
}
