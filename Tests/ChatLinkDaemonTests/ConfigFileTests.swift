import ChatLinkDaemon
import Foundation
import TestSupport
import XCTest

/// chatlinkd.conf and its drop-ins as `ConfigLoader.load(path:)` reads them from disk: a bad
/// drop-in is an error that names it (and its line), whatever is wrong with it, and nothing
/// else in the directory is read.
final class ConfigFileTests: XCTestCase {
  private let dir = TemporaryDirectory()
  private var main: String { dir.file("chatlinkd.conf") }
  private var dropIns: String { main + ".d" }

  override func setUp() {
    dir.write("chatlinkd.conf", "[Backend]\nURL=ws://a/\nRooms=1\n")
    XCTAssertEqual(mkdir(dropIns, 0o755), 0)
  }

  private func write(_ name: String, _ bytes: [UInt8]) {
    XCTAssertTrue(
      FileManager.default.createFile(atPath: dropIns + "/" + name, contents: Data(bytes)))
  }

  private func loadError() -> ConfigError? {
    do {
      _ = try ConfigLoader.load(path: main)
      return nil
    } catch {
      return error
    }
  }

  func testADropInWithBadSyntaxIsAnErrorNamingItsFileAndLine() {
    write("10-good.conf", Array("[Backend]\nRooms=2\n".utf8))
    for (text, line, message) in [
      ("[Backend]\nRooms=3\njust words\n", 3, "expected Key=Value, found 'just words'"),
      ("# comment\n[Backend\nRooms=3\n", 2, "invalid section header '[Backend'"),
      ("Rooms=3\n", 1, "assignment outside of a [Section]"),
      ("[Backend]\n\nNoSuchKey=1\n", 3, "unknown key"),
      ("[Nope]\nX=1\n", 2, "unknown section [Nope]"),
      ("[Backend]\nPingIntervalSec=soon\n", 2, "'soon' is not a time span"),
      ("[Backend]\r\nRooms=a \\\r\n b\r\nPongTimeoutSec=-1\r\n", 4, "is not a time span"),
    ] {
      write("20-bad.conf", Array(text.utf8))
      let error = loadError()
      XCTAssertEqual(error?.file, dropIns + "/20-bad.conf", text)
      XCTAssertEqual(error?.line, line, text)
      XCTAssertTrue(
        error?.message.contains(message) ?? false, "\(text): \(String(describing: error))")
    }
  }

  func testADropInThatIsNotTextOrNotAFileIsAnErrorNamingIt() throws {
    // Bytes that are not UTF-8 read as U+FFFD, which is no key.
    write(
      "20-binary.conf",
      [0x5B, 0x42, 0x61, 0x63, 0x6B, 0x65, 0x6E, 0x64, 0x5D, 0x0A, 0xFF, 0x00, 0x3D])
    XCTAssertEqual(loadError()?.file, dropIns + "/20-binary.conf")
    XCTAssertEqual(loadError()?.line, 2)
    XCTAssertTrue(
      loadError()?.message.hasPrefix("invalid key") ?? false, "\(String(describing: loadError()))")
    unlink(dropIns + "/20-binary.conf")

    XCTAssertEqual(mkdir(dropIns + "/30-directory.conf", 0o755), 0)
    XCTAssertEqual(
      loadError()?.description, dropIns + "/30-directory.conf: cannot read: Is a directory")
    rmdir(dropIns + "/30-directory.conf")

    XCTAssertEqual(symlink(dir.file("nowhere"), dropIns + "/40-dangling.conf"), 0)
    XCTAssertEqual(
      loadError()?.description,
      dropIns + "/40-dangling.conf: cannot read: No such file or directory")
    unlink(dropIns + "/40-dangling.conf")

    write("50-huge.conf", Array(repeating: UInt8(ascii: "#"), count: (1 << 20) + 1))
    XCTAssertEqual(loadError()?.description, dropIns + "/50-huge.conf: cannot read: File too large")
    unlink(dropIns + "/50-huge.conf")

    XCTAssertNil(loadError(), "with the bad drop-ins gone, the files load again")
  }

  func testOnlyFilesEndingInConfAreReadAndTheyOverrideInNameOrder() throws {
    write("b.conf", Array("[Backend]\nRooms=\nRooms=b\n".utf8))
    write("a.conf", Array("[Backend]\nRooms=a\n".utf8))
    // Editor leftovers, a disabled drop-in and garbage are not drop-ins.
    write("b.conf~", Array("garbage".utf8))
    write(".b.conf.swp", [0xFF, 0x00])
    write("c.conf.disabled", Array("[Backend]\nRooms=never\n".utf8))
    write("README", Array("not a drop-in".utf8))
    let configuration = try ConfigLoader.load(path: main)
    XCTAssertEqual(configuration.rooms, ["b"])
  }
}
