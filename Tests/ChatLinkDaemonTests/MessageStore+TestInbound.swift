import JSON
import LinkCore

@testable import ChatLinkDaemon

extension MessageStore {
  /// Appends an inbound record the way a dialect with ids does, the id lying in the record's
  /// meta as a header would (`{"k":"ID"}`); without an id, a record without one.
  @discardableResult
  func appendInbound(
    testID id: String?, room: [UInt8]?, text: String = #"{"m":1}"#,
    time: Timestamp = Timestamp(microseconds: 1_700_000_000_000_000)
  ) -> (seq: UInt64, duplicate: Bool) {
    var meta: [UInt8]?
    if let id {
      var json = Array(#"{"k":"#.utf8)
      JSONString.append(id, to: &json)
      json.append(UInt8(ascii: "}"))
      meta = json
    }
    return appendInbound(
      room: room,
      id: meta?.withUnsafeBytes { MessageID.location($0, 5..<($0.count - 1), in: .meta) },
      meta: meta, payload: .text(Array(text.utf8)), scan: .unscanned, time: time)
  }
}
