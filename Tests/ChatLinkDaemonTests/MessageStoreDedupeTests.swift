import EventLoop
import Foundation
import JSON
import LinkCore
import TestSupport
import WebSocket
import XCTest

@testable import ChatLinkDaemon

/// The store's dedupe window: what it drops, what it writes, and what it knows again after a
/// restart, a rotation and a quiet room far back in the store.
final class MessageStoreDedupeTests: XCTestCase {
  private var loop: EventLoop!
  private var disk: BackgroundWorker!
  private let dir = TemporaryDirectory()

  override func setUpWithError() throws {
    loop = try EventLoop()
    disk = try BackgroundWorker(loop: loop, name: "test-disk")
  }

  private func open(
    window: Int = 100, rooms: [String] = [], tail: Int = 200_000, maxFileSize: Int = 64 << 20
  ) throws -> MessageStore {
    var options = MessageStore.Options(
      directory: dir.path, syncInterval: .milliseconds(10), maxFileSize: maxFileSize,
      maxFiles: 8, dedupeWindow: window, rooms: rooms.compactMap(RoomID.init))
    options.dedupeTailRecords = tail
    let store = try MessageStore(loop: loop, disk: disk, options: options)
    var ready = false
    store.whenDedupeReady { ready = true }
    try spin(loop) { ready }
    return store
  }

  @discardableResult
  private func receive(
    _ store: MessageStore, room: String = "7", id: String?, _ text: String = #"{"m":1}"#,
    at time: Timestamp = Timestamp(microseconds: 1_700_000_000_000_000)
  ) -> (seq: UInt64, duplicate: Bool) {
    store.appendInbound(testID: id, room: Array(room.utf8), text: text, time: time)
  }

  private func durable(_ store: MessageStore) throws {
    var done = false
    store.whenDurable { done = true }
    try spin(loop) { done }
  }

  private func storedIDs() -> [String] {
    dir.lines(MessageStore.fileName).compactMap { line in
      (try? JSONValue.parse(line))?.objectValue?.first { $0.key == "id" }?.value.stringValue
    }
  }

  func testAMessageWhoseIDItsRoomHasIsDroppedAndCounted() throws {
    let store = try open()
    XCTAssertEqual(receive(store, id: "a").duplicate, false)
    XCTAssertEqual(receive(store, id: "b").duplicate, false)
    let again = receive(store, id: "a")
    XCTAssertTrue(again.duplicate)
    XCTAssertEqual(again.seq, 2, "acknowledged once what is stored is durable")
    XCTAssertFalse(receive(store, room: "8", id: "a").duplicate, "another room")
    XCTAssertFalse(receive(store, id: nil).duplicate, "no id: always kept")
    XCTAssertFalse(receive(store, id: nil).duplicate)
    XCTAssertEqual(store.duplicatesDropped, 1)
    try durable(store)
    XCTAssertEqual(storedIDs(), ["a", "b", "a"])
    XCTAssertEqual(dir.lines(MessageStore.fileName).count, 5)
  }

  func testTheIDIsWrittenAsAStringWithEscapesWhereItNeedsThem() throws {
    let store = try open()
    receive(store, id: #"x"y"#)
    receive(store, id: "42", #"not json"#)
    try durable(store)
    let lines = dir.lines(MessageStore.fileName)
    XCTAssertTrue(
      lines[0].contains(#""type":"json","id":"x\"y","meta":{"k":"x\"y"},"data":{"m":1}"#), lines[0])
    XCTAssertTrue(
      lines[1].contains(#""type":"text","id":"42","meta":{"k":"42"},"data":"not json""#), lines[1])
  }

  func testAfterARestartTheStoresTailKnowsItsIDsAndEachRoomsNewestWithItsTime() throws {
    var store: MessageStore? = try open()
    func time(_ n: Int) -> Timestamp { Timestamp(microseconds: 1_700_000_000_000_000 + Int64(n)) }
    for n in 1...30 {
      receive(store!, room: n % 2 == 0 ? "7" : #""ops""#, id: "m\(n)", at: time(n))
    }
    XCTAssertEqual(
      store!.newestIDs(of: [RoomID("7")!])[RoomID("7")!],
      RoomPosition(id: Array("m30".utf8), time: time(30)))
    try durable(store!)
    store = nil
    let reopened = try open()
    XCTAssertEqual(reopened.newestStoredTime, time(30), "the newest record of any room")
    XCTAssertTrue(receive(reopened, id: "m2").duplicate)
    XCTAssertTrue(receive(reopened, room: #""ops""#, id: "m29").duplicate)
    XCTAssertFalse(receive(reopened, room: #""ops""#, id: "m2").duplicate)
    let newest = reopened.newestIDs(of: [RoomID("7")!, RoomID("ops")!, RoomID("9")!])
    XCTAssertEqual(
      newest[RoomID("7")!], RoomPosition(id: Array("m30".utf8), time: time(30)),
      "the time read back from the store's line")
    XCTAssertEqual(newest[RoomID("ops")!]?.id, Array("m2".utf8), "the newest stored, a new one")
    XCTAssertNil(newest[RoomID("9")!])
  }

  func testTheWindowIsRebuiltAcrossRotatedFiles() throws {
    var store: MessageStore? = try open(maxFileSize: 4096)
    // In several writes: a full file rotates before the next write.
    for n in 1...200 {
      receive(store!, id: "m\(n)", String(repeating: "x", count: 40))
      if n % 20 == 0 { try durable(store!) }
    }
    store = nil
    XCTAssertGreaterThan(
      FileManager.default.storeFileNames(atPath: dir.path).count, 1, "the store rotated")
    let reopened = try open(maxFileSize: 4096)
    XCTAssertTrue(receive(reopened, id: "m150").duplicate)
    XCTAssertTrue(receive(reopened, id: "m101").duplicate, "the window holds the newest 100")
    XCTAssertFalse(receive(reopened, id: "m100").duplicate)
  }

  func testAQuietConfiguredRoomFarBackInTheStoreKeepsItsWindow() throws {
    var store: MessageStore? = try open(rooms: ["quiet"])
    for n in 1...5 { receive(store!, room: #""quiet""#, id: "q\(n)") }
    for n in 1...300 { receive(store!, room: "7", id: "m\(n)") }
    try durable(store!)
    store = nil
    // Only the newest 50 records are read for every room; the quiet room is looked up.
    let reopened = try open(rooms: ["quiet"], tail: 50)
    XCTAssertTrue(receive(reopened, room: #""quiet""#, id: "q1").duplicate)
    XCTAssertEqual(
      reopened.newestIDs(of: [RoomID("quiet")!])[RoomID("quiet")!]?.id, Array("q5".utf8))
    XCTAssertTrue(receive(reopened, room: "7", id: "m290").duplicate)
    XCTAssertFalse(receive(reopened, room: "7", id: "m10").duplicate, "beyond the tail read")
  }

  func testARestartKnowsEscapedIDsTheRoomlessAndManyRoomsFromTheTail() throws {
    var store: MessageStore? = try open()
    receive(store!, id: #"x"y\z"#)
    receive(store!, id: "héllo")
    // No room: the store writes `"room":null`.
    func roomless(_ store: MessageStore) -> Bool {
      store.appendInbound(testID: "lone", room: nil).duplicate
    }
    XCTAssertFalse(roomless(store!))
    // More rooms than the rebuild compares byte by byte.
    for room in 1...100 { receive(store!, room: "\(1000 + room)", id: "r\(room)") }
    try durable(store!)
    store = nil
    let reopened = try open()
    XCTAssertTrue(receive(reopened, id: #"x"y\z"#).duplicate)
    XCTAssertTrue(receive(reopened, id: "héllo").duplicate)
    XCTAssertTrue(receive(reopened, room: "1001", id: "r1").duplicate)
    XCTAssertTrue(receive(reopened, room: "1100", id: "r100").duplicate)
    XCTAssertFalse(receive(reopened, room: "1100", id: "r99").duplicate, "another room's id")
    XCTAssertTrue(roomless(reopened))
    XCTAssertFalse(receive(reopened, room: #""null""#, id: "lone").duplicate, "a room named null")
    XCTAssertEqual(
      reopened.newestIDs(of: [RoomID("7")!])[RoomID("7")!]?.id, Array("héllo".utf8),
      "the newest id, unescaped")
  }

  func testAZeroWindowKeepsEveryMessage() throws {
    let store = try open(window: 0)
    XCTAssertFalse(receive(store, id: "a").duplicate)
    XCTAssertFalse(receive(store, id: "a").duplicate)
    XCTAssertEqual(store.duplicatesDropped, 0)
  }

  func testTheRebuildReadsOnlyInboundLinesWithAnIDAndSkipsWhatIsNotOurs() {
    func parse(_ line: String) -> (id: String, room: String)? {
      Array(line.utf8).withUnsafeBytes(DedupeRebuild.idAndRoom(ofLine:)).map {
        (String(decoding: $0.id, as: UTF8.self), String(decoding: $0.room, as: UTF8.self))
      }
    }
    let inbound = #"{"seq":1,"time":"t","dir":"in","room":7,"type":"json","id":"a","data":{}}"#
    XCTAssertEqual(parse(inbound)?.id, "a")
    XCTAssertEqual(parse(inbound)?.room, "7")
    XCTAssertEqual(
      parse(#"{"seq":2,"time":"t","dir":"in","room":null,"type":"text","id":"b","data":"x"}"#)?
        .room, "")
    XCTAssertNil(parse(#"{"seq":3,"time":"t","dir":"out","room":7,"id":"c","data":{}}"#))
    XCTAssertNil(parse(#"{"seq":4,"time":"t","dir":"in","room":7,"data":{}}"#))
    XCTAssertNil(parse(#"{"seq":5,"dir":"in","room":7,"id":"#))
    XCTAssertNil(parse("not json at all"))
  }
}
