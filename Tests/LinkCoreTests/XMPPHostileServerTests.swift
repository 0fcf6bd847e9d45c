import JSON
import LinkCore
import TestSupport
import WebSocket
import XCTest
import XMPP

/// A hostile or broken server: thousands of frames made from real stanzas, cut, spliced and
/// with odd values, fed to a session that is ready and catching up. Whatever comes, every
/// record is a JSON object on one line whose id is its own stanza_id, every acknowledgement
/// counts on and never back, and everything the dialect answers is well-formed XML.
final class XMPPHostileServerTests: XCTestCase {
  private typealias S = XMPPServer

  private static let values = [
    "plain", "", "a'b\"c", "<&>", "caf\u{E9} \u{1F600}", "x\ny", "&amp;&lt;", "sid-9", "mam-1",
    S.room, S.room + "/nick", S.account, "example.org", "evil@example.org", "@", "/",
  ]

  /// The frames a server sends, with `v(n)` standing for odd values.
  private static func templates(_ v: (Int) -> String) -> [String] {
    [
      S.groupchat(v(0), id: v(1), nick: v(2), stanzaID: v(3), by: v(4)),
      S.groupchat(v(0), extra: "<delay xmlns='urn:xmpp:delay' stamp='\(v(1))' from='\(v(2))'/>"),
      "<message xmlns='jabber:client' from='\(v(0))' to='\(v(1))' type='chat' id='\(v(2))'>"
        + "<body>\(v(3))</body><stanza-id xmlns='urn:xmpp:sid:0' id='\(v(4))' by='\(v(5))'/></message>",
      "<message xmlns='jabber:client' from='\(v(0))'><result xmlns='urn:xmpp:mam:2' "
        + "queryid='\(v(1))' id='\(v(2))'><forwarded xmlns='urn:xmpp:forward:0'><message "
        + "xmlns='jabber:client' from='\(v(3))' type='groupchat'><body>\(v(4))</body></message>"
        + "</forwarded></result></message>",
      "<iq xmlns='jabber:client' type='\(v(0))' id='\(v(1))' from='\(v(2))'><fin "
        + "xmlns='urn:xmpp:mam:2' complete='\(v(3))'><set xmlns='http://jabber.org/protocol/rsm'>"
        + "<last>\(v(4))</last></set></fin></iq>",
      "<iq xmlns='jabber:client' type='error' id='\(v(0))'><error type='cancel'><\(v(1) == "" ? "x" : "item-not-found") "
        + "xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></iq>",
      "<iq xmlns='jabber:client' type='get' id='\(v(0))' from='\(v(1))'><ping xmlns='urn:xmpp:ping'/></iq>",
      "<presence xmlns='jabber:client' from='\(v(0))' type='\(v(1))'><x "
        + "xmlns='http://jabber.org/protocol/muc#user'><status code='\(v(2))'/></x></presence>",
      "<presence xmlns='jabber:client' from='\(v(0))' type='error'><error type='cancel'><conflict "
        + "xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></presence>",
      "<message xmlns='jabber:client' from='\(v(0))' type='error' id='\(v(1))'><error "
        + "type='cancel'><forbidden xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></message>",
      "<r xmlns='urn:xmpp:sm:3'/>", "<a xmlns='urn:xmpp:sm:3' h='\(v(0))'/>",
      "<enabled xmlns='urn:xmpp:sm:3' id='\(v(0))'/>", S.open, S.features(), S.success,
      "<close xmlns='urn:ietf:params:xml:ns:xmpp-framing' see-other-uri='\(v(0))'/>",
      "<stream:error xmlns:stream='http://etherx.jabber.org/streams'><conflict "
        + "xmlns='urn:ietf:params:xml:ns:xmpp-streams'/></stream:error>",
    ]
  }

  /// A session that is ready and in its room, which asks its archive (query mam-1) or not.
  private func ready(catchingUp: Bool) -> XMPPProtocol {
    var dialect = S.dialect()
    _ = dialect.open(handshake(subprotocol: "xmpp"))
    for frame in S.negotiation() { _ = dialect.read(.xml(frame)) }
    _ = dialect.join(
      RoomID(S.room)!, after: catchingUp ? RoomPosition(id: Array("sid-1".utf8)) : nil)
    _ = dialect.read(.xml(S.selfPresence()))
    return dialect
  }

  private func frame(_ random: inout SplitMix64) -> [UInt8] {
    let values = Self.values
    let picks = (0..<6).map { _ in values[Int.random(in: 0..<values.count, using: &random)] }
    let escaped = picks.map { value in
      var out: [UInt8] = []
      XMLWriter.appendEscaped(value, attribute: true, into: &out)
      return String(decoding: out, as: UTF8.self)
    }
    let templates = Self.templates { escaped[$0] }
    var bytes = Array(templates[Int.random(in: 0..<templates.count, using: &random)].utf8)
    switch Int.random(in: 0..<6, using: &random) {
    case 0 where !bytes.isEmpty:
      bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &random)))
    case 1 where !bytes.isEmpty:
      bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(
        in: 0...255, using: &random)
    case 2:
      // Raw values, unescaped: markup where text was expected.
      bytes = Array(
        Self.templates { picks[$0] }[Int.random(in: 0..<templates.count, using: &random)].utf8)
    default: break
    }
    return bytes
  }

  func testNoServerFrameMakesABadRecordABackwardCountOrMalformedXML() throws {
    var random = SplitMix64(seed: 34)
    var dialect = ready(catchingUp: true)
    var lastCount: UInt32 = 0
    var records = 0
    var broken = 0
    for _ in 0..<4000 {
      let bytes = frame(&random)
      guard UTF8Validator.isValid(bytes) else { continue }  // the WebSocket layer refuses those
      let reading = dialect.read(.text(bytes))
      let stored =
        [reading.record.map { ($0, reading.acknowledgement) }].compactMap { $0 }
        + reading.moreRecords.map { ($0.record, $0.acknowledgement) }
      for (record, acknowledgement) in stored {
        records += 1
        try check(record)
        if let acknowledgement { lastCount = try counted(acknowledgement, after: lastCount) }
      }
      if let answer = reading.afterStored { lastCount = try counted(answer, after: lastCount) }
      for reply in reading.replies {
        let parsed = XMLFrameParser().parse(frame: reply.bytes)
        guard case .success = parsed else {
          return XCTFail("a reply that is not well-formed: \(reply.text ?? "binary")")
        }
      }
      // Broken, ended or moved: the connection ends, and the next frames go to a new one.
      if let session = reading.session, session != .ready {
        broken += 1
        dialect = ready(catchingUp: broken % 2 == 0)
        lastCount = 0
      }
    }
    XCTAssertGreaterThan(records, 100, "the frames reach the records")
    XCTAssertGreaterThan(broken, 10, "and the session's ends")
  }

  /// A record: data a JSON object on one line, its room a JSON string, its id (if any) the
  /// bytes of its own stanza_id's value.
  private func check(_ record: InboundMessage) throws {
    let payload = record.payload.bytes
    XCTAssertFalse(payload.contains(0x0A), "one line")
    let data = try JSONValue.parse(payload)
    XCTAssertNotNil(data.objectValue, String(decoding: payload, as: UTF8.self))
    XCTAssertNotNil(try JSONValue.parse(record.room ?? []).stringValue)
    if let meta = record.meta { XCTAssertNotNil(try JSONValue.parse(meta).objectValue) }
    if let id = record.idBytes {
      XCTAssertEqual(String(decoding: id, as: UTF8.self), data["stanza_id"]?.stringValue)
    } else {
      XCTAssertTrue(data["stanza_id"]?.stringValue?.isEmpty ?? true)
    }
  }

  /// The count an `<a h/>` carries, checked to be no less than the last one.
  private func counted(_ frame: Message, after last: UInt32) throws -> UInt32 {
    let text = frame.text ?? ""
    let prefix = "<a xmlns='urn:xmpp:sm:3' h='"
    XCTAssertTrue(text.hasPrefix(prefix) && text.hasSuffix("'/>"), text)
    let count = try XCTUnwrap(UInt32(text.dropFirst(prefix.count).dropLast(3)))
    XCTAssertGreaterThanOrEqual(count, last, "a count that goes back")
    return count
  }
}
