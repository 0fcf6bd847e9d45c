import JSON
import WebSocket
import XMPP

/// Catch-up from a room's archive (XEP-0313, MAM): once a join is confirmed, the archive is
/// asked for what came after the newest stanza-id stored for the room, a page at a time until
/// it says it is complete; its messages are stored in archive order, and the live messages
/// that came meanwhile after them (the store drops those the archive had too, by stanza-id).
extension XMPPProtocol: CatchingUp {
  static let mamNamespace = "urn:xmpp:mam:2"
  static let rsmNamespace = "http://jabber.org/protocol/rsm"
  static let forwardNamespace = "urn:xmpp:forward:0"
  static let dataFormsNamespace = "jabber:x:data"
  /// How far before the newest stored record's time a catch-up that falls back to a time
  /// starts: clocks differ, and what it brings twice the store drops by stanza-id.
  static let fallbackMargin: Int64 = 60_000_000
  /// Results per page: Prosody's default most (`max_archive_query_results`).
  static let archivePage = 50

  /// `<iq type='set' to='ROOM' id='mam-N'><query xmlns='urn:xmpp:mam:2' queryid='mam-N'>
  /// <set xmlns='…rsm'><max>50</max><after>ID</after></set></query></iq>`; without an id,
  /// from the archive's start; with `start`, only what the archive holds from that time
  /// (XEP-0313 §4.1.1's `start` field).
  mutating func archiveQuery(_ room: String, after: String?, start: Timestamp?) -> Message {
    archiveQueries += 1
    let id = "mam-\(archiveQueries)"
    self[catchUp: room]?.query = id
    self[catchUp: room]?.cursor = after
    self[catchUp: room]?.letGo = false
    countSent()
    var set = XMLElement(
      "set", namespace: Self.rsmNamespace,
      children: [XMLElement("max", namespace: Self.rsmNamespace, text: String(Self.archivePage))])
    if let after {
      set.children.append(XMLElement("after", namespace: Self.rsmNamespace, text: after))
    }
    var query = XMLElement(
      "query", namespace: Self.mamNamespace, attributes: [XMLAttribute("queryid", id)])
    if let start { query.children.append(Self.startForm(start)) }
    query.children.append(set)
    // The account's own archive is asked without a `to`.
    var attributes = [XMLAttribute("type", "set"), XMLAttribute("id", id)]
    if room != accountKey { attributes.insert(XMLAttribute("to", room), at: 1) }
    return Self.frame(
      XMLElement("iq", namespace: XMPPNamespace.client, attributes: attributes, children: [query]))
  }

  /// The key of the account's own archive among the catch-ups: our bare JID.
  var accountKey: String { settings.jid.bareText }

  /// The catch-up under `key`: a room's, or the account's (`accountKey`).
  subscript(catchUp key: String) -> RoomState? {
    get { key == accountKey ? account : rooms[key] }
    set {
      if key == accountKey { account = newValue } else { rooms[key] = newValue }
    }
  }

  /// A new session (not a resumption) asks the account's archive for the chats it holds from
  /// a minute before the newest stored record's time; with none stored, chats start from now.
  public mutating func catchUp(newestStored: Timestamp?) -> Message? {
    guard !resumed, boundJID != nil, let newestStored else { return nil }
    var state = RoomState(nick: settings.nick)
    state.status = .joined
    state.start = Timestamp(microseconds: newestStored.microseconds - Self.fallbackMargin)
    account = state
    return archiveQuery(accountKey, after: nil, start: state.start)
  }

  /// The data form (XEP-0004) of a query from `start` on, in whole seconds (XEP-0082).
  static func startForm(_ start: Timestamp) -> XMLElement {
    let seconds = start.microseconds - ((start.microseconds % 1_000_000) + 1_000_000) % 1_000_000
    let text = String(Timestamp(microseconds: seconds).rfc3339.prefix(19)) + "Z"
    func field(_ name: String, _ value: String, hidden: Bool = false) -> XMLElement {
      var attributes = [XMLAttribute("var", name)]
      if hidden { attributes.append(XMLAttribute("type", "hidden")) }
      return XMLElement(
        "field", namespace: dataFormsNamespace, attributes: attributes,
        children: [XMLElement("value", namespace: dataFormsNamespace, text: value)])
    }
    return XMLElement(
      "x", namespace: dataFormsNamespace, attributes: [XMLAttribute("type", "submit")],
      children: [field("FORM_TYPE", mamNamespace, hidden: true), field("start", text)])
  }

  /// The room whose archive query has this id (`accountKey` for the account's).
  private func room(querying id: String) -> String? {
    if account?.query == id { return accountKey }
    return rooms.first { $0.value.query == id }?.key
  }

  /// A message carrying one of our queries' results: its record. False when it carries none.
  mutating func archived(_ element: XMLElement, into reading: inout ProtocolReading) -> Bool {
    guard let result = element.child("result", namespace: Self.mamNamespace) else { return false }
    // Only the archive we asked, and only from it: anyone could send a message with a result.
    let from = element.attribute("from").flatMap { try? JID(parsing: $0) }?.bareText
    guard let queryID = result.attribute("queryid"), let room = room(querying: queryID),
      from == room || (from == nil && room == accountKey)
    else {
      reading.problem = "an archive result no query of ours asked for"
      return true
    }
    guard let forwarded = result.child("forwarded", namespace: Self.forwardNamespace),
      let message = forwarded.child("message", namespace: XMPPNamespace.client),
      let body = message.child("body", namespace: XMPPNamespace.client)
    else { return true }
    let sender = message.attribute("from")
    let senderJID = sender.flatMap { try? JID(parsing: $0) }
    var record: InboundMessage
    if room == accountKey {
      // The account's archive: chats to us, stored under the peer as they are live (not ours
      // to others, nor anything but chats).
      guard message.attribute("type") == "chat", let peer = senderJID?.bare.bareText,
        peer != accountKey
      else { return true }
      record = Self.record(
        room: peer,
        fields: [
          ("body", body.text), ("from", sender ?? ""), ("id", message.attribute("id")),
          ("type", "chat"), ("stanza_id", result.attribute("id")),
        ])
    } else {
      record = Self.record(
        room: room,
        fields: [
          ("body", body.text), ("from", sender ?? ""), ("id", message.attribute("id")),
          ("type", "groupchat"), ("nick", senderJID?.resource),
          ("stanza_id", result.attribute("id")),
        ])
    }
    record.meta = Self.meta(forwarded)
    self[catchUp: room]?.archived += 1
    reading.fromHistory += 1
    add(record, into: &reading)
    return true
  }

  /// The answer to one of our queries: the next page, or the end of the room's catch-up.
  /// False when the `<iq/>` answers no query of ours.
  mutating func archiveAnswer(_ iq: XMLElement, into reading: inout ProtocolReading) -> Bool {
    guard let id = iq.attribute("id"), let room = room(querying: id),
      let state = self[catchUp: room]
    else { return false }
    if iq.attribute("type") == "result" {
      let fin = iq.child("fin", namespace: Self.mamNamespace)
      let last = fin?.child("set", namespace: Self.rsmNamespace)?
        .child("last", namespace: Self.rsmNamespace)?.text
      let cursor = last.flatMap { $0.isEmpty ? nil : $0 } ?? state.cursor
      // Not complete, or complete before a live message we let go: one more page.
      if (fin?.attribute("complete") != "true" && last?.isEmpty == false) || state.letGo {
        reading.replies.append(archiveQuery(room, after: cursor, start: state.start))
        return true
      }
    } else {
      let error = iq.child("error", namespace: XMPPNamespace.client)
      let condition = error.map(Self.condition) ?? "undefined-condition"
      if condition == "item-not-found" {
        // The archive no longer has the id (expired, over its item limit): what came between
        // it and now may be missing. Counted and logged, never silent; then, once, what the
        // archive holds from a little before the newest stored record's time.
        reading.historyGap = room
        if state.start == nil, let time = state.afterTime {
          let start = Timestamp(microseconds: time.microseconds - Self.fallbackMargin)
          self[catchUp: room]?.start = start
          reading.replies.append(archiveQuery(room, after: nil, start: start))
          return true
        }
      } else {
        reading.problem = "the archive of \(room) refused the catch-up: \(condition)"
      }
    }
    finishCatchUp(room, into: &reading)
    return true
  }

  /// The room caught up: the live messages held meanwhile are stored now.
  private mutating func finishCatchUp(_ room: String, into reading: inout ProtocolReading) {
    guard var state = self[catchUp: room] else { return }
    state.query = nil
    let held = state.held
    state.held = []
    state.heldBytes = 0
    self[catchUp: room] = state
    for record in held { add(record, into: &reading) }
  }

  /// Adds a record to the reading, acknowledged (with every stanza read so far) once durable.
  mutating func add(_ record: InboundMessage, into reading: inout ProtocolReading) {
    let acknowledgement = streamManagement ? acknowledgement() : nil
    if reading.record == nil {
      reading.record = record
      reading.acknowledgement = acknowledgement
    } else {
      reading.moreRecords.append((record, acknowledgement))
    }
  }

  public var catchUpProgress: [(room: String, caughtUp: Int)] {
    var progress = rooms.filter { $0.value.query != nil }.map { ($0.key, $0.value.archived) }
    if let account, account.query != nil { progress.append((accountKey, account.archived)) }
    return progress.sorted { $0.0 < $1.0 }
  }

  /// Rooms catching up, with what each has taken from its archive so far, for the session note.
  var catchingUp: [String] {
    catchUpProgress.map { "\($0.room) (\($0.caughtUp) so far)" }
  }
}
