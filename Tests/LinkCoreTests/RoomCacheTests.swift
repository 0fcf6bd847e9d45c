import XCTest

@testable import LinkCore

/// The rooms of recent frames: one array a room while it keeps its slot, the right bytes always.
final class RoomCacheTests: XCTestCase {
  private func room(_ cache: inout RoomCache, _ text: String) -> [UInt8] {
    Array(text.utf8).withUnsafeBytes { cache.room($0) }
  }

  private func address(_ array: [UInt8]) -> UnsafePointer<UInt8>? {
    array.withUnsafeBufferPointer { $0.baseAddress }
  }

  func testFramesGoingRoundTenRoomsShareTenArrays() {
    var cache = RoomCache()
    let names = (1...10).map(String.init)
    let first = names.map { room(&cache, $0) }
    for _ in 0..<5 {
      for (n, name) in names.enumerated() {
        let again = room(&cache, name)
        XCTAssertEqual(again, Array(name.utf8))
        XCTAssertEqual(address(again), address(first[n]), "room \(name) made again")
      }
    }
  }

  func testEveryFrameGetsItsOwnRoomsBytesWhateverTheSlotsHeld() {
    // More rooms than slots, some of them alike but for a byte or their length: each frame's
    // room is its own, whichever room its slot held before.
    var cache = RoomCache()
    let names =
      (0..<(3 * RoomCache.slotCount)).map { "room-\($0)" } + ["\"7\"", "7", "70", "07", "\"\""]
    for _ in 0..<3 {
      for name in names.shuffled() { XCTAssertEqual(room(&cache, name), Array(name.utf8)) }
    }
  }

  func testARoomLongerThanItKeepsIsMadeForEachFrameAndNeverKept() {
    // A backend may name rooms with up to a frame's bytes: 32 of those must not stay in memory.
    var cache = RoomCache()
    let long = String(repeating: "r", count: RoomCache.maxRoomBytes + 1)
    let first = room(&cache, long)
    let second = room(&cache, long)
    XCTAssertEqual(second, Array(long.utf8))
    XCTAssertNotEqual(address(first), address(second))
    let longest = String(repeating: "r", count: RoomCache.maxRoomBytes)
    XCTAssertEqual(address(room(&cache, longest)), address(room(&cache, longest)))
  }
}
