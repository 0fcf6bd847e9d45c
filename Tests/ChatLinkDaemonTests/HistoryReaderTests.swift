import ChatLinkDaemon
import EventLoop
import Foundation
import JSON
import LinkCore
import TestSupport
import WebSocket
import XCTest

final class HistoryReaderTests: XCTestCase {
  private let dir = TemporaryDirectory()

  /// Writes `count` records with rooms cycling through 1, 2, "ops", split over files.
  private func populate(count: Int, perFile: Int) -> [String] {
    var files: [[UInt8]] = []
    var current: [UInt8] = []
    for seq in 1...count {
      let room = ["1", "2", "\"ops\""][seq % 3]
      let record = StoreRecord(
        seq: UInt64(seq), time: Timestamp(microseconds: Int64(seq) * 1_000_000),
        direction: .inbound,
        room: Array(room.utf8), payload: .text(Array("{\"n\":\(seq)}".utf8)))
      record.appendLine(to: &current)
      if seq % perFile == 0 {
        files.append(current)
        current = []
      }
    }
    files.append(current)
    var paths: [String] = []
    for (generation, content) in files.reversed().enumerated() {
      let path = dir.path + "/messages.jsonl" + (generation == 0 ? "" : ".\(generation)")
      _ = FileManager.default.createFile(atPath: path, contents: Data(content))
      paths.append(path)
    }
    return paths
  }

  private func seqs(_ result: Result<[[UInt8]], SystemError>) throws -> [UInt64] {
    try result.get().map { line in line.withUnsafeBytes { StoreRecord.seq(ofLine: $0) ?? 0 } }
  }

  func testReturnsTheNewestRecordsOldestFirstAcrossRotatedFiles() throws {
    let paths = populate(count: 1000, perFile: 300)
    XCTAssertEqual(
      try seqs(HistoryReader.read(paths: paths, query: HistoryQuery(limit: 5))),
      [996, 997, 998, 999, 1000])
    XCTAssertEqual(
      try seqs(HistoryReader.read(paths: paths, query: HistoryQuery(limit: 1000))),
      Array(1...1000).map(UInt64.init))
  }

  func testAFileMetAgainUnderTheNextNameIsReadOnce() throws {
    // A rotation during a query renames the live file to .1 after it was read: the reader
    // then finds the same file (the same inode) again. A hard link is that moment, frozen.
    let paths = populate(count: 100, perFile: 60)
    XCTAssertEqual(link(paths[0], dir.path + "/messages.jsonl.again"), 0)
    let read = [paths[0], dir.path + "/messages.jsonl.again", paths[1]]
    XCTAssertEqual(
      try seqs(HistoryReader.read(paths: read, query: HistoryQuery(limit: 1000))),
      Array(1...100).map(UInt64.init))
    XCTAssertEqual(
      try seqs(
        HistoryReader.read(
          paths: read, query: HistoryQuery(room: RoomID("ops"), limit: 1000),
          indexDirectory: dir.path + "/.index")),
      (1...100).filter { $0 % 3 == 2 }.map(UInt64.init))
  }

  func testFiltersByRoomNumberOrString() throws {
    let paths = populate(count: 100, perFile: 40)
    XCTAssertEqual(
      try seqs(HistoryReader.read(paths: paths, query: HistoryQuery(room: RoomID("2"), limit: 3))),
      [94, 97, 100])
    XCTAssertEqual(
      try seqs(
        HistoryReader.read(paths: paths, query: HistoryQuery(room: RoomID("ops"), limit: 2))),
      [95, 98])
    XCTAssertEqual(
      try seqs(HistoryReader.read(paths: paths, query: HistoryQuery(room: RoomID("9"), limit: 2))),
      [])
  }

  func testSinceSeqAndSinceTimeAreExclusiveLowerBounds() throws {
    let paths = populate(count: 50, perFile: 20)
    XCTAssertEqual(
      try seqs(HistoryReader.read(paths: paths, query: HistoryQuery(sinceSeq: 47))), [48, 49, 50])
    XCTAssertEqual(
      try seqs(
        HistoryReader.read(
          paths: paths, query: HistoryQuery(sinceTime: Timestamp(microseconds: 48_000_000)))),
      [49, 50])
  }

  func testIgnoresATornLastLineAndMissingFiles() throws {
    var paths = populate(count: 10, perFile: 100)
    let handle = FileHandle(forWritingAtPath: paths[0])!
    handle.seekToEndOfFile()
    handle.write(Data(#"{"seq":11,"time":"#.utf8))
    handle.closeFile()
    paths.append(dir.path + "/messages.jsonl.9")
    XCTAssertEqual(
      try seqs(HistoryReader.read(paths: paths, query: HistoryQuery(limit: 2))), [9, 10])
  }

  func testLongLinesSpanningReadChunksAreReturnedWhole() throws {
    var content: [UInt8] = []
    for seq in 1...3 {
      StoreRecord(
        seq: UInt64(seq), time: Timestamp(microseconds: 0), direction: .inbound, room: nil,
        payload: .text(Array(String(repeating: "x", count: 400_000).utf8))
      ).appendLine(to: &content)
    }
    let path = dir.path + "/long.jsonl"
    _ = FileManager.default.createFile(atPath: path, contents: Data(content))
    let lines = try HistoryReader.read(paths: [path], query: HistoryQuery(limit: 10)).get()
    XCTAssertEqual(lines.count, 3)
    XCTAssertTrue(lines.allSatisfy { $0.count > 400_000 })
  }
}
