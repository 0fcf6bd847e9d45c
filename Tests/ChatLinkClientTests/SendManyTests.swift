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

  /// A message no request could hold (the daemon would refuse it and close the connection,
  /// taking the receipts of the calls before it along) is not sent: every message before it
  /// is, with its receipt, then the error says which message and why; none after it is sent.
  func testAMessageTooLongForAnyRequestIsRefusedClearlyAfterEveryEarlierMessagesReceipt() throws {
    let daemon = try daemon()
    // The longest text one request holds: the batch's opening, the quoted text and `]}}`.
    let opening =
      #"{"method":"io.chatlink.Daemon.SendBatch","parameters":{"wait_for_room":true,"texts":["#
    let longest = String(
      repeating: "x", count: ChatLinkClient.requestLimit - opening.utf8.count - 2 - 3)
    let texts = (0..<2000).map { "m\($0)" } + [longest, "next", longest + "y", "never"]
    var receipts: [String] = []
    XCTAssertThrowsError(
      try ChatLinkClient(socketPath: daemon.path).sendMany(texts, room: nil) {
        receipts.append($0.id)
      }
    ) { error in
      guard case .varlink(.invalidParameter("texts", let reason)) = error as? ClientError else {
        return XCTFail("\(error)")
      }
      XCTAssertEqual(
        reason,
        "message 2003 is \(longest.utf8.count + 1) bytes, more than one request to chatlinkd "
          + "may hold (65536 bytes); it and the messages after it were not sent")
    }
    XCTAssertEqual(receipts, Array(texts[..<2002]), "every message before it, with its receipt")
    XCTAssertEqual(batches(daemon).flatMap { $0 }, Array(texts[..<2002]))
    XCTAssertEqual(batches(daemon).suffix(2), [[longest], ["next"]], "the longest goes alone")
  }

  func testNoMessagesMakeNoCall() throws {
    let daemon = try daemon()
    try ChatLinkClient(socketPath: daemon.path).sendMany([String](), room: nil) { _ in
      XCTFail("a receipt for nothing")
    }
    XCTAssertTrue(daemon.calls.isEmpty)
  }
}
