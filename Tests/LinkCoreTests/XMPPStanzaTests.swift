import JSON
import LinkCore
import WebSocket
import XCTest
import XMPP

/// The XMPP dialect once its session is ready: rooms, what each message becomes, stream
/// management's counts, and sends.
final class XMPPStanzaTests: XCTestCase {
  private typealias S = XMPPServer

  private func joined(_ rooms: [String] = [XMPPServer.room]) -> XMPPProtocol {
    var dialect = S.negotiated()
    for room in rooms {
      _ = dialect.join(RoomID(room)!)
      XCTAssertNil(dialect.read(.xml(S.selfPresence(room))).problem)
    }
    return dialect
  }

  /// The record's data, its room and its id as text.
  private func stored(_ reading: ProtocolReading) -> (data: String, room: String, id: String?)? {
    guard let record = reading.record else { return nil }
    let payload = record.payload.bytes
    let id = record.idBytes.map { String(decoding: $0, as: UTF8.self) }
    return (
      String(decoding: payload, as: UTF8.self), String(decoding: record.room ?? [], as: UTF8.self),
      id
    )
  }

  func testARoomIsJoinedWithoutHistoryAndConfirmedByItsPresenceOfUs() throws {
    var dialect = S.negotiated()
    let join = try XCTUnwrap(dialect.join(RoomID(S.room)!))
    XCTAssertEqual(
      join.text,
      "<presence xmlns='jabber:client' to='lobby@conference.example.org/user'><x "
        + "xmlns='http://jabber.org/protocol/muc'><history maxstanzas='0'/></x></presence>")
    XCTAssertEqual(dialect.session?.note, "joining lobby@conference.example.org")
    // Messages before the confirmation are not the room's to us yet.
    XCTAssertNil(dialect.read(.xml(S.groupchat("early"))).record)
    _ = dialect.read(.xml(S.selfPresence()))
    XCTAssertNil(dialect.session?.note)
    XCTAssertNotNil(dialect.read(.xml(S.groupchat("now"))).record)
  }

  func testANickConflictRetriesWithASuffixAndTheNewNickIsConfirmed() throws {
    var dialect = S.negotiated()
    _ = dialect.join(RoomID(S.room)!)
    let conflict = dialect.read(
      .xml(
        "<presence xmlns='jabber:client' from='\(S.room)/user' type='error'><error "
          + "type='cancel'><conflict xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error>"
          + "</presence>"))
    XCTAssertEqual(
      texts(conflict.replies),
      [
        "<presence xmlns='jabber:client' to='lobby@conference.example.org/user_2'><x "
          + "xmlns='http://jabber.org/protocol/muc'><history maxstanzas='0'/></x></presence>"
      ])
    XCTAssertNil(conflict.problem)
    _ = dialect.read(.xml(S.selfPresence(nick: "user_2")))
    XCTAssertNotNil(dialect.read(.xml(S.groupchat("hi"))).record)
  }

  func testARefusedJoinIsReportedAndInStatusAndTheOtherRoomsGoOn() {
    var dialect = S.negotiated()
    _ = dialect.join(RoomID(S.room)!)
    _ = dialect.join(RoomID(S.otherRoom)!)
    let refused = dialect.read(
      .xml(
        "<presence xmlns='jabber:client' from='\(S.otherRoom)/user' type='error'><error "
          + "type='auth'><forbidden xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/><text "
          + "xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'>You are banned</text></error>"
          + "</presence>"))
    XCTAssertEqual(
      refused.problem,
      "the room ops@conference.example.org refused the join as 'user': forbidden (You are banned)")
    XCTAssertNil(refused.session)
    _ = dialect.read(.xml(S.selfPresence()))
    XCTAssertEqual(
      dialect.session?.note, "ops@conference.example.org refused: forbidden (You are banned)")
    XCTAssertNotNil(dialect.read(.xml(S.groupchat("hi"))).record)
    XCTAssertNil(dialect.read(.xml(S.groupchat("hi", room: S.otherRoom))).record)
  }

  func testGroupchatIsStoredUnderTheRoomWithItsStanzaIDAsTheRecordsID() throws {
    var dialect = joined()
    let reading = dialect.read(.xml(S.groupchat("hello \"you\"", id: "m-7", stanzaID: "5f3a")))
    let record = try XCTUnwrap(stored(reading))
    XCTAssertEqual(
      record.data,
      #"{"body":"hello \"you\"","from":"lobby@conference.example.org/alice","id":"m-7","#
        + #""type":"groupchat","nick":"alice","stanza_id":"5f3a"}"#)
    XCTAssertEqual(record.room, #""lobby@conference.example.org""#)
    XCTAssertEqual(record.id, "5f3a")
    XCTAssertEqual(reading.record?.scan, .json(hasLineBreaks: false))
    XCTAssertNil(reading.record?.meta)
    // The stanza counts toward h once durable.
    XCTAssertEqual(reading.acknowledgement?.text, "<a xmlns='urn:xmpp:sm:3' h='2'/>")
  }

  func testAStanzaIDSetByAnotherEntityIsNotTaken() throws {
    var dialect = joined()
    let forged = dialect.read(.xml(S.groupchat("hi", stanzaID: "forged", by: "evil@example.org")))
    let record = try XCTUnwrap(stored(forged))
    XCTAssertNil(record.id)
    XCTAssertFalse(record.data.contains("stanza_id"))
  }

  func testMessagesWithoutABodyAreNotStoredButCount() {
    var dialect = joined()
    let typing = dialect.read(
      .xml(
        S.groupchat(
          nil, extra: "<composing xmlns='http://jabber.org/protocol/chatstates'/>")))
    XCTAssertNil(typing.record)
    XCTAssertEqual(
      dialect.read(.xml(S.groupchat("hi"))).acknowledgement?.text,
      "<a xmlns='urn:xmpp:sm:3' h='3'/>")
  }

  func testAChatToUsIsStoredUnderThePeersBareJIDWithTheAccountsStanzaID() throws {
    var dialect = joined()
    let reading = dialect.read(
      .xml(
        "<message xmlns='jabber:client' from='Alice@Example.org/phone' to='\(S.fullJID)' "
          + "type='chat' id='c-1'><body>psst</body><stanza-id xmlns='urn:xmpp:sid:0' id='a-9' "
          + "by='user@example.org'/></message>"))
    let record = try XCTUnwrap(stored(reading))
    XCTAssertEqual(
      record.data,
      #"{"body":"psst","from":"Alice@Example.org/phone","id":"c-1","type":"chat","stanza_id":"a-9"}"#
    )
    XCTAssertEqual(record.room, #""alice@example.org""#)
    XCTAssertEqual(record.id, "a-9")
    let elsewhere = dialect.read(
      .xml(
        "<message xmlns='jabber:client' from='alice@example.org/phone' to='bob@example.org' "
          + "type='chat'><body>not ours</body></message>"))
    XCTAssertNil(elsewhere.record)
  }

  func testADelayedMessagesTimestampGoesIntoMeta() throws {
    var dialect = joined()
    let reading = dialect.read(
      .xml(
        S.groupchat(
          "old",
          extra: "<delay xmlns='urn:xmpp:delay' from='\(S.room)' stamp='2026-12-01T10:00:00Z'/>")))
    let meta = try XCTUnwrap(reading.record?.meta)
    XCTAssertEqual(
      String(decoding: meta, as: UTF8.self),
      #"{"delay":{"stamp":"2026-12-01T10:00:00Z","from":"lobby@conference.example.org"}}"#)
  }

  func testTheServersRequestIsAnsweredWithTheCountOnceEarlierRecordsAreDurable() {
    var dialect = joined()
    _ = dialect.read(.xml(S.groupchat("one")))
    let request = dialect.read(.xml("<r xmlns='urn:xmpp:sm:3'/>"))
    XCTAssertEqual(request.afterStored?.text, "<a xmlns='urn:xmpp:sm:3' h='2'/>")
    XCTAssertEqual(request.replies, [])
  }

  func testPingsAreAnsweredAndOtherRequestsRefused() {
    var dialect = joined()
    let ping = dialect.read(
      .xml(
        "<iq xmlns='jabber:client' from='example.org' type='get' id='p-1'><ping "
          + "xmlns='urn:xmpp:ping'/></iq>"))
    XCTAssertEqual(
      texts(ping.replies), ["<iq xmlns='jabber:client' type='result' id='p-1' to='example.org'/>"])
    let version = dialect.read(
      .xml(
        "<iq xmlns='jabber:client' from='a@example.org/x' type='get' id='v-1'><query "
          + "xmlns='jabber:iq:version'/></iq>"))
    XCTAssertEqual(
      texts(version.replies),
      [
        "<iq xmlns='jabber:client' type='error' id='v-1' to='a@example.org/x'><error "
          + "type='cancel'><service-unavailable xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/>"
          + "</error></iq>"
      ])
  }

  func testAGroupchatSendIsConfirmedByTheRoomsReflectionOfItsID() {
    var dialect = joined()
    let frame = dialect.encode(entry(4, "hi all", id: "c4", room: S.room))
    XCTAssertEqual(
      frame.text,
      "<message xmlns='jabber:client' to='lobby@conference.example.org' type='groupchat' "
        + "id='c4'><body>hi all</body><origin-id xmlns='urn:xmpp:sid:0' id='c4'/></message>")
    XCTAssertEqual(
      dialect.storedForm(of: frame, for: entry(4, "hi all", id: "c4", room: S.room)).text,
      "hi all")
    let reflection = dialect.read(.xml(S.groupchat("hi all", id: "c4", nick: "user")))
    XCTAssertEqual(reflection.echoedClientID, "c4")
    XCTAssertNotNil(reflection.record)
    // The server's count does not confirm a groupchat send: only the room's reflection does.
    XCTAssertEqual(dialect.read(.xml("<a xmlns='urn:xmpp:sm:3' h='9'/>")).delivered, [])
  }

  func testAChatSendIsConfirmedByTheServersCountCoveringIt() {
    var dialect = joined()
    // Presence and the join went out before: this is our third stanza.
    _ = dialect.encode(entry(5, "psst", id: "c5", room: "alice@example.org"))
    _ = dialect.encode(entry(6, "again", id: "c6", room: "alice@example.org"))
    let first = dialect.read(.xml("<a xmlns='urn:xmpp:sm:3' h='3'/>"))
    XCTAssertEqual(first.delivered, [5])
    XCTAssertTrue(first.heartbeatAnswered)
    XCTAssertEqual(dialect.read(.xml("<a xmlns='urn:xmpp:sm:3' h='4'/>")).delivered, [6])
  }

  func testAnErrorReplyFailsThatSendOnlyWithItsCondition() {
    var dialect = joined()
    _ = dialect.encode(entry(7, "x", id: "c7", room: S.room))
    _ = dialect.encode(entry(8, "y", id: "c8", room: S.room))
    let error = dialect.read(
      .xml(
        "<message xmlns='jabber:client' from='\(S.room)' type='error' id='c7'><error "
          + "type='modify'><not-acceptable xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/><text "
          + "xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'>Only occupants may speak</text></error>"
          + "</message>"))
    XCTAssertEqual(
      error.failed, [DeliveryFailure(count: 7, reason: "not-acceptable: Only occupants may speak")])
    XCTAssertNil(error.record)
    XCTAssertEqual(
      dialect.read(.xml(S.groupchat("y", id: "c8", nick: "user"))).echoedClientID, "c8")
  }

  func testASendTheRoomRefusesAfterRemovingUsStaysUnconfirmedForTheNextSession() {
    var dialect = joined()
    _ = dialect.encode(entry(7, "x", id: "c7", room: S.room))
    // The server closes our session: the room says we left, then refuses what we sent.
    let left = dialect.read(
      .xml(
        "<presence xmlns='jabber:client' from='\(S.room)/user' to='\(S.fullJID)' "
          + "type='unavailable'><x xmlns='http://jabber.org/protocol/muc#user'><item "
          + "affiliation='none' role='none'/><status code='110'/></x></presence>"))
    XCTAssertNotNil(left.problem)
    let error = dialect.read(
      .xml(
        "<message xmlns='jabber:client' from='\(S.room)' type='error' id='c7'><error "
          + "type='cancel'><not-acceptable xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/><text "
          + "xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'>You are not currently connected to this "
          + "chat</text></error></message>"))
    XCTAssertEqual(error.failed, [], "not failed: sent again after the next join")
    XCTAssertEqual(error.delivered, [])
  }

  func testAMessageWithoutARoomOrToAJIDThatIsNoAccountIsRefusedBeforeSending() {
    let dialect = joined()
    XCTAssertEqual(
      dialect.refusal(of: entry(1, room: nil)),
      "XMPP needs a room (a room's or a user's JID) for every message")
    XCTAssertEqual(
      dialect.refusal(of: entry(1, room: "example.org")),
      "'example.org' is not a bare JID (room@conference.example.org or user@example.org)")
    XCTAssertNil(dialect.refusal(of: entry(1, room: S.room)))
  }
}
