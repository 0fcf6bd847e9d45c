import ChatLinkAPI
import XCTest

final class InstanceTests: XCTestCase {
  private func refusal(_ name: String) -> String? {
    do {
      _ = try Instance(name)
      return nil
    } catch {
      return error.description
    }
  }

  func testAnInstanceDerivesItsConfigStoreSocketAndUnitFromItsName() throws {
    let prod = try Instance("prod")
    XCTAssertEqual(prod.configPath, "/etc/chatlink/prod.conf")
    XCTAssertEqual(prod.storeDirectory, "/var/lib/chatlink/prod")
    XCTAssertEqual(prod.controlSocket, "/run/chatlink/prod.sock")
    XCTAssertEqual(prod.unitName, "chatlinkd@prod.service")
  }

  func testNamesSystemdLeavesAsTheyAreAreAccepted() throws {
    for name in [
      "a", "prod", "Staging_2", "eu.west", "host:9001", String(repeating: "x", count: 64),
    ] {
      XCTAssertEqual(try Instance(name).name, name)
    }
  }

  func testNamesThatEscapeTheDirectoryOrThatSystemdWouldEscapeAreRefusedClearly() {
    XCTAssertEqual(refusal(""), "the instance name is empty")
    XCTAssertEqual(
      refusal("../x"),
      "invalid instance name '../x': '/' is not allowed; use letters, digits, '_', '.' and ':' "
        + "(systemd would escape anything else in a unit name)")
    for name in ["prod-eu", "a b", "a/b", "ü", "a\\x2d", "x@y", "new\nline"] {
      XCTAssertNotNil(refusal(name), name)
    }
    XCTAssertEqual(
      refusal("new\nline")?.contains("a control character is not allowed"), true,
      refusal("new\nline") ?? "")
    XCTAssertEqual(
      refusal(".hidden"), "invalid instance name '.hidden': it must not start with '.'")
    XCTAssertEqual(
      refusal(String(repeating: "x", count: 65))?.hasSuffix("longer than 64 characters"), true)
  }

  func testNamesThatWouldMeetThePlainServicesFilesAreReserved() {
    for name in ["chatlinkd", "control"] {
      XCTAssertEqual(
        refusal(name),
        "invalid instance name '\(name)': reserved: chatlinkd.service uses chatlinkd.conf and "
          + "control.sock")
    }
  }
}
