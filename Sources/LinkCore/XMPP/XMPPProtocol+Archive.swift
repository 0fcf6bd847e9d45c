import WebSocket
import XMPP

/// Catch-up from a room's archive (XEP-0313, MAM): once a join is confirmed, the archive is
/// asked for what came after the newest stanza-id stored for the room, a page at a time until
/// it says it is complete; its messages are stored in archive order, and the live messages
/// that came meanwhile after them (the store drops those the archive had too, by stanza-id).
extension XMPPProtocol: CatchingUp {
  public var roomsCatchingUp: Int { rooms.values.count { $0.query != nil } }

  static let mamNamespace = "urn:xmpp:mam:2"
  static let rsmNamespace = "http://jabber.org/protocol/rsm"
  static let forwardNamespace = "urn:xmpp:forward:0"
  /// Results per page: Prosody's default most (`max_archive_query_results`).
  static let archivePage = 50

  /// `<iq type='set' to='ROOM' id='mam-N'><query xmlns='urn:xmpp:mam:2' queryid='mam-N'>
  /// <set xmlns='…rsm'><max>50</max><after>ID</after></set></query></iq>`; without an id,
  /// from the archive's start.
  mutating func archiveQuery(_ room: String, after: String?) -> Message {
    archiveQueries += 1
    let id = "mam-\(archiveQueries)"
    rooms[room]?.query = id
    countSent()
    var set = XMLElement(
      "set", namespace: Self.rsmNamespace,
      children: [XMLElement("max", namespace: Self.rsmNamespace, text: String(Self.archivePage))])
    if let after {
      set.children.append(XMLElement("after", namespace: Self.rsmNamespace, text: after))
    }
    return Self.frame(
      XMLElement(
        "iq", namespace: XMPPNamespace.client,
        attributes: [
          XMLAttribute("type", "set"), XMLAttribute("to", room), XMLAttribute("id", id),
        ],
        children: [
          XMLElement(
            "query", namespace: Self.mamNamespace, attributes: [XMLAttribute("queryid", id)],
            children: [set])
        ]))
  }

  /// The room whose archive query has this id.
  private func room(querying id: String) -> String? {
    rooms.first { $0.value.query == id }?.key
  }

  /// A message carrying one of our queries' results: its record. False when it carries none.
  mutating func archived(_ element: XMLElement, into reading: inout ProtocolReading) -> Bool {
    guard let result = element.child("result", namespace: Self.mamNamespace) else { return false }
    // Only the archive we asked, and only from it: anyone could send a message with a result.
    guard let queryID = result.attribute("queryid"), let room = room(querying: queryID),
      (element.attribute("from").flatMap { try? JID(parsing: $0) })?.bareText == room
    else {
      reading.problem = "an archive result no query of ours asked for"
      return true
    }
    guard let forwarded = result.child("forwarded", namespace: Self.forwardNamespace),
      let message = forwarded.child("message", namespace: XMPPNamespace.client),
      let body = message.child("body", namespace: XMPPNamespace.client)
    else { return true }
    let from = message.attribute("from")
    var record = Self.record(
      room: room,
      fields: [
        ("body", body.text), ("from", from ?? ""), ("id", message.attribute("id")),
        ("type", "groupchat"), ("nick", from.flatMap { try? JID(parsing: $0) }?.resource),
        ("stanza_id", result.attribute("id")),
      ])
    record.meta = Self.meta(forwarded)
    rooms[room]?.archived += 1
    reading.fromHistory += 1
    add(record, into: &reading)
    return true
  }

  /// The answer to one of our queries: the next page, or the end of the room's catch-up.
  /// False when the `<iq/>` answers no query of ours.
  mutating func archiveAnswer(_ iq: XMLElement, into reading: inout ProtocolReading) -> Bool {
    guard let id = iq.attribute("id"), let room = room(querying: id) else { return false }
    if iq.attribute("type") == "result" {
      let fin = iq.child("fin", namespace: Self.mamNamespace)
      let last = fin?.child("set", namespace: Self.rsmNamespace)?
        .child("last", namespace: Self.rsmNamespace)?.text
      if fin?.attribute("complete") != "true", let last, !last.isEmpty {
        reading.replies.append(archiveQuery(room, after: last))
        return true
      }
    } else {
      let error = iq.child("error", namespace: XMPPNamespace.client)
      let condition = error.map(Self.condition) ?? "undefined-condition"
      if condition == "item-not-found" {
        // The archive no longer has the id (expired, over its item limit): what came between
        // it and now may be missing. Counted and logged, never silent.
        reading.historyGap = room
      } else {
        reading.problem = "the archive of \(room) refused the catch-up: \(condition)"
      }
    }
    finishCatchUp(room, into: &reading)
    return true
  }

  /// The room caught up: the live messages held meanwhile are stored now.
  private mutating func finishCatchUp(_ room: String, into reading: inout ProtocolReading) {
    guard var state = rooms[room] else { return }
    state.query = nil
    let held = state.held
    state.held = []
    rooms[room] = state
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

  /// Rooms catching up, with what each has taken from its archive so far, for status.
  var catchingUp: [String] {
    rooms.filter { $0.value.query != nil }.map { "\($0.key) (\($0.value.archived) so far)" }
      .sorted()
  }
}
