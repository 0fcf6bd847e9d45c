import EventLoop
import XCTest

final class LoggerTests: XCTestCase {
  func testMessagesBelowTheLevelAreDroppedWithoutFormatting() {
    let sink = MemorySink()
    let logger = Logger(label: "test", level: .info, sink: sink)
    var evaluated = false
    logger.debug(
      {
        evaluated = true
        return "hidden"
      }())
    logger.info("shown", ["url": "ws://x/"])
    XCTAssertFalse(evaluated)
    XCTAssertEqual(sink.records.map(\.message), ["shown"])
    XCTAssertEqual(sink.records.first?.metadata.first?.key, "url")
  }

  func testRenderedTextIsMessagePlusQuotedKeyValuePairsInOrder() {
    let record = LogRecord(
      level: .warning, label: "l", message: "reconnecting",
      metadata: [("delay", "2.5s"), ("reason", "server said \"bye\""), ("empty", "")], file: "f",
      line: 1)
    XCTAssertEqual(
      record.renderedText, #"reconnecting delay=2.5s reason="server said \"bye\"" empty="""#)
  }

  func testLoggerMetadataIsAttachedToEveryMessage() {
    let sink = MemorySink()
    var logger = Logger(label: "test", level: .trace, sink: sink)
    logger.metadata = [("conn", "3")]
    logger.error("failed", ["error": "EPIPE"])
    XCTAssertEqual(sink.records.first?.metadata.map(\.key), ["conn", "error"])
    XCTAssertEqual(sink.records.first?.level.syslogPriority, 3)
  }

  func testLevelsParseFromConfigNames() {
    XCTAssertEqual(Logger.Level(name: "DEBUG"), .debug)
    XCTAssertEqual(Logger.Level(name: "notice"), .notice)
    XCTAssertNil(Logger.Level(name: "verbose"))
    XCTAssertTrue(Logger.Level.warning > .info)
  }
}
