/// Something about the backend worth a line in the log that is no fault of its frames.
public enum ProtocolNotice: Sendable, Hashable {
  /// The broker granted a subscription a lower QoS than asked (RabbitMQ grants 1 for 2).
  case grantedLess(filter: String, asked: UInt8, granted: UInt8)
  /// The backend resumed the last connection's session (XEP-0198): nothing was lost between.
  case sessionResumed(id: String)
  /// The backend could not resume the last session (expired, unknown): a new one started, and
  /// what it held for us unacknowledged is gone with the old one.
  case resumptionRefused
}
