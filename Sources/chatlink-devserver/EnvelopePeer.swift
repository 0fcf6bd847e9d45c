import JSON
import LinkCore
import Transport
import WebSocket

/// A client speaking the envelope protocol: `{"event":"join-room","data":{"room_id":7}}`,
/// `leave-room`, `send-message`; it receives `{"event":"message","data":{…}}`.
final class EnvelopePeer: Peer {
  private static let keys = JSONScanner.Keys(["event", "data"])
  private static let dataKeys = JSONScanner.Keys([
    "room_id", "message", "sender", "client_id", "since",
  ])

  override func admit(_ request: HTTPRequestHead) -> HTTPRefusal? {
    server.authorized(request) ? nil : .unauthorized
  }

  override func opened() {
    let flood = Envelope.message(server.floodMessage(overhead: 120))
    server.floodIfAsked(self) { _ in flood }
  }

  override func deliver(event: String, data: [UInt8], namespace: String) {
    send(Envelope.event(event, data: data))
  }

  override func received(_ message: Message) {
    guard case .text(let bytes) = message else { return }
    bytes.withUnsafeBytes { raw in
      guard
        let scan = JSONScanner.scan(
          raw, topLevel: Self.keys, nestedIn: 1, nested: Self.dataKeys),
        let event = string(raw, scan.topLevel[0]), let roomRange = scan.nested[0]
      else {
        send(
          Array(
            #"{"event":"error","data":{"message":"expected an envelope with data.room_id"}}"#.utf8))
        return
      }
      let roomRaw = UnsafeRawBufferPointer(rebasing: raw[roomRange])
      guard let room = RoomID(json: roomRaw)?.name else { return }
      let key = DevServer.RoomKey(namespace: "/", room: room)
      switch event {
      case "join-room": server.join(self, key, since: since(raw, scan.nested[4]))
      case "leave-room": server.leave(self, key)
      case "send-message":
        let text = string(raw, scan.nested[1]) ?? ""
        let sender = string(raw, scan.nested[2]) ?? "anonymous"
        server.broadcast(
          ChatMessage(
            room: room, text: text, sender: sender, clientID: string(raw, scan.nested[3])),
          sender: self)
      default:
        send(Array(#"{"event":"error","data":{"message":"unknown event"}}"#.utf8))
      }
    }
  }

  /// A join's `since`: a string's content, or a number's text (which is no id of ours, but
  /// is still an id the client has).
  private func since(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>?) -> String? {
    guard let range, let first = raw[range].first, first == UInt8(ascii: "-") || first.isDigit
    else { return string(raw, range) }
    return String(decoding: raw[range], as: UTF8.self)
  }

  private func string(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>?) -> String? {
    guard let range, range.count >= 2, raw[range.lowerBound] == UInt8(ascii: "\"") else {
      return nil
    }
    return String(
      decoding: JSONString.unescape(
        UnsafeRawBufferPointer(rebasing: raw[(range.lowerBound + 1)..<(range.upperBound - 1)])),
      as: UTF8.self)
  }
}

/// Builds the backend's outgoing envelopes.
enum Envelope {
  /// `{"event":"message","data":{…}}`.
  static func message(_ message: ChatMessage) -> [UInt8] {
    event("message", data: message.data())
  }

  /// `{"event":"<event>","data":<data>}`.
  static func event(_ event: String, data: [UInt8]) -> [UInt8] {
    var out = Array(#"{"event":"#.utf8)
    JSONString.append(event, to: &out)
    out.append(#","data":"# as StaticString)
    out += data
    out.append(UInt8(ascii: "}"))
    return out
  }
}
