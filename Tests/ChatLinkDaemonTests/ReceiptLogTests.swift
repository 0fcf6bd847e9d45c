import LinkCore
import XCTest

@testable import ChatLinkDaemon

/// Replaying the QoS 2 receipts' journal (`ReceiptLog`) from its bytes, without a disk.
final class ReceiptLogTests: XCTestCase {
  private func lines(_ entries: ReceiptJournalEntry...) -> String {
    var out: [UInt8] = []
    for entry in entries { ReceiptLog.append(entry, to: &out) }
    return String(decoding: out, as: UTF8.self)
  }

  private func replay(_ parts: String...) -> ReceiptLog {
    ReceiptLog(replaying: Array(parts.joined().utf8))
  }

  func testEachEntryIsOneJSONLine() {
    XCTAssertEqual(
      lines(
        .received(id: 9, seq: 120), .released(id: 9, seq: 120), .forgotten(through: 130),
        .watermark(4096)),
      #"{"op":"received","id":9,"seq":120}"# + "\n" + #"{"op":"released","id":9,"seq":120}"#
        + "\n" + #"{"op":"forgotten","through":130}"# + "\n" + #"{"op":"watermark","seq":4096}"#
        + "\n")
  }

  func testAnEmptyJournalHasNothingPendingAndReadsTheStoreFromTheStart() {
    let log = replay()
    XCTAssertEqual(log.pending(adding: []), [:])
    XCTAssertEqual(log.watermark, 0)
    XCTAssertEqual(log.wholeLinesLength, 0)
  }

  func testPendingIsWhatWasReceivedAndTheRecordsAfterItLessReleasesAndForgetting() {
    let log = replay(
      lines(
        .received(id: 1, seq: 5), .received(id: 2, seq: 6), .received(id: 3, seq: 7),
        .watermark(10), .released(id: 2, seq: 6), .released(id: 4, seq: 12),
        .forgotten(through: 7)))
    XCTAssertEqual(log.watermark, 10)
    // After the watermark: 4 at 12 (released), 5 at 13, 1 at 14 (a new message reusing 1).
    XCTAssertEqual(
      log.pending(adding: [(4, 12), (5, 13), (1, 14)]), [5: 13, 1: 14],
      "1 and 3 were forgotten at 7; 1 came back after")
    XCTAssertEqual(
      replay(lines(.received(id: 1, seq: 5), .watermark(10))).pending(adding: [(1, 14)]),
      [1: 14], "the later record of an id stands")
  }

  func testAReleaseCoversTheRecordItNamesAndEveryEarlierOneNeverALaterOne() {
    let log = replay(lines(.watermark(10), .released(id: 1, seq: 20)))
    XCTAssertEqual(log.pending(adding: [(1, 15)]), [:])
    XCTAssertEqual(log.pending(adding: [(1, 20)]), [:])
    XCTAssertEqual(log.pending(adding: [(1, 21)]), [1: 21])
  }

  func testATornLastLineIsCutAndCorruptLinesAreCountedAndSkippedWithNothingElseLost() {
    let kept =
      lines(.received(id: 1, seq: 5), .received(id: 2, seq: 6)) + "garbage\n"
      + #"{"op":"received","id":70000,"seq":1}"# + "\n" + #"{"op":"released","id":2}"# + "\n"
      + #"{"op":"move","seq":1}"# + "\n" + lines(.released(id: 1, seq: 5))
    let log = replay(kept, #"{"op":"released","id":2,"se"#)
    XCTAssertEqual(log.corruptLines, 4)
    XCTAssertEqual(log.pending(adding: []), [2: 6])
    XCTAssertEqual(log.wholeLinesLength, kept.utf8.count)
  }

  func testALineIsReadOnlyAsTheDaemonWritesItAnythingElseIsCorrupt() {
    let log = replay(
      #"{"op":"received", "id":1,"seq":2}"# + "\n", #"{"op":"received","id":01,"seq":2}"# + "\n",
      #"{"op":"received","id":1,"seq":2} "# + "\n", #"{"seq":2,"op":"received","id":1}"# + "\n",
      #"{"op":"released","id":1,"seq":18446744073709551616}"# + "\n",
      #"{"op":"watermark","seq":-1}"# + "\n", lines(.received(id: 0, seq: 5)))
    XCTAssertEqual(log.corruptLines, 6)
    XCTAssertEqual(log.pending(adding: []), [0: 5])
  }

  func testNoWatermarkAfterACorruptLineIsTrustedForTheLineMayHaveBeenOneItVouchesFor() {
    let log = replay(
      lines(.received(id: 1, seq: 5), .watermark(10)), "garbage\n",
      lines(.received(id: 2, seq: 15), .watermark(20), .released(id: 3, seq: 12)))
    XCTAssertEqual(log.watermark, 10, "the store is read again from after 10")
    XCTAssertEqual(
      log.pending(adding: [(3, 12), (4, 16)]), [1: 5, 2: 15, 4: 16],
      "releases after the watermark still apply")
  }

  func testACompactionImageReplaysToTheSamePending() {
    var log = replay(
      lines(
        .received(id: 1, seq: 5), .received(id: 2, seq: 6), .watermark(10),
        .released(id: 1, seq: 5), .released(id: 7, seq: 12), .forgotten(through: 13),
        .received(id: 3, seq: 14), .watermark(20), .released(id: 8, seq: 25)))
    log.apply(.forgotten(through: 22))
    let records: [(id: UInt16, seq: UInt64)] = [(8, 25), (9, 26)]
    let image = log.compactionImage()
    let again = ReceiptLog(replaying: image)
    XCTAssertEqual(again.pending(adding: records), log.pending(adding: records))
    XCTAssertEqual(again.pending(adding: records), [9: 26])
    XCTAssertEqual(again.watermark, 20)
    XCTAssertEqual(
      String(decoding: image, as: UTF8.self),
      lines(.released(id: 8, seq: 25), .forgotten(through: 22), .watermark(20)),
      "what the watermark covers is gone: 2 was forgotten, 3 too, 1 and 7 released")
  }
}
