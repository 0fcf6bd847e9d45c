import ChatLinkAPI
import ChatLinkDaemon
import Foundation
import XCTest

final class ConfigTests: XCTestCase {
  private func load(_ texts: String...) throws -> Configuration {
    try ConfigLoader.load(
      sources: texts.enumerated().map { ("/etc/chatlink/\($0.offset).conf", $0.element) })
  }

  private func error(_ texts: String...) -> ConfigError? {
    do {
      _ = try ConfigLoader.load(
        sources: texts.enumerated().map { ("f\($0.offset).conf", $0.element) })
      return nil
    } catch {
      return error
    }
  }

  func testDefaultsMatchTheDocumentedValues() throws {
    let c = try load("[Backend]\nURL=ws://127.0.0.1:8765/")
    XCTAssertEqual(c.pingInterval, .seconds(10))
    XCTAssertEqual(c.chatProtocol, .envelope)
    XCTAssertEqual(c.storeDirectory, "/var/lib/chatlink")
    XCTAssertEqual(c.sync, .batch)
    XCTAssertEqual(c.controlSocket, "/run/chatlink/control.sock")
    XCTAssertEqual(c.socketMode, 0o660)
    XCTAssertEqual(c.socketGroup, "chatlink")
  }

  func testAnInstanceDerivesItsStoreAndSocketAndItsFileMayOverrideThem() throws {
    let prod = try Instance("prod")
    let derived = try ConfigLoader.load(
      sources: [("/etc/chatlink/prod.conf", "[Backend]\nURL=ws://127.0.0.1:8765/")],
      instance: prod)
    XCTAssertEqual(derived.instance, prod)
    XCTAssertEqual(derived.storeDirectory, "/var/lib/chatlink/prod")
    XCTAssertEqual(derived.controlSocket, "/run/chatlink/prod.sock")
    let overridden = try ConfigLoader.load(
      sources: [
        (
          "/etc/chatlink/prod.conf",
          "[Backend]\nURL=ws://127.0.0.1:8765/\n[Store]\nDirectory=/srv/prod\n"
            + "[Control]\nSocket=/run/prod.sock"
        )
      ], instance: prod)
    XCTAssertEqual(overridden.storeDirectory, "/srv/prod")
    XCTAssertEqual(overridden.controlSocket, "/run/prod.sock")
    XCTAssertNotEqual(derived, try load("[Backend]\nURL=ws://127.0.0.1:8765/"))
  }

  func testEveryKeyParsesWithSystemdValueSyntax() throws {
    let c = try load(
      """
      # comment
      ; another comment
      [Backend]
      URL = wss://chat.example.com/ws
      TokenFile=/etc/chatlink/token
      Header=Origin: https://example.com
      Header=X-Client: chatlink
      Subprotocol=chat.v2 chat.v1
      CAFile=/etc/ssl/ca.pem
      Proxy=http://proxy:3128
      Protocol=envelope
      Rooms=7 8, 9
      Sender=ops-bot
      PingIntervalSec=2.5s
      PongTimeoutSec=500ms
      ConnectTimeoutSec=1min
      ReconnectMinSec=1
      ReconnectMaxSec=2min
      Compression=no
      MaxMessageSize=1M

      [Envelope]
      RoomField=channel
      SendEvent=post

      [Store]
      Directory=/srv/chat
      Sync=always
      SyncIntervalMSec=20
      MaxFileSize=1G
      MaxFiles=3

      [Outbox]
      MaxMessages=50

      [Control]
      Socket=/run/x.sock
      SocketMode=0600
      SocketGroup=adm

      [Daemon]
      LogLevel=debug
      """)
    XCTAssertEqual(c.url?.description, "wss://chat.example.com/ws")
    XCTAssertEqual(c.tokenFile, "/etc/chatlink/token")
    XCTAssertEqual(c.headers.map(\.name), ["Origin", "X-Client"])
    XCTAssertEqual(c.headers.first?.value, "https://example.com")
    XCTAssertEqual(c.subprotocols, ["chat.v2", "chat.v1"])
    XCTAssertEqual(c.rooms, ["7", "8", "9"])
    XCTAssertEqual(c.pingInterval, .milliseconds(2500))
    XCTAssertEqual(c.pongTimeout, .milliseconds(500))
    XCTAssertEqual(c.connectTimeout, .seconds(60))
    XCTAssertEqual(c.reconnectMax, .seconds(120))
    XCTAssertFalse(c.compression)
    XCTAssertEqual(c.maxMessageSize, 1 << 20)
    XCTAssertEqual(c.envelope.roomField, "channel")
    XCTAssertEqual(c.envelope.sendEvent, "post")
    XCTAssertEqual(c.sync, .always)
    XCTAssertEqual(c.maxFileSize, 1 << 30)
    XCTAssertEqual(c.maxFiles, 3)
    XCTAssertEqual(c.outboxMaxMessages, 50)
    XCTAssertEqual(c.socketMode, 0o600)
    XCTAssertEqual(c.logLevel, "debug")
  }

  func testDropInsOverrideInOrderAndEmptyAssignmentsResetLists() throws {
    let c = try load(
      "[Backend]\nURL=ws://a/\nRooms=1 2\nHeader=X-A: 1",
      "[Backend]\nURL=ws://b/\nRooms=\nRooms=3\nHeader=\n")
    XCTAssertEqual(c.url?.host, "b")
    XCTAssertEqual(c.rooms, ["3"])
    XCTAssertTrue(c.headers.isEmpty)
  }

  func testContinuationLinesJoin() throws {
    let c = try load("[Backend]\nURL=ws://a/\nRooms=1 \\\n  2 \\\n# ignored\n  3")
    XCTAssertEqual(c.rooms, ["1", "2", "3"])
  }

  /// Blanks after the backslash are trimmed first, on continuation lines as on the first.
  func testContinuationLinesMayEndInBlanksAfterTheBackslash() throws {
    let c = try load("[Backend]\nURL=ws://a/\nRooms=a \\ \n b \\\t \n c")
    XCTAssertEqual(c.rooms, ["a", "b", "c"])
  }

  /// Files written on Windows (CRLF) parse as their LF twins do, and no CR reaches a value.
  func testCRLFLineEndingsParseLikeLF() throws {
    let text = "[Backend]\nURL=ws://a/\nRooms=r1 \\\n r2\nHeader=X-A: 1\n[Store]\nSync=none\n"
    let lf = try load(text)
    let crlf = try load(text.replacingOccurrences(of: "\n", with: "\r\n"))
    XCTAssertEqual(crlf.rooms, ["r1", "r2"])
    XCTAssertEqual(crlf.rooms, lf.rooms)
    XCTAssertEqual(crlf.headers.map(\.value), ["1"])
    XCTAssertEqual(crlf.sync, lf.sync)
    XCTAssertEqual(error("[Backend]\r\nURL=ws://a/\r\nNope=1\r\n")?.line, 3)
  }

  /// What the handshake would refuse at every connect is refused when the file is read.
  func testHeadersAndSubprotocolsTheHandshakeRefusesAreConfigErrors() {
    for line in [
      "Header=Host: evil", "Header=Sec-WebSocket-Key: x", "Header=upgrade: h2c",
      "Header=X-A: a\rb", "Subprotocol=a/b", "Subprotocol=ok b@d",
    ] {
      let refused = error("[Backend]\nURL=ws://a/\n" + line)
      XCTAssertEqual(refused?.line, 3, line)
      XCTAssertTrue(refused?.message.contains("invalid request header") ?? false, line)
    }
    XCTAssertNil(error("[Backend]\nURL=ws://a/\nHeader=Origin: https://x\nSubprotocol=chat.v2"))
  }

  func testErrorsNameFileLineAndKey() {
    let unknownKey = error("[Backend]\nURL=ws://a/\nPingInterval=10")
    XCTAssertEqual(unknownKey?.file, "f0.conf")
    XCTAssertEqual(unknownKey?.line, 3)
    XCTAssertEqual(unknownKey?.key, "[Backend] PingInterval")
    XCTAssertTrue(
      unknownKey?.description.hasPrefix("f0.conf:3: [Backend] PingInterval: unknown key") ?? false)

    let badValue = error("[Backend]\nURL=ws://a/", "\n[Store]\nSync=sometimes")
    XCTAssertEqual(badValue?.file, "f1.conf")
    XCTAssertEqual(badValue?.line, 3)
    XCTAssertTrue(badValue?.message.contains("always, batch, none") ?? false)

    XCTAssertEqual(error("URL=ws://a/")?.message, "assignment outside of a [Section]")
    XCTAssertTrue(error("[Nope]\nX=1")?.message.hasPrefix("unknown section") ?? false)
    XCTAssertTrue(
      error("[Backend]\nURL=http://a/")?.message.contains("unsupported scheme") ?? false)
    let unbracketed = error("[Backend]\nURL=ws://::1:9001/")
    XCTAssertEqual(unbracketed?.line, 2)
    XCTAssertTrue(
      unbracketed?.message.contains("invalid host '::1' (an IPv6 address goes in brackets")
        ?? false,
      unbracketed?.message ?? "accepted")
    XCTAssertTrue(
      error("[Backend]\nURL=ws://a/\nPingIntervalSec=soon")?.message.contains("time span") ?? false)
    XCTAssertTrue(
      error("[Backend]\nURL=ws://a/\njust text")?.message.contains("Key=Value") ?? false)
    XCTAssertTrue(error("[Backend")?.message.contains("section header") ?? false)
    XCTAssertEqual(error("[Store]\nSync=none")?.key, "[Backend] URL")
    XCTAssertNotNil(error("[Backend]\nURL=ws://a/\nReconnectMinSec=10\nReconnectMaxSec=5"))
    XCTAssertNotNil(error("[Control]\nSocketMode=0999\n[Backend]\nURL=ws://a/"))
    XCTAssertNotNil(error("[Store]\nDirectory=relative\n[Backend]\nURL=ws://a/"))
    // One file could not carry the last seq across a rotation.
    XCTAssertTrue(
      error("[Store]\nMaxFiles=1\n[Backend]\nURL=ws://a/")?.message.contains("at least 2") ?? false)
  }

  func testSocketIOKeysAreReadAndBadOnesRefusedWithTheReason() throws {
    let c = try load(
      "[Backend]\nURL=ws://a:3000/\nProtocol=socketio\nRooms=7\n[SocketIO]\nNamespace=/chat\nAuth={\"u\":1}"
    )
    XCTAssertEqual(c.chatProtocol, .socketio)
    XCTAssertEqual(c.socketIONamespace, "/chat")
    XCTAssertEqual(c.socketIOAuth, .object([("u", .int(1))]))
    XCTAssertEqual(try load("[Backend]\nURL=ws://a/\n[SocketIO]\nAuth=").socketIOAuth, .object([]))
    for bad in ["Namespace=chat", "Namespace=/a,b", "Namespace=/a b", "Auth=[1]", "Auth={"] {
      let refused = error("[Backend]\nURL=ws://a/\n[SocketIO]\n" + bad)
      XCTAssertEqual(refused?.line, 4, bad)
      XCTAssertTrue(refused?.key?.hasPrefix("[SocketIO]") ?? false, bad)
    }
  }

  /// The token has exactly one way in: TokenFile= or a credential, never the config text.
  func testAnAuthorizationHeaderInTheConfigIsRefused() {
    let refused = error("[Backend]\nURL=ws://a/\nHeader=Authorization: Bearer s3cret")
    XCTAssertNotNil(refused)
    XCTAssertFalse(refused?.description.contains("s3cret") ?? true)
  }

  func testTheShippedConfigFileParsesAndChangesNoDefault() throws {
    let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent("config/chatlinkd.conf").path
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
      return XCTFail("config/chatlinkd.conf missing")
    }
    // Uncomment every "#Key=value" line: the result must equal the defaults.
    var uncommented = ""
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
      if line.hasPrefix("#") && line.dropFirst().first?.isLetter == true && line.contains("=") {
        uncommented += line.dropFirst() + "\n"
      } else {
        uncommented += line + "\n"
      }
    }
    var shipped = try ConfigLoader.load(sources: [("chatlinkd.conf", uncommented)])
    var defaults = Configuration()
    defaults.url = shipped.url
    shipped.url = defaults.url
    XCTAssertEqual(shipped, defaults)
  }

  func testSTOMPKeysAreReadAndBadOnesRefusedWithTheReason() throws {
    let c = try load(
      """
      [Backend]
      URL=wss://broker.example/ws
      Protocol=stomp
      Rooms=/topic/chat.7 /queue/ops /exchange/x/key
      [STOMP]
      VirtualHost=chat
      Username=bot
      HeartBeatMSec=2500
      """)
    XCTAssertEqual(c.chatProtocol, .stomp)
    XCTAssertEqual(c.rooms, ["/topic/chat.7", "/queue/ops", "/exchange/x/key"])
    XCTAssertEqual(c.stompVirtualHost, "chat")
    XCTAssertEqual(c.stompUsername, "bot")
    XCTAssertEqual(c.stompHeartBeat, .milliseconds(2500))
    let defaults = try load("[Backend]\nURL=ws://a/\n[STOMP]\nVirtualHost=\nUsername=")
    XCTAssertEqual(defaults.stompVirtualHost, "/")
    XCTAssertNil(defaults.stompUsername)
    XCTAssertEqual(defaults.stompHeartBeat, .seconds(10))
    XCTAssertEqual(
      try load("[Backend]\nURL=ws://a/\n[STOMP]\nHeartBeatMSec=0").stompHeartBeat, .zero)
    for bad in [
      "HeartBeatMSec=50", "HeartBeatMSec=-1", "HeartBeatMSec=3600001", "HeartBeatMSec=1s",
    ] {
      let refused = error("[Backend]\nURL=ws://a/\n[STOMP]\n" + bad)
      XCTAssertEqual(refused?.line, 4, bad)
      XCTAssertEqual(refused?.key, "[STOMP] HeartBeatMSec", bad)
      XCTAssertTrue(refused?.message.contains("100 to 3600000 ms") ?? false, bad)
    }
    XCTAssertEqual(error("[Backend]\nURL=ws://a/\n[STOMP]\nVirtualHost=a\u{7F}")?.line, 4)
    XCTAssertTrue(
      error("[Backend]\nURL=ws://a/\nProtocol=raw\nRooms=/queue/a")?.message.contains(
        "mqtt, stomp or xmpp") ?? false)
  }

  func testTheCatchUpAndDedupeKeysParseAndBadValuesAreRefusedWithTheirLine() throws {
    let c = try load(
      """
      [Backend]
      URL=ws://a/
      [Envelope]
      IDField=msg_id
      SinceField=since
      TruncatedEvent=gap
      [STOMP]
      IDHeader=amqp-message-id
      [Store]
      DedupeWindow=0
      DedupeSnapshotSec=5
      """)
    XCTAssertEqual(c.envelope.idField, "msg_id")
    XCTAssertEqual(c.envelope.sinceField, "since")
    XCTAssertEqual(c.envelope.truncatedEvent, "gap")
    XCTAssertEqual(c.stompIDHeader, "amqp-message-id")
    XCTAssertEqual(c.dedupeWindow, 0)
    XCTAssertEqual(c.dedupeSnapshotInterval, .seconds(5))
    XCTAssertEqual(MessageStore.Options(c).dedupeSnapshotInterval, .seconds(5))
    let defaults = try load("[Backend]\nURL=ws://a/")
    XCTAssertEqual(defaults.dedupeWindow, 10_000)
    XCTAssertEqual(defaults.dedupeSnapshotInterval, .seconds(60))
    XCTAssertEqual(defaults.envelope.idField, "")
    XCTAssertEqual(defaults.envelope.truncatedEvent, "history-truncated")
    for bad in ["DedupeWindow=-1", "DedupeWindow=abc", "DedupeWindow=1000001", "DedupeWindow="] {
      let refused = error("[Backend]\nURL=ws://a/\n[Store]\n" + bad)
      XCTAssertEqual(refused?.line, 4, bad)
      XCTAssertEqual(refused?.key, "[Store] DedupeWindow", bad)
      XCTAssertTrue(refused?.message.contains("0 to 1000000") ?? false, bad)
    }
    for bad in ["DedupeSnapshotSec=-1", "DedupeSnapshotSec=1m", "DedupeSnapshotSec=86401"] {
      let refused = error("[Backend]\nURL=ws://a/\n[Store]\n" + bad)
      XCTAssertEqual(refused?.key, "[Store] DedupeSnapshotSec", bad)
      XCTAssertTrue(refused?.message.contains("0 to 86400") ?? false, bad)
    }
    let header = error("[Backend]\nURL=ws://a/\n[STOMP]\nIDHeader=a b")
    XCTAssertEqual(header?.key, "[STOMP] IDHeader")
    for kept in ["destination", "content-length"] {
      let refused = error("[Backend]\nURL=ws://a/\n[STOMP]\nIDHeader=" + kept)
      XCTAssertEqual(refused?.key, "[STOMP] IDHeader", kept)
      XCTAssertTrue(refused?.message.contains("not kept as a header") ?? false, kept)
    }
    XCTAssertEqual(error("[Backend]\nURL=ws://a/\n[Envelope]\nTruncatedEvent=")?.line, 4)
  }
}
