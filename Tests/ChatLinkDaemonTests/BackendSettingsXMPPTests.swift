import ChatLinkAPI
import LinkCore
import WebSocket
import XCTest
import XMPP

@testable import ChatLinkDaemon

/// Protocol=xmpp from the configuration to the dialect, and the [XMPP] keys' errors.
final class BackendSettingsXMPPTests: XCTestCase {
  private func load(_ text: String, instance: Instance? = nil) throws -> Configuration {
    try ConfigLoader.load(sources: [("chatlinkd.conf", text)], instance: instance)
  }

  private func error(_ text: String) -> ConfigError? {
    do {
      _ = try load(text)
      return nil
    } catch {
      return error as? ConfigError
    }
  }

  private let backend =
    "[Backend]\nURL=ws://127.0.0.1:5280/xmpp-websocket\nProtocol=xmpp\n"
    + "Rooms=Lobby@Conference.example.org,ops@conference.example.org\n"

  func testTheDialectGetsTheAccountPasswordNickResourceAndTransport() throws {
    let c = try load(backend + "[XMPP]\nJID=Bot@Example.org\nNick=robot\nResource=r1\n")
    XCTAssertEqual(c.rooms, ["lobby@conference.example.org", "ops@conference.example.org"])
    let settings = BackendSettings(c, url: try XCTUnwrap(c.url), token: "secret")
    var expected = XMPPProtocol.Settings(
      jid: try JID(parsing: "bot@example.org"), password: "secret", resource: "r1",
      transport: .loopback, nick: "robot")
    expected.maxFrameBytes = c.maxMessageSize
    XCTAssertEqual(settings.link.dialect, .xmpp(expected))
    XCTAssertEqual(
      settings.headers[all: "Authorization"], [], "the password never goes into a header")
    let dialect = settings.link.dialect.makeDialect()
    XCTAssertEqual(
      settings.clientConfiguration(to: settings.url, offering: dialect.offeredSubprotocols)
        .subprotocols, ["xmpp"])
  }

  func testTwoSpellingsOfOneRoomAreOneRoom() throws {
    let c = try load(
      "[Backend]\nURL=ws://127.0.0.1:5280/xmpp-websocket\nProtocol=xmpp\n"
        + "Rooms=Lobby@Conference.example.org,lobby@conference.example.org\n[XMPP]\nJID=b@e.org\n")
    XCTAssertEqual(c.rooms, ["lobby@conference.example.org"])
  }

  func testAValueIsTrimmedScalarByScalarEvenBeforeACombiningMark() throws {
    // A space and the combining mark after it are one Character.
    let c = try load(backend + "[XMPP]\nJID=b@e.org\nNick= \u{07AD}x \n")
    XCTAssertEqual(c.xmppNick, "\u{07AD}x")
  }

  func testTheNickDefaultsToTheLocalPartAndTheResourceToTheMachinesPerInstance() throws {
    let c = try load(backend + "[XMPP]\nJID=bot@example.org\n", instance: try Instance("prod"))
    let settings = try XCTUnwrap(
      BackendSettings(c, url: try XCTUnwrap(c.url), token: nil).link.dialect.xmpp)
    XCTAssertEqual(settings.nick, "bot")
    XCTAssertTrue(settings.resource.hasPrefix("chatlink-"), settings.resource)
    XCTAssertTrue(settings.resource.hasSuffix("-prod"), settings.resource)
    XCTAssertEqual(settings.resource, BackendSettings.defaultMQTTClientID(instance: c.instance))
  }

  func testPlainIsAllowedOnlyOverTLSOrLoopback() throws {
    func transport(_ url: String) throws -> SASLTransport? {
      let c = try load(
        "[Backend]\nURL=\(url)\nProtocol=xmpp\n[XMPP]\nJID=bot@example.org\n")
      return BackendSettings(c, url: try XCTUnwrap(c.url), token: "p").link.dialect.xmpp?.transport
    }
    XCTAssertEqual(try transport("wss://chat.example.org/xmpp-websocket"), .encrypted)
    XCTAssertEqual(try transport("ws://localhost:5280/xmpp-websocket"), .loopback)
    XCTAssertEqual(try transport("ws://chat.example.org/xmpp-websocket"), .plaintext)
  }

  func testAMissingJIDIsRefusedWithWhatItShouldBe() {
    let refused = error(backend)
    XCTAssertEqual(refused?.key, "[XMPP] JID")
    XCTAssertEqual(
      refused?.message, "is required with Protocol=xmpp (the account, such as bot@example.org)")
  }

  func testABadJIDIsRefusedWithItsLineAndWhyItIsNoAccount() {
    let cases = [
      ("bot@", "'bot@' is not a JID: no domain"),
      (
        "example.org",
        "'example.org' is not an account's bare JID such as bot@example.org (a local part, no resource)"
      ),
      (
        "bot@example.org/res",
        "'bot@example.org/res' is not an account's bare JID such as bot@example.org (a local part, no resource)"
      ),
      ("b<t@example.org", "'b<t@example.org' is not a JID: '<' in the local part 'b<t'"),
    ]
    for (jid, message) in cases {
      let refused = error(backend + "[XMPP]\nJID=\(jid)\n")
      XCTAssertEqual(refused?.key, "[XMPP] JID", jid)
      XCTAssertEqual(refused?.line, 6, jid)
      XCTAssertEqual(refused?.message, message, jid)
    }
  }

  func testARoomThatIsNoJIDIsRefused() {
    let refused = error(
      "[Backend]\nURL=ws://127.0.0.1:5280/xmpp-websocket\nProtocol=xmpp\nRooms=lobby\n"
        + "[XMPP]\nJID=bot@example.org\n")
    XCTAssertEqual(refused?.key, "[Backend] Rooms")
    XCTAssertEqual(
      refused?.message, "'lobby' is not a room's JID such as lobby@conference.example.org")
  }

  func testCatchUpIsNewOrAll() throws {
    func catchUpAll(_ value: String) throws -> Bool? {
      let c = try load(backend + "[XMPP]\nJID=bot@example.org\nCatchUp=\(value)\n")
      return BackendSettings(c, url: try XCTUnwrap(c.url), token: "p").link.dialect.xmpp?
        .catchUpAll
    }
    XCTAssertEqual(try catchUpAll("all"), true)
    XCTAssertEqual(try catchUpAll("new"), false)
    XCTAssertEqual(try catchUpAll(""), false)
    let refused = error(backend + "[XMPP]\nJID=bot@example.org\nCatchUp=some\n")
    XCTAssertEqual(refused?.key, "[XMPP] CatchUp")
    XCTAssertEqual(
      refused?.message,
      "'some' is not new (a room never stored starts from now) or all (its whole archive)")
  }
}
