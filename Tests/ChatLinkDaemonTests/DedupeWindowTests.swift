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

  func testTheIDHashReadsItsWordsAsTheIDsBytesOneByOneWouldMakeThem() {
    // A snapshot's hashes are found again by the next process: the words that the overlapping
    // loads read must be those the bytes make, little-endian, whatever the id's length.
    func word(_ bytes: ArraySlice<UInt8>) -> UInt64 {
      bytes.reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }
    func folded(_ a: UInt64, _ b: UInt64) -> UInt64 {
      let product = a.multipliedFullWidth(by: b)
      return product.high ^ product.low
    }
    func scrambled(_ value: UInt64) -> UInt64 {
      var z = value &+ 0x9E37_79B9_7F4A_7C15
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      return z ^ (z >> 31)
    }
    func reference(_ id: [UInt8], basis: UInt64) -> UInt64 {
      let start = basis ^ scrambled(basis)
      let secret = scrambled(start) | 1
      let n = id.count
      var (seed, first, second): (UInt64, UInt64, UInt64) = (start, 0, 0)
      if n > 16 {
        var offset = 0
        while n - offset > 16 {
          seed = folded(
            word(id[offset..<(offset + 8)]) ^ secret, word(id[(offset + 8)..<(offset + 16)]) ^ seed)
          offset += 16
        }
        (first, second) = (word(id[(n - 16)..<(n - 8)]), word(id[(n - 8)...]))
      } else if n >= 8 {
        (first, second) = (word(id[..<8]), word(id[(n - 8)...]))
      } else if n >= 4 {
        first = word(id[..<4]) | word(id[(n - 4)...]) << 32
      } else if n > 0 {
        first = UInt64(id[0]) | UInt64(id[n / 2]) << 8 | UInt64(id[n - 1]) << 16
      }
      let product = (first ^ secret).multipliedFullWidth(by: second ^ seed)
      return folded(product.low ^ start ^ UInt64(n), product.high ^ secret)
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

  func testEveryBitOfAnIDAndItsLengthMoveAboutHalfTheHashsBits() {
    // Ids that differ in one bit, or only in their length (a zero byte more), must not collide:
    // the window would drop the second as a duplicate. Each such change flips about half the
    // hash's 64 bits, so neither the fingerprint (the top bits) nor the bucket (the low
    // half) stays put.
    let hasher = IDHasher(basis: 0x0BAD_5EED)
    var seen = Set<UInt64>()
    var flipped = 0
    var changes = 0
    for count in 1...40 {
      let id = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 97) }
      let hash = hasher.hash(id)
      XCTAssertTrue(seen.insert(hash).inserted, "\(count) bytes")
      XCTAssertNotEqual(hasher.hash(id + [0]), hash, "\(count) bytes and a zero byte")
      for bit in 0..<(count * 8) {
        var changed = id
        changed[bit / 8] ^= 1 << UInt8(bit % 8)
        let other = hasher.hash(changed)
        XCTAssertTrue(seen.insert(other).inserted, "\(count) bytes, bit \(bit)")
        flipped += (hash ^ other).nonzeroBitCount
        changes += 1
      }
    }
    XCTAssertEqual(Double(flipped) / Double(changes), 32, accuracy: 1)
    XCTAssertNotEqual(
      IDHasher(basis: 1).hash(Array("m-1".utf8)), IDHasher(basis: 2).hash(Array("m-1".utf8)))
  }
}
