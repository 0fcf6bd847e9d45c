import JSON
import LinkCore
import WebSocket

extension MessageStore {
  /// Appends a record of a whole message (an inbound frame); returns its seq. It becomes
  /// durable asynchronously (`onDurable`).
  @discardableResult
  public func append(
    direction: StoreRecord.Direction, room: [UInt8]?, clientID: ClientID? = nil,
    meta: [UInt8]? = nil, payload: Message, scan: PayloadScan = .unscanned,
    time: Timestamp = .now()
  ) -> UInt64 {
    payload.withUnsafeBytes { raw in
      append(
        direction: direction, room: room, clientID: clientID, meta: meta, payload: raw,
        isText: payload.isText, scan: scan, time: time)
    }
  }
}
