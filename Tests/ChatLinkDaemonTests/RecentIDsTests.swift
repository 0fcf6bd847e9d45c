import TestSupport
import XCTest

@testable import ChatLinkDaemon

final class RecentIDsTests: XCTestCase {
  func testAFullRingsInsertsKeepTheTableExactlyItsIDsThroughCrowdedProbeRuns() {
    // Low halves crowded onto a few home slots at both ends of the table, so that each
    // eviction moves entries, wraps round the end and frees slots on the new id's probe.
    var random = SplitMix64(seed: 33)
    let capacity = 12
    var ids = RecentIDs()
    var model: [UInt64] = []
    for n in 0..<5_000 {
      let low =
        random.next() % 2 == 0
        ? random.next() % 500_000_000 : 4_000_000_000 + random.next() % 290_000_000
      let hash = (UInt64(n + 1) << 32) | low
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
      XCTAssertEqual(ids.parts.table.filter { $0 != 0 }.count, model.count, "at \(n)")
      for kept in model { XCTAssertTrue(ids.contains(kept), "\(kept) at \(n)") }
      XCTAssertEqual(ids.oldestFirst, model)
    }
  }
}
