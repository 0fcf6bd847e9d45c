import LinkCore
import XCTest

final class DurableAcknowledgementsTests: XCTestCase {
  private func held(_ seqs: [UInt64]) -> DurableAcknowledgements {
    var acks = DurableAcknowledgements()
    for seq in seqs {
      acks.hold(text("ack \(seq)"))
      acks.stored(seq: seq)
    }
    return acks
  }

  func testAcknowledgementsLeaveInOrderOnceTheirRecordsAreDurable() {
    var acks = held([3, 5, 9])
    XCTAssertEqual(acks.release(through: 2), [])
    XCTAssertEqual(acks.release(through: 5), [text("ack 3"), text("ack 5")])
    XCTAssertEqual(acks.count, 1)
    XCTAssertEqual(acks.release(through: 100), [text("ack 9")])
    XCTAssertEqual(acks.release(through: 100), [])
    XCTAssertTrue(acks.isEmpty)
  }

  func testAnAcknowledgementWhoseRecordIsNotYetAppendedWaitsWhateverIsDurable() {
    var acks = held([4])
    acks.hold(text("ack pending"))
    XCTAssertEqual(acks.release(through: 1000), [text("ack 4")], "no seq yet: it stays")
    XCTAssertEqual(acks.count, 1)
    acks.stored(seq: 1001)
    XCTAssertEqual(acks.release(through: 1000), [])
    XCTAssertEqual(acks.release(through: 1001), [text("ack pending")])
  }

  func testSeqsArePairedWithTheirAcknowledgementsInTheOrderTheyWereHeld() {
    var acks = DurableAcknowledgements()
    acks.hold(text("a"))
    acks.hold(text("b"))
    acks.stored(seq: 7)
    acks.stored(seq: 8)
    XCTAssertEqual(acks.release(through: 7), [text("a")])
    XCTAssertEqual(acks.release(through: 8), [text("b")])
  }

  func testTheEndOfTheConnectionVoidsTheWaitingAcknowledgements() {
    var acks = held([1])
    acks.connectionEnded()
    XCTAssertEqual(acks.release(through: 1), [])
    XCTAssertTrue(acks.isEmpty)
  }

  func testSeqsReportedForAnEndedConnectionsRecordsAreNotGivenToTheNextOnes() {
    var acks = DurableAcknowledgements()
    acks.hold(text("old 1"))
    acks.hold(text("old 2"))
    acks.connectionEnded()
    // The new connection's record is read before the old ones' seqs come in.
    acks.hold(text("new"))
    acks.stored(seq: 10)
    acks.stored(seq: 11)
    XCTAssertEqual(acks.release(through: 11), [], "10 and 11 were the old records'")
    acks.stored(seq: 12)
    XCTAssertEqual(acks.release(through: 12), [text("new")])
  }

  func testASeqWithNoAcknowledgementWaitingIsIgnored() {
    var acks = DurableAcknowledgements()
    acks.stored(seq: 3)
    acks.hold(text("a"))
    XCTAssertEqual(acks.release(through: 3), [])
    acks.stored(seq: 4)
    XCTAssertEqual(acks.release(through: 4), [text("a")])
  }

  func testAnAnswerToAnEarlierRecordKeepsItsPlaceAndTakesNoSeqOfItsOwn() {
    var acks = DurableAcknowledgements()
    acks.hold(text("a"))
    acks.hold(text("earlier"), afterDurable: 3)
    acks.hold(text("b"))
    acks.stored(seq: 10)
    acks.stored(seq: 11)
    XCTAssertEqual(acks.release(through: 9), [])
    XCTAssertEqual(acks.release(through: 10), [text("a"), text("earlier")])
    XCTAssertEqual(acks.release(through: 11), [text("b")])
  }

  func testAnAnswerToARecordNotYetDurableWaitsForIt() {
    var acks = DurableAcknowledgements()
    acks.hold(text("earlier"), afterDurable: 8)
    XCTAssertEqual(acks.release(through: 7), [])
    XCTAssertEqual(acks.release(through: 8), [text("earlier")])
  }

  func testAFrameHeldBehindGoesRightAfterTheOneBeforeItOrAtOnceWhenNoneWaits() {
    var acks = DurableAcknowledgements()
    XCTAssertEqual(acks.holdBehind(text("answer 0")), text("answer 0"))
    acks.hold(text("ack 1"))
    XCTAssertNil(acks.holdBehind(text("answer 1")))
    acks.hold(text("ack 2"))
    XCTAssertEqual(acks.release(through: 1000), [], "no seq yet: nothing goes")
    acks.stored(seq: 7)
    XCTAssertEqual(acks.release(through: 6), [])
    XCTAssertEqual(acks.release(through: 7), [text("ack 1"), text("answer 1")])
    acks.stored(seq: 8)
    XCTAssertEqual(acks.release(through: 8), [text("ack 2")])
    XCTAssertTrue(acks.isEmpty)
  }
}
