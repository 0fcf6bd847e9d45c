import XCTest
import XMPP

final class JIDTests: XCTestCase {
  func testAFullJIDSplitsIntoItsPartsWithTheLocalPartAndDomainLowercased() throws {
    let jid = try JID(parsing: "Bot@Example.ORG/Chat Link")
    XCTAssertEqual(jid.local, "bot")
    XCTAssertEqual(jid.domain, "example.org")
    XCTAssertEqual(jid.resource, "Chat Link")
    XCTAssertEqual(jid.bare, try JID(parsing: "bot@example.org"))
    XCTAssertEqual(jid.description, "bot@example.org/Chat Link")
    XCTAssertEqual(try JID(parsing: "conference.example.org").bareText, "conference.example.org")
  }

  func testTheResourceMayHoldSlashesAndAtSigns() throws {
    XCTAssertEqual(try JID(parsing: "room@muc.example/nick/with@at").resource, "nick/with@at")
  }

  func testMalformedJIDsAreRefusedWithThePartThatIsWrong() {
    func why(_ text: String) -> String? {
      do {
        _ = try JID(parsing: text)
        return nil
      } catch {
        return error.description
      }
    }
    XCTAssertEqual(why(""), "an empty JID")
    XCTAssertEqual(why("@example.org"), "an empty local part before '@'")
    XCTAssertEqual(why("bot@"), "no domain")
    XCTAssertEqual(why("bot@example.org/"), "an empty resource after '/'")
    XCTAssertEqual(why("b:ot@example.org"), "':' in the local part 'b:ot'")
    XCTAssertEqual(why("bot@exa mple.org"), "' ' in the domain 'exa mple.org'")
    XCTAssertEqual(why(String(repeating: "a", count: 1024) + "@x"), "a local part over 1023 bytes")
  }

  func testPartsBeyondASCIIAreCheckedAndLowercasedAsUnicodeSays() throws {
    let jid = try JID(parsing: "Ünïcode@Bücher.EXAMPLE/Ünchanged")
    XCTAssertEqual(jid.local, "ünïcode")
    XCTAssertEqual(jid.domain, "bücher.example")
    XCTAssertEqual(jid.resource, "Ünchanged")
    XCTAssertThrowsError(try JID(parsing: "b\u{3000}ö@example.org")) { error in
      XCTAssertEqual("\(error)", "'\u{3000}' in the local part 'b\u{3000}ö'")
    }
    XCTAssertThrowsError(try JID(parsing: "bot@exämple.org<")) { error in
      XCTAssertEqual("\(error)", "'<' in the domain 'exämple.org<'")
    }
    XCTAssertThrowsError(try JID(parsing: "bot@example.org/a\u{7}b")) { error in
      XCTAssertEqual("\(error)", "a control character")
    }
    XCTAssertThrowsError(try JID(parsing: "b\tot@example.org")) { error in
      XCTAssertEqual("\(error)", "'\t' in the local part 'b\tot'")
    }
    XCTAssertEqual(try JID(parsing: "already@lower.case").local, "already")
  }
}
