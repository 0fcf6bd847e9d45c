import LinkCore
import WebSocket
import XCTest

final class InboundMessageTests: XCTestCase {
  private let scans: [PayloadScan] = [
    .unscanned, .notJSON, .json(hasLineBreaks: false), .json(hasLineBreaks: true),
  ]
  private let twoSteps: [TwoStepDelivery?] = [
    nil, TwoStepDelivery(id: 0, redelivered: false), TwoStepDelivery(id: 1, redelivered: true),
    TwoStepDelivery(id: .max, redelivered: false), TwoStepDelivery(id: .max, redelivered: true),
  ]
  private let ids: [MessageIDText?] = [
    nil, MessageIDText(.payload, 0..<1), MessageIDText(.meta, 5..<9, escaped: true),
    MessageIDText(.payload, MessageIDText.maximumStart..<(MessageIDText.maximumStart + 1)),
    MessageIDText(.meta, 7..<(7 + MessageIDText.maximumLength), escaped: false),
  ]

  func testEveryScanTwoStepAndIDComeBackAsTheyWereSetWhateverTheOthersHold() {
    for scan in scans {
      for twoStep in twoSteps {
        for id in ids {
          var record = InboundMessage(payload: .text([]), scan: scan, id: id)
          record.twoStep = twoStep
          XCTAssertEqual(record.scan, scan)
          XCTAssertEqual(record.twoStep, twoStep)
          XCTAssertEqual(record.id, id)
          // Overwriting one leaves the others.
          record.id = nil
          record.twoStep = nil
          record.scan = .notJSON
          record.id = id
          record.twoStep = twoStep
          record.scan = scan
          XCTAssertEqual(record.scan, scan)
          XCTAssertEqual(record.twoStep, twoStep)
          XCTAssertEqual(record.id, id)
        }
      }
    }
  }

  func testAnIDThatIsEmptyStartsTooFarOrIsTooLongIsNone() {
    XCTAssertNil(MessageIDText(.payload, 3..<3))
    XCTAssertNil(
      MessageIDText(.payload, (MessageIDText.maximumStart + 1)..<(MessageIDText.maximumStart + 2)))
    XCTAssertNil(MessageIDText(.meta, 0..<(MessageIDText.maximumLength + 1)))
  }

  func testARecordStaysFourWordsSoThatTheLinkMovesIt() {
    XCTAssertLessThanOrEqual(MemoryLayout<InboundMessage>.size, 4 * MemoryLayout<Int>.size)
  }
}
