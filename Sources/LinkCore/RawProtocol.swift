import JSON
import WebSocket

/// Frames pass through untouched: outgoing text is sent as is, inbound frames are stored as
/// they arrived. There are no rooms and no client ids in the payload, so delivery is
/// confirmed by ping/pong only.
public struct RawProtocol: BackendProtocol {
  /// Creates the adapter.
  public init() {}

  public var hasRooms: Bool { false }
  public mutating func join(_ room: RoomID) -> Message? { nil }
  public mutating func leave(_ room: RoomID) -> Message? { nil }
  public mutating func encode(_ entry: OutboxEntry) -> Message { .text(entry.textBytes) }

  public mutating func read(_ message: Message) -> ProtocolReading {
    guard case .text(let bytes) = message else {
      return ProtocolReading(record: InboundMessage(payload: message, scan: .unscanned))
    }
    let scan = bytes.withUnsafeBytes {
      JSONScanner.scan($0, knownUTF8: true, maxDepth: JSONScanner.embeddedMaxDepth)
    }
    return ProtocolReading(
      record: InboundMessage(payload: message, scan: PayloadScan(scan)))
  }
}
