/// The bytes a stream decoder has received and not yet consumed (MQTT packets and STOMP frames
/// arrive split across, or packed into, WebSocket messages).
///
/// Consuming moves `start` forward instead of removing bytes from the front, which would copy
/// the rest for every packet; the array is emptied when everything is consumed, and compacted
/// only once the consumed front is large and most of it.
struct PendingBytes: Sendable {
  /// The received bytes; those before `start` are consumed.
  private(set) var bytes: [UInt8] = []
  /// Where the unconsumed bytes start in `bytes`.
  var start = 0

  /// How many bytes are not consumed yet.
  var count: Int { bytes.count - start }

  /// Adds received bytes. Offsets taken from `start` stay valid; absolute indices into `bytes`
  /// do not.
  mutating func append(_ received: [UInt8]) {
    if start > 0 && start == bytes.count {
      bytes.removeAll(keepingCapacity: bytes.capacity <= 1 << 20)
      start = 0
    } else if start > 65536 && start * 2 > bytes.count {
      bytes.removeFirst(start)
      start = 0
    }
    bytes += received
  }
}
