import JSON

/// The data object of an outgoing message, with the [Envelope] field names:
/// `{"room_id":7,"message":"hi","sender":"ops-bot","count":1,"client_id":"…"}`.
///
/// The envelope protocol wraps it in `{"event":"send-message","data":…}`, Socket.IO in
/// `["send-message",…]`; the constant pieces are quoted once here, not for every message.
struct MessageFields: Sendable {
  // `{"room_id":`, `,"message":`, `,"sender":"…","count":` and `,"client_id":`.
  private let roomKey: [UInt8]
  private let messageKey: [UInt8]
  private let senderAndCountKey: [UInt8]
  private let clientIDKey: [UInt8]

  /// Prepares the pieces for these names and this sender.
  init(names: EnvelopeNames, sender: String) {
    roomKey = [UInt8(ascii: "{")] + Self.key(names.roomField)
    messageKey = [UInt8(ascii: ",")] + Self.key(names.messageField)
    var senderAndCount = [UInt8(ascii: ",")] + Self.key(names.senderField)
    JSONString.append(sender, to: &senderAndCount)
    senderAndCount += [UInt8(ascii: ",")] + Self.key(names.countField)
    senderAndCountKey = senderAndCount
    clientIDKey = [UInt8(ascii: ",")] + Self.key(names.clientIDField)
  }

  /// An upper bound of the bytes `append` adds for `entry`, before escaping.
  func estimatedSize(_ entry: OutboxEntry) -> Int {
    roomKey.count + messageKey.count + senderAndCountKey.count + clientIDKey.count
      + entry.text.utf8.count + entry.id.utf8.count + 48
  }

  /// Appends the object for `entry`.
  func append(_ entry: OutboxEntry, to out: inout [UInt8]) {
    out += roomKey
    if let room = entry.room { out += room.json } else { out.append("null" as StaticString) }
    out += messageKey
    out.appendJSONString(entry.text)
    out += senderAndCountKey
    out.appendDecimal(entry.count)
    out += clientIDKey
    out.appendJSONString(entry.id)
    out.append(UInt8(ascii: "}"))
  }

  /// Appends `{"<roomField>":<room>}`, the data of a join or leave.
  func appendRoom(_ room: RoomID, to out: inout [UInt8]) {
    out += roomKey
    out += room.json
    out.append(UInt8(ascii: "}"))
  }

  /// `"name":`.
  private static func key(_ name: String) -> [UInt8] {
    var out: [UInt8] = []
    JSONString.append(name, to: &out)
    out.append(UInt8(ascii: ":"))
    return out
  }
}
