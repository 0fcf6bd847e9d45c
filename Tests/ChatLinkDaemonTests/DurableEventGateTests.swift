import XCTest

@testable import ChatLinkDaemon

final class DurableEventGateTests: XCTestCase {
  func testAnEventWhoseRecordIsDurableAlreadyPassesAtOnce() {
    var gate = DurableEventGate<String>()
    XCTAssertEqual(gate.admit("m5", seq: 5, durable: 5), "m5")
    XCTAssertEqual(gate.count, 0)
  }

  func testAnEventWaitsUntilItsRecordIsDurable() {
    var gate = DurableEventGate<String>()
    XCTAssertNil(gate.admit("m6", seq: 6, durable: 5))
    XCTAssertEqual(gate.release(through: 5), [], "not durable yet: nothing goes out")
    XCTAssertEqual(gate.release(through: 6), ["m6"])
    XCTAssertEqual(gate.count, 0)
  }

  func testEventsLeaveInSeqOrderUpToTheDurableSeqOnly() {
    var gate = DurableEventGate<Int>()
    for seq in 10...14 { XCTAssertNil(gate.admit(seq, seq: UInt64(seq), durable: 9)) }
    XCTAssertEqual(gate.release(through: 12), [10, 11, 12])
    XCTAssertEqual(gate.count, 2)
    XCTAssertEqual(gate.release(through: 20), [13, 14])
  }

  func testADurableEventNeverOvertakesOneThatWaits() {
    var gate = DurableEventGate<Int>()
    XCTAssertNil(gate.admit(7, seq: 7, durable: 6))
    // The store's durable seq can pass a later record before the gate hears of it: the later
    // event still waits behind the earlier one, so subscribers see seq order.
    XCTAssertNil(gate.admit(8, seq: 8, durable: 8))
    XCTAssertEqual(gate.release(through: 8), [7, 8])
  }

  func testALongBacklogIsReleasedWholeAndTheGateStaysUsable() {
    var gate = DurableEventGate<Int>()
    for seq in 1...5000 { _ = gate.admit(seq, seq: UInt64(seq), durable: 0) }
    XCTAssertEqual(gate.release(through: 3000).count, 3000)
    XCTAssertEqual(gate.count, 2000)
    XCTAssertEqual(gate.release(through: 5000), Array(3001...5000))
    XCTAssertEqual(gate.admit(5001, seq: 5001, durable: 5001), 5001)
  }

  func testRemovingAllDropsTheWaitingEvents() {
    var gate = DurableEventGate<Int>()
    _ = gate.admit(1, seq: 1, durable: 0)
    gate.removeAll()
    XCTAssertEqual(gate.release(through: 1), [])
  }
}
