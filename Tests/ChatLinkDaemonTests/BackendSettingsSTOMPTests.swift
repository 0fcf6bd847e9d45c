import ChatLinkAPI
import LinkCore
import WebSocket
import XCTest

@testable import ChatLinkDaemon

/// Protocol=stomp from the configuration to the dialect: its settings, the keepalive's
/// interval, and what a reload replaces.
final class BackendSettingsSTOMPTests: XCTestCase {
  private func configuration(_ extra: String = "") throws -> Configuration {
    try ConfigLoader.load(
      sources: [
        (
          "chatlinkd.conf",
          "[Backend]\nURL=ws://127.0.0.1:15674/ws\nProtocol=stomp\nRooms=/queue/a\n"
            + "PingIntervalSec=30\n[STOMP]\nUsername=bot\n" + extra
        )
      ])
  }

  private func settings(_ c: Configuration, token: String? = "tok") throws -> BackendSettings {
    BackendSettings(c, url: try XCTUnwrap(c.url), token: token)
  }

  func testTheDialectGetsTheHostLoginTokenAndHeartBeats() throws {
    let c = try configuration("HeartBeatMSec=4000\nVirtualHost=v\n")
    let settings = try settings(c)
    var expected = STOMPProtocol.Settings()
    expected.virtualHost = "v"
    expected.login = "bot"
    expected.passcode = "tok"
    expected.heartBeat = .seconds(4)
    XCTAssertEqual(settings.link.dialect, .stomp(expected))
    XCTAssertEqual(settings.link.pingInterval, .seconds(4), "our heart-beats go out this often")
    XCTAssertEqual(
      settings.headers[all: "Authorization"], ["Bearer tok"], "the bearer header as ever")
    let backend = settings.link.dialect.makeDialect()
    XCTAssertTrue(backend is STOMPProtocol)
    XCTAssertEqual(backend.offeredSubprotocols, ["v12.stomp", "v11.stomp"])
    XCTAssertEqual(
      settings.clientConfiguration(to: settings.url, offering: backend.offeredSubprotocols)
        .subprotocols,
      ["v12.stomp", "v11.stomp"])
  }

  func testWithoutHeartBeatsWebSocketPingsKeepTheirInterval() throws {
    let settings = try settings(try configuration("HeartBeatMSec=0\n"))
    XCTAssertEqual(settings.link.dialect.stomp?.heartBeat, .zero)
    XCTAssertEqual(settings.link.pingInterval, .seconds(30))
  }

  func testAChangedSTOMPSettingNeedsANewConnection() throws {
    let old = try settings(try configuration()).link
    func changed(_ extra: String = "", token: String? = "tok") throws -> Bool {
      try settings(try configuration(extra), token: token).link.needsNewConnection(from: old)
    }
    XCTAssertFalse(try changed())
    XCTAssertTrue(try changed("VirtualHost=other\n"))
    XCTAssertTrue(try changed(token: "new"))
  }
}

/// The MQTT client id an instance gets by default.
final class BackendSettingsMQTTInstanceTests: XCTestCase {
  private func clientID(instance: Instance?, _ extra: String = "") throws -> String {
    let c = try ConfigLoader.load(
      sources: [
        ("x.conf", "[Backend]\nURL=ws://127.0.0.1:1883/\nProtocol=mqtt\n" + extra)
      ], instance: instance)
    return try XCTUnwrap(
      BackendSettings(c, url: try XCTUnwrap(c.url), token: nil).link.dialect.mqtt?.clientID)
  }

  func testEachInstanceHasAClientIDOfItsOwnUnlessOneIsConfigured() throws {
    let host = try clientID(instance: nil)
    XCTAssertTrue(host.hasPrefix("chatlink-"), host)
    XCTAssertEqual(try clientID(instance: Instance("prod")), host + "-prod")
    XCTAssertEqual(try clientID(instance: Instance("prod"), "[MQTT]\nClientID=mine\n"), "mine")
  }
}
