import EventLoop
import Foundation
import JSON
import LinkCore
import TestSupport
import XCTest

@testable import ChatLinkDaemon

/// The dedupe window's snapshot in the store: written at a clean stop and every so often while
/// the daemon runs (a checkpoint), read at the next start with the records stored after it, and
/// the tail read instead whenever it does not hold.
final class DedupeCheckpointTests: XCTestCase {
  private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

  private var loop: EventLoop!
  private var disk: BackgroundWorker!
  private let dir = TemporaryDirectory()

  override func setUpWithError() throws {
    loop = try EventLoop()
    disk = try BackgroundWorker(loop: loop, name: "test-disk")
  }

  /// A store whose start reads at most `tail` records (the tail's newest, or those after the
  /// snapshot): an older id known after it came from the snapshot.
  private func open(
    window: Int = 100, ids: Bool = true, tail: Int = 1, fileSize: Int = 64 << 20
  ) throws -> MessageStore {
    var options = MessageStore.Options(
      directory: dir.path, syncInterval: .milliseconds(10), maxFileSize: fileSize,
      dedupeWindow: window)
    options.dedupeTailRecords = tail
    options.idsConfigured = ids
    let store = try MessageStore(loop: loop, disk: disk, options: options)
    var ready = false
    store.whenDedupeReady { ready = true }
    try spin(loop) { ready }
    return store
  }

  /// Whether `id` of `room` is taken as a duplicate (and if not, it is stored).
  @discardableResult
  private func receive(_ store: MessageStore, id: String, room: String = "7") -> Bool {
    store.appendInbound(testID: id, room: bytes(room), text: "{}").duplicate
  }

  private func durable(_ store: MessageStore) throws {
    var done = false
    store.whenDurable { done = true }
    try spin(loop) { done }
  }

  /// A clean stop's last steps: every record durable, the snapshot written.
  private func stop(_ store: MessageStore) throws {
    try durable(store)
    var saved = false
    store.saveDedupeSnapshot { saved = true }
    try spin(loop) { saved }
  }

  private func checkpoint(_ store: MessageStore) throws {
    var done = false
    store.checkpointDedupe { done = true }
    try spin(loop) { done }
  }

  private var snapshotPath: String { dir.path + "/" + DedupeSnapshot.fileName }

  private func snapshotExists() -> Bool { FileManager.default.fileExists(atPath: snapshotPath) }

  func testAfterACleanStopTheNextStartReadsTheSnapshotWhichStays() throws {
    var store: MessageStore? = try open()
    for n in 1...30 { receive(store!, id: "m\(n)") }
    try stop(store!)
    store = nil
    XCTAssertTrue(snapshotExists())
    let attributes = try FileManager.default.attributesOfItem(atPath: snapshotPath)
    XCTAssertEqual(
      (attributes[.posixPermissions] as? NSNumber)?.intValue, 0o600, "it holds the hash's secret")
    let reopened = try open()
    XCTAssertTrue(snapshotExists(), "a crash of this run reads it again")
    XCTAssertFalse(
      FileManager.default.fileExists(atPath: snapshotPath + ".tmp"), "no part left behind")
    XCTAssertTrue(receive(reopened, id: "m2"), "older than the one record of the tail read")
    XCTAssertFalse(receive(reopened, id: "m31"))
    XCTAssertEqual(reopened.newestIDs(of: [RoomID("7")!])[RoomID("7")!]?.id, bytes("m31"))
  }

  func testAfterACrashTheStartReadsTheLastCheckpointAndTheRecordsStoredSince() throws {
    var store: MessageStore? = try open(tail: 5)
    for n in 1...30 { receive(store!, id: "m\(n)") }
    try checkpoint(store!)
    for n in 1...3 { receive(store!, id: "late\(n)", room: n == 2 ? "8" : "7") }
    receive(store!, id: "m5")
    try durable(store!)
    store = nil  // no clean stop: the checkpoint is the last snapshot
    let reopened = try open(tail: 5)
    XCTAssertEqual(reopened.dedupeSource, .snapshot(lastSeq: 30, recordsAfter: 3))
    XCTAssertTrue(receive(reopened, id: "m2"), "from the checkpoint: the tail read holds 5")
    for n in 1...3 {
      XCTAssertTrue(receive(reopened, id: "late\(n)", room: n == 2 ? "8" : "7"), "late\(n)")
    }
    let newest = reopened.newestIDs(of: [RoomID("7")!, RoomID("8")!])
    XCTAssertEqual(newest[RoomID("7")!]?.id, bytes("late3"))
    XCTAssertEqual(newest[RoomID("8")!]?.id, bytes("late2"))
  }

  func testMoreRecordsSinceTheCheckpointThanTheTailHoldsMakeTheStartReadTheTail() throws {
    var store: MessageStore? = try open(tail: 5)
    for n in 1...30 { receive(store!, id: "m\(n)") }
    try checkpoint(store!)
    for n in 1...6 { receive(store!, id: "late\(n)") }
    try durable(store!)
    store = nil
    let reopened = try open(tail: 5)
    XCTAssertEqual(reopened.dedupeSource, .tail)
    XCTAssertFalse(receive(reopened, id: "m2"), "the tail's 5 records only")
    XCTAssertTrue(receive(reopened, id: "late2"))
    XCTAssertFalse(receive(reopened, id: "late1"))
  }

  func testRecordsStoredWhileACheckpointIsWrittenAreAllKnownAfterACrash() throws {
    var store: MessageStore? = try open(window: 4, tail: 50)
    for n in 1...10 {
      receive(store!, id: "a\(n)", room: "1")
      receive(store!, id: "b\(n)", room: "2")
    }
    var done = false
    store!.checkpointDedupe { done = true }
    // Stored before the rooms' parts are taken (so in them, and after the checkpoint's start).
    for n in 11...12 { receive(store!, id: "a\(n)", room: "1") }
    try spin(loop) { done }
    receive(store!, id: "b11", room: "2")
    try durable(store!)
    store = nil
    let reopened = try open(window: 4, tail: 50)
    XCTAssertEqual(reopened.newestIDs(of: [RoomID("1")!])[RoomID("1")!]?.id, bytes("a12"))
    for id in ["a9", "a10", "a11", "a12"] {
      XCTAssertTrue(receive(reopened, id: id, room: "1"), id)
    }
    XCTAssertFalse(receive(reopened, id: "a8", room: "1"), "left the window of 4")
    for id in ["b8", "b9", "b10", "b11"] {
      XCTAssertTrue(receive(reopened, id: id, room: "2"), id)
    }
  }

  func testACheckpointIsPutInPlaceOnlyOnceEveryRecordItKnowsIsDurable() throws {
    defer { FileSystem.failingDataSyncs.fail(next: 0) }
    let store = try open()
    receive(store, id: "m1")
    try durable(store)
    // The next fsync fails; its retry comes a second later.
    FileSystem.failingDataSyncs.fail(next: 1)
    receive(store, id: "m2")
    var done = false
    store.checkpointDedupe { done = true }
    try spin(loop) { store.failure != nil }
    try spin(loop, for: 300_000)
    XCTAssertFalse(snapshotExists(), "it knows m2, which a power cut could still take")
    XCTAssertFalse(done)
    XCTAssertTrue(store.dedupeCheckpointRunning)
    try spin(loop, timeout: 3_000_000) { done }
    XCTAssertEqual(store.durableSeq, 2)
    XCTAssertTrue(snapshotExists())
    XCTAssertFalse(store.dedupeCheckpointRunning)
  }

  func testACheckpointIsWrittenOnlyWhenSomethingWasStoredSinceTheLast() throws {
    let store = try open()
    receive(store, id: "m1")
    try checkpoint(store)
    XCTAssertTrue(snapshotExists())
    try FileManager.default.removeItem(atPath: snapshotPath)
    try checkpoint(store)
    XCTAssertFalse(snapshotExists(), "nothing new: not written again")
    receive(store, id: "m2")
    try checkpoint(store)
    XCTAssertTrue(snapshotExists())
  }

  func testACheckpointAskedForWhileOneIsWrittenFollowsIt() throws {
    let store = try open()
    receive(store, id: "m1")
    var ended: [Int] = []
    store.checkpointDedupe { ended.append(1) }
    receive(store, id: "m2")
    store.checkpointDedupe { ended.append(2) }
    try spin(loop) { ended.count == 2 }
    XCTAssertEqual(ended, [1, 2])
    let restored = try XCTUnwrap(
      DedupeSnapshot.read(
        directory: dir.path,
        expected: .init(
          storeLastSeq: store.lastSeq, capacity: 100, configuredRooms: [], keepsNewest: true)))
    XCTAssertEqual(restored.lastSeq, store.lastSeq, "the second one knows m2")
  }

  func testASnapshotOfAnotherWindowSizeOrADamagedOneMakesTheStartReadTheTail() throws {
    var store: MessageStore? = try open()
    for n in 1...30 { receive(store!, id: "m\(n)") }
    try stop(store!)
    store = nil
    var reopened: MessageStore? = try open(window: 50)
    XCTAssertTrue(receive(reopened!, id: "m30"))
    XCTAssertFalse(receive(reopened!, id: "m2"))
    try stop(reopened!)
    reopened = nil
    var data = try Data(contentsOf: URL(fileURLWithPath: snapshotPath))
    data[data.count / 2] ^= 0x01
    try data.write(to: URL(fileURLWithPath: snapshotPath))
    let damaged = try open(window: 50)
    XCTAssertTrue(receive(damaged, id: "m2"), "stored by the last run, the newest record")
    XCTAssertFalse(receive(damaged, id: "m3"))
  }

  func testWithoutIDsNoSnapshotIsWrittenAndTheRecordsStoredMeanwhileAreReadOnTopOfTheLast() throws {
    var store: MessageStore? = try open()
    for n in 1...30 { receive(store!, id: "m\(n)") }
    try stop(store!)
    store = nil
    let before = try Data(contentsOf: URL(fileURLWithPath: snapshotPath))
    var plain: MessageStore? = try open(ids: false)
    receive(plain!, id: "without")
    try stop(plain!)
    plain = nil
    XCTAssertEqual(
      try Data(contentsOf: URL(fileURLWithPath: snapshotPath)), before, "left as it was")
    let reopened = try open()
    XCTAssertTrue(receive(reopened, id: "without"), "the record stored since, read on top")
    XCTAssertTrue(receive(reopened, id: "m2"), "the snapshot still holds")
  }

  func testRecordsAfterTheSnapshotThatAreNoLongerAllThereMakeTheStartReadTheTail() throws {
    var store: MessageStore? = try open(tail: 500, fileSize: 4096)
    for n in 1...30 { receive(store!, id: "m\(n)") }
    try checkpoint(store!)
    // In writes of 10: the store rotates between writes.
    for n in 1...100 {
      receive(store!, id: "late\(n)")
      if n % 10 == 0 { try durable(store!) }
    }
    store = nil
    // The rotated files, with the first records after the snapshot, are gone.
    let rotated = try FileManager.default.contentsOfDirectory(atPath: dir.path)
      .filter { $0.hasPrefix(MessageStore.fileName + ".") }
    XCTAssertFalse(rotated.isEmpty)
    for name in rotated { try FileManager.default.removeItem(atPath: dir.path + "/" + name) }
    let reopened = try open(tail: 500, fileSize: 4096)
    XCTAssertEqual(reopened.dedupeSource, .tail)
    XCTAssertFalse(
      receive(reopened, id: "m2"), "only in the snapshot, whose records since are not all there")
    XCTAssertTrue(receive(reopened, id: "late100"))
  }

  func testAStoreThatEndsBeforeTheSnapshotMakesTheStartReadTheTail() throws {
    var store: MessageStore? = try open()
    for n in 1...30 { receive(store!, id: "m\(n)") }
    try stop(store!)
    store = nil
    let saved = try Data(contentsOf: URL(fileURLWithPath: snapshotPath))
    try FileManager.default.removeItem(atPath: dir.path)
    try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
    store = try open()
    for n in 1...3 { receive(store!, id: "n\(n)") }
    try durable(store!)
    store = nil
    try saved.write(to: URL(fileURLWithPath: snapshotPath))
    let reopened = try open()
    XCTAssertFalse(receive(reopened, id: "m2"), "the snapshot knows seq 30, the store ends at 3")
    XCTAssertTrue(receive(reopened, id: "n3"))
  }
}
