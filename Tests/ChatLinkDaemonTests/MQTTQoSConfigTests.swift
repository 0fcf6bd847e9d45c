import EventLoop
import LinkCore
import TestSupport
import XCTest

@testable import ChatLinkDaemon

/// [MQTT] QoS= from the file to the dialect, and the QoS 2 journal it brings (or removes).
final class MQTTQoSConfigTests: XCTestCase {
  private let dir = TemporaryDirectory()

  private func configuration(_ qos: String?) throws -> Configuration {
    try ConfigLoader.load(
      sources: [
        (
          "x.conf",
          "[Backend]\nURL=ws://127.0.0.1:1883/\nProtocol=mqtt\n[Store]\nDirectory=\(dir.path)\n"
            + (qos.map { "[MQTT]\nQoS=\($0)\n" } ?? "")
        )
      ])
  }

  func testQoS0To2ReachTheDialectAnd1IsTheDefault() throws {
    for (text, qos) in [(nil, UInt8(1)), ("0", 0), ("1", 1), ("2", 2)] {
      let c = try configuration(text)
      let settings = BackendSettings(c, url: try XCTUnwrap(c.url), token: nil)
      XCTAssertEqual(settings.link.dialect.mqtt?.qos, qos, text ?? "default")
    }
  }

  func testAnyOtherQoSIsRefusedWithTheKeyTheLineAndTheValuesAllowed() {
    for bad in ["3", "-1", "two", "", "2.0", "0x2"] {
      do {
        _ = try configuration(bad)
        XCTFail("accepted QoS=\(bad)")
      } catch let error as ConfigError {
        XCTAssertEqual(error.key, "[MQTT] QoS", bad)
        XCTAssertEqual(error.line, 7, bad)
        XCTAssertTrue(error.message.hasSuffix("is not 0, 1 or 2"), error.message)
      } catch {
        XCTFail("\(error)")
      }
    }
  }

  private func openReceipts(_ qos: String) throws -> ReceiptJournal? {
    let c = try configuration(qos)
    let loop = try EventLoop()
    let disk = try BackgroundWorker(loop: loop, name: "test-disk")
    let store = try MessageStore(loop: loop, disk: disk, options: MessageStore.Options(c))
    return try Daemon.openReceipts(
      c, loop: loop, disk: disk, store: store, logger: Logger(label: "test"))
  }

  func testQoS2KeepsAJournalInTheStoreDirectoryAndALowerQoSRemovesOneLeftBehind() throws {
    XCTAssertNil(try openReceipts("1"))
    XCTAssertFalse(FileSystem.exists(dir.file(ReceiptJournal.fileName)))
    XCTAssertNotNil(try openReceipts("2"))
    XCTAssertTrue(FileSystem.exists(dir.file(ReceiptJournal.fileName)))
    XCTAssertNil(try openReceipts("0"))
    XCTAssertFalse(
      FileSystem.exists(dir.file(ReceiptJournal.fileName)),
      "a lower QoS answers releases without writing them: the journal would go stale")
  }
}
