import LinkCore
import WebSocket
import XCTest

/// The receipts of two-step deliveries on their own: pairing seqs, releases, forgetting and
/// the frames that wait for the journal.
final class InboundReceiptsTests: XCTestCase {
  private func delivery(_ id: UInt16, dup: Bool = false) -> TwoStepDelivery {
    TwoStepDelivery(id: id, redelivered: dup)
  }

  func testSeqsArePairedWithTheDeliveriesAmongOtherAcknowledgedRecords() {
    var receipts = InboundReceipts()
    var journal: [ReceiptJournalEntry] = []
    XCTAssertEqual(receipts.received(delivery(4), journal: &journal), .new)
    receipts.willStore(nil)
    receipts.willStore(4)
    receipts.willStore(nil)
    receipts.stored(seq: 10)
    receipts.stored(seq: 11)
    receipts.stored(seq: 12)
    XCTAssertEqual(receipts.pending, [4: 11])
    XCTAssertEqual(journal, [])
    receipts.stored(seq: 13)
    XCTAssertEqual(receipts.pending, [4: 11], "a seq with no record waiting is ignored")
  }

  func testARedeliveryIsOneOnlyForAnIDWhoseRecordIsStored() {
    var receipts = InboundReceipts(pending: [4: 11], durableThrough: 11)
    var journal: [ReceiptJournalEntry] = []
    XCTAssertEqual(
      receipts.received(delivery(4, dup: true), journal: &journal), .redelivery(ofSeq: 11))
    XCTAssertEqual(receipts.received(delivery(5, dup: true), journal: &journal), .new)
    receipts.willStore(5)
    XCTAssertEqual(
      receipts.received(delivery(5, dup: true), journal: &journal), .new,
      "its seq is still to come: stored again rather than answered unsafely")
    XCTAssertEqual(journal, [])
  }

  func testAReleaseIsJournaledAndItsAnswerWaitsForItAndForEveryEntryBefore() {
    var receipts = InboundReceipts(pending: [4: 11, 5: 12], durableThrough: 12)
    var journal: [ReceiptJournalEntry] = []
    XCTAssertNil(receipts.released(4, answer: text("comp 4"), journal: &journal))
    XCTAssertNil(receipts.released(9, answer: text("comp 9"), journal: &journal))
    XCTAssertNil(receipts.released(5, answer: text("comp 5"), journal: &journal))
    XCTAssertEqual(journal, [.released(id: 4, seq: 11), .released(id: 5, seq: 12)])
    XCTAssertEqual(receipts.journaled, 2)
    XCTAssertEqual(receipts.journalDurable(through: 1), [text("comp 4"), text("comp 9")])
    XCTAssertEqual(receipts.journalDurable(through: 2), [text("comp 5")])
    XCTAssertEqual(receipts.released(9, answer: text("again"), journal: &journal), text("again"))
  }

  func testForgettingVoidsEveryPendingIDAndNothingIsWrittenWhenNoneIs() {
    var empty = InboundReceipts()
    var journal: [ReceiptJournalEntry] = []
    empty.forgotten(journal: &journal)
    XCTAssertEqual(journal, [])
    XCTAssertEqual(empty.hold(text("subscribe")), text("subscribe"))
    var receipts = InboundReceipts(pending: [4: 11, 5: 30], durableThrough: 30)
    receipts.forgotten(journal: &journal)
    XCTAssertEqual(journal, [.forgotten(through: 30)])
    XCTAssertEqual(receipts.pending, [:])
    XCTAssertNil(receipts.hold(text("subscribe")))
    receipts.connectionEnded()
    XCTAssertEqual(receipts.journalDurable(through: 1), [], "held for an ended connection")
  }

  func testAWatermarkComesEveryStrideWithThePendingIDsBelowIt() {
    let stride = InboundReceipts.watermarkStride
    var receipts = InboundReceipts(pending: [1: 5], durableThrough: 10)
    var journal: [ReceiptJournalEntry] = []
    receipts.willStore(2)
    receipts.stored(seq: 20)
    receipts.willStore(3)
    receipts.stored(seq: 10 + stride + 1)
    receipts.durable(through: 10 + stride - 1, journal: &journal)
    XCTAssertEqual(journal, [])
    receipts.durable(through: 10 + stride, journal: &journal)
    XCTAssertEqual(journal, [.received(id: 2, seq: 20), .watermark(10 + stride)])
    XCTAssertEqual(receipts.watermark, 10 + stride)
  }
}
