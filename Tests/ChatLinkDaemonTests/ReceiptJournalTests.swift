import ChatLinkDaemon
import EventLoop
import LinkCore
import TestSupport
import XCTest

/// The QoS 2 receipts' journal on a disk: rebuilt at start from its lines and the store's
/// records after its watermark, written in group commits, compacted, retried.
final class ReceiptJournalTests: XCTestCase {
  private var loop: EventLoop!
  private var disk: BackgroundWorker!
  private let dir = TemporaryDirectory()

  override func setUpWithError() throws {
    loop = try EventLoop()
    disk = try BackgroundWorker(loop: loop, name: "test-disk")
  }

  private var store: String { dir.file("messages.jsonl") }

  /// A store file with a record for each seq; those in `qos2` are QoS 2 deliveries of the id
  /// given.
  /// A store file with a record for each seq; those in `qos2` are QoS 2 deliveries of the id
  /// given, those in `outbound` sends whose text looks like one.
  private func writeStore(through last: UInt64, qos2: [UInt64: UInt16], outbound: Set<UInt64> = [])
  {
    var text = ""
    for seq in 1...last {
      var meta = #","meta":{"qos":1}"#
      if let id = qos2[seq] { meta = #","meta":{"qos":2,"packet_id":\#(id),"retain":true}"# }
      let time = "2026-01-01T00:00:00.000000Z"
      if outbound.contains(seq) {
        text +=
          #"{"seq":\#(seq),"time":"\#(time)","dir":"out","room":"t","type":"json","id":"a","#
          + #""data":{"meta":{"qos":2,"packet_id":5}}}"# + "\n"
      } else {
        text +=
          #"{"seq":\#(seq),"time":"\#(time)","dir":"in","room":"t","type":"text""#
          + meta + #","data":"m\#(seq)"}"# + "\n"
      }
    }
    dir.write("messages.jsonl", text)
  }

  private func open(lastSeq: UInt64) throws -> ReceiptJournal {
    try ReceiptJournal(
      loop: loop, disk: disk, directory: dir.path, storeFiles: [store, store + ".1"],
      storeLastSeq: lastSeq)
  }

  private func entries(_ entries: ReceiptJournalEntry...) -> String {
    entries.map { entry -> String in
      switch entry {
      case .received(let id, let seq): #"{"op":"received","id":\#(id),"seq":\#(seq)}"#
      case .released(let id, let seq): #"{"op":"released","id":\#(id),"seq":\#(seq)}"#
      case .forgotten(let through): #"{"op":"forgotten","through":\#(through)}"#
      case .watermark(let seq): #"{"op":"watermark","seq":\#(seq)}"#
      }
    }.joined(separator: "\n") + "\n"
  }

  func testWithoutAJournalNoRecordIsReadAndOneIsWrittenBeforeAnythingConnects() throws {
    writeStore(through: 5, qos2: [3: 9])
    let journal = try open(lastSeq: 5)
    XCTAssertEqual(journal.restored.pending, [:], "no QoS 2 run ever wrote to this store")
    XCTAssertEqual(journal.recordsRead, 0)
    XCTAssertEqual(journal.restored.durableThrough, 5)
    XCTAssertEqual(dir.read(ReceiptJournal.fileName), entries(.watermark(5)))
  }

  func testTheRebuildReadsTheRecordsAfterTheWatermarkAndAppliesTheReleases() throws {
    writeStore(through: 16, qos2: [5: 1, 12: 3, 13: 4, 14: 1], outbound: [15])
    dir.write(
      ReceiptJournal.fileName,
      entries(
        .received(id: 1, seq: 5), .received(id: 2, seq: 8), .watermark(10),
        .released(id: 1, seq: 5), .released(id: 3, seq: 12)))
    let journal = try open(lastSeq: 16)
    XCTAssertEqual(journal.restored.pending, [2: 8, 4: 13, 1: 14], "a send is no delivery")
    XCTAssertEqual(journal.recordsRead, 3, "the QoS 2 records after seq 10")
    XCTAssertEqual(journal.corruptLines, 0)
    XCTAssertEqual(
      dir.read(ReceiptJournal.fileName),
      entries(
        .received(id: 2, seq: 8), .received(id: 4, seq: 13), .received(id: 1, seq: 14),
        .watermark(16)),
      "rewritten with just what it still says")
    XCTAssertEqual(try open(lastSeq: 16).restored.pending, [2: 8, 4: 13, 1: 14])
  }

  func testATornAndCorruptJournalIsRepairedAtStartWithNothingElseLost() throws {
    writeStore(through: 12, qos2: [11: 6])
    dir.write(
      ReceiptJournal.fileName,
      entries(.received(id: 1, seq: 5), .watermark(10)) + "garbage\n"
        + entries(.received(id: 2, seq: 9), .released(id: 7, seq: 3)) + #"{"op":"relea"#)
    let journal = try open(lastSeq: 12)
    XCTAssertEqual(journal.corruptLines, 1)
    XCTAssertEqual(journal.tornBytes, #"{"op":"relea"#.utf8.count)
    XCTAssertEqual(journal.restored.pending, [1: 5, 2: 9, 6: 11])
  }

  func testAPendingRecordTheStoreNoLongerHasIsDropped() throws {
    writeStore(through: 3, qos2: [:])
    dir.write(
      ReceiptJournal.fileName,
      entries(.received(id: 1, seq: 2), .received(id: 2, seq: 7), .watermark(9)))
    XCTAssertEqual(try open(lastSeq: 3).restored.pending, [1: 2])
  }

  func testEntriesOfOneLoopTurnShareOneDurableWriteReportedWithTheirCount() throws {
    writeStore(through: 1, qos2: [:])
    let journal = try open(lastSeq: 1)
    var reports: [UInt64] = []
    journal.onDurable = { reports.append($0) }
    journal.append(.released(id: 1, seq: 1))
    journal.append(.released(id: 2, seq: 1))
    XCTAssertEqual(journal.appended, 2)
    XCTAssertEqual(reports, [], "not before the fsync")
    try spin(loop) { !reports.isEmpty }
    journal.append(.forgotten(through: 1))
    try spin(loop) { reports.count == 2 }
    XCTAssertEqual(reports, [2, 3])
    XCTAssertEqual(journal.durable, 3)
    XCTAssertEqual(
      dir.read(ReceiptJournal.fileName),
      entries(
        .watermark(1), .released(id: 1, seq: 1), .released(id: 2, seq: 1), .forgotten(through: 1)))
  }

  func testAJournalThatGrowsIsCompactedToWhatItStillSays() throws {
    writeStore(through: 1, qos2: [:])
    var journal: ReceiptJournal? = try open(lastSeq: 1)
    var durable: UInt64 = 0
    journal?.onDurable = { durable = $0 }
    var seq: UInt64 = 10
    for round in 0..<40 {
      for id in UInt16(1)...200 {
        seq += 1
        journal?.append(.received(id: id, seq: seq))
        journal?.append(.released(id: id, seq: seq))
      }
      journal?.append(.watermark(seq))
      if round == 39 { journal?.append(.received(id: 9, seq: seq + 1)) }
      try spin(loop) { durable == journal?.appended }
    }
    XCTAssertLessThan(FileSystem.size(dir.file(ReceiptJournal.fileName)) ?? 0, 300_000)
    journal = nil
    XCTAssertEqual(try open(lastSeq: seq + 1).restored.pending, [9: seq + 1])
  }

  func testAFailedWriteIsRetriedAndReportedOnceWritten() throws {
    writeStore(through: 1, qos2: [:])
    let journal = try open(lastSeq: 1)
    var failures = 0
    var reports: [UInt64] = []
    journal.onFailure = { _ in failures += 1 }
    journal.onDurable = { reports.append($0) }
    let size = FileSystem.size(dir.file(ReceiptJournal.fileName)) ?? 0
    try withFileSizeLimit(size + 5) {
      journal.append(.released(id: 1, seq: 1))
      try spin(loop) { failures > 0 }
    }
    XCTAssertEqual(reports, [])
    try spin(loop) { !reports.isEmpty }
    XCTAssertEqual(reports, [1])
    XCTAssertTrue(dir.read(ReceiptJournal.fileName).hasSuffix(entries(.released(id: 1, seq: 1))))
  }

  func testAJournalLeftByAQoS2RunIsRemovedDurably() throws {
    XCTAssertFalse(try ReceiptJournal.remove(in: dir.path))
    dir.write(ReceiptJournal.fileName, entries(.received(id: 1, seq: 2)))
    XCTAssertTrue(try ReceiptJournal.remove(in: dir.path))
    XCTAssertFalse(FileSystem.exists(dir.file(ReceiptJournal.fileName)))
  }
}
