import ChatLinkCore
import Foundation
import WebSocket
import XCTest

final class ProtocolTests: XCTestCase {
  func testStatusLineReadsLikeSystemdStatus() {
    var line = StatusLine(
      state: .open, url: "wss://chat.example/ws", rooms: 3, received: 120, confirmed: 4, outbox: 0,
      lastError: nil, storeError: nil)
    XCTAssertEqual(
      line.text, "Connected to wss://chat.example/ws (3 rooms) · 120 in, 4 out · outbox 0")
    line.state = .waiting(.seconds(2.5))
    line.lastError = "HTTP 503"
    line.rooms = 1
    XCTAssertEqual(
      line.text,
      "Reconnecting to wss://chat.example/ws in 2.5 s (1 room) · 120 in, 4 out · outbox 0 · last error: HTTP 503"
    )
    line.storeError = "No space left on device"
    XCTAssertTrue(line.text.contains("STORE DEGRADED: No space left on device"))
  }

  func testTokenComesFromTheCredentialFirstAndNeverFromAnEmptyFile() throws {
    let dir = TemporaryDirectory()
    dir.write("token", "  s3cret-token\n")
    dir.write("empty", "\n")
    XCTAssertEqual(
      try TokenSource.read(tokenFile: dir.path + "/token", credentialsDirectory: nil),
      "s3cret-token")
    let credentials = TemporaryDirectory()
    credentials.write("token", "from-credential")
    XCTAssertEqual(
      try TokenSource.read(tokenFile: dir.path + "/token", credentialsDirectory: credentials.path),
      "from-credential")
    XCTAssertNil(try TokenSource.read(tokenFile: nil, credentialsDirectory: nil))
    XCTAssertThrowsError(
      try TokenSource.read(tokenFile: dir.path + "/empty", credentialsDirectory: nil))
    XCTAssertThrowsError(
      try TokenSource.read(tokenFile: dir.path + "/missing", credentialsDirectory: nil)
    ) { error in
      XCTAssertTrue("\(error)".contains("/missing"))
    }
    dir.write("spaces", "two words")
    XCTAssertThrowsError(
      try TokenSource.read(tokenFile: dir.path + "/spaces", credentialsDirectory: nil)
    ) { error in
      XCTAssertFalse("\(error)".contains("two words"))
    }
  }
}
