import ChatLinkDaemon
import Foundation
import TestSupport
import WebSocket
import XCTest

final class TokenSourceTests: XCTestCase {
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
