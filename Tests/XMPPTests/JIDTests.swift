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
}
