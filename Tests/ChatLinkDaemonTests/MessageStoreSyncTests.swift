import ChatLinkDaemon
import EventLoop
import Foundation
@preconcurrency import Glibc
import TestSupport
import WebSocket
import XCTest

/// The store's fsyncs: on their own worker under Sync=batch, beside the writes; retried as
/// fsyncs when they fail.
final class MessageStoreSyncTests: XCTestCase {
  private var loop: EventLoop!
  private var disk: BackgroundWorker!
  private var syncer: BackgroundWorker!
  private let dir = TemporaryDirectory()

  override func setUpWithError() throws {
    loop = try EventLoop()
    disk = try BackgroundWorker(loop: loop, name: "test-disk")
    syncer = try BackgroundWorker(loop: loop, name: "test-sync")
  }

  override func tearDown() {
    FileSystem.failingDataSyncs.fail(next: 0)
  }

  private func open(_ sync: Configuration.SyncMode, interval: Duration = .milliseconds(20))
    throws -> MessageStore
  {
    try MessageStore(
      loop: loop, disk: disk, syncer: syncer,
      options: MessageStore.Options(directory: dir.path, sync: sync, syncInterval: interval))
  }

  private func seqs() -> [UInt64] {
    dir.lines(MessageStore.fileName).compactMap { line in
      Array(line.utf8).withUnsafeBytes { StoreRecord.seq(ofLine: $0) }
    }
  }

  private func append(_ store: MessageStore, _ text: String) {
    store.append(direction: .inbound, room: nil, payload: .text(Array(text.utf8)))
  }

  /// The group-commit interval runs from the start of one sync to the start of the next, so a
  /// slow fsync does not stretch every interval by its own duration (chatlinkd.conf(5): "an
  /// fsync at least every SyncIntervalMSec").
  func testTheSyncIntervalCountsFromTheStartOfTheLastSyncNotFromItsEnd() throws {
    let store = try open(.batch, interval: .milliseconds(200))
    var durable: UInt64 = 0
    store.onDurable = { durable = $0 }
    // Hold the sync worker, so that the first sync ends 150 ms after it started.
    syncer.submit({ usleep(150_000) }, completion: { _ in })
    let start = loop.now
    append(store, "first")
    try spin(loop) { durable == 1 }
    append(store, "second")
    try spin(loop) { durable == 2 }
    let elapsed = loop.now - start
    // 200 ms after the first sync started; counted from its end, it would be 350 ms.
    XCTAssertGreaterThanOrEqual(elapsed, 190_000)
    XCTAssertLessThan(elapsed, 300_000, "second record durable after \(elapsed) µs")
    XCTAssertEqual(seqs(), [1, 2])
  }

  /// When the input pauses with at least a chunk written and not synced (the end of a burst),
  /// the fsync starts at once; a smaller remainder waits for the interval, so a trickle of
  /// records still shares one fsync per interval.
  func testTheEndOfABurstIsSyncedAtOnceAndATrickleAtTheInterval() throws {
    let store = try open(.batch, interval: .milliseconds(400))
    var durable: UInt64 = 0
    store.onDurable = { durable = $0 }
    append(store, "first")
    try spin(loop) { durable == 1 }
    // A trickle: one small record, nothing else; not synced before the interval.
    append(store, "small")
    try spin(loop) { store.writtenSeq == 2 }
    try spin(loop, for: 200_000)
    XCTAssertEqual(durable, 1, "a small remainder was synced before the interval")
    try spin(loop) { durable == 2 }
    // A burst of more than a chunk, then a pause: synced long before the 400 ms interval.
    let record = String(repeating: "b", count: 1000)
    let chunkRecords = MessageStore.chunkSize / 1000 + 10
    let start = loop.now
    for _ in 0..<chunkRecords { append(store, record) }
    let last = UInt64(2 + chunkRecords)
    try spin(loop) { durable == last }
    XCTAssertLessThan(loop.now - start, 300_000, "a burst waited for the interval")
    XCTAssertEqual(seqs(), Array(1...last))
  }

  /// While an fsync runs, the disk worker goes on writing: records reach the file (not yet
  /// durable) and the producer is not paused, however long the fsync takes.
  func testWritesGoOnWhileAnFsyncRuns() throws {
    let store = try open(.batch)
    var durable: UInt64 = 0
    store.onDurable = { durable = $0 }
    append(store, "first")
    try spin(loop) { durable == 1 }
    // The next fsync cannot finish until the gate opens.
    let gate = DispatchSemaphore(value: 0)
    syncer.submit({ gate.wait() }, completion: { _ in })
    let record = String(repeating: "w", count: 1000)
    var appended: UInt64 = 1
    // More than two chunks: with the fsync in the write job they would wait behind it.
    while appended < 2_000 {
      XCTAssertFalse(store.isBehind, "paused behind an fsync at \(appended)")
      append(store, record)
      appended += 1
      if appended % 200 == 0 { try spin(loop) { store.writtenSeq == appended } }
    }
    try spin(loop) { store.writtenSeq == appended }
    XCTAssertEqual(durable, 1, "durable before its fsync")
    XCTAssertEqual(seqs(), Array(1...appended))
    gate.signal()
    try spin(loop) { durable == appended }
    XCTAssertEqual(store.durableSeq, appended)
  }

  /// A failed fsync under Sync=batch: the lines are in the file and stay there once; nothing
  /// is reported durable until a retried fsync succeeds, which the store does once a second.
  func testAFailedFsyncIsRetriedAsAnFsyncAndNoLineIsWrittenTwice() throws {
    try failedFsyncIsRetried(.batch)
  }

  /// The same when the fsync is the write job's own (Sync=always).
  func testAFailedFsyncUnderSyncAlwaysIsRetriedAndNoLineIsWrittenTwice() throws {
    try failedFsyncIsRetried(.always)
  }

  private func failedFsyncIsRetried(_ mode: Configuration.SyncMode) throws {
    let store = try open(mode)
    var durable: UInt64 = 0
    var health: [SystemError?] = []
    store.onDurable = { durable = $0 }
    store.onHealthChange = { health.append($0) }
    append(store, "first")
    try spin(loop) { durable == 1 }

    FileSystem.failingDataSyncs.fail(next: 1)
    for i in 2...10 { append(store, "record \(i)") }
    try spin(loop) { store.failure != nil }
    XCTAssertEqual(store.failure?.errno, EIO)
    try spin(loop) { store.writtenSeq == 10 }
    XCTAssertEqual(durable, 1, "reported durable after a failed fsync")
    XCTAssertEqual(store.statistics.writeErrors, 1)

    // The retry (a second later) syncs; the lines were never appended again.
    try spin(loop, timeout: 3_000_000) { durable == 10 }
    XCTAssertNil(store.failure)
    XCTAssertEqual(seqs(), Array(1...10))
    XCTAssertEqual(health.count, 2)
    XCTAssertEqual(health.first??.errno, EIO)
    XCTAssertNil(health.last ?? nil)
    XCTAssertEqual(FileSystem.failingDataSyncs.pending, 0)
  }

  /// Rotations while an fsync of the old file waits on the sync worker: the old file stays
  /// open for that fsync (closed only when the job lets go of it), the fsync succeeds, and
  /// every record ends up in the files once, in order, durable.
  func testRotationsWhileAnFsyncWaitsKeepTheOldFileOpenForIt() throws {
    let store = try MessageStore(
      loop: loop, disk: disk, syncer: syncer,
      options: MessageStore.Options(
        directory: dir.path, sync: .batch, syncInterval: .milliseconds(5), maxFileSize: 4096,
        maxFiles: 100))
    var durable: UInt64 = 0
    var health: [SystemError?] = []
    store.onDurable = { durable = $0 }
    store.onHealthChange = { health.append($0) }
    let record = String(repeating: "r", count: 300)
    // The sync worker is held: the first fsync (of the first file) queues behind the gate.
    let gate = DispatchSemaphore(value: 0)
    syncer.submit({ gate.wait() }, completion: { _ in })
    for _ in 1...4 { append(store, record) }
    try spin(loop) { store.writtenSeq == 4 }
    let first = loop.now
    try spin(loop) { loop.now - first > 20_000 }  // the interval passed: that fsync is queued
    for i in 5...400 {
      append(store, record)
      // A write of four records at a time: the files rotate every few writes.
      if i % 4 == 0 { try spin(loop) { store.writtenSeq == UInt64(i) } }
    }
    XCTAssertEqual(durable, 0)
    gate.signal()
    var done = false
    store.whenDurable { done = true }
    try spin(loop) { done }
    XCTAssertEqual(durable, 400)
    XCTAssertEqual(health.count, 0, "\(health)")
    let files = try FileManager.default.contentsOfDirectory(atPath: dir.path)
      .filter { $0.hasPrefix(MessageStore.fileName) }
      .sorted { generation($0) > generation($1) }
    XCTAssertGreaterThan(files.count, 20)
    let all = files.flatMap { dir.lines($0) }.compactMap { line in
      Array(line.utf8).withUnsafeBytes { StoreRecord.seq(ofLine: $0) }
    }
    XCTAssertEqual(all, Array(1...400))
  }

  /// Under Sync=batch a full file rotates once an fsync has caught up with it, so that the
  /// rotation's own fsync (which the writes wait for) has little left to do; while that fsync
  /// is slow the file takes more lines, up to an eighth over MaxFileSize, then rotates anyway.
  func testAFullFileRotatesOnceAnFsyncHasCaughtUpOrAnEighthOverItsSize() throws {
    let max = 1 << 20
    let store = try MessageStore(
      loop: loop, disk: disk, syncer: syncer,
      options: MessageStore.Options(
        directory: dir.path, sync: .batch, syncInterval: .seconds(5), maxFileSize: max))
    var durable: UInt64 = 0
    store.onDurable = { durable = $0 }
    let record = String(repeating: "x", count: 1000)
    var count: UInt64 = 0
    func writeSome() throws {
      for _ in 0..<50 { append(store, record) }
      count += 50
      try spin(loop) { store.writtenSeq == count }
    }
    func names() -> [String] { FileManager.default.storeFileNames(atPath: dir.path) }
    // The fsyncs are held: the file grows past MaxFileSize without rotating.
    var gate = DispatchSemaphore(value: 0)
    syncer.submit({ [gate] in gate.wait() }, completion: { _ in })
    while (FileSystem.size(store.path) ?? 0) < max + 60_000 && count < 5_000 { try writeSome() }
    XCTAssertEqual(names(), ["messages.jsonl"])
    // Released: the fsyncs catch up, and the next write rotates.
    gate.signal()
    try spin(loop) { durable == count }
    try writeSome()
    XCTAssertEqual(names(), ["messages.jsonl", "messages.jsonl.1"])
    XCTAssertGreaterThanOrEqual(FileSystem.size(store.path + ".1") ?? 0, max + 60_000)
    // Held again: the new file rotates an eighth over its size all the same.
    gate = DispatchSemaphore(value: 0)
    syncer.submit({ [gate] in gate.wait() }, completion: { _ in })
    while names().count == 2 && count < 5_000 { try writeSome() }
    let full = FileSystem.size(store.path + ".1") ?? 0
    XCTAssertGreaterThanOrEqual(full, max + max / 8)
    XCTAssertLessThan(full, max + max / 8 + 60_000)
    gate.signal()
    try spin(loop) { durable == count }
    let all = ["messages.jsonl.2", "messages.jsonl.1", "messages.jsonl"].flatMap { dir.lines($0) }
      .compactMap { line in Array(line.utf8).withUnsafeBytes { StoreRecord.seq(ofLine: $0) } }
    XCTAssertEqual(all, Array(1...count))
  }

  private func generation(_ name: String) -> Int {
    name == MessageStore.fileName ? 0 : Int(name.split(separator: ".").last ?? "") ?? 0
  }
}
