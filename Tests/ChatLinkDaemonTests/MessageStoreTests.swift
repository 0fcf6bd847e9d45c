import ChatLinkDaemon
import EventLoop
import Foundation
@preconcurrency import Glibc
import TestSupport
import WebSocket
import XCTest

final class MessageStoreTests: XCTestCase {
  private var loop: EventLoop!
  private var disk: BackgroundWorker!
  private let dir = TemporaryDirectory()

  override func setUpWithError() throws {
    loop = try EventLoop()
    disk = try BackgroundWorker(loop: loop, name: "test-disk")
  }

  private func open(
    sync: Configuration.SyncMode = .batch, maxFileSize: Int = 64 << 20, maxFiles: Int = 8
  ) throws -> MessageStore {
    try MessageStore(
      loop: loop, disk: disk,
      options: MessageStore.Options(
        directory: dir.path, sync: sync, syncInterval: .milliseconds(20), maxFileSize: maxFileSize,
        maxFiles: maxFiles))
  }

  private func seqs(_ name: String = MessageStore.fileName) -> [UInt64] {
    dir.lines(name).compactMap { line in
      Array(line.utf8).withUnsafeBytes { StoreRecord.seq(ofLine: $0) }
    }
  }

  func testRecordsBecomeDurableLinesInOrderForEverySyncMode() throws {
    for mode in Configuration.SyncMode.allCases {
      let sub = dir.path + "/" + mode.rawValue
      let store = try MessageStore(
        loop: loop, disk: disk,
        options: MessageStore.Options(directory: sub, sync: mode, syncInterval: .milliseconds(20)))
      var durable: UInt64 = 0
      store.onDurable = { durable = $0 }
      for i in 1...1000 {
        store.append(
          direction: .inbound, room: Array("7".utf8), payload: .text(Array("{\"n\":\(i)}".utf8)))
      }
      XCTAssertEqual(store.lastSeq, 1000)
      try spin(loop) { durable == 1000 }
      let lines = try String(contentsOfFile: sub + "/messages.jsonl", encoding: .utf8).split(
        separator: "\n")
      XCTAssertEqual(lines.count, 1000, "\(mode)")
      XCTAssertTrue(lines[999].contains(#""data":{"n":1000}"#))
    }
  }

  func testSeqContinuesAcrossRestarts() throws {
    var store: MessageStore? = try open()
    for _ in 0..<5 {
      store?.append(direction: .inbound, room: nil, payload: .text(Array("x".utf8)))
    }
    var done = false
    store?.whenDurable { done = true }
    try spin(loop) { done }
    store = nil
    let reopened = try open()
    XCTAssertEqual(reopened.recovery.lastSeq, 5)
    reopened.append(direction: .inbound, room: nil, payload: .text(Array("y".utf8)))
    done = false
    reopened.whenDurable { done = true }
    try spin(loop) { done }
    XCTAssertEqual(seqs(), [1, 2, 3, 4, 5, 6])
  }

  /// A crash mid-write leaves a torn last line: recovery cuts it and keeps every whole line.
  func testRecoveryCutsATornLastLineAndKeepsTheRest() throws {
    let good =
      #"{"seq":41,"time":"2026-01-01T00:00:00.000000Z","dir":"in","room":null,"type":"text","data":"a"}"#
    let good2 =
      #"{"seq":42,"time":"2026-01-01T00:00:00.000000Z","dir":"in","room":null,"type":"text","data":"b"}"#
    dir.write(
      MessageStore.fileName, good + "\n" + good2 + "\n" + #"{"seq":43,"time":"2026-01-01T0"#)
    let store = try open()
    XCTAssertEqual(store.recovery.lastSeq, 42)
    XCTAssertEqual(store.recovery.tornBytes, 30)
    XCTAssertEqual(dir.read(MessageStore.fileName), good + "\n" + good2 + "\n")
    XCTAssertEqual(store.append(direction: .inbound, room: nil, payload: .text([])), 43)
  }

  func testRecoverySkipsGarbageLinesAndSurvivesAFileWithNoNewline() throws {
    dir.write(MessageStore.fileName, #"{"seq":7,"x":1}"# + "\nnot ours at all\n")
    XCTAssertEqual(try open().recovery.lastSeq, 7)
    let other = TemporaryDirectory()
    other.write(MessageStore.fileName, String(repeating: "z", count: 200_000))
    let store = try MessageStore(
      loop: loop, disk: disk, options: MessageStore.Options(directory: other.path))
    XCTAssertEqual(store.recovery.lastSeq, 0)
    XCTAssertEqual(store.recovery.tornBytes, 200_000)
  }

  func testRecoveryFindsTheLastSeqBehindALongLine() throws {
    let long = #"{"seq":9,"data":""# + String(repeating: "x", count: 300_000) + "\"}"
    dir.write(MessageStore.fileName, #"{"seq":8,"a":1}"# + "\n" + long + "\n")
    XCTAssertEqual(try open().recovery.lastSeq, 9)
  }

  func testRotationKeepsMaxFilesAndSeqContinuesAfterRotation() throws {
    var store: MessageStore? = try open(sync: .always, maxFileSize: 4096, maxFiles: 3)
    let payload = Message.text(Array(String(repeating: "m", count: 300).utf8))
    for _ in 0..<100 {
      store?.append(direction: .inbound, room: nil, payload: payload)
      var done = false
      store?.whenDurable { done = true }
      try spin(loop) { done }
    }
    let names = FileManager.default.storeFileNames(atPath: dir.path)
    XCTAssertEqual(names, ["messages.jsonl", "messages.jsonl.1", "messages.jsonl.2"])
    let all = seqs("messages.jsonl.2") + seqs("messages.jsonl.1") + seqs()
    XCTAssertEqual(all, Array(all.first!...100))
    // Rotate so the live file is empty, then restart: seq continues from the rotated file.
    store = nil
    try FileManager.default.removeItem(atPath: dir.path + "/messages.jsonl")
    _ = FileManager.default.createFile(atPath: dir.path + "/messages.jsonl", contents: nil)
    XCTAssertEqual(
      try open(maxFileSize: 4096, maxFiles: 3).recovery.lastSeq, seqs("messages.jsonl.1").last)
  }

  /// A full disk fails the write: no partial line reaches the file, the records wait, and
  /// they are written once space returns.
  func testAWriteFailureLeavesNoPartialLineAndRecoversWhenSpaceReturns() throws {
    let store = try open(sync: .always)
    var failures: [SystemError?] = []
    store.onHealthChange = { failures.append($0) }
    store.append(direction: .inbound, room: nil, payload: .text(Array("first".utf8)))
    var done = false
    store.whenDurable { done = true }
    try spin(loop) { done }
    let sizeBefore = FileSystem.size(store.path) ?? 0

    try withFileSizeLimit(sizeBefore + 150) {
      for i in 0..<20 {
        store.append(
          direction: .inbound, room: nil, payload: .text(Array("record \(i) with some text".utf8)))
      }
      try spin(loop) { store.failure != nil }
    }
    XCTAssertEqual(FileSystem.size(store.path), sizeBefore)
    XCTAssertGreaterThan(store.backlogBytes, 0)
    XCTAssertEqual(store.durableSeq, 1)

    done = false
    store.whenDurable { done = true }
    try spin(loop) { done }
    XCTAssertNil(store.failure)
    XCTAssertEqual(seqs(), Array(1...21))
    XCTAssertEqual(failures.count, 2)
    XCTAssertNotNil(failures.first ?? nil)
    XCTAssertNil(failures.last ?? nil)
  }

  /// While writes fail, a steady stream of records must not cost a failing write each: the
  /// store retries once a second (README, "What happens when…": disk full).
  func testWhileWritesFailTheyAreRetriedOnceASecondNotForEveryRecord() throws {
    let store = try open(sync: .batch)
    store.append(direction: .inbound, room: nil, payload: .text(Array("first".utf8)))
    var done = false
    store.whenDurable { done = true }
    try spin(loop) { done }
    var attempts = 0
    store.onWritten = { attempts += 1 }

    var count: UInt64 = 1
    try withFileSizeLimit((FileSystem.size(store.path) ?? 0) + 10) {
      // A record every loop iteration for 1.5 s, as a steady inbound stream brings them.
      let start = loop.now
      while loop.now - start < 1_500_000 {
        store.append(direction: .inbound, room: nil, payload: .text(Array("r \(count)".utf8)))
        count += 1
        try loop.runOnce(timeout: 5_000)
      }
    }
    XCTAssertNotNil(store.failure)
    XCTAssertGreaterThan(count, 50)
    // The first failure, then one retry a second.
    XCTAssertLessThanOrEqual(attempts, 3, "\(attempts) write attempts for \(count) records")

    done = false
    store.whenDurable { done = true }
    try spin(loop) { done }
    XCTAssertNil(store.failure)
    XCTAssertEqual(seqs(), Array(1...count))
  }

  /// A rotation that cannot create the new file (no inode, no fd) fails the write before
  /// anything is appended: no record is written twice, messages.jsonl stays, and the rotation
  /// completes once files can be created again.
  func testARotationThatCannotCreateTheNewFileWritesNothingTwice() throws {
    let store = try open(sync: .always, maxFileSize: 1024, maxFiles: 4)
    let payload = Message.text(Array(String(repeating: "r", count: 200).utf8))
    var written = 0
    store.onWritten = { written += 1 }
    func appendAndWrite() throws {
      let before = written
      store.append(direction: .inbound, room: nil, payload: payload)
      try spin(loop) { written > before }
    }
    for _ in 0..<3 { try appendAndWrite() }

    // No fd left: opening the new file fails, as it fails on a filesystem without inodes.
    let probe = Glibc.open("/dev/null", O_RDONLY)
    Glibc.close(probe)
    var old = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &old)
    var limited = rlimit(rlim_cur: rlim_t(probe), rlim_max: old.rlim_max)
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limited)
    var appended: UInt64 = 3
    while store.failure == nil && appended < 30 {
      try appendAndWrite()
      appended += 1
    }
    // Let the retry timer run a couple of times.
    let start = loop.now
    try spin(loop) { loop.now - start > 2_200_000 }
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &old)
    XCTAssertNotNil(store.failure)
    XCTAssertEqual(FileManager.default.storeFileNames(atPath: dir.path), ["messages.jsonl"])
    let before = seqs()
    XCTAssertEqual(before, (0..<before.count).map { UInt64($0 + 1) })

    var done = false
    store.whenDurable { done = true }
    try spin(loop) { done }
    XCTAssertNil(store.failure)
    XCTAssertEqual(
      FileManager.default.storeFileNames(atPath: dir.path), ["messages.jsonl", "messages.jsonl.1"])
    XCTAssertEqual(seqs("messages.jsonl.1") + seqs(), Array(1...appended))
  }

  /// A rotation whose directory sync fails has renamed the files but may not keep them over a
  /// power cut: the write fails (the chunk is kept in memory, nothing reported durable), and
  /// every retry syncs the directory again before it appends. Once the sync succeeds, every
  /// record is in the files exactly once, in order, and no second rotation happened.
  func testAFailedDirectorySyncAfterARotationIsRetriedBeforeAnythingIsAppended() throws {
    let store = try open(sync: .always, maxFileSize: 1024, maxFiles: 4)
    let payload = Message.text(Array(String(repeating: "d", count: 200).utf8))
    var written = 0
    var durable: UInt64 = 0
    store.onWritten = { written += 1 }
    store.onDurable = { durable = $0 }
    func appendAndWrite() throws {
      let before = written
      store.append(direction: .inbound, room: nil, payload: payload)
      try spin(loop) { written > before }
    }
    // Fill the live file to its limit: the next write rotates.
    var count: UInt64 = 0
    func liveSize() -> Int {
      let attributes = try? FileManager.default.attributesOfItem(atPath: store.path)
      return (attributes?[.size] as? Int) ?? 0
    }
    while liveSize() < 1024 {
      try appendAndWrite()
      count += 1
    }
    XCTAssertEqual(durable, count)
    XCTAssertEqual(FileManager.default.storeFileNames(atPath: dir.path), ["messages.jsonl"])

    FileSystem.failingDirectorySyncs.fail(next: 2)
    defer { FileSystem.failingDirectorySyncs.fail(next: 0) }
    try appendAndWrite()
    XCTAssertEqual(store.failure?.errno, EIO)
    XCTAssertEqual(durable, count, "a record after an unsynced rename was reported durable")
    // The renames happened; the new live file holds nothing until its name is durable.
    XCTAssertEqual(
      FileManager.default.storeFileNames(atPath: dir.path), ["messages.jsonl", "messages.jsonl.1"])
    XCTAssertEqual(seqs(), [])
    XCTAssertEqual(seqs("messages.jsonl.1"), Array(1...count))

    // More records wait behind it; the retries (once a second) sync the directory first.
    store.append(direction: .inbound, room: nil, payload: payload)
    try spin(loop, timeout: 10_000_000) { durable == count + 2 }
    XCTAssertNil(store.failure)
    XCTAssertEqual(FileSystem.failingDirectorySyncs.pending, 0)
    XCTAssertEqual(
      FileManager.default.storeFileNames(atPath: dir.path), ["messages.jsonl", "messages.jsonl.1"])
    XCTAssertEqual(seqs("messages.jsonl.1") + seqs(), Array(1...(count + 2)))
  }

  /// The store writes one chunk at a time. Once the next chunk is full while the disk still
  /// writes the last, it asks its producer to pause (`isBehind`) instead of growing, and lets
  /// it go on once that chunk is with the disk; nothing appended meanwhile is lost.
  func testRecordsWhoseAcknowledgementsWaitAreSyncedAsSoonAsTheDiskIsFree() throws {
    let store = try MessageStore(
      loop: loop, disk: disk,
      options: MessageStore.Options(directory: dir.path, sync: .batch, syncInterval: .seconds(5)))
    var durable: UInt64 = 0
    store.onDurable = { durable = $0 }
    store.syncPromptly = true
    let start = loop.now
    store.append(direction: .inbound, room: nil, payload: .text(Array("first".utf8)))
    try spin(loop) { durable == 1 }
    store.append(direction: .inbound, room: nil, payload: .text(Array("second".utf8)))
    try spin(loop) { durable == 2 }
    XCTAssertLessThan(loop.now - start, 1_000_000, "not held for the 5 s interval")
    // Nothing waits: the interval applies again.
    store.syncPromptly = false
    store.append(direction: .inbound, room: nil, payload: .text(Array("third".utf8)))
    try spin(loop, for: 300_000)
    XCTAssertEqual(durable, 2, "a record nobody waits for is synced at the interval")
    XCTAssertEqual(seqs(), [1, 2, 3])
  }

  func testTheStoreIsBehindOnlyWhileTheNextChunkIsFullAndTheDiskIsBusy() throws {
    let store = try open(sync: .none)
    // Hold the disk thread, so that the first chunk stays in flight.
    let gate = DispatchSemaphore(value: 0)
    disk.submit({ gate.wait() }, completion: { _ in })
    let record = Array(repeating: UInt8(ascii: "x"), count: 1000)
    var appended = 0
    while !store.isBehind && appended < 10_000 {
      store.append(direction: .inbound, room: nil, payload: .text(record))
      appended += 1
    }
    XCTAssertTrue(store.isBehind)
    XCTAssertFalse(store.hasCaughtUp)
    // One chunk with the (held) disk, one full behind it, and not a record more.
    XCTAssertGreaterThanOrEqual(store.backlogBytes, 2 * MessageStore.chunkSize)
    XCTAssertLessThan(store.backlogBytes, 2 * MessageStore.chunkSize + 4096)
    gate.signal()
    try spin(loop) { store.hasCaughtUp }
    XCTAssertFalse(store.isBehind)
    var done = false
    store.whenDurable { done = true }
    try spin(loop) { done }
    XCTAssertEqual(seqs(), Array(1...UInt64(appended)))
  }

  func testStoreFilesAreCreatedWithMode0640() throws {
    _ = try open()
    var info = stat()
    stat(dir.path + "/messages.jsonl", &info)
    XCTAssertEqual(info.st_mode & 0o777, 0o640)
  }
}

extension FileManager {
  /// The store files in a directory (not the room indexes in .index/), sorted.
  func storeFileNames(atPath path: String) -> [String] {
    ((try? contentsOfDirectory(atPath: path)) ?? []).filter { $0.hasPrefix("messages.jsonl") }
      .sorted()
  }
}
