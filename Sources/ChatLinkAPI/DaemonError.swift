import JSON
import Varlink

/// The errors of io.chatlink.Daemon, and the org.varlink.service ones its methods also answer
/// with (MethodNotFound, PermissionDenied, …), as Varlink has them.
public enum DaemonError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The request needs the backend connection, and it is not open (`state` says where it is).
  case notConnected(state: DaemonState)
  /// The outbox already holds `limit` unconfirmed messages.
  case outboxFull(limit: Int)
  /// The daemon cannot write (the disk is full, say), or could not read the store.
  case storageFailed(reason: String)
  /// A parameter is missing, of the wrong type, or out of range.
  case invalidParameter(parameter: String, reason: String)
  /// The backend refused the message with this client id (it left the outbox).
  case deliveryFailed(id: String, reason: String)
  /// Any other Varlink error: org.varlink.service's, or one this version does not know.
  case varlink(VarlinkError)

  /// The typed error of a Varlink error: ours when the name and parameters are ours,
  /// `.varlink` otherwise (a newer daemon's error, or one whose parameters do not read).
  public init(_ received: VarlinkError) {
    guard case .named(let name, let parameters) = received,
      let object = try? ObjectReader(parameters)
    else {
      self = .varlink(received)
      return
    }
    do throws(APIDecodingError) {
      switch name {
      case ChatLinkInterface.Errors.notConnected:
        self = .notConnected(state: DaemonState(rawValue: try object.string("state")))
      case ChatLinkInterface.Errors.outboxFull:
        self = .outboxFull(limit: try object.int("limit"))
      case ChatLinkInterface.Errors.storageFailed:
        self = .storageFailed(reason: try object.string("reason"))
      case ChatLinkInterface.Errors.invalidParameter:
        self = .invalidParameter(
          parameter: try object.string("parameter"), reason: try object.string("reason"))
      case ChatLinkInterface.Errors.deliveryFailed:
        self = .deliveryFailed(id: try object.string("id"), reason: try object.string("reason"))
      default:
        self = .varlink(received)
      }
    } catch {
      self = .varlink(received)
    }
  }

  /// The error on the wire.
  public var varlinkError: VarlinkError {
    switch self {
    case .notConnected(let state):
      .named(ChatLinkInterface.Errors.notConnected, .object([("state", .string(state.rawValue))]))
    case .outboxFull(let limit):
      .named(ChatLinkInterface.Errors.outboxFull, .object([("limit", .int(Int64(limit)))]))
    case .storageFailed(let reason):
      .named(ChatLinkInterface.Errors.storageFailed, .object([("reason", .string(reason))]))
    case .invalidParameter(let parameter, let reason):
      .named(
        ChatLinkInterface.Errors.invalidParameter,
        .object([("parameter", .string(parameter)), ("reason", .string(reason))]))
    case .deliveryFailed(let id, let reason):
      .named(
        ChatLinkInterface.Errors.deliveryFailed,
        .object([("id", .string(id)), ("reason", .string(reason))]))
    case .varlink(let error): error
    }
  }

  /// The error of a parameter that did not decode.
  public init(_ error: APIDecodingError) {
    self = .invalidParameter(parameter: error.field, reason: error.reason)
  }

  public var description: String {
    switch self {
    case .notConnected(let state): "not connected to the backend (state: \(state))"
    case .outboxFull(let limit): "the outbox is full (\(limit) messages)"
    case .storageFailed(let reason): "storage failed: \(reason)"
    case .invalidParameter(let parameter, let reason): "invalid parameter \(parameter): \(reason)"
    case .deliveryFailed(let id, let reason): "the backend refused message \(id): \(reason)"
    case .varlink(let error): error.description
    }
  }
}
