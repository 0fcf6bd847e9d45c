import JSON
import WebSocket
import XMPP

/// Inbound `<message/>`s: records of the rooms' groupchat and of chats to us, errors of our
/// sends, and the reflections that confirm them.
extension XMPPProtocol {
  static let delayNamespace = "urn:xmpp:delay"

  mutating func message(_ element: XMLElement, into reading: inout ProtocolReading) {
    if archived(element, into: &reading) { return }
    let type = element.attribute("type") ?? "normal"
    let id = element.attribute("id")
    if type == "error" {
      sendError(element, id: id, into: &reading)
      return
    }
    guard let from = element.attribute("from").flatMap({ try? JID(parsing: $0) }) else { return }
    let room: String
    var nick: String?
    var archives: Set<String>
    switch type {
    case "groupchat":
      room = from.bare.bareText
      guard rooms[room]?.status == .joined else { return }
      nick = from.resource
      archives = [room]
      // Our own message, reflected by the room: the confirmation of its send.
      if let id, pendingSends.removeValue(forKey: id) != nil { reading.echoedClientID = id }
    case "chat":
      guard isToUs(element.attribute("to")) else { return }
      room = from.bare.bareText
      archives = [settings.jid.bareText, settings.jid.domain]
    default:
      return
    }
    // Chat states, receipts, subjects: nothing to store.
    guard let body = element.child("body", namespace: XMPPNamespace.client) else { return }
    let stanzaID = element.children("stanza-id", namespace: Self.stanzaIDNamespace).first {
      guard let by = $0.attribute("by").flatMap({ try? JID(parsing: $0) }) else { return false }
      return archives.contains(by.bareText)
    }?.attribute("id")
    var record = Self.record(
      room: room,
      fields: [
        ("body", body.text), ("from", element.attribute("from") ?? ""), ("id", id),
        ("type", type), ("nick", nick), ("stanza_id", stanzaID),
      ])
    record.meta = Self.meta(element)
    if type == "groupchat" && rooms[room]?.query != nil {
      rooms[room]?.hold(record, archived: stanzaID != nil)
      return
    }
    if type == "chat" && account?.query != nil {
      account?.hold(record, archived: stanzaID != nil)
      return
    }
    add(record, into: &reading)
  }

  /// An error reply to one of our sends: the send failed, with the error's condition.
  private mutating func sendError(
    _ element: XMLElement, id: String?, into reading: inout ProtocolReading
  ) {
    if let id, let count = pendingSends.removeValue(forKey: id) {
      let error = element.child("error", namespace: XMPPNamespace.client)
      let condition = error.map(Self.condition) ?? "undefined-condition"
      // A room that has removed us (our unavailable presence came first: the server is
      // closing our session, as on its restart) refuses what we sent meanwhile as from a
      // non-occupant (XEP-0045 §7.4). Not a refusal of the message: it stays unconfirmed
      // and goes out again once a session has joined the room again.
      if condition == "not-acceptable",
        let room = element.attribute("from").flatMap({ try? JID(parsing: $0) })?.bare.bareText,
        let status = rooms[room]?.status, status != .joined
      {
        return
      }
      let text = error.flatMap { Self.errorText($0) }
      reading.failed.append(
        DeliveryFailure(count: count, reason: condition + (text.map { ": \($0)" } ?? "")))
    }
  }

  /// Whether a message's `to` is our account or this session (a missing `to` is ours).
  private func isToUs(_ to: String?) -> Bool {
    guard let to else { return true }
    guard let jid = try? JID(parsing: to) else { return false }
    return jid.bare == settings.jid
  }

  /// The record: `data` a JSON object of the fields that are set, in order; its id is
  /// `stanza_id`'s value, found where it was written in those very bytes.
  static func record(room: String, fields: [(key: String, value: String?)]) -> InboundMessage {
    var data: [UInt8] = [UInt8(ascii: "{")]
    var idRange: Range<Int>?
    for (key, value) in fields {
      guard let value else { continue }
      if data.count > 1 { data.append(UInt8(ascii: ",")) }
      JSONString.append(key, to: &data)
      data.append(UInt8(ascii: ":"))
      let start = data.count
      JSONString.append(value, to: &data)
      if key == "stanza_id" && !value.isEmpty { idRange = start..<data.count }
    }
    data.append(UInt8(ascii: "}"))
    var roomJSON: [UInt8] = []
    JSONString.append(room, to: &roomJSON)
    // Escaped JSON has no raw line break.
    var record = InboundMessage(
      payload: .text(data), scan: .json(hasLineBreaks: false), room: roomJSON)
    if let idRange {
      record.id = data.withUnsafeBytes { MessageID.location($0, idRange) }
    }
    return record
  }

  /// `{"delay":{"stamp":"…","from":"…"}}` when the message was delayed (XEP-0203), else nil.
  static func meta(_ element: XMLElement) -> [UInt8]? {
    guard let delay = element.child("delay", namespace: delayNamespace),
      let stamp = delay.attribute("stamp")
    else { return nil }
    var members: [(key: String, value: JSONValue)] = [("stamp", .string(stamp))]
    if let from = delay.attribute("from") { members.append(("from", .string(from))) }
    return JSONValue.object([("delay", .object(members))]).bytes
  }
}
