import ChatLinkAPI
import JSON
import LinkCore
import Varlink

/// The methods of io.chatlink.Daemon and org.varlink.service, and the Subscribe event feed.
///
/// A call is looked up in `methods`, a table from method name to handler and whether callers
/// with read-only access may make it (ControlMethods.swift); the handler reads its typed
/// parameters (ChatLinkAPI), asks the daemon through `ControlTarget`, and answers with a typed
/// reply. Events reach subscribers through the `publish…` methods (ControlEvents.swift).
public final class ControlService {
  let server: ControlServer
  /// The daemon; it owns the service, so the service never outlives it.
  unowned let target: any ControlTarget

  /// Creates the service and attaches it to `server`.
  public init(server: ControlServer, target: any ControlTarget) {
    self.server = server
    self.target = target
    server.service = self
  }

  /// Answers one call: refused when the caller may not make it, an error reply when the
  /// method is unknown or its parameters do not read, otherwise whatever its handler answers.
  func handle(_ call: VarlinkCall, from connection: ControlConnection) {
    let method = Self.methods[call.method]
    // Unknown methods too: an outsider learns nothing from the socket but what it may read.
    if connection.access == .readOnly && method?.readOnly != true {
      connection.reply(VarlinkReply(.permissionDenied), to: call)
      return
    }
    let request = ControlRequest(call: call, connection: connection)
    do throws(DaemonError) {
      guard let method else {
        throw ChatLinkInterface.descriptions[call.interface] == nil
          ? .varlink(.interfaceNotFound(call.interface)) : .varlink(.methodNotFound(call.method))
      }
      try method.run(self, request)
    } catch {
      request.fail(error)
    }
  }

  /// Whether any client has a Subscribe stream open.
  public var hasSubscribers: Bool {
    server.subscriberCount > 0
  }

  /// Told when the first Subscribe stream starts (true) and when the last one ends (false):
  /// the daemon builds message events only while someone follows.
  public var onFollowingChanged: ((Bool) -> Void)? {
    get { server.onFollowing }
    set { server.onFollowing = newValue }
  }

  /// A room a caller named, checked; nil when none was named.
  func roomID(_ name: String?) throws(DaemonError) -> RoomID? {
    guard let name else { return nil }
    guard let room = RoomID(name) else {
      throw .invalidParameter(parameter: "room", reason: "invalid room name")
    }
    return room
  }
}

/// One call being answered: the call, and the connection its replies go to.
///
/// The connection is held weakly: a reply made in a completion (the outbox's fsync, the
/// reader thread, the backend's pong) finds it gone or closed when the client left, and is
/// dropped then.
struct ControlRequest {
  let call: VarlinkCall
  weak var connection: ControlConnection?

  /// The connection, while it can still take replies.
  var open: ControlConnection? {
    guard let connection, connection.isOpen else { return nil }
    return connection
  }

  /// Answers with `value`.
  func reply(_ value: some JSONRepresentable, continues: Bool = false) {
    open?.reply(VarlinkReply(parameters: value.json, continues: continues), to: call)
  }

  /// Answers with an error.
  func fail(_ error: DaemonError) {
    open?.reply(VarlinkReply(Self.wire(error, of: call)), to: call)
  }

  /// The error as it goes out. Our own methods report bad parameters with our interface's
  /// InvalidParameter, which names the reason; org.varlink.service's methods with
  /// org.varlink.service's (which carries the reason as well).
  static func wire(_ error: DaemonError, of call: VarlinkCall) -> VarlinkError {
    if case .invalidParameter(let parameter, let reason) = error,
      call.interface != ChatLinkInterface.name
    {
      return .invalidParameter(name: parameter, reason: reason)
    }
    return error.varlinkError
  }
}
