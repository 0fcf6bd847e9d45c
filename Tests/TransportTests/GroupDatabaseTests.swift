import Foundation
import Transport
import XCTest

final class GroupDatabaseTests: XCTestCase {
  private let file = """
    root:x:0:
    +nisgroup:x:500:
    broken line
    chat:x:notanumber:
    chatlink:x:998:alice,bob
    chatlink:x:999:
    empty::1000:
    """

  func testAGroupIsFoundByItsExactNameAndTheFirstEntryWins() {
    XCTAssertEqual(GroupDatabase.id(of: "chatlink", inGroupFile: file), 998)
    XCTAssertEqual(GroupDatabase.id(of: "root", inGroupFile: file), 0)
    XCTAssertEqual(GroupDatabase.id(of: "empty", inGroupFile: file), 1000)
    XCTAssertNil(GroupDatabase.id(of: "chatlin", inGroupFile: file))
  }

  func testMalformedLinesAndCompatibilityEntriesAreSkipped() {
    XCTAssertNil(GroupDatabase.id(of: "chat", inGroupFile: file))
    XCTAssertNil(GroupDatabase.id(of: "+nisgroup", inGroupFile: file))
    XCTAssertNil(GroupDatabase.id(of: "", inGroupFile: file))
    XCTAssertNil(GroupDatabase.id(of: "broken line", inGroupFile: file))
  }

  func testTheFileComesFirstAndNSSAfter() throws {
    let path = "/tmp/chatlink-group-\(getpid())"
    try "chatlink:x:4242:\n".write(toFile: path, atomically: true, encoding: .utf8)
    defer { unlink(path) }
    XCTAssertEqual(GroupDatabase.id(of: "chatlink", groupFile: path), 4242)
    // Not in that file: NSS answers for root (gid 0), and nobody knows this one.
    XCTAssertEqual(GroupDatabase.id(of: "root", groupFile: path), 0)
    XCTAssertNil(GroupDatabase.id(of: "no-such-group-\(getpid())", groupFile: path))
    XCTAssertEqual(GroupDatabase.id(of: "root", groupFile: "/nonexistent"), 0)
  }
}
