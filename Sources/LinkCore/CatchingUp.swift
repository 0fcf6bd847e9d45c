/// A dialect that catches rooms up from the backend's history on its own (XMPP's archives),
/// and says how many are at it, for the metrics.
public protocol CatchingUp {
  /// Rooms whose catch-up is under way on this connection.
  var roomsCatchingUp: Int { get }
}

extension LinkCore {
  /// Rooms catching up from the backend's history now (0 for a dialect that does not).
  public var roomsCatchingUp: Int {
    guard lifecycle.hasConnection, let dialect = backend as? any CatchingUp else { return 0 }
    return dialect.roomsCatchingUp
  }
}
