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
      + entry.textUTF8Count + entry.clientID.utf8Count + 48
  }

  /// Appends the object for `entry`.
  func append(_ entry: OutboxEntry, to out: inout [UInt8]) {
    out += roomKey
    if let room = entry.room { out += room.json } else { out.append("null" as StaticString) }
    out += messageKey
    entry.withTextUTF8 { JSONString.append(UnsafeRawBufferPointer($0), to: &out) }
    out += senderAndCountKey
    out.appendDecimal(entry.count)
    out += clientIDKey
    entry.clientID.appendJSON(to: &out)
    out.append(UInt8(ascii: "}"))
  }

  /// The whole frame `prefix` + the object for `entry` + `suffix`, written in one allocation of
  /// the exact size, when its text and id need no escapes (nearly always); nil otherwise,
  /// for `append` to do it piece by piece.
  func frame(_ entry: OutboxEntry, prefix: [UInt8], suffix: UInt8) -> [UInt8]? {
    guard entry.isPlain else { return nil }
    var frame: [UInt8]?
    withPlainFrame(entry, prefix: prefix, suffix: suffix) { size, write in
      // Written on the stack, then copied into an array made from the bytes: cheaper than
      // `[UInt8](unsafeUninitializedCapacity:)`, which allocates through the standard
      // library's unspecialized buffer code and looks up the element type's metadata.
      frame = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: size) { buffer in
        guard let base = buffer.baseAddress else { return [] }
        var out = ByteWriter(base)
        write(&out)
        return [UInt8](UnsafeBufferPointer(start: base, count: out.position - base))
      }
    }
    return frame
  }

  /// Appends the frame `frame(_:prefix:suffix:)` makes to `frames`, written in place, and
  /// returns true; or returns false, when text or id need escapes.
  func appendFrame(
    _ entry: OutboxEntry, prefix: [UInt8], suffix: UInt8, to frames: inout PackedStrings
  ) -> Bool {
    guard entry.isPlain else { return false }
    withPlainFrame(entry, prefix: prefix, suffix: suffix) { size, write in
      frames.append(maxCount: size, write)
    }
    return true
  }

  /// Calls `body` with the plain frame's size and a function that writes it.
  private func withPlainFrame(
    _ entry: OutboxEntry, prefix: [UInt8], suffix: UInt8,
    _ body: (Int, (inout ByteWriter) -> Void) -> Void
  ) {
    entry.withTextUTF8 { text in
      entry.clientID.withUTF8 { id in
        let room = entry.room
        let size =
          prefix.count + roomKey.count + (room?.json.count ?? 4) + messageKey.count + text.count
          + senderAndCountKey.count + ByteWriter.decimalLength(entry.count) + clientIDKey.count
          + id.count + 6
        body(size) { out in
          out.write(prefix)
          out.write(roomKey)
          if let room { out.write(room.json) } else { out.write("null") }
          out.write(messageKey)
          out.writeQuoted(UnsafeRawBufferPointer(text))
          out.write(senderAndCountKey)
          out.writeDecimal(entry.count)
          out.write(clientIDKey)
          out.writeQuoted(UnsafeRawBufferPointer(id))
          out.write(UInt8(ascii: "}"))
          out.write(suffix)
        }
      }
    }
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
