import JSON
import LinkCore
import WebSocket
import XCTest
import XMPP

/// Chats caught up from the account's own archive (XEP-0313) when a session starts without
/// resumption: from a minute before the newest stored record's time, stored under the peer.
final class XMPPChatCatchUpTests: XCTestCase {
  private typealias S = XMPPServer

  /// 2026-12-06T10:00:30Z
  private let newest = Timestamp(microseconds: 1_796_551_230_000_000)

  private func result(
    _ body: String, id: String, from peer: String = "bob@example.org/phone",
    type: String = "chat", queryID: String = "mam-1", resultFrom: String? = nil
  ) -> Message {
    .xml(
      "<message xmlns='jabber:client'\(resultFrom.map { " from='\($0)'" } ?? "") "
        + "to='\(S.fullJID)'><result xmlns='urn:xmpp:mam:2' queryid='\(queryID)' id='\(id)'>"
        + "<forwarded xmlns='urn:xmpp:forward:0'><delay xmlns='urn:xmpp:delay' "
        + "stamp='2026-12-06T10:01:00Z'/><message xmlns='jabber:client' from='\(peer)' "
        + "to='\(S.account)' type='\(type)' id='o-\(id)'><body>\(body)</body></message>"
        + "</forwarded></result></message>")
  }

  private func liveChat(_ body: String, stanzaID: String) -> Message {
    .xml(
      "<message xmlns='jabber:client' from='carol@example.org/laptop' to='\(S.fullJID)' "
        + "type='chat' id='c-\(stanzaID)'><body>\(body)</body><stanza-id xmlns='urn:xmpp:sid:0' "
        + "id='\(stanzaID)' by='\(S.account)'/></message>")
  }

  private func fin(_ queryID: String = "mam-1", complete: Bool, last: String) -> Message {
    .xml(
      "<iq xmlns='jabber:client' type='result' id='\(queryID)'><fin xmlns='urn:xmpp:mam:2'"
        + (complete ? " complete='true'" : "") + "><set xmlns='http://jabber.org/protocol/rsm'>"
        + "<last>\(last)</last></set></fin></iq>")
  }

  private func records(_ reading: ProtocolReading) -> [(room: String, data: String)] {
    ([reading.record].compactMap { $0 } + reading.moreRecords.map(\.record)).map {
      (
        String(decoding: $0.room ?? [], as: UTF8.self),
        String(decoding: $0.payload.bytes, as: UTF8.self)
      )
    }
  }

  func testANewSessionAsksTheAccountsArchiveFromAMinuteBeforeTheNewestStoredRecord() {
    var link = Harness(rooms: [], backend: S.dialect())
    link.on(.start)
    link.on(.upgraded(handshake(subprotocol: "xmpp")))
    for frame in S.negotiation().dropLast() { link.on(.message(.xml(frame))) }
    XCTAssertTrue(
      link.on(.message(.xml(S.enabled))).contains("request positions "),
      "asked even without rooms")
    XCTAssertEqual(
      link.on(.positions([:], newest: newest)),
      [
        "send <iq xmlns='jabber:client' type='set' id='mam-1'><query xmlns='urn:xmpp:mam:2' "
          + "queryid='mam-1'><x xmlns='jabber:x:data' type='submit'><field var='FORM_TYPE' "
          + "type='hidden'><value>urn:xmpp:mam:2</value></field><field var='start'><value>"
          + "2026-12-06T09:59:30Z</value></field></x><set xmlns='http://jabber.org/protocol/rsm'>"
          + "<max>50</max></set></query></iq>"
      ])
    XCTAssertEqual(link.core.catchUpProgress.map(\.room), [S.account])
  }

  func testWithNothingStoredChatsStartFromNow() {
    var dialect = S.negotiated()
    XCTAssertNil(dialect.catchUp(newestStored: nil))
    XCTAssertTrue(dialect.catchUpProgress.isEmpty)
  }

  func testArchivedChatsAreStoredUnderThePeerLikeLiveOnesAndOnlyChatsToUs() throws {
    var dialect = S.negotiated()
    _ = dialect.catchUp(newestStored: newest)
    let chat = records(dialect.read(result("missed", id: "a-1")))
    XCTAssertEqual(chat.map(\.room), [#""bob@example.org""#])
    XCTAssertEqual(
      chat.first?.data,
      #"{"body":"missed","from":"bob@example.org/phone","id":"o-a-1","type":"chat","#
        + #""stanza_id":"a-1"}"#)
    XCTAssertTrue(
      records(dialect.read(result("mine", id: "a-2", from: S.fullJID))).isEmpty,
      "ours to someone else")
    XCTAssertTrue(
      records(dialect.read(result("x", id: "a-3", type: "groupchat"))).isEmpty, "not a chat")
    XCTAssertEqual(
      records(dialect.read(result("from the account", id: "a-4", resultFrom: S.account))).count,
      1, "a result from our bare JID is the archive's too")
    let forged = dialect.read(result("forged", id: "a-5", resultFrom: "evil@example.org"))
    XCTAssertTrue(records(forged).isEmpty)
    XCTAssertEqual(forged.problem, "an archive result no query of ours asked for")
    XCTAssertEqual(dialect.catchUpProgress.map(\.caughtUp), [2])
  }

  func testLiveChatsWaitForTheAccountsArchiveAndFollowIt() {
    var dialect = S.negotiated()
    _ = dialect.catchUp(newestStored: newest)
    XCTAssertTrue(records(dialect.read(liveChat("live", stanzaID: "a-9"))).isEmpty)
    XCTAssertEqual(records(dialect.read(result("missed", id: "a-1"))).count, 1)
    let page = dialect.read(fin(complete: false, last: "a-1"))
    XCTAssertTrue(texts(page.replies).first?.contains("<after>a-1</after>") == true)
    XCTAssertTrue(texts(page.replies).first?.contains("2026-12-06T09:59:30Z") == true)
    let done = dialect.read(fin("mam-2", complete: true, last: ""))
    XCTAssertEqual(records(done).map(\.room), [#""carol@example.org""#])
    XCTAssertTrue(dialect.catchUpProgress.isEmpty)
    XCTAssertEqual(records(dialect.read(liveChat("later", stanzaID: "a-10"))).count, 1)
  }

  func testAResumedSessionHasNothingToCatchUp() {
    var link = Harness(rooms: [], backend: S.dialect())
    link.on(.start)
    link.on(.upgraded(handshake(subprotocol: "xmpp")))
    for frame in S.negotiation() { link.on(.message(.xml(frame))) }
    link.on(.positions([:], newest: newest))
    link.on(.ended(closed(.abnormalClosure)))
    link.on(.timerFired(.retry))
    link.on(.upgraded(handshake(subprotocol: "xmpp")))
    link.on(.message(.xml(S.open)))
    link.on(.message(.xml(S.features())))
    link.on(.message(.xml(S.challenge)))
    link.on(.message(.xml(S.success)))
    link.on(.message(.xml(S.open)))
    link.on(.message(.xml(S.boundFeatures())))
    let resumed = link.on(.message(.xml("<resumed xmlns='urn:xmpp:sm:3' previd='sm-1' h='0'/>")))
    XCTAssertTrue(resumed.contains("state open (connected)"), "\(resumed)")
    XCTAssertTrue(resumed.contains("request positions "), "\(resumed)")
    XCTAssertEqual(link.on(.positions([:], newest: newest)), [])
  }
}
