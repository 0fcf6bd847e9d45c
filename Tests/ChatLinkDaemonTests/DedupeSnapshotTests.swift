import EventLoop
import Foundation
import JSON
import LinkCore
import TestSupport
import XCTest

@testable import ChatLinkDaemon

/// The dedupe window written at a clean stop and read back at the next start: what it brings
/// back, and every way it can fail to hold, each of which reads the store's tail instead.
final class DedupeSnapshotTests: XCTestCase {
  private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

  private let point = DedupeSnapshot.StorePoint(lastSeq: 42, liveFileSize: 4096)

  private func expectation(
    capacity: Int = 20, configured: [String] = [], point: DedupeSnapshot.StorePoint? = nil
  ) -> DedupeSnapshot.Expectation {
    DedupeSnapshot.Expectation(
      point: point ?? self.point, capacity: capacity, configuredRooms: configured.map(bytes),
      keepsNewest: true)
  }

  /// A window of two rooms, one of them full and evicting, with a fixed hash basis.
  private func window() -> DedupeWindow {
    var window = DedupeWindow(capacity: 20, basis: 7)
    for n in 1...50 {
      bytes("m\(n)").withUnsafeBytes {
        _ = window.insert(room: bytes("7"), id: $0, time: Timestamp(microseconds: Int64(n)))
      }
    }
    for n in 1...3 { window.insert(room: bytes(#""ops""#), id: bytes("o\(n)")) }
    return window
  }

  func testASnapshotBringsBackEveryRoomsIDsItsNewestAndTheHashBasis() throws {
    let encoded = DedupeSnapshot.encode(window(), at: point, configuredRooms: [bytes("7")])
    var back = try XCTUnwrap(
      DedupeSnapshot.decode(encoded, expected: expectation(configured: ["7"])))
    XCTAssertEqual(back.hasher.basis, 7)
    XCTAssertEqual(back.roomCount, 2)
    XCTAssertEqual(back.count, 23)
    for n in 31...50 { XCTAssertTrue(back.contains(room: bytes("7"), id: bytes("m\(n)")), "m\(n)") }
    XCTAssertFalse(back.contains(room: bytes("7"), id: bytes("m30")), "evicted before the stop")
    XCTAssertEqual(
      back.newestPosition(room: bytes("7")),
      RoomPosition(id: bytes("m50"), time: Timestamp(microseconds: 50)))
    XCTAssertEqual(back.newestID(room: bytes(#""ops""#)), bytes("o3"))
    // It goes on as the window did: a duplicate is one, and the oldest leaves for a new id.
    XCTAssertFalse(back.insert(room: bytes("7"), id: bytes("m40")))
    XCTAssertTrue(back.insert(room: bytes("7"), id: bytes("m51")))
    XCTAssertFalse(back.contains(room: bytes("7"), id: bytes("m31")))
    XCTAssertTrue(back.contains(room: bytes("7"), id: bytes("m32")))
  }

  func testASnapshotOfAnotherStorePointWindowSizeOrFewerConfiguredRoomsDoesNotHold() {
    let encoded = DedupeSnapshot.encode(window(), at: point, configuredRooms: [bytes("7")])
    let moved = [
      DedupeSnapshot.StorePoint(lastSeq: 43, liveFileSize: 4096),
      DedupeSnapshot.StorePoint(lastSeq: 42, liveFileSize: 4000),
    ]
    for other in moved {
      XCTAssertTrue(
        nil == DedupeSnapshot.decode(encoded, expected: expectation(point: other)), "\(other)")
    }
    XCTAssertTrue(nil == DedupeSnapshot.decode(encoded, expected: expectation(capacity: 30)))
    XCTAssertTrue(
      nil == DedupeSnapshot.decode(encoded, expected: expectation(configured: ["7", "8"])),
      "a room configured since may have been read from the tail only")
    XCTAssertNotNil(DedupeSnapshot.decode(encoded, expected: expectation(configured: [])))
  }

  func testADamagedOrCutSnapshotIsRefusedAtEveryByte() {
    let encoded = DedupeSnapshot.encode(window(), at: point, configuredRooms: [])
    XCTAssertNotNil(DedupeSnapshot.decode(encoded, expected: expectation()))
    for length in 0..<encoded.count {
      XCTAssertTrue(
        nil == DedupeSnapshot.decode(Array(encoded[..<length]), expected: expectation()),
        "cut at \(length)")
    }
    for offset in stride(from: 0, to: encoded.count, by: 7) {
      var damaged = encoded
      damaged[offset] ^= 0x10
      XCTAssertTrue(
        nil == DedupeSnapshot.decode(damaged, expected: expectation()), "byte \(offset)")
    }
  }

  func testARoomsPartsThatCannotBeItsTablesAreRefused() {
    var room = RecentIDs()
    for n in 1...5 { _ = room.insert(UInt64(n) << 40 | UInt64(n), id: nil, capacity: 20) }
    let parts = room.parts
    XCTAssertNotNil(RecentIDs(ring: parts.ring, head: parts.head, table: parts.table, capacity: 20))
    XCTAssertTrue(
      nil == RecentIDs(ring: parts.ring, head: parts.head, table: parts.table, capacity: 4),
      "more ids than the window keeps")
    XCTAssertTrue(
      nil == RecentIDs(ring: parts.ring, head: 5, table: parts.table, capacity: 20),
      "head past the ring")
    XCTAssertTrue(
      nil == RecentIDs(ring: parts.ring + [9], head: 0, table: parts.table, capacity: 20),
      "an id in the ring that the table lacks")
    XCTAssertTrue(
      nil
        == RecentIDs(
          ring: parts.ring, head: 0, table: [UInt64](repeating: 1, count: 16), capacity: 20),
      "a table with no free slot would never end a probe")
  }

  func testARoomWhoseTableLacksItsRingsIDsStillEndsEveryInsert() throws {
    var room = RecentIDs()
    for n in 1...20 { _ = room.insert(UInt64(n) &* 0x9E37_79B9_7F4A_7C15, id: nil, capacity: 20) }
    let parts = room.parts
    // The ring's halves match nothing in the table: no eviction finds its id.
    var damaged = try XCTUnwrap(
      RecentIDs(ring: parts.ring.map { ~$0 }, head: parts.head, table: parts.table, capacity: 20))
    for n in 100..<1100 {
      XCTAssertTrue(damaged.insert(UInt64(n) &* 0xC2B2_AE3D_27D4_EB4F, id: nil, capacity: 20))
    }
    XCTAssertEqual(damaged.count, 20)
    XCTAssertEqual(damaged.parts.table.filter { $0 != 0 }.count, 20, "never more ids than the ring")
  }

  // MARK: - In the store

  private var loop: EventLoop!
  private var disk: BackgroundWorker!
  private let dir = TemporaryDirectory()

  override func setUpWithError() throws {
    loop = try EventLoop()
    disk = try BackgroundWorker(loop: loop, name: "test-disk")
  }

  /// A store whose start reads only the newest record of the tail: an older id known after it
  /// came from the snapshot.
  private func open(window: Int = 100, rooms: [String] = [], ids: Bool = true) throws
    -> MessageStore
  {
    var options = MessageStore.Options(
      directory: dir.path, syncInterval: .milliseconds(10), dedupeWindow: window,
      rooms: rooms.compactMap(RoomID.init))
    options.dedupeTailRecords = 1
    options.idsConfigured = ids
    let store = try MessageStore(loop: loop, disk: disk, options: options)
    var ready = false
    store.whenDedupeReady { ready = true }
    try spin(loop) { ready }
    return store
  }

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

  private var snapshotPath: String { dir.path + "/" + DedupeSnapshot.fileName }

  func testAfterACleanStopTheNextStartReadsTheSnapshotAndRemovesIt() throws {
    var store: MessageStore? = try open()
    for n in 1...30 { receive(store!, id: "m\(n)") }
    try stop(store!)
    store = nil
    XCTAssertTrue(FileManager.default.fileExists(atPath: snapshotPath))
    let attributes = try FileManager.default.attributesOfItem(atPath: snapshotPath)
    XCTAssertEqual(
      (attributes[.posixPermissions] as? NSNumber)?.intValue, 0o600, "it holds the hash's secret")
    let reopened = try open()
    XCTAssertFalse(FileManager.default.fileExists(atPath: snapshotPath), "read once")
    XCTAssertTrue(receive(reopened, id: "m2"), "older than the one record of the tail read")
    XCTAssertFalse(receive(reopened, id: "m31"))
    XCTAssertEqual(reopened.newestIDs(of: [RoomID("7")!])[RoomID("7")!]?.id, bytes("m31"))
  }

  func testARecordStoredAfterTheSnapshotMakesTheStartReadTheTail() throws {
    var store: MessageStore? = try open()
    for n in 1...30 { receive(store!, id: "m\(n)") }
    try stop(store!)
    receive(store!, id: "late")
    try durable(store!)
    store = nil
    let reopened = try open()
    XCTAssertFalse(FileManager.default.fileExists(atPath: snapshotPath))
    XCTAssertTrue(receive(reopened, id: "late"), "the record the snapshot lacks, from the tail")
    XCTAssertFalse(receive(reopened, id: "m2"), "only the tail's newest record was read")
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
    XCTAssertFalse(FileManager.default.fileExists(atPath: snapshotPath))
    XCTAssertTrue(receive(damaged, id: "m2"), "stored by the last run, the newest record")
    XCTAssertFalse(receive(damaged, id: "m3"))
  }

  func testWithoutIDsNoSnapshotIsWrittenAndALeftOneNoLongerHoldsOnceARecordIsStored() throws {
    var store: MessageStore? = try open()
    for n in 1...30 { receive(store!, id: "m\(n)") }
    try stop(store!)
    store = nil
    var plain: MessageStore? = try open(ids: false)
    receive(plain!, id: "without")
    try stop(plain!)
    plain = nil
    XCTAssertTrue(FileManager.default.fileExists(atPath: snapshotPath), "left as it was")
    let reopened = try open()
    XCTAssertTrue(receive(reopened, id: "without"), "from the tail: the snapshot did not hold")
    XCTAssertFalse(receive(reopened, id: "m2"))
  }
}
