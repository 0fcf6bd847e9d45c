/// Counters for status and metrics; they only grow, across reconnects and reloads.
public struct LinkCounters: Sendable, Hashable {
  /// Inbound records stored.
  public var received = 0
  /// Outbox entries written to the socket (again after a reconnect).
  public var sent = 0
  /// Outbox entries the backend confirmed.
  public var confirmed = 0
  /// Outbox entries the backend refused.
  public var failed = 0
  /// Times the backend said its history no longer reached back to where a join asked it to
  /// replay from.
  public var historyGaps = 0
  /// Inbound records a history catch-up brought (XMPP's archives).
  public var caughtUp = 0
  /// Successful connections.
  public var connects = 0
  /// Connection attempts.
  public var attempts = 0
  /// Connection attempts and connections that ended, by how (`ConnectionOutcome.kind`).
  public var endings: [String: Int] = [:]
  /// Round trips of answered probes (keepalive and operator pings), in seconds.
  public var roundTrips = Histogram(bounds: Histogram.latencyBounds)

  /// All zero.
  public init() {}
}
