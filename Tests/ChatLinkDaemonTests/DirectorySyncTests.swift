import EventLoop
@preconcurrency import Glibc
import TestSupport
import XCTest

@testable import ChatLinkDaemon

/// The directory fsyncs that make creates and renames survive a power cut. What they prevent is
/// only visible after a simulated power cut (Tests/powerloss/powercut.py, run by
/// Tests/integration/test_powerloss.py); these are the paths a test can reach without one.
final class DirectorySyncTests: XCTestCase {
  private let dir = TemporaryDirectory()

  func testSyncingAnExistingDirectorySucceeds() throws {
    XCTAssertNoThrow(try FileSystem.syncDirectory(dir.path, for: .create))
  }

  func testSyncingAMissingDirectoryFailsNamingIt() {
    let missing = dir.path + "/nowhere"
    XCTAssertThrowsError(try FileSystem.syncDirectory(missing, for: .rotate)) { error in
      XCTAssertTrue("\(error)".contains(missing), "\(error)")
    }
  }

  func testSyncingAFileAsADirectoryFails() {
    dir.write("plain", "x")
    XCTAssertThrowsError(try FileSystem.syncDirectory(dir.path + "/plain", for: .compact))
  }

  func testTheParentOfAPathIsTheDirectoryThatHoldsIt() {
    XCTAssertEqual(FileSystem.parent(of: "/var/lib/chatlink/messages.jsonl"), "/var/lib/chatlink")
    XCTAssertEqual(FileSystem.parent(of: "/messages.jsonl"), "/")
    XCTAssertEqual(FileSystem.parent(of: "messages.jsonl"), ".")
    XCTAssertEqual(FileSystem.parent(of: "state/outbox.jsonl"), "state")
  }

  func testMakeDirectoriesCreatesEveryMissingLevelAndAcceptsExistingOnes() throws {
    let deep = dir.path + "/a/b/c"
    try FileSystem.makeDirectories(deep)
    XCTAssertTrue(FileSystem.isDirectory(deep))
    XCTAssertNoThrow(try FileSystem.makeDirectories(deep), "a second call changes nothing")
  }

  func testMakeDirectoriesFailsClearlyWhenAFileIsInTheWay() {
    dir.write("file", "x")
    XCTAssertThrowsError(try FileSystem.makeDirectories(dir.path + "/file/below")) { error in
      XCTAssertTrue("\(error)".contains("mkdir"), "\(error)")
    }
    XCTAssertEqual(dir.read("file"), "x", "the file in the way is untouched")
  }

  func testAnAppendFileCreatesAMissingFileEmpty() throws {
    let file = try AppendFile(path: dir.path + "/new.jsonl")
    XCTAssertEqual(file.size, 0)
    XCTAssertTrue(FileSystem.exists(dir.path + "/new.jsonl"))
  }

  func testAnAppendFileOpensAnExistingFileKeepingItsContent() throws {
    dir.write("old.jsonl", "line 1\n")
    let file = try AppendFile(path: dir.path + "/old.jsonl")
    XCTAssertEqual(file.size, 7)
    try file.append(Array("line 2\n".utf8))
    XCTAssertEqual(dir.read("old.jsonl"), "line 1\nline 2\n")
  }

  func testAnAppendFileInAMissingDirectoryFailsWithoutCreatingAnything() {
    XCTAssertThrowsError(try AppendFile(path: dir.path + "/missing/x.jsonl"))
    XCTAssertFalse(FileSystem.exists(dir.path + "/missing"))
  }

  #if DEBUG
    func testTheDebugSwitchNamesTheDirectorySyncsToSkip() {
      XCTAssertEqual(FileSystem.skippedDirectorySyncs(nil), [])
      XCTAssertEqual(FileSystem.skippedDirectorySyncs(""), [])
      XCTAssertEqual(
        FileSystem.skippedDirectorySyncs("all"), Set(FileSystem.DirectorySyncReason.allCases))
      XCTAssertEqual(FileSystem.skippedDirectorySyncs("rotate,compact"), [.rotate, .compact])
      XCTAssertEqual(
        FileSystem.skippedDirectorySyncs("1,bogus,mkdir"), [.mkdir], "unknown words skip nothing")
    }

    func testTheDebugSwitchIsOffInTheTestRun() {
      XCTAssertEqual(FileSystem.skippedDirectorySyncs, [], "no test may run with syncs skipped")
    }
  #endif
}
