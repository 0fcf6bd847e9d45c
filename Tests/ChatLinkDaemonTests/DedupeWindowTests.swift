import TestSupport
import XCTest

@testable import ChatLinkDaemon

final class DedupeWindowTests: XCTestCase {
  private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

  func testAnIDSeenBeforeInItsRoomIsADuplicateAndInAnotherRoomIsNot() {
    var window = DedupeWindow(capacity: 10)
    XCTAssertTrue(window.insert(room: bytes("7"), id: bytes(#""m-1""#)))
    XCTAssertFalse(window.insert(room: bytes("7"), id: bytes(#""m-1""#)))
    XCTAssertTrue(window.insert(room: bytes(#""7""#), id: bytes(#""m-1""#)), "7 and \"7\" differ")
    XCTAssertTrue(window.insert(room: nil, id: bytes(#""m-1""#)), "no room is a room of its own")
    XCTAssertTrue(window.contains(room: bytes("7"), id: bytes(#""m-1""#)))
    XCTAssertFalse(window.contains(room: bytes("8"), id: bytes(#""m-1""#)))
    XCTAssertEqual(window.roomCount, 3)
  }

  func testARoomKeepsItsNewestIDsUpToTheCapacityAndForgetsTheOldest() {
    var window = DedupeWindow(capacity: 3)
    for n in 1...5 { XCTAssertTrue(window.insert(room: bytes("7"), id: bytes("\(n)"))) }
    XCTAssertEqual(window.count, 3)
    XCTAssertFalse(window.contains(room: bytes("7"), id: bytes("2")), "forgotten")
    for n in 3...5 { XCTAssertFalse(window.insert(room: bytes("7"), id: bytes("\(n)"))) }
    XCTAssertTrue(window.insert(room: bytes("7"), id: bytes("1")), "older than the window")
  }

  func testTheNewestIDOfARoomIsTheLastNewOneInserted() {
    var window = DedupeWindow(capacity: 5)
    XCTAssertNil(window.newestID(room: bytes("7")))
    window.insert(room: bytes("7"), id: bytes("10"))
    window.insert(room: bytes("7"), id: bytes("11"))
    window.insert(room: bytes("7"), id: bytes("10"))
    XCTAssertEqual(window.newestID(room: bytes("7")), bytes("11"), "a duplicate is not newer")
    window.insert(room: bytes("8"), id: bytes("1"))
    XCTAssertEqual(window.newestID(room: bytes("7")), bytes("11"))
  }

  func testWithoutNewestIDsTheWindowStillDropsDuplicatesButNamesNoPosition() {
    var window = DedupeWindow(capacity: 5, keepsNewest: false)
    XCTAssertTrue(window.insert(room: bytes("7"), id: bytes("10")))
    XCTAssertFalse(window.insert(room: bytes("7"), id: bytes("10")))
    XCTAssertNil(window.newestID(room: bytes("7")))
    window.restore(room: bytes("7"), hashes: [window.hash(bytes("9"))], newestID: bytes("9"))
    XCTAssertNil(window.newestID(room: bytes("7")), "nor from the store's tail")
    XCTAssertFalse(window.insert(room: bytes("7"), id: bytes("9")))
  }

  func testAZeroCapacityKeepsNothingAndCallsEverythingNew() {
    var window = DedupeWindow(capacity: 0)
    XCTAssertFalse(window.isEnabled)
    XCTAssertTrue(window.insert(room: bytes("7"), id: bytes("1")))
    XCTAssertTrue(window.insert(room: bytes("7"), id: bytes("1")))
    XCTAssertEqual(window.count, 0)
  }

  func testPastTheMostRoomsTheRoomLeastRecentlySeenGivesUpItsWindow() {
    var window = DedupeWindow(capacity: 4, maxRooms: 2)
    window.insert(room: bytes("a"), id: bytes("1"))
    window.insert(room: bytes("b"), id: bytes("1"))
    window.insert(room: bytes("a"), id: bytes("2"))
    window.insert(room: bytes("c"), id: bytes("1"))
    XCTAssertEqual(window.roomCount, 2)
    XCTAssertTrue(window.contains(room: bytes("a"), id: bytes("1")))
    XCTAssertFalse(window.contains(room: bytes("b"), id: bytes("1")), "b was seen least recently")
    XCTAssertTrue(window.contains(room: bytes("c"), id: bytes("1")))
  }

  /// Against a plain model (a queue and a set per room), through many evictions and table
  /// growths; small id ranges make every id come back again and again.
  func testItAgreesWithAPlainModelThroughManyEvictions() {
    var random = SplitMix64(seed: 7)
    for capacity in [1, 2, 7, 64, 1000] {
      var window = DedupeWindow(capacity: capacity, basis: 0)
      var model: [String: (queue: [String], set: Set<String>)] = [:]
      for _ in 0..<20_000 {
        let room = "r\(random.next() % 3)"
        let id = "\(random.next() % UInt64(capacity * 3 + 2))"
        var entry = model[room] ?? ([], [])
        let isNew = !entry.set.contains(id)
        if isNew {
          entry.queue.append(id)
          entry.set.insert(id)
          if entry.queue.count > capacity { entry.set.remove(entry.queue.removeFirst()) }
        }
        model[room] = entry
        XCTAssertEqual(
          window.insert(room: bytes(room), id: bytes(id)), isNew, "capacity \(capacity)")
      }
      XCTAssertEqual(window.count, model.values.reduce(0) { $0 + $1.queue.count })
    }
  }

  func testTheRoomHashIsTheRoomIndexsAndGivenItTheWindowAgreesWithHashingItself() {
    for room in ["7", #""general""#, "null", ""] {
      XCTAssertEqual(DedupeWindow.roomHash(bytes(room)), RoomIndex.roomHash(bytes(room)))
    }
    var hashing = DedupeWindow(capacity: 4, maxRooms: 3, basis: 1)
    var given = DedupeWindow(capacity: 4, maxRooms: 3, basis: 1)
    for n in 0..<60 {
      let room: [UInt8]? = n % 7 == 0 ? nil : bytes("\(n % 5)")
      let id = bytes("m\(n % 9)")
      let hash = DedupeWindow.roomHash(room ?? [])
      let expected = hashing.insert(room: room, id: id)
      let got = id.withUnsafeBytes { given.insert(room: room, roomHash: hash, id: $0) }
      XCTAssertEqual(got, expected, "message \(n)")
      XCTAssertEqual(given.newestID(room: room), hashing.newestID(room: room))
    }
    XCTAssertEqual(given.count, hashing.count)
    XCTAssertEqual(given.roomCount, hashing.roomCount)
  }

  func testTheIDHashReadsTheLastBytesAsItsWordByteByByteWouldHoldThem() {
    // The hashes a snapshot holds must still match: the word as a byte at a time built it.
    func reference(_ id: [UInt8], basis: UInt64) -> UInt64 {
      func mix(_ hash: UInt64, _ word: UInt64) -> UInt64 {
        let mixed = (hash ^ word) &* 0xFF51_AFD7_ED55_8CCD
        return mixed ^ (mixed >> 32)
      }
      var hash = basis ^ UInt64(id.count) &* 0x9E37_79B9_7F4A_7C15
      var offset = 0
      while offset < id.count {
        var word: UInt64 = 0
        for (n, byte) in id[offset..<min(offset + 8, id.count)].enumerated() {
          word |= UInt64(byte) << (8 * UInt64(n))
        }
        hash = mix(hash, word)
        offset += 8
      }
      hash ^= hash >> 33
      hash = hash &* 0xC4CE_B9FE_1A85_EC53
      return hash ^ (hash >> 33)
    }
    let hasher = IDHasher(basis: 0x1234_5678_9ABC_DEF0)
    let bytes = (0..<48).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 200) }
    for start in 0..<3 {
      for count in 0...(bytes.count - start) {
        let id = Array(bytes[start..<(start + count)])
        let got = bytes.withUnsafeBytes {
          hasher.hash(UnsafeRawBufferPointer(rebasing: $0[start..<(start + count)]))
        }
        XCTAssertEqual(got, reference(id, basis: hasher.basis), "\(count) bytes at \(start)")
      }
    }
  }
}
