/// A dialect that catches rooms up from the backend's history on its own (XMPP's archives),
/// and says which are at it, for status and the metrics.
public protocol CatchingUp {
  /// The rooms whose catch-up is under way on this connection, sorted by name, with the
  /// messages their history has brought so far.
  var catchUpProgress: [(room: String, caughtUp: Int)] { get }
}

extension LinkCore {
  /// Rooms catching up from the backend's history now (0 for a dialect that does not).
  public var roomsCatchingUp: Int {
    catchUpProgress.count
  }

  /// Those rooms, sorted by name, with the messages their history has brought so far.
  public var catchUpProgress: [(room: String, caughtUp: Int)] {
    guard lifecycle.hasConnection, let dialect = backend as? any CatchingUp else { return [] }
    return dialect.catchUpProgress
  }
}
