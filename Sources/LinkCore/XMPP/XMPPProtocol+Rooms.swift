import WebSocket
import XMPP

/// Joining and leaving rooms, and what the rooms' presences say.
extension XMPPProtocol {
  static let mucNamespace = "http://jabber.org/protocol/muc"
  static let mucUserNamespace = "http://jabber.org/protocol/muc#user"

  public var joinsAfterStoredID: Bool { true }

  public mutating func join(_ room: RoomID) -> Message? { join(room, after: nil) }

  public mutating func join(_ room: RoomID, after position: RoomPosition?) -> Message? {
    guard let jid = try? JID(parsing: room.name), jid.isBare, !jid.local.isEmpty else {
      return nil
    }
    let key = jid.bareText
    if rooms[key]?.status == .joined { return nil }
    var state = RoomState(nick: settings.nick)
    state.after = position.map { String(decoding: $0.id, as: UTF8.self) }
    state.afterTime = position?.time
    rooms[key] = state
    return joinPresence(key, nick: settings.nick)
  }

  /// `<presence to='room/nick'><x xmlns='…muc'><history maxstanzas='0'/></x></presence>`:
  /// no history, since the archive (not the join) is where missed messages come from.
  mutating func joinPresence(_ room: String, nick: String) -> Message {
    countSent()
    let history = XMLElement(
      "history", namespace: Self.mucNamespace, attributes: [XMLAttribute("maxstanzas", "0")])
    return Self.frame(
      XMLElement(
        "presence", namespace: XMPPNamespace.client,
        attributes: [XMLAttribute("to", room + "/" + nick)],
        children: [XMLElement("x", namespace: Self.mucNamespace, children: [history])]))
  }

  public mutating func leave(_ room: RoomID) -> Message? {
    guard let jid = try? JID(parsing: room.name),
      let state = rooms.removeValue(forKey: jid.bare.bareText)
    else { return nil }
    countSent()
    return Self.frame(
      XMLElement(
        "presence", namespace: XMPPNamespace.client,
        attributes: [
          XMLAttribute("to", jid.bare.bareText + "/" + state.nick),
          XMLAttribute("type", "unavailable"),
        ]))
  }

  /// A presence from a room we join: our confirmation, a refusal, or another occupant's.
  mutating func presence(_ element: XMLElement, into reading: inout ProtocolReading) {
    guard let from = element.attribute("from").flatMap({ try? JID(parsing: $0) }),
      var room = rooms[from.bare.bareText]
    else { return }
    let key = from.bare.bareText
    let type = element.attribute("type")
    if type == "error" {
      let error = element.child("error", namespace: XMPPNamespace.client)
      let condition = error.map(Self.condition) ?? "undefined-condition"
      guard room.status == .joining else { return }
      if condition == "conflict" && room.attempt < Self.nickAttempts {
        room.attempt += 1
        room.nick = settings.nick + "_" + String(room.attempt)
        rooms[key] = room
        reading.replies.append(joinPresence(key, nick: room.nick))
        return
      }
      let text = error.flatMap { Self.errorText($0) }
      let why = condition + (text.map { " (\($0))" } ?? "")
      room.status = .refused(why)
      rooms[key] = room
      reading.problem = "the room \(key) refused the join as '\(room.nick)': \(why)"
      return
    }
    let user = element.child("x", namespace: Self.mucUserNamespace)
    let isSelf =
      user?.children("status", namespace: Self.mucUserNamespace).contains {
        $0.attribute("code") == "110"
      } ?? false
    guard isSelf else { return }
    if type == "unavailable" {
      // Kicked, banned or the room went away: no longer in it.
      room.status = .refused("left the room (unavailable presence)")
      rooms[key] = room
      reading.problem = "no longer in the room \(key): the room sent our unavailable presence"
    } else if room.status != .joined {
      room.status = .joined
      room.nick = from.resource
      rooms[key] = room
      if room.after != nil || settings.catchUpAll {
        reading.replies.append(archiveQuery(key, after: room.after, start: nil))
      }
    }
  }

  /// A stanza error's condition (RFC 6120 §8.3).
  static func condition(_ error: XMLElement) -> String {
    error.children.first { $0.namespace == XMPPNamespace.stanzaErrors && $0.name != "text" }?.name
      ?? "undefined-condition"
  }

  /// A stanza error's text, if it has one.
  static func errorText(_ error: XMLElement) -> String? {
    error.child("text", namespace: XMPPNamespace.stanzaErrors)?.text
  }
}
