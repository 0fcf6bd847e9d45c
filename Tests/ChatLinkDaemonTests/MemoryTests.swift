import JSON
import LinkCore
import XCTest

@testable import ChatLinkDaemon

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

  /// Only read-only mappings without private copies of files that also have an executable
  /// mapping are released: not writable ones, not those with anonymous (copied) pages, not
  /// data files, heaps or stacks.
  func testOnlyCleanReadOnlyMappingsOfLoadedObjectsAreReleasable() {
    let smaps = """
      558ae6c2d000-558ae6da1000 r--p 00000000 fd:00 1234                       /usr/bin/chatlinkd
      Size:               1488 kB
      Anonymous:             0 kB
      VmFlags: rd mr mw me dw sd
      558ae6da1000-558ae73e5000 r-xp 00174000 fd:00 1234                       /usr/bin/chatlinkd
      Anonymous:             0 kB
      558ae73e5000-558ae7400000 r--p 007b8000 fd:00 1234                       /usr/bin/chatlinkd
      Anonymous:            12 kB
      558ae7400000-558ae7410000 rw-p 007d3000 fd:00 1234                       /usr/bin/chatlinkd
      Anonymous:            64 kB
      558b0001a000-558b0006c000 rw-p 00000000 00:00 0                          [heap]
      Anonymous:           328 kB
      7fbaf2802000-7fbaf2812000 r--p 00000000 fd:00 77                         /usr/lib/lib with space.so
      Anonymous:             0 kB
      7fbaf2812000-7fbaf2900000 r-xp 00010000 fd:00 77                         /usr/lib/lib with space.so
      Anonymous:             0 kB
      7fbaf3000000-7fbaf3010000 r--p 00000000 fd:00 99                         /var/lib/data.bin
      Anonymous:             0 kB
      7fbaf3010000-7fbaf3011000 r--p 00000000 00:00 0
      Anonymous:             0 kB
      garbage line without a mapping
      7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
      """
    let ranges = Memory.releasableRanges(smaps: Array(smaps.utf8))
    XCTAssertEqual(
      ranges,
      [
        0x558a_e6c2_d000..<0x558a_e6da_1000, 0x558a_e6da_1000..<0x558a_e73e_5000,
        0x7fba_f280_2000..<0x7fba_f281_2000, 0x7fba_f281_2000..<0x7fba_f290_0000,
      ])
    XCTAssertEqual(Memory.releasableRanges(smaps: []), [])
    XCTAssertEqual(Memory.releasableRanges(smaps: Array("Anonymous: 4 kB\nzz-1 r--p\n".utf8)), [])
  }
}
