import JSON
import LinkCore

/// One chat line as the server hands it out, before a peer's dialect frames it (an envelope
/// or a Socket.IO event): both carry the same data object, so a room can mix dialects'
/// members only through this type.
struct ChatMessage {
  var room: String
  var text: String
  var sender: String
  var clientID: String?
  /// The id the server gave the message in its room (`--history`), or nil; it goes out as
  /// `msg_id`, what chatlinkd's `[Envelope] IDField=` names.
  var id: String?

  /// Appends `{"room_id":…[,"msg_id":…],"message":…,"sender":…[,"client_id":…],"time":"…"}`.
  ///
  /// `count`, when given, goes right after the room: flood messages carry their number so a
  /// client can check that none is lost or reordered.
  func appendData(to out: inout [UInt8], count: UInt64? = nil) {
    out.append(#"{"room_id":"# as StaticString)
    out += RoomID(room)?.json ?? Array("null".utf8)
    if let id {
      out.append(#","msg_id":"# as StaticString)
      JSONString.append(id, to: &out)
    }
    if let count {
      out.append(#","count":"# as StaticString)
      out.appendDecimal(count)
    }
    out.append(#","message":"# as StaticString)
    JSONString.append(text, to: &out)
    out.append(#","sender":"# as StaticString)
    JSONString.append(sender, to: &out)
    if let clientID {
      out.append(#","client_id":"# as StaticString)
      JSONString.append(clientID, to: &out)
    }
    out.append(#","time":""# as StaticString)
    Timestamp.now().append(to: &out)
    out.append(#""}"# as StaticString)
  }

  /// The data object alone.
  func data() -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(96 + text.utf8.count + sender.utf8.count)
    appendData(to: &out)
    return out
  }
}
