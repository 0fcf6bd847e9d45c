import WebSocket
import XCTest

final class CloseCodeTests: XCTestCase {
  func testEveryWireValueRoundTrips() {
    for raw in UInt16(0)...UInt16(5000) {
      XCTAssertEqual(CloseCode(rawValue: raw).rawValue, raw)
    }
    XCTAssertEqual(CloseCode(rawValue: 4321), .unknown(4321))
    XCTAssertEqual(CloseCode(rawValue: 1000), .normalClosure)
  }

  /// RFC 6455 §7.4: 1005, 1006 and 1015 are for reports only and never sent; 1004 and
  /// 1016–2999 are reserved; below 1000 and 5000 and above are undefined.
  func testOnlyAssignedAndApplicationCodesMayBeSent() {
    let sendable: [UInt16] = [
      1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 3999, 4000,
      4999,
    ]
    let forbidden: [UInt16] = [0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535]
    for code in sendable { XCTAssertTrue(CloseCode(rawValue: code).isSendable, "\(code)") }
    for code in forbidden { XCTAssertFalse(CloseCode(rawValue: code).isSendable, "\(code)") }
  }

  func testDescriptionsNameTheCode() {
    XCTAssertEqual(CloseCode.messageTooBig.description, "1009 (message too big)")
    XCTAssertEqual(CloseCode.unknown(4001).description, "4001 (unknown)")
  }
}
