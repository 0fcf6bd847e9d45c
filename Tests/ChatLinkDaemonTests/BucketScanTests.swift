import CBucket
import TestSupport
import XCTest

/// `chatlink_bucket_scan` (SSE2 here) against `chatlink_bucket_scan_lanes`, the lane-at-a-time
/// scan that builds without SSE2, and both against buckets worked out by hand.
final class BucketScanTests: XCTestCase {
  private let seqs: UInt32 = 0x3F_FFFF

  private func scans(
    _ entries: [UInt32], fingerprint: UInt32, now: UInt32, capacity: UInt32
  ) -> (vector: UInt32, lanes: UInt32) {
    entries.withUnsafeBytes { line in
      (
        chatlink_bucket_scan(line.baseAddress, fingerprint, now, capacity),
        chatlink_bucket_scan_lanes(line.baseAddress, fingerprint, now, capacity)
      )
    }
  }

  func testLiveLanesAndFingerprintsAreReportedAsWorkedOutByHand() {
    // now 100, capacity 10: seqs 90 to 99 are live; 89 and 100 are not.
    let print: UInt32 = 5 << 22
    var entries = [UInt32](repeating: 89, count: 16)
    entries[0] = print | 99  // live, the fingerprint
    entries[3] = print | 90  // live, the fingerprint: the oldest live seq
    entries[4] = print | 89  // the fingerprint, gone
    entries[7] = (6 << 22) | 95  // live, another fingerprint
    entries[9] = print | 100  // the fingerprint, not inserted yet
    entries[14] = print | 94  // live, the fingerprint: the last entry lane
    entries[15] = print | 93  // the overflow lane: live, never a fingerprint match
    let (vector, lanes) = scans(entries, fingerprint: print, now: 100, capacity: 10)
    let live: UInt32 = 1 << 0 | 1 << 3 | 1 << 7 | 1 << 14 | 1 << 15
    let same: UInt32 = 1 << 0 | 1 << 3 | 1 << 14
    XCTAssertEqual(vector, live | same << 16)
    XCTAssertEqual(lanes, vector)
  }

  func testSeqsThatWrapRoundTheir22BitsAreAgedAcrossTheWrap() {
    // now 3: the window of 8 reaches back over the wrap to seq 2^22 - 5.
    var entries = [UInt32](repeating: 3, count: 16)
    entries[1] = seqs  // 2^22 - 1: live
    entries[2] = seqs - 4  // 2^22 - 5: the oldest live
    entries[5] = seqs - 5  // gone
    entries[6] = 2  // live, the newest
    let (vector, lanes) = scans(entries, fingerprint: 0, now: 3, capacity: 8)
    let live: UInt32 = 1 << 1 | 1 << 2 | 1 << 6
    XCTAssertEqual(vector, live | live << 16, "fingerprint 0 matches every live entry lane")
    XCTAssertEqual(lanes, vector)
  }

  func testTheVectorScanAgreesWithTheLaneScanOnRandomBuckets() {
    var random = SplitMix64(seed: 16)
    for round in 0..<20_000 {
      let now = UInt32(truncatingIfNeeded: random.next()) & seqs
      let capacity = UInt32(1 + random.next() % 2_000)
      let fingerprint = UInt32(random.next() % 4) << 22
      let entries = (0..<16).map { _ -> UInt32 in
        // Seqs about the window's edges, and fingerprints from a few.
        let age = UInt32(random.next() % UInt64(capacity * 2 + 4))
        let seq = (now &- age) & seqs
        return UInt32(random.next() % 4) << 22 | seq
      }
      let (vector, lanes) = scans(
        entries, fingerprint: fingerprint, now: now, capacity: capacity)
      XCTAssertEqual(vector, lanes, "round \(round)")
    }
  }
}
