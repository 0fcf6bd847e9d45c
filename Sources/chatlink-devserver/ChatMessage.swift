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

  /// Appends `{"room_id":…,"message":…,"sender":…[,"client_id":…],"time":"…"}`.
  ///
  /// `count`, when given, goes right after the room: flood messages carry their number so a
  /// client can check that none is lost or reordered.
  func appendData(to out: inout [UInt8], count: UInt64? = nil) {
    out.append(#"{"room_id":"# as StaticString)
    out += RoomID(room)?.json ?? Array("null".utf8)
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
}
