import LinkCore
import XCTest

@testable import ChatLinkDaemon

/// [MQTT] IDProperty= from the file to the dialect, the store and status: refused where MQTT
/// has no properties, and what status promises with it.
final class MQTTIDPropertyConfigTests: XCTestCase {
  private func load(_ mqtt: String, dropIn: String? = nil) throws -> Configuration {
    var sources = [
      (
        "chatlinkd.conf",
        "[Backend]\nURL=ws://127.0.0.1:1883/\nProtocol=mqtt\nRooms=chat/#\n[MQTT]\n" + mqtt
      )
    ]
    if let dropIn { sources.append(("chatlinkd.conf.d/10.conf", dropIn)) }
    return try ConfigLoader.load(sources: sources)
  }

  private func error(_ mqtt: String, dropIn: String? = nil) -> ConfigError? {
    do {
      _ = try load(mqtt, dropIn: dropIn)
      return nil
    } catch let error as ConfigError {
      return error
    } catch {
      XCTFail("\(error)")
      return nil
    }
  }

  private func dialect(_ c: Configuration) throws -> MQTTProtocol.Settings? {
    BackendSettings(c, url: try XCTUnwrap(c.url), token: nil).link.dialect.mqtt
  }

  func testIDPropertyReachesTheDialectAndTheStoreAndIsOffByDefault() throws {
    let off = try load("")
    XCTAssertEqual(off.mqttIDProperty, "")
    XCTAssertEqual(try dialect(off)?.idProperty, "")
    XCTAssertFalse(MessageStore.Options(off).idsConfigured, "no window to fill at start")
    for name in ["msg-id", "correlation-data", "x y"] {
      let on = try load("IDProperty=\(name)\n")
      XCTAssertEqual(on.mqttIDProperty, name)
      XCTAssertEqual(try dialect(on)?.idProperty, name)
      XCTAssertTrue(MessageStore.Options(on).idsConfigured, "the window is filled at start")
    }
  }

  func testUnder311AnIDPropertyIsRefusedWhicheverFileSetsEither() {
    for (main, dropIn) in [
      ("Version=3.1.1\nIDProperty=msg-id\n", nil),
      ("IDProperty=msg-id\nVersion=311\n", nil),
      ("Version=3.1.1\n", "[MQTT]\nIDProperty=correlation-data\n"),
      ("IDProperty=msg-id\n", "[MQTT]\nVersion=4\n"),
    ] {
      let refused = error(main, dropIn: dropIn)
      XCTAssertEqual(refused?.key, "[MQTT] IDProperty", main)
      XCTAssertEqual(refused?.file, "chatlinkd.conf", main)
      XCTAssertEqual(
        refused?.message,
        "needs Version=5: MQTT 3.1.1 has no properties to carry an id (leave IDProperty= empty)")
    }
    XCTAssertNil(error("Version=3.1.1\nIDProperty=msg-id\n", dropIn: "[MQTT]\nIDProperty=\n"))
    XCTAssertNil(error("Version=3.1.1\nIDProperty=msg-id\n", dropIn: "[MQTT]\nVersion=5\n"))
  }

  func testAnIDPropertyWithAControlCharacterIsRefusedWithItsLine() {
    for bad in ["a\u{1}b", "a\u{7F}"] {
      let refused = error("IDProperty=\(bad)\n")
      XCTAssertEqual(refused?.key, "[MQTT] IDProperty", bad)
      XCTAssertEqual(refused?.line, 6, bad)
      XCTAssertTrue(refused?.message.contains("no control characters") ?? false, bad)
    }
  }

  func testAChangedIDPropertyNeedsANewConnection() throws {
    let old = BackendSettings(try load(""), url: try XCTUnwrap(try load("").url), token: nil)
    let new = try load("IDProperty=msg-id\n")
    XCTAssertTrue(
      BackendSettings(new, url: try XCTUnwrap(new.url), token: nil).link
        .needsNewConnection(from: old.link))
  }

  func testStatusSaysWhatIsPromisedWithIDProperty() {
    func promise(qos: UInt8, _ idProperty: String, window: Int = 10_000) -> String {
      var settings = MQTTProtocol.Settings()
      settings.qos = qos
      settings.idProperty = idProperty
      return DialectSettings.mqtt(settings).inboundPromise(dedupeWindow: window)
    }
    XCTAssertEqual(
      promise(qos: 1, ""),
      "at least once: QoS 1, acknowledged once durable; a redelivery is stored again")
    XCTAssertEqual(
      promise(qos: 1, "msg-id"),
      "exactly once within the dedupe window: QoS 1, acknowledged once durable; duplicates "
        + "dropped by user property msg-id")
    XCTAssertEqual(
      promise(qos: 1, "correlation-data"),
      "exactly once within the dedupe window: QoS 1, acknowledged once durable; duplicates "
        + "dropped by correlation data")
    XCTAssertEqual(
      promise(qos: 1, "msg-id", window: 0),
      "at least once: QoS 1, acknowledged once durable; a redelivery is stored again",
      "DedupeWindow=0 keeps no ids")
    XCTAssertEqual(
      promise(qos: 2, "msg-id"),
      "exactly once: QoS 2, where the broker grants it; duplicates dropped by user property msg-id")
    XCTAssertEqual(
      promise(qos: 0, "msg-id"), "at most once: QoS 0; duplicates dropped by user property msg-id")
  }
}
