import JSON
import LinkCore
import WebSocket
import XCTest
import XMPP

/// Catch-up from a room's archive (XEP-0313) after a session start without resumption.
final class XMPPArchiveTests: XCTestCase {
  private typealias S = XMPPServer

  /// A dialect whose room (newest stored stanza-id "sid-9") confirmed the join: the archive
  /// query is out.
  private func catchingUp() -> XMPPProtocol {
    var dialect = S.negotiated()
    _ = dialect.join(RoomID(S.room)!, after: RoomPosition(id: Array("sid-9".utf8)))
    _ = dialect.read(.xml(S.selfPresence()))
    return dialect
  }

  private func result(
    _ body: String, id: String, queryID: String = "mam-1", from: String = XMPPServer.room
  ) -> Message {
    .xml(
      "<message xmlns='jabber:client' from='\(from)' to='\(S.fullJID)'><result "
        + "xmlns='urn:xmpp:mam:2' queryid='\(queryID)' id='\(id)'><forwarded "
        + "xmlns='urn:xmpp:forward:0'><delay xmlns='urn:xmpp:delay' stamp='2026-12-06T10:00:00Z'/>"
        + "<message xmlns='jabber:client' from='\(S.room)/bob' type='groupchat' id='o-\(id)'>"
        + "<body>\(body)</body></message></forwarded></result></message>")
  }

  private func fin(_ queryID: String = "mam-1", complete: Bool, last: String) -> Message {
    .xml(
      "<iq xmlns='jabber:client' type='result' id='\(queryID)' from='\(S.room)'><fin "
        + "xmlns='urn:xmpp:mam:2'\(complete ? " complete='true'" : "")><set "
        + "xmlns='http://jabber.org/protocol/rsm'><first>x</first><last>\(last)</last></set>"
        + "</fin></iq>")
  }

  private func bodies(_ reading: ProtocolReading) -> [String] {
    ([reading.record].compactMap { $0 } + reading.moreRecords.map(\.record)).map {
      String(decoding: $0.payload.bytes, as: UTF8.self)
    }
  }

  func testAConfirmedJoinAsksTheArchiveForWhatCameAfterTheNewestStoredID() {
    var dialect = S.negotiated()
    _ = dialect.join(RoomID(S.room)!, after: RoomPosition(id: Array("sid-9".utf8)))
    let confirmed = dialect.read(.xml(S.selfPresence()))
    XCTAssertEqual(
      texts(confirmed.replies),
      [
        "<iq xmlns='jabber:client' type='set' to='lobby@conference.example.org' id='mam-1'><query "
          + "xmlns='urn:xmpp:mam:2' queryid='mam-1'><set xmlns='http://jabber.org/protocol/rsm'>"
          + "<max>50</max><after>sid-9</after></set></query></iq>"
      ])
    XCTAssertEqual(
      dialect.session?.note, "catching up lobby@conference.example.org (0 so far)")
  }

  func testARoomNeverStoredStartsFromNow() {
    var dialect = S.negotiated()
    _ = dialect.join(RoomID(S.room)!, after: nil)
    XCTAssertEqual(dialect.read(.xml(S.selfPresence())).replies, [])
    XCTAssertNotNil(dialect.read(.xml(S.groupchat("live"))).record)
  }

  func testWithCatchUpAllARoomNeverStoredImportsItsWholeArchive() {
    var dialect = XMPPProtocol(S.settings { $0.catchUpAll = true }, services: S.services())
    _ = dialect.open(handshake(subprotocol: "xmpp"))
    for frame in S.negotiation() { _ = dialect.read(.xml(frame)) }
    _ = dialect.join(RoomID(S.room)!, after: nil)
    XCTAssertEqual(
      texts(dialect.read(.xml(S.selfPresence())).replies),
      [
        "<iq xmlns='jabber:client' type='set' to='lobby@conference.example.org' id='mam-1'><query "
          + "xmlns='urn:xmpp:mam:2' queryid='mam-1'><set xmlns='http://jabber.org/protocol/rsm'>"
          + "<max>50</max></set></query></iq>"
      ])
  }

  func testArchivedMessagesAreStoredWithTheirStanzaIDsAndTheirDelayInMeta() throws {
    var dialect = catchingUp()
    let reading = dialect.read(result("old", id: "sid-10"))
    let record = try XCTUnwrap(reading.record)
    XCTAssertEqual(
      String(decoding: record.payload.bytes, as: UTF8.self),
      #"{"body":"old","from":"lobby@conference.example.org/bob","id":"o-sid-10","#
        + #""type":"groupchat","nick":"bob","stanza_id":"sid-10"}"#)
    XCTAssertEqual(
      String(decoding: record.meta ?? [], as: UTF8.self),
      #"{"delay":{"stamp":"2026-12-06T10:00:00Z"}}"#)
    XCTAssertEqual(
      String(decoding: record.room ?? [], as: UTF8.self), #""lobby@conference.example.org""#)
    XCTAssertNotNil(record.id)
    XCTAssertEqual(reading.acknowledgement?.text, "<a xmlns='urn:xmpp:sm:3' h='2'/>")
    XCTAssertEqual(dialect.session?.note, "catching up lobby@conference.example.org (1 so far)")
  }

  func testAnIncompletePageAsksForTheNextAfterItsLast() {
    var dialect = catchingUp()
    _ = dialect.read(result("old", id: "sid-10"))
    let page = dialect.read(fin(complete: false, last: "sid-10"))
    XCTAssertEqual(
      texts(page.replies),
      [
        "<iq xmlns='jabber:client' type='set' to='lobby@conference.example.org' id='mam-2'><query "
          + "xmlns='urn:xmpp:mam:2' queryid='mam-2'><set xmlns='http://jabber.org/protocol/rsm'>"
          + "<max>50</max><after>sid-10</after></set></query></iq>"
      ])
    XCTAssertNil(dialect.read(result("stale page", id: "sid-11")).record, "the first query is over")
    XCTAssertNotNil(dialect.read(result("next", id: "sid-11", queryID: "mam-2")).record)
  }

  func testLiveMessagesWaitForTheArchiveToBeCompleteAndFollowIt() {
    var dialect = catchingUp()
    let live = dialect.read(.xml(S.groupchat("live", id: "m-20", stanzaID: "sid-20")))
    XCTAssertNil(live.record, "held: the archive's older messages come first")
    XCTAssertEqual(bodies(dialect.read(result("old", id: "sid-10"))).count, 1)
    let done = dialect.read(fin(complete: true, last: "sid-10"))
    XCTAssertEqual(bodies(done).count, 1)
    XCTAssertTrue(bodies(done)[0].contains(#""body":"live""#), bodies(done)[0])
    XCTAssertEqual(
      done.acknowledgement?.text, "<a xmlns='urn:xmpp:sm:3' h='4'/>",
      "acknowledged with the count at its release, never less than one sent before")
    XCTAssertNil(dialect.session?.note)
    XCTAssertNotNil(dialect.read(.xml(S.groupchat("later", id: "m-21"))).record)
  }

  func testAnIDTheArchiveNoLongerHasIsACountedHistoryGapAndLiveMessagesGoOn() {
    var dialect = catchingUp()
    _ = dialect.read(.xml(S.groupchat("live", id: "m-20", stanzaID: "sid-20")))
    let refused = dialect.read(
      .xml(
        "<iq xmlns='jabber:client' type='error' id='mam-1' from='\(S.room)'><error "
          + "type='cancel'><item-not-found xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error>"
          + "</iq>"))
    XCTAssertEqual(refused.historyGap, S.room)
    XCTAssertEqual(bodies(refused).count, 1, "the held live message is stored")
  }

  private let notFound = Message.xml(
    "<iq xmlns='jabber:client' type='error' id='mam-1' from='\(XMPPServer.room)'><error "
      + "type='cancel'><item-not-found xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></iq>")

  func testAnIDTheArchiveNoLongerHasFallsBackOnceToAMinuteBeforeTheNewestRecordsTime() {
    var dialect = S.negotiated()
    // 2026-12-06T10:00:30.5Z
    let stored = Timestamp(microseconds: 1_796_551_230_500_000)
    _ = dialect.join(RoomID(S.room)!, after: RoomPosition(id: Array("sid-9".utf8), time: stored))
    _ = dialect.read(.xml(S.selfPresence()))
    _ = dialect.read(.xml(S.groupchat("live", id: "m-20", stanzaID: "sid-20")))
    let fallback = dialect.read(notFound)
    XCTAssertEqual(fallback.historyGap, S.room, "the possible gap is counted all the same")
    XCTAssertEqual(
      texts(fallback.replies),
      [
        "<iq xmlns='jabber:client' type='set' to='lobby@conference.example.org' id='mam-2'><query "
          + "xmlns='urn:xmpp:mam:2' queryid='mam-2'><x xmlns='jabber:x:data' type='submit'>"
          + "<field var='FORM_TYPE' type='hidden'><value>urn:xmpp:mam:2</value></field>"
          + "<field var='start'><value>2026-12-06T09:59:30Z</value></field></x>"
          + "<set xmlns='http://jabber.org/protocol/rsm'><max>50</max></set></query></iq>"
      ])
    XCTAssertEqual(bodies(fallback), [], "the live message still waits for the archive's")
    XCTAssertEqual(bodies(dialect.read(result("old", id: "sid-10", queryID: "mam-2"))).count, 1)
    let next = dialect.read(fin("mam-2", complete: false, last: "sid-10"))
    XCTAssertTrue(
      texts(next.replies).first?.contains(
        "<value>2026-12-06T09:59:30Z</value></field></x><set xmlns='http://jabber.org/protocol/rsm'>"
          + "<max>50</max><after>sid-10</after></set>") == true,
      "the next page keeps the time: \(texts(next.replies))")
    let again = dialect.read(
      .xml(
        "<iq xmlns='jabber:client' type='error' id='mam-3' from='\(S.room)'><error "
          + "type='cancel'><item-not-found xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error>"
          + "</iq>"))
    XCTAssertEqual(again.replies, [], "only once")
    XCTAssertEqual(again.historyGap, S.room)
    XCTAssertEqual(bodies(again).count, 1, "the held live message is stored")
  }

  func testPastTheHoldingBoundLiveMessagesTheArchiveHasAreLetGoAndOneMorePageBringsThem() {
    var dialect = catchingUp()
    let big = String(repeating: "x", count: 500 * 1024)
    for n in 0..<9 {
      _ = dialect.read(.xml(S.groupchat(big, id: "m-\(n)", stanzaID: "sid-2\(n)")))
    }
    _ = dialect.read(.xml(S.groupchat("no archive id", id: "m-x", stanzaID: nil)))
    let complete = dialect.read(fin(complete: true, last: "sid-10"))
    XCTAssertEqual(
      texts(complete.replies).count, 1, "a live message was let go: the archive is asked again")
    XCTAssertTrue(texts(complete.replies)[0].contains("<after>sid-10</after>"))
    XCTAssertEqual(bodies(complete), [])
    let last = dialect.read(fin("mam-2", complete: true, last: ""))
    XCTAssertEqual(last.replies, [], "nothing let go meanwhile: caught up")
    XCTAssertEqual(
      bodies(last).count, 8 + 1,
      "held: the first 4 MiB of live messages, and the one the archive cannot bring")
  }

  func testResultsNoQueryOfOursAskedForAreNotStored() {
    var dialect = catchingUp()
    let unknown = dialect.read(result("forged", id: "x", queryID: "mam-99"))
    XCTAssertNil(unknown.record)
    XCTAssertEqual(unknown.problem, "an archive result no query of ours asked for")
    let elsewhere = dialect.read(result("forged", id: "x", from: "evil@example.org"))
    XCTAssertNil(elsewhere.record)
    XCTAssertEqual(elsewhere.problem, "an archive result no query of ours asked for")
  }

  func testTheLinkCountsWhatTheArchivesBroughtAndTheRoomsStillCatchingUp() {
    var link = Harness(rooms: [S.room], backend: S.dialect())
    link.on(.start)
    link.on(.upgraded(handshake(subprotocol: "xmpp")))
    for frame in S.negotiation() { link.on(.message(.xml(frame))) }
    link.on(.positions([RoomID(S.room)!: RoomPosition(id: Array("sid-9".utf8))]))
    link.on(.message(.xml(S.selfPresence())))
    XCTAssertEqual(link.core.roomsCatchingUp, 1)
    link.on(.message(result("old", id: "sid-10")))
    link.on(.message(result("older", id: "sid-11")))
    XCTAssertEqual(link.core.counters.caughtUp, 2)
    XCTAssertEqual(link.core.catchUpProgress.map(\.room), [S.room])
    XCTAssertEqual(link.core.catchUpProgress.map(\.caughtUp), [2])
    link.on(.message(fin(complete: true, last: "sid-11")))
    XCTAssertEqual(link.core.roomsCatchingUp, 0)
    XCTAssertTrue(link.core.catchUpProgress.isEmpty)
    link.on(.ended(closed(.abnormalClosure)))
    XCTAssertEqual(link.core.counters.caughtUp, 2, "counters outlive the connection")
  }
}
