import LinkCore
import WebSocket
import XCTest

/// `ProtocolReading` keeps the fields only control frames set in a shared box: a copy must
/// still behave as an independent value.
final class ProtocolReadingTests: XCTestCase {
  private func record(_ text: String) -> InboundMessage {
    InboundMessage(payload: .text(Array(text.utf8)), scan: .unscanned)
  }

  func testAPlainRecordsReadingHasEveryOtherFieldAtItsDefault() {
    let reading = ProtocolReading(record: record("a"))
    XCTAssertNotNil(reading.record)
    XCTAssertTrue(reading.moreRecords.isEmpty)
    XCTAssertTrue(reading.delivered.isEmpty)
    XCTAssertTrue(reading.failed.isEmpty)
    XCTAssertTrue(reading.replies.isEmpty)
    XCTAssertFalse(reading.heartbeatAnswered)
    XCTAssertNil(reading.session)
    XCTAssertNil(reading.peerHeartbeat)
    XCTAssertNil(reading.problem)
    XCTAssertNil(reading.heartbeatInterval)
  }

  func testTheInitializersArgumentsAreKept() {
    let reading = ProtocolReading(
      record: nil, acknowledgement: .text([1]), echoedClientID: "c-1", delivered: [3, 4],
      replies: [.text([2])], heartbeatAnswered: true, session: .refused("no"))
    XCTAssertEqual(reading.acknowledgement, .text([1]))
    XCTAssertEqual(reading.echoedClientID, "c-1")
    XCTAssertEqual(reading.delivered, [3, 4])
    XCTAssertEqual(reading.replies, [.text([2])])
    XCTAssertTrue(reading.heartbeatAnswered)
    XCTAssertEqual(reading.session, .refused("no"))
  }

  func testChangingACopyLeavesTheOriginalAsItWas() {
    var original = ProtocolReading(record: nil)
    original.problem = "first"
    original.delivered.append(1)
    var copy = original
    copy.problem = "second"
    copy.delivered.append(2)
    copy.replies.append(.text([9]))
    copy.session = .ready
    copy.peerHeartbeat = .seconds(25)
    copy.heartbeatInterval = .seconds(30)
    copy.failed.append(DeliveryFailure(count: 7, reason: "no"))
    XCTAssertEqual(original.problem, "first")
    XCTAssertEqual(original.delivered, [1])
    XCTAssertTrue(original.replies.isEmpty)
    XCTAssertNil(original.session)
    XCTAssertNil(original.peerHeartbeat)
    XCTAssertNil(original.heartbeatInterval)
    XCTAssertTrue(original.failed.isEmpty)
    XCTAssertEqual(copy.problem, "second")
    XCTAssertEqual(copy.delivered, [1, 2])
    XCTAssertEqual(copy.replies, [.text([9])])
    XCTAssertEqual(copy.session, .ready)
    XCTAssertEqual(copy.peerHeartbeat, .seconds(25))
    XCTAssertEqual(copy.heartbeatInterval, .seconds(30))
    XCTAssertEqual(copy.failed.map(\.count), [7])
    // And the other way round: the original changes alone too.
    original.heartbeatAnswered = true
    XCTAssertFalse(copy.heartbeatAnswered)
  }

  func testManyRecordsAppendedInPlaceKeepTheirOrder() {
    var reading = ProtocolReading(record: record("0"))
    for i in 1...5_000 {
      reading.moreRecords.append(
        (record("\(i)"), i.isMultiple(of: 2) ? .text([UInt8(i % 256)]) : nil))
    }
    XCTAssertEqual(reading.moreRecords.count, 5_000)
    XCTAssertEqual(reading.moreRecords.first?.record.payload, .text(Array("1".utf8)))
    XCTAssertEqual(reading.moreRecords.last?.record.payload, .text(Array("5000".utf8)))
    XCTAssertEqual(reading.moreRecords[1].acknowledgement, .text([2]))
    XCTAssertNil(reading.moreRecords[0].acknowledgement)
  }
}
