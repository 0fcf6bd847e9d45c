import ChatLinkAPI
import JSON
import LinkCore

/// The replies of the send path, written straight to bytes: `chatlinkctl send -` streams
/// messages by the hundred thousand, and a JSON tree per reply would cost more than the rest of
/// the call. Each is the same JSON the typed reply encodes to (the tests compare them).
extension ControlService {
  /// Send's reply carrying `receipt`, NUL included: `SendReceipt.json` as a Varlink reply.
  static func encodedReceipt(_ receipt: SendReceipt, continues: Bool) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(80 + receipt.id.utf8.count)
    out.append(#"{"parameters":{"id":"# as StaticString)
    out.appendJSONString(receipt.id)
    out.append(#","state":"# as StaticString)
    out.appendJSONString(receipt.state.rawValue)
    out.append(#","count":"# as StaticString)
    out.appendDecimal(UInt64(clamping: receipt.count))
    out.append(continues ? #"},"continues":true}"# as StaticString : "}}" as StaticString)
    out.append(0)
    return out
  }

  /// SendBatch's reply for the entries accepted, `{"ids":[…],"count":first,"state":"queued"}`
  /// (`SendBatchReceipt.json`), NUL included: the messages' counts are consecutive, so the
  /// first one says them all. The ids are written from the entries: no string per message.
  static func encodedBatchReceipt(_ entries: ArraySlice<OutboxEntry>) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(64 + entries.count * 19)
    out.append(#"{"parameters":{"ids":["# as StaticString)
    // By index: an entry taken out of the slice would count a reference to its batch.
    for i in entries.indices {
      if i != entries.startIndex { out.append(UInt8(ascii: ",")) }
      entries[i].clientID.appendJSON(to: &out)
    }
    out.append(#"],"count":"# as StaticString)
    out.appendDecimal(entries.first?.count ?? 0)
    out.append(#","state":"# as StaticString)
    out.appendJSONString(SendState.queued.rawValue)
    out.append("}}" as StaticString)
    out.append(0)
    return out
  }
}
