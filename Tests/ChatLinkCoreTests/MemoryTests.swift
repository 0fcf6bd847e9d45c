import ChatLinkCore
import XCTest

final class MemoryTests: XCTestCase {
  func testReleasingStartupPagesLeavesCodeAndConstantsWorking() throws {
    Memory.configureAllocator()
    let before = try JSONValue.parse(Array(#"{"a":[1,"two",null]}"#.utf8))
    XCTAssertGreaterThan(Memory.releaseStartupPages(), 0)
    // Code, metadata and read-only data come back from the page cache as they are used.
    let after = try JSONValue.parse(Array(#"{"a":[1,"two",null]}"#.utf8))
    XCTAssertEqual(before, after)
    XCTAssertEqual(RoomID("ops")?.json, Array(#""ops""#.utf8))
    // Large blocks are their own mappings and go back on free; the heap trims.
    var blocks = (0..<8).map { [UInt8](repeating: UInt8($0), count: 1 << 20) }
    XCTAssertEqual(blocks[7][12345], 7)
    blocks.removeAll()
    Memory.trimHeap()
    XCTAssertGreaterThan(Memory.releaseStartupPages(), 0)
  }
}
