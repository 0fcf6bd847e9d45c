import ChatLinkAPI
import JSON
import Varlink
import XCTest

final class DaemonErrorTests: XCTestCase {
  func testOurErrorsGoOutWithTheirNamesAndParameters() {
    XCTAssertEqual(
      DaemonError.outboxFull(limit: 5).varlinkError,
      .named("io.chatlink.Daemon.OutboxFull", .object([("limit", .int(5))])))
    XCTAssertEqual(
      VarlinkReply(
        DaemonError.invalidParameter(parameter: "room", reason: "is required").varlinkError
      )
      .encoded.dropLast(),
      Array(
        #"{"error":"io.chatlink.Daemon.InvalidParameter","parameters":{"parameter":"room","reason":"is required"}}"#
          .utf8)[...])
  }

  func testAVarlinkErrorReadsAsOursOnlyWhenItsParametersDo() {
    XCTAssertEqual(
      DaemonError(.named("io.chatlink.Daemon.NotConnected", .object([("state", .string("tls"))]))),
      .notConnected(state: .tls))
    let unreadable = VarlinkError.named("io.chatlink.Daemon.OutboxFull", .null)
    XCTAssertEqual(DaemonError(unreadable), .varlink(unreadable))
    let wrongType = VarlinkError.named(
      "io.chatlink.Daemon.StorageFailed", .object([("reason", .int(5))]))
    XCTAssertEqual(DaemonError(wrongType), .varlink(wrongType))
    let newer = VarlinkError.named("io.chatlink.Daemon.Overheated", .object([]))
    XCTAssertEqual(DaemonError(newer), .varlink(newer))
    XCTAssertEqual(DaemonError(.permissionDenied), .varlink(.permissionDenied))
    XCTAssertEqual(DaemonError(.permissionDenied).varlinkError, .permissionDenied)
  }

  func testAParameterThatDoesNotReadIsInvalidParameter() {
    XCTAssertEqual(
      DaemonError(APIDecodingError(field: "texts", reason: "message 3 is empty")),
      .invalidParameter(parameter: "texts", reason: "message 3 is empty"))
  }
}
