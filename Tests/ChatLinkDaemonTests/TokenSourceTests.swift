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

  /// Every kind of bad token file, and a bad credential (never passed over for TokenFile=), is
  /// refused with its path and the reason, and never with what it holds.
  func testEveryBadTokenFileIsRefusedNamingThePathAndWhyButNotTheContent() throws {
    let dir = TemporaryDirectory()
    let secret = Array("s3cret-part".utf8)
    let cases: [(name: String, bytes: [UInt8]?, reason: String)] = [
      ("empty", [], "the file is empty"),
      ("blank", Array(" \t\n\r\n\n".utf8), "the file is empty"),
      ("huge", secret + Array(repeating: 0x61, count: 64 * 1024), "File too large"),
      ("binary", secret + [0xFF, 0xFE, 0x80], "the token contains spaces or non-ASCII characters"),
      ("nul", secret + [0] + secret, "the token contains spaces or non-ASCII characters"),
      (
        "spaces", secret + Array(" and more".utf8),
        "the token contains spaces or non-ASCII characters"
      ),
      ("directory", nil, "Is a directory"),
      ("missing", nil, "No such file or directory"),
    ]
    for (name, bytes, reason) in cases {
      let path = dir.file(name)
      if let bytes {
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
      } else if name == "directory" {
        XCTAssertEqual(mkdir(path, 0o700), 0)
      }
      XCTAssertThrowsError(try TokenSource.read(tokenFile: path, credentialsDirectory: nil)) {
        let text = "\($0)"
        XCTAssertEqual(text, "cannot read the token from \(path): \(reason)", name)
        XCTAssertFalse(text.contains("s3cret") || text.contains("aaaa"), name)
      }
    }
    // A file written on Windows is no bad file: its CRLF is a line end, as LF is.
    dir.write("crlf", "crlf-token\r\n")
    XCTAssertEqual(
      try TokenSource.read(tokenFile: dir.file("crlf"), credentialsDirectory: nil), "crlf-token")
    // A credential that is there but bad is refused by its own path: the token file, good as
    // it is, is not used instead.
    let credentials = TemporaryDirectory()
    credentials.write("token", "\n")
    dir.write("good", "good-token\n")
    XCTAssertThrowsError(
      try TokenSource.read(tokenFile: dir.file("good"), credentialsDirectory: credentials.path)
    ) {
      XCTAssertEqual(
        "\($0)", "cannot read the token from \(credentials.path)/token: the file is empty")
    }
  }
}
