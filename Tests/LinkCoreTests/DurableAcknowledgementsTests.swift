import LinkCore
import XCTest

final class DurableAcknowledgementsTests: XCTestCase {
  func testAcknowledgementsLeaveInOrderOnceTheirRecordsAreDurable() {
    var acks = DurableAcknowledgements()
    acks.add(text("ack 3"), seq: 3)
    acks.add(text("ack 5"), seq: 5)
    acks.add(text("ack 9"), seq: 9)
    XCTAssertEqual(Array(acks.release(through: 2)), [])
    XCTAssertEqual(Array(acks.release(through: 5)), [text("ack 3"), text("ack 5")])
    XCTAssertEqual(acks.count, 1)
    XCTAssertEqual(Array(acks.release(through: 100)), [text("ack 9")])
    XCTAssertEqual(Array(acks.release(through: 100)), [])
  }

  func testANewConnectionVoidsTheWaitingAcknowledgements() {
    var acks = DurableAcknowledgements()
    acks.add(text("ack 1"), seq: 1)
    acks.connectionChanged()
    XCTAssertEqual(Array(acks.release(through: 1)), [])
  }
}
