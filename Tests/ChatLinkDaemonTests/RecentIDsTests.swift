import TestSupport
import XCTest

@testable import ChatLinkDaemon

final class RecentIDsTests: XCTestCase {
  /// A hash whose bucket follows from `home` (its low half) and whose fingerprint is `print`
  /// (its top 10 bits), the rest from `rest`.
  private func hash(home: UInt32, print: UInt64 = 0, rest: UInt64) -> UInt64 {
    print << 54 | (rest & 0x3F_FFFF) << 32 | UInt64(home)
  }

  func testInsertsMatchAModelOfTheLastIDsThroughCrowdedBucketsAndFingerprints() {
    // Homes crowded onto a few buckets at both ends of the table and fingerprints from a set of
    // four, so that buckets overflow round the table's end and fingerprints match ids they are
    // not: each answer must still be the model's.
    var random = SplitMix64(seed: 33)
    let capacity = 60
    let ids = RecentIDs(capacity: capacity)
    var model: [UInt64] = []
    for n in 0..<6_000 {
      let home = random.next() % 2 == 0 ? UInt32(random.next() % 300_000_000) : UInt32.max - 5
      let hash = self.hash(home: home, print: random.next() % 4, rest: random.next() % 50)
      let fresh = !model.contains(hash)
      XCTAssertEqual(ids.insert(hash, id: nil, capacity: capacity), fresh, "insert \(n)")
      if fresh {
        model.append(hash)
        if model.count > capacity { model.removeFirst() }
      }
      if n % 3 == 0, let again = model.randomElement(using: &random) {
        XCTAssertFalse(ids.insert(again, id: nil, capacity: capacity), "again at \(n)")
      }
      XCTAssertEqual(ids.count, model.count)
      if n % 50 == 0 {
        for kept in model { XCTAssertTrue(ids.contains(kept, capacity: capacity), "\(n)") }
        XCTAssertEqual(ids.oldestFirst, model)
      }
    }
  }

  func testAnIDThatLeftTheWindowIsNewAgainAndOneStillInItIsNot() {
    let capacity = 1_000
    let ids = RecentIDs(capacity: capacity)
    let hashes = (0..<UInt64(3_000)).map { $0 &* 0x9E37_79B9_7F4A_7C15 }
    for hash in hashes { XCTAssertTrue(ids.insert(hash, id: nil, capacity: capacity)) }
    XCTAssertEqual(ids.count, capacity)
    XCTAssertEqual(ids.buckets, RecentIDs.buckets(for: 3_000, capacity: capacity))
    for hash in hashes[2_000...] { XCTAssertFalse(ids.insert(hash, id: nil, capacity: capacity)) }
    XCTAssertFalse(ids.contains(hashes[1_999], capacity: capacity))
    XCTAssertTrue(ids.insert(hashes[1_999], id: nil, capacity: capacity), "gone, so new again")
    XCTAssertFalse(ids.contains(hashes[2_000], capacity: capacity), "the oldest left for it")
  }

  func testEveryIDOfOneBucketIsFoundPastTheBucketsItOverflowed() {
    // Forty ids of one home: 15 fit a bucket, the rest go past it to the next two.
    let capacity = 40
    let ids = RecentIDs(capacity: capacity)
    let hashes = (0..<UInt64(200)).map { hash(home: 7, print: $0 % 3, rest: $0) }
    for (n, hash) in hashes.enumerated() {
      XCTAssertTrue(ids.insert(hash, id: nil, capacity: capacity), "\(n)")
      for kept in hashes[max(0, n - capacity + 1)...n] {
        XCTAssertTrue(ids.contains(kept, capacity: capacity), "\(kept) after \(n)")
      }
      if n >= capacity { XCTAssertFalse(ids.contains(hashes[n - capacity], capacity: capacity)) }
    }
  }

  func testTheTableGrowsByDoublingToWhatTheFullWindowNeeds() {
    XCTAssertEqual(RecentIDs.buckets(for: 0, capacity: 10_000), 1)
    XCTAssertEqual(RecentIDs.buckets(for: 8, capacity: 10_000), 1)
    XCTAssertEqual(RecentIDs.buckets(for: 9, capacity: 10_000), 2)
    XCTAssertEqual(RecentIDs.buckets(for: 18, capacity: 18), 2, "no larger than the window needs")
    XCTAssertEqual(RecentIDs.buckets(for: 5_000, capacity: 10_000), 1_024)
    XCTAssertEqual(RecentIDs.buckets(for: 10_000, capacity: 10_000), 1_112)
    XCTAssertEqual(RecentIDs.buckets(for: 1 << 40, capacity: 10_000), 1_112)
    XCTAssertEqual(RecentIDs.buckets(for: 1 << 40, capacity: 1), 1)
    let ids = RecentIDs(capacity: 10_000)
    for n in 0..<UInt64(10_000) {
      XCTAssertTrue(ids.insert(n &* 0xC2B2_AE3D_27D4_EB4F, id: nil, capacity: 10_000))
      XCTAssertEqual(ids.buckets, RecentIDs.buckets(for: n + 1, capacity: 10_000), "\(n)")
    }
    for n in 0..<UInt64(10_000) {
      XCTAssertTrue(ids.contains(n &* 0xC2B2_AE3D_27D4_EB4F, capacity: 10_000), "\(n)")
    }
  }

  func testTheNextRefillIsTheFirstInsertThatFillsTheBucketsOrReachesTheRefreshInterval() {
    // The rule as a test over each insert: a refill after the insert that makes `inserted` a
    // multiple of the refresh interval, or (within the window) as many as the buckets take.
    func refills(_ inserted: UInt64, buckets: Int, capacity: Int) -> Bool {
      inserted & (RecentIDs.refreshInterval - 1) == 0
        || (inserted <= UInt64(capacity) && inserted >= UInt64(buckets * RecentIDs.idsPerBucket))
    }
    let interval = RecentIDs.refreshInterval
    for capacity in [1, 2, 8, 9, 10, 18, 100, 1_000] {
      let starts =
        Array(0..<UInt64(3 * capacity + 2)) + [interval - 1, interval, 5 * interval - 3]
      for inserted in starts {
        let buckets = RecentIDs.buckets(for: inserted, capacity: capacity)
        let next = RecentIDs.nextRefill(after: inserted, buckets: buckets, capacity: capacity)
        let first =
          (inserted + 1...inserted + UInt64(3 * capacity + 2)).first {
            refills($0, buckets: buckets, capacity: capacity)
          } ?? ((inserted / interval) + 1) * interval
        XCTAssertEqual(next, first, "capacity \(capacity), after \(inserted)")
      }
    }
  }

  func testPartsGiveTheSameRoomBackAndPartsThatCannotBeOneAreRefused() throws {
    let room = RecentIDs(capacity: 20)
    for n in 1...35 {
      _ = room.insert(UInt64(n) &* 0x9E37_79B9_7F4A_7C15, id: nil, capacity: 20)
      // Duplicates as the table grows leave its size to the inserts alone.
      _ = room.insert(UInt64(n) &* 0x9E37_79B9_7F4A_7C15, id: nil, capacity: 20)
      XCTAssertNotNil(RecentIDs(parts: room.parts, capacity: 20), "after \(n)")
    }
    let parts = room.parts
    let back = try XCTUnwrap(RecentIDs(parts: parts, capacity: 20))
    XCTAssertEqual(back.oldestFirst, room.oldestFirst)
    for n in 16...35 {
      XCTAssertFalse(back.insert(UInt64(n) &* 0x9E37_79B9_7F4A_7C15, id: nil, capacity: 20))
    }
    XCTAssertTrue(back.insert(15 &* 0x9E37_79B9_7F4A_7C15, id: nil, capacity: 20))
    func refused(_ change: (inout RecentIDs.Parts) -> Void, capacity: Int = 20) -> Bool {
      var damaged = parts
      change(&damaged)
      return RecentIDs(parts: damaged, capacity: capacity) == nil
    }
    XCTAssertTrue(refused({ _ in }, capacity: 10), "more ids than the window keeps")
    XCTAssertTrue(refused({ $0.head = 3 }), "the oldest not where its inserts put it")
    XCTAssertTrue(refused({ $0.ring.append(9) }), "more ids than its inserts leave")
    XCTAssertTrue(refused({ $0.inserted = 19 }), "fewer inserts than ids")
    XCTAssertTrue(refused({ $0.table.removeLast() }), "a table not of its inserts' size")
    XCTAssertTrue(refused({ _ in }, capacity: 0), "no window")
  }

  func testATableWithNoFreeSlotStillEndsEveryInsert() throws {
    let room = RecentIDs(capacity: 20)
    for n in 1...20 { _ = room.insert(UInt64(n) &* 0x9E37_79B9_7F4A_7C15, id: nil, capacity: 20) }
    var parts = room.parts
    // Every entry live, every overflow seq live: a snapshot no window writes, checksum and all.
    parts.table = parts.table.map { _ in (parts.table[0] & 0x3F_FFFF) }
    let damaged = try XCTUnwrap(RecentIDs(parts: parts, capacity: 20))
    for n in 100..<1_100 {
      _ = damaged.insert(UInt64(n) &* 0xC2B2_AE3D_27D4_EB4F, id: nil, capacity: 20)
    }
    XCTAssertEqual(damaged.count, 20)
  }
}

extension RecentIDsTests {
  func testPartsTakenBeforeMoreInsertsStayAsTheyWereAndTheRoomGoesOn() throws {
    // A snapshot takes a room's parts, then the room takes more ids (its ring grows, its table
    // doubles and later refills): the parts keep what the room held then, and the room read
    // back from them holds exactly that.
    let room = RecentIDs(capacity: 500)
    let hashes = (0..<UInt64(900)).map { $0 &* 0x9E37_79B9_7F4A_7C15 }
    for hash in hashes[..<40] { _ = room.insert(hash, id: nil, capacity: 500) }
    let parts = room.parts
    for hash in hashes[40...] { XCTAssertTrue(room.insert(hash, id: nil, capacity: 500)) }
    XCTAssertEqual(parts.ring, Array(hashes[..<40]))
    XCTAssertEqual(parts.inserted, 40)
    let back = try XCTUnwrap(RecentIDs(parts: parts, capacity: 500))
    for hash in hashes[..<40] { XCTAssertTrue(back.contains(hash, capacity: 500)) }
    for hash in hashes[40...] { XCTAssertFalse(back.contains(hash, capacity: 500)) }
    XCTAssertEqual(room.oldestFirst, Array(hashes[400...]))
    for hash in hashes[400...] { XCTAssertFalse(room.insert(hash, id: nil, capacity: 500)) }
    for hash in hashes[..<400] { XCTAssertFalse(room.contains(hash, capacity: 500)) }
  }

  func testTheTableLiesOnACacheLinesBoundaryAtEverySize() {
    // A bucket across two cache lines costs two misses: every table, as made and as grown,
    // starts on a 64-byte boundary.
    var rooms: [RecentIDs] = []
    for capacity in [1, 9, 10, 500, 10_000] {
      let room = RecentIDs(capacity: capacity)
      for n in 0..<UInt64(capacity * 2) {
        _ = room.insert(n &* 0x9E37_79B9_7F4A_7C15, id: nil, capacity: capacity)
        if n.isMultiple(of: 97) || n == UInt64(capacity) {
          XCTAssertEqual(room.tableAddress % 64, 0, "capacity \(capacity), insert \(n)")
        }
      }
      rooms.append(room)
    }
    XCTAssertEqual(rooms.count, 5)
  }

  func testAFullTableIsFilledAgainFromTheRingEveryRefreshInterval() throws {
    // A table that lost every id (all its entries stale) just before a refill: the next insert
    // fills it again from the ring, so each kept id is found again, and its free slots are
    // stale for long enough that none comes back to life before the refill after.
    let capacity = 20
    let room = RecentIDs(capacity: capacity)
    let hashes = (1...UInt64(21)).map { $0 &* 0x9E37_79B9_7F4A_7C15 }
    for hash in hashes.prefix(capacity) { _ = room.insert(hash, id: nil, capacity: capacity) }
    var parts = room.parts
    parts.inserted = RecentIDs.refreshInterval * 3 - 1
    parts.head = Int(parts.inserted % UInt64(capacity))
    let stale = UInt32(truncatingIfNeeded: parts.inserted) &- 25
    parts.table = parts.table.map { _ in stale & 0x3F_FFFF }
    let lost = try XCTUnwrap(RecentIDs(parts: parts, capacity: capacity))
    let kept = parts.ring
    for hash in kept { XCTAssertFalse(lost.contains(hash, capacity: capacity)) }
    XCTAssertTrue(lost.insert(hashes[20], id: nil, capacity: capacity))
    let evicted = kept[parts.head]
    for hash in kept where hash != evicted {
      XCTAssertTrue(lost.contains(hash, capacity: capacity), "\(hash) is back")
    }
    XCTAssertTrue(lost.contains(hashes[20], capacity: capacity))
    XCTAssertFalse(lost.contains(evicted, capacity: capacity))
    let now = UInt32(truncatingIfNeeded: lost.inserted)
    let live = lost.parts.table.filter { ((now &- 1 &- $0) & 0x3F_FFFF) < UInt32(capacity) }
    XCTAssertEqual(live.count, capacity, "the ids and no slot besides")
    let soonest = lost.parts.table.map { (($0 &- now) & 0x3F_FFFF) }.min() ?? 0
    XCTAssertGreaterThan(UInt64(soonest), RecentIDs.refreshInterval, "no slot revives first")
  }
}
