import ChatLinkAPI
import ChatLinkClient
import JSON
import TestSupport
import Varlink
import XCTest

/// `sendMany`: a stream of messages as pipelined SendBatch calls, a receipt for each message.
final class SendManyTests: XCTestCase {
  /// A daemon that accepts each batch, the ids being the texts themselves; a batch holding
  /// "refuse" is refused as a full disk would refuse it.
  private func daemon() throws -> FakeDaemon {
    try FakeDaemon { call in
      let texts = (call.parameters["texts"]?.arrayValue ?? []).compactMap(\.stringValue)
      if texts.contains("refuse") {
        return [VarlinkReply(DaemonError.storageFailed(reason: "disk full").varlinkError)]
      }
      return [VarlinkReply(parameters: SendBatchReceipt(ids: PackedStrings(texts), count: 1).json)]
    }
  }

  private func batches(_ daemon: FakeDaemon) -> [[String]] {
    daemon.calls.map { ($0.parameters["texts"]?.arrayValue ?? []).compactMap(\.stringValue) }
  }

  func testMessagesGoInBatchesOfAThousandAndTwentyFourWithAReceiptEachInOrder() throws {
    let daemon = try daemon()
    let texts = (0..<2500).map { "m\($0)" }
    var receipts: [SendReceipt] = []
    try ChatLinkClient(socketPath: daemon.path).sendMany(texts, room: "ops") {
      receipts.append($0)
    }
    XCTAssertEqual(receipts.map(\.id), texts)
    XCTAssertEqual(batches(daemon).map(\.count), [1024, 1024, 452])
    for call in daemon.calls {
      XCTAssertEqual(call.method, SendBatchMethod.qualifiedName)
      XCTAssertEqual(call.parameters["room"], .string("ops"))
      XCTAssertEqual(call.parameters["wait_for_room"], .bool(true))
    }
  }

  func testLongMessagesFillABatchByItsSizeFirst() throws {
    let daemon = try daemon()
    let texts = ["a", "b", "c"].map { String(repeating: $0, count: 30_000) }
    var receipts = 0
    try ChatLinkClient(socketPath: daemon.path).sendMany(texts, room: nil) { _ in receipts += 1 }
    XCTAssertEqual(receipts, 3)
    XCTAssertEqual(batches(daemon), texts.map { [$0] })
    XCTAssertNil(daemon.calls.first?.parameters["room"])
  }

  func testARefusedBatchEndsTheStreamYetEveryAcceptedMessageGetsItsReceipt() throws {
    let daemon = try daemon()
    var texts = (0..<10 * 1024).map { "m\($0)" }
    texts[1024] = "refuse"
    var receipts: [String] = []
    XCTAssertThrowsError(
      try ChatLinkClient(socketPath: daemon.path).sendMany(texts, room: nil) {
        receipts.append($0.id)
      }
    ) { error in
      XCTAssertEqual((error as? ClientError)?.daemonError, .storageFailed(reason: "disk full"))
    }
    // Four batches were under way when the refusal of the second was read, and one more had
    // been sent; none after it.
    XCTAssertEqual(daemon.calls.count, 5)
    XCTAssertEqual(receipts, Array(texts[..<1024] + texts[2048..<5120]))
  }

  func testNoMessagesMakeNoCall() throws {
    let daemon = try daemon()
    try ChatLinkClient(socketPath: daemon.path).sendMany([String](), room: nil) { _ in
      XCTFail("a receipt for nothing")
    }
    XCTAssertTrue(daemon.calls.isEmpty)
  }
}
