/// What went over the wire, summed across connections: the owner of the link keeps one meter
/// and hands it to each new `WebSocketClient`, so the totals never go back at a reconnect.
///
/// A class because several clients in turn add to the same totals; only the loop's thread
/// touches it.
public final class TrafficMeter {
  /// Bytes read from the transport (after TLS), the upgrade response included.
  public internal(set) var bytesReceived = 0
  /// Bytes written to the transport (before TLS), the upgrade request included.
  public internal(set) var bytesSent = 0
  /// Data messages received (whole messages, after reassembly of fragments).
  public internal(set) var messagesReceived = 0
  /// Data messages sent.
  public internal(set) var messagesSent = 0

  /// A meter at zero.
  public init() {}
}
