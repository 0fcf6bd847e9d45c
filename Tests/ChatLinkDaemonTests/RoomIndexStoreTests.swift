import EventLoop
import Foundation
@preconcurrency import Glibc
import LinkCore
import TestSupport
import WebSocket
import XCTest

@testable import ChatLinkDaemon

/// Room indexes as the store writes them and History reads them: every query gives exactly
/// what a scan without index gives, whatever happened to the index files.
final class RoomIndexStoreTests: XCTestCase {
  private var loop: EventLoop!
  private var disk: BackgroundWorker!
  private let dir = TemporaryDirectory()
  private let maxFiles = 12

  override func setUpWithError() throws {
    loop = try EventLoop()
    disk = try BackgroundWorker(loop: loop, name: "test-disk")
  }

  private var indexDirectory: String { dir.path + "/.index" }
  private var paths: [String] {
    (0..<maxFiles).map { dir.path + "/messages.jsonl" + ($0 == 0 ? "" : ".\($0)") }
  }

  private func open(maxFileSize: Int = 256 << 10) throws -> MessageStore {
    try MessageStore(
      loop: loop, disk: disk,
      options: MessageStore.Options(
        directory: dir.path, sync: .batch, syncInterval: .milliseconds(5), maxFileSize: maxFileSize,
        maxFiles: maxFiles))
  }

  /// The room of the n-th record: rooms 1…5 take turns, "rare" is every 400th, and every
  /// 97th has no room.
  private func room(_ n: Int) -> String? {
    if n % 400 == 7 { return "\"rare\"" }
    if n % 97 == 0 { return nil }
    return String(n % 5 + 1)
  }

  /// Appends records `range` (each about 150 bytes) and waits until they are durable.
  private func append(_ store: MessageStore, _ range: ClosedRange<Int>, room: (Int) -> String?)
    throws
  {
    let filler = String(repeating: "x", count: 90)
    for n in range {
      store.append(
        direction: .inbound, room: room(n).map { Array($0.utf8) },
        payload: .text(Array("{\"n\":\(n),\"text\":\"\(filler)\"}".utf8)))
      if n % 500 == 0 { try drain(store) }
    }
    try drain(store)
  }

  private func drain(_ store: MessageStore) throws {
    var done = false
    store.whenDurable { done = true }
    try spin(loop) { done }
  }

  private func query(
    _ room: String?, limit: Int = 100, sinceSeq: UInt64? = nil, indexed: Bool = true
  )
    throws -> [UInt64]
  {
    let result = HistoryReader.read(
      paths: paths,
      query: HistoryQuery(room: room.flatMap { RoomID($0) }, sinceSeq: sinceSeq, limit: limit),
      indexDirectory: indexed ? indexDirectory : nil)
    return try result.get().map { line in line.withUnsafeBytes { StoreRecord.seq(ofLine: $0) ?? 0 }
    }
  }

  /// Every query the tests care about, with and without the index: the same answers.
  private func assertIndexedQueriesMatchScans(
    _ message: String = "", file: StaticString = #filePath, line: UInt = #line
  ) throws {
    for (room, limit, since) in [
      ("rare", 100, nil), ("rare", 3, nil), ("3", 100, nil), ("3", 5000, nil),
      ("rare", 100, UInt64(2000)), ("nobody", 10, nil), ("1", 1, nil),
    ] as [(String, Int, UInt64?)] {
      let indexed = try query(room, limit: limit, sinceSeq: since)
      let scanned = try query(room, limit: limit, sinceSeq: since, indexed: false)
      XCTAssertEqual(
        indexed, scanned, "\(message) room \(room) limit \(limit)", file: file, line: line)
    }
  }

  private func indexFiles() -> [String] {
    FileSystem.list(indexDirectory).sorted()
  }

  func testARareRoomQueryFindsEveryRecordThroughTheIndex() throws {
    let store = try open()
    try append(store, 1...12_000, room: room)
    let expected = (1...12_000).filter { $0 % 400 == 7 }.suffix(100).map(UInt64.init)
    XCTAssertEqual(try query("rare"), Array(expected))
    try assertIndexedQueriesMatchScans()
    // One index per store file, named after its first seq; none for files rotated away.
    let names = indexFiles()
    let existing = paths.filter { FileSystem.exists($0) }
    XCTAssertEqual(names.count, existing.count, "\(names)")
    XCTAssertTrue(names.allSatisfy { RoomIndex.firstSeq(ofFileName: $0) != nil }, "\(names)")
  }

  func testTheIndexLetsARareRoomQuerySkipMostOfTheStore() throws {
    let store = try open()
    try append(store, 1...12_000) { $0 % 3_000 == 1 ? "\"rare\"" : String($0 % 5) }
    // The rotated files' indexes cover them to the end; a query reads only blocks that hold
    // the room: far fewer than all of them.
    var blocks = 0
    var hits = 0
    for path in paths.dropFirst() where FileSystem.exists(path) {
      let fd = Glibc.open(path, O_RDONLY)
      defer { Glibc.close(fd) }
      let size = FileSystem.size(path) ?? 0
      let segments = try XCTUnwrap(
        RoomIndexFiles.segments(fd: fd, size: size, rotated: true, directory: indexDirectory))
      for segment in segments {
        guard case .block(let entry) = segment else {
          return XCTFail("a rotated file has an unindexed part: \(segment)")
        }
        blocks += 1
        if entry.mayContain(room: RoomIndex.roomHash(Array("\"rare\"".utf8))) { hits += 1 }
      }
    }
    XCTAssertGreaterThan(blocks, 20)
    XCTAssertLessThanOrEqual(hits, 4, "one block per rare record at most")
    XCTAssertEqual(try query("rare"), [1, 3_001, 6_001, 9_001])
  }

  func testARotatedFileWithoutAnIndexIsIndexedByTheFirstQueryThatNeedsIt() throws {
    let store = try open()
    try append(store, 1...8_000, room: room)
    for name in indexFiles() { unlink(indexDirectory + "/" + name) }
    try assertIndexedQueriesMatchScans("no index at all")
    let rotated = paths.dropFirst().filter { FileSystem.exists($0) }.count
    XCTAssertEqual(indexFiles().count, rotated, "each rotated file got its index back")
    XCTAssertFalse(indexFiles().contains { $0.hasSuffix(".tmp") })
    try assertIndexedQueriesMatchScans("rebuilt index")
  }

  func testAnIndexLeftFromADeletedStoreIsNeverTakenForTheNewOne() throws {
    var store: MessageStore? = try open()
    try append(store!, 1...3_000, room: room)
    store = nil
    // The user deletes the store but not .index/; the new store starts again at seq 1 with
    // other rooms: the old indexes say nothing about "rare" being there.
    for path in paths { unlink(path) }
    store = try open()
    try append(store!, 1...3_000) { $0 % 50 == 0 ? "\"rare\"" : "9" }
    XCTAssertEqual(
      try query("rare"), (1...3_000).filter { $0 % 50 == 0 }.suffix(100).map(UInt64.init))
    try assertIndexedQueriesMatchScans()
  }

  func testIndexEntriesForBytesLostInACrashAreNotUsedForTheLinesWrittenThere() throws {
    var store: MessageStore? = try open()
    try append(store!, 1...1_000, room: { _ in "1" })
    store = nil
    // A power cut keeps the index but loses the file's last 100 KiB (the index is written
    // before the fsync of what it describes), then the daemon writes other rooms there.
    let live = paths[0]
    let size = try XCTUnwrap(FileSystem.size(live))
    var keep = size - 100_000
    let bytes = Array(try FileSystem.read(live)[..<keep])
    keep = (bytes.lastIndex(of: 0x0A) ?? 0) + 1
    XCTAssertEqual(truncate(live, off_t(keep)), 0)
    store = try open()
    let resumed = store!.lastSeq
    try append(store!, 1...700, room: { _ in "\"rare\"" })
    XCTAssertFalse(FileSystem.exists(paths[1]), "all in one file, which the test needs")
    XCTAssertEqual(try query("rare", limit: 1000).count, 700)
    XCTAssertEqual(try query("rare", limit: 1).first, resumed + 700)
    try assertIndexedQueriesMatchScans()
  }

  func testAnIndexThatDoesNotMatchItsFileFallsBackToAScan() throws {
    let store = try open()
    try append(store, 1...8_000, room: room)
    // Shift every entry of every index by one line: the block reads no longer land on the
    // lines the index names, which the reader notices.
    for name in indexFiles() {
      let path = indexDirectory + "/" + name
      let parsed = try XCTUnwrap(RoomIndex.parse(try FileSystem.read(path)))
      var bytes = RoomIndex.header(for: parsed.identity)
      for var entry in parsed.entries {
        entry.lastSeq += 1
        RoomIndex.encode(entry, to: &bytes)
      }
      XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
    }
    try assertIndexedQueriesMatchScans("shifted indexes")
  }

  func testGarbageIndexFilesAreIgnored() throws {
    let store = try open()
    try append(store, 1...6_000, room: room)
    for (i, name) in indexFiles().enumerated() {
      let path = indexDirectory + "/" + name
      var bytes = try FileSystem.read(path)
      switch i % 3 {
      case 0: bytes = Array("not an index".utf8)
      case 1: bytes = Array(bytes[..<(bytes.count / 2)])
      default: bytes[bytes.count / 2] ^= 0xFF
      }
      XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
    }
    try assertIndexedQueriesMatchScans("damaged indexes")
  }

  func testTheLiveFilesIndexSurvivesARestartAndTheTailIsStillFound() throws {
    var store: MessageStore? = try open()
    try append(store!, 1...1_000, room: room)
    store = nil
    store = try open()
    try append(store!, 1_001...1_300) { $0 % 2 == 0 ? "\"rare\"" : "2" }
    try assertIndexedQueriesMatchScans()
    XCTAssertEqual(try query("rare", limit: 150).count, 150)
    XCTAssertEqual(try query("rare", limit: 1), [1_300])
  }

  func testALiveFileWrittenBeforeIndexesExistedIsIndexedAtStartOffTheLoop() throws {
    var store: MessageStore? = try open()
    try append(store!, 1...1_000, room: room)
    store = nil
    for name in indexFiles() { unlink(indexDirectory + "/" + name) }
    store = try open()
    // A write job after the start job: the index is there by now.
    try append(store!, 1_001...1_001, room: room)
    let size = try XCTUnwrap(FileSystem.size(paths[0]))
    let fd = Glibc.open(paths[0], O_RDONLY)
    defer { Glibc.close(fd) }
    let segments = try XCTUnwrap(
      RoomIndexFiles.segments(fd: fd, size: size, rotated: false, directory: indexDirectory))
    let gaps = segments.filter { if case .unindexed = $0 { true } else { false } }
    XCTAssertEqual(gaps.count, 1, "only the last, partial block: \(segments)")
    if case .unindexed(let start, let end) = gaps.first {
      XCTAssertLessThan(end - start, RoomIndex.blockTarget, "\(segments)")
    }
    XCTAssertGreaterThan(segments.count, 2)
    try assertIndexedQueriesMatchScans()
  }

  func testLinesLongerThanTheReadBufferAreIndexedWhole() throws {
    let store = try open(maxFileSize: 64 << 20)
    let long = String(repeating: "y", count: 3 << 20)
    store.append(direction: .inbound, room: Array("5".utf8), payload: .text(Array("short".utf8)))
    store.append(
      direction: .inbound, room: Array("\"rare\"".utf8),
      payload: .text(Array("{\"big\":\"\(long)\"}".utf8)))
    store.append(direction: .inbound, room: Array("5".utf8), payload: .text(Array("short".utf8)))
    try drain(store)
    let fd = Glibc.open(paths[0], O_RDONLY)
    defer { Glibc.close(fd) }
    let size = try XCTUnwrap(FileSystem.size(paths[0]))
    let entries = RoomIndexFiles.build(fd: fd, size: size)
    XCTAssertEqual(entries.map(\.end).last, size)
    XCTAssertEqual(entries.first?.firstSeq, 1)
    XCTAssertTrue(
      entries.contains { $0.mayContain(room: RoomIndex.roomHash(Array("\"rare\"".utf8))) })
    XCTAssertEqual(try query("rare"), [2])
  }

  func testIndexFilesAreNotReadableByOthers() throws {
    let store = try open()
    try append(store, 1...2_000, room: room)
    for name in indexFiles() {
      var info = stat()
      stat(indexDirectory + "/" + name, &info)
      XCTAssertEqual(info.st_mode & 0o007, 0, name)
    }
  }

  /// The unindexed parts of the store file at `path`, as History sees them; nil when it does
  /// not use the index for it at all.
  private func gaps(_ path: String, rotated: Bool) throws -> Int? {
    let fd = Glibc.open(path, O_RDONLY)
    defer { Glibc.close(fd) }
    let size = try XCTUnwrap(FileSystem.size(path))
    return RoomIndexFiles.segments(
      fd: fd, size: size, rotated: rotated, directory: indexDirectory
    )?.filter { if case .unindexed = $0 { true } else { false } }.count
  }

  /// Every index file damaged while the daemon was down, in each way a crash, a disk or a hand
  /// can damage it: the store starts, History answers every query as a scan does, no record is
  /// lost, and the indexes are whole again (the live one at start, a rotated one at the first
  /// query that needs it) once they can be written.
  func testIndexesDamagedWhileStoppedAreRebuiltAndHistoryStaysRight() throws {
    var store: MessageStore? = try open()
    var last = 4_000
    try append(store!, 1...last, room: room)
    for damage in ["garbage", "cut", "flipped", "empty", "zeros", "swapped", "directory"] {
      store = nil
      let names = indexFiles()
      XCTAssertGreaterThan(names.count, 2, damage)
      let contents = try names.map { try FileSystem.read(indexDirectory + "/" + $0) }
      for (i, name) in names.enumerated() {
        let path = indexDirectory + "/" + name
        var bytes = contents[i]
        switch damage {
        case "garbage": bytes = Array("not an index".utf8)
        case "cut": bytes = Array(bytes[..<(bytes.count * 2 / 3)])
        case "flipped": bytes[bytes.count / 2] ^= 0xFF
        case "empty": bytes = []
        case "zeros": bytes = [UInt8](repeating: 0, count: bytes.count)
        case "swapped": bytes = contents[(i + 1) % names.count]
        default:
          unlink(path)
          XCTAssertEqual(mkdir(path, 0o750), 0)
          continue
        }
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
      }
      store = try open()
      try append(store!, (last + 1)...(last + 200), room: room)
      last += 200
      try assertIndexedQueriesMatchScans(damage)
      let rare = (1...last).filter { $0 % 400 == 7 }.map(UInt64.init)
      XCTAssertEqual(
        try query("rare", limit: 1_000), rare, "every record is still found: \(damage)")
      let rotated = paths.dropFirst().filter { FileSystem.exists($0) }
      if damage == "directory" {
        // No index can be written in its place: those files are scanned, answers stay right.
        for name in indexFiles() { rmdir(indexDirectory + "/" + name) }
        continue
      }
      XCTAssertLessThanOrEqual(try gaps(paths[0], rotated: false) ?? 99, 1, "live file: \(damage)")
      for path in rotated {
        XCTAssertEqual(try gaps(path, rotated: true), 0, "\(path): \(damage)")
      }
    }
    // With the directories gone, the next start indexes the live file again.
    store = nil
    store = try open()
    try append(store!, (last + 1)...(last + 10), room: room)
    XCTAssertLessThanOrEqual(try gaps(paths[0], rotated: false) ?? 99, 1)
    try assertIndexedQueriesMatchScans("after the directories")
  }
}
