import ChatLinkDaemon
import EventLoop
import Foundation
@preconcurrency import Glibc
import JSON
import LinkCore
import TestSupport
import XCTest

final class OutboxTests: XCTestCase {
  private var loop: EventLoop!
  private var disk: BackgroundWorker!
  private let dir = TemporaryDirectory()

  override func setUpWithError() throws {
    loop = try EventLoop()
    disk = try BackgroundWorker(loop: loop, name: "test-disk")
  }

  private func open(max: Int = 100) throws -> Outbox {
    try Outbox(loop: loop, disk: disk, directory: dir.path, maxMessages: max)
  }

  /// Starts an enqueue and spins the loop until its completion has run.
  private func completed<T>(_ start: (@escaping (T) -> Void) -> Void) throws -> T {
    var result: T?
    start { result = $0 }
    try spin(loop) { result != nil }
    return try XCTUnwrap(result)
  }

  @discardableResult
  private func send(_ outbox: Outbox, _ text: String, room: String? = "7", id: String? = nil) throws
    -> Result<OutboxEntry, OutboxError>
  {
    try completed {
      outbox.enqueue(room: room.flatMap(RoomID.init), text: text, id: id, completion: $0)
    }
  }

  func testAcceptedMessagesAreDurableBeforeTheCompletionAndSurviveARestart() throws {
    var outbox: Outbox? = try open()
    var enqueued = 0
    outbox?.onEnqueued = { enqueued += 1 }
    let a = try send(outbox!, "first").get()
    let b = try send(outbox!, "second\nline", room: "ops").get()
    XCTAssertEqual(enqueued, 2)
    XCTAssertNotEqual(a.id, b.id)
    XCTAssertEqual(b.count, a.count + 1)
    XCTAssertEqual(dir.lines(Outbox.fileName).count, 2)
    outbox = nil
    let reopened = try open()
    XCTAssertEqual(reopened.pending.map(\.text), ["first", "second\nline"])
    XCTAssertEqual(reopened.pending.map(\.room), [RoomID("7"), RoomID("ops")])
    XCTAssertEqual(reopened.pending.map(\.id), [a.id, b.id])
    let c = try send(reopened, "third").get()
    XCTAssertGreaterThan(c.count, b.count)
  }

  func testAnIdleDiskTakesABatchAtOnceAndWhatFollowsSharesTheNextJob() throws {
    let outbox = try open()
    var done: [Int] = []
    outbox.enqueue(room: RoomID("7"), texts: ["a", "b"]) { _ in done.append(1) }
    // Written without a loop turn: the job left with the call, not at the end of the iteration.
    let deadline = Date().addingTimeInterval(5)
    while dir.lines(Outbox.fileName).count < 1 && Date() < deadline { usleep(1000) }
    XCTAssertEqual(dir.lines(Outbox.fileName).count, 1)
    // While that job is on the disk, the next calls wait and go together in one job.
    outbox.enqueue(room: RoomID("7"), texts: ["c"]) { _ in done.append(2) }
    outbox.enqueue(room: RoomID("7"), texts: ["d"]) { _ in done.append(3) }
    usleep(50_000)
    XCTAssertEqual(dir.lines(Outbox.fileName).count, 1, "the second job waits for the first")
    try spin(loop) { done.count == 3 }
    XCTAssertEqual(done, [1, 2, 3])
    XCTAssertEqual(dir.lines(Outbox.fileName).count, 3)
  }

  private func sendBatch(_ outbox: Outbox, _ texts: [String], room: String? = "7") throws
    -> Result<ArraySlice<OutboxEntry>, OutboxError>
  {
    try completed {
      outbox.enqueue(room: room.flatMap(RoomID.init), texts: PackedStrings(texts), completion: $0)
    }
  }

  func testABatchIsDurableInOrderWithConsecutiveCountsBeforeItsCompletion() throws {
    var outbox: Outbox? = try open()
    var enqueued = 0
    outbox?.onEnqueued = { enqueued += 1 }
    let single = try send(outbox!, "alone").get()
    let batch = try sendBatch(outbox!, ["b1", "b2 \"quoted\"", "b3\nline"]).get()
    XCTAssertEqual(batch.map(\.text), ["b1", "b2 \"quoted\"", "b3\nline"])
    XCTAssertEqual(batch.map(\.count), [2, 3, 4].map { single.count - 1 + $0 })
    XCTAssertEqual(Set(batch.map(\.id)).count, 3)
    XCTAssertEqual(enqueued, 2)
    // Durable when the completion ran: the lines are in the file already, the single send's
    // an `add` line and the batch's one `batch` line.
    let lines = dir.lines(Outbox.fileName)
    XCTAssertEqual(lines.count, 2)
    XCTAssertTrue(lines[0].hasPrefix(#"{"op":"add","id":"\#(single.id)","room":7,"#), lines[0])
    XCTAssertTrue(
      lines[1].hasPrefix(#"{"op":"batch","room":7,"count":\#(batch[0].count),"time":""#), lines[1])
    let ids = batch.map { #""\#($0.id)""# }.joined(separator: ",")
    XCTAssertTrue(
      lines[1].hasSuffix(#"","ids":[\#(ids)],"texts":["b1","b2 \"quoted\"","b3\nline"]}"#),
      lines[1])
    outbox = nil
    let reopened = try open()
    XCTAssertEqual(reopened.pending.map(\.text), ["alone", "b1", "b2 \"quoted\"", "b3\nline"])
    XCTAssertEqual(Array(reopened.pending.map(\.id).dropFirst()), batch.map(\.id))
    XCTAssertEqual(Array(reopened.pending.dropFirst()), Array(batch))
    XCTAssertTrue(reopened.pending[1].isInBatch(of: reopened.pending[3]))
  }

  func testBatchesAndSinglesInOneLoopTurnShareOneWriteAndEachGetsItsOwnEntries() throws {
    let outbox = try open()
    var results: [Result<ArraySlice<OutboxEntry>, OutboxError>] = []
    var single: Result<OutboxEntry, OutboxError>?
    outbox.enqueue(room: RoomID("7"), texts: ["a1", "a2"]) { results.append($0) }
    outbox.enqueue(room: RoomID("7"), text: "s") { single = $0 }
    outbox.enqueue(room: RoomID("ops"), texts: ["b1"]) { results.append($0) }
    try spin(loop) { results.count == 2 && single != nil }
    XCTAssertEqual(try results[0].get().map(\.text), ["a1", "a2"])
    XCTAssertEqual(try single?.get().text, "s")
    XCTAssertEqual(try results[1].get().map(\.text), ["b1"])
    XCTAssertEqual(try results[1].get().first?.room, RoomID("ops"))
    XCTAssertEqual(outbox.pending.map(\.text), ["a1", "a2", "s", "b1"])
    XCTAssertEqual(outbox.pending.map(\.count), [1, 2, 3, 4])
  }

  func testABatchThatDoesNotFitIsRefusedWholeAndNothingOfItIsKept() throws {
    var outbox: Outbox? = try open(max: 4)
    _ = try sendBatch(outbox!, ["1", "2"]).get()
    guard case .failure(let error) = try sendBatch(outbox!, ["3", "4", "5"]) else {
      return XCTFail("a batch past MaxMessages was accepted")
    }
    XCTAssertEqual(error, .full(limit: 4))
    XCTAssertEqual(outbox?.pending.map(\.text), ["1", "2"])
    // Exactly filling the outbox is fine.
    XCTAssertEqual(try sendBatch(outbox!, ["3", "4"]).get().map(\.text), ["3", "4"])
    outbox = nil
    XCTAssertEqual(try open(max: 4).pending.map(\.text), ["1", "2", "3", "4"])
  }

  func testAnEmptyBatchAcceptsNothingAndWritesNothing() throws {
    let outbox = try open()
    XCTAssertEqual(try sendBatch(outbox, []).get().count, 0)
    XCTAssertEqual(outbox.pending.count, 0)
    XCTAssertEqual(dir.lines(Outbox.fileName).count, 0)
  }

  func testAClientIDSentTwiceBeforeItIsDurableIsOneMessage() throws {
    var outbox: Outbox? = try open()
    var results: [Result<OutboxEntry, OutboxError>] = []
    // Both in one loop turn: the first is not yet on the disk when the second arrives.
    outbox?.enqueue(room: RoomID("7"), text: "once", id: "dup-1") { results.append($0) }
    outbox?.enqueue(room: RoomID("7"), text: "twice", id: "dup-1") { results.append($0) }
    try spin(loop) { results.count == 2 }
    // And once more while its disk job is under way (the disk is held meanwhile).
    disk.submit({ usleep(50_000) }, completion: { _ in })
    outbox?.enqueue(room: RoomID("7"), text: "x", id: "dup-2") { results.append($0) }
    try loop.runOnce(timeout: 1000)
    outbox?.enqueue(room: RoomID("7"), text: "y", id: "dup-2") { results.append($0) }
    try spin(loop) { results.count == 4 }
    let entries = try results.map { try $0.get() }
    XCTAssertEqual(entries.map(\.id), ["dup-1", "dup-1", "dup-2", "dup-2"])
    XCTAssertEqual(entries.map(\.text), ["once", "once", "x", "x"])
    XCTAssertEqual(outbox?.pending.map(\.id), ["dup-1", "dup-2"])
    outbox = nil
    XCTAssertEqual(try open().pending.map(\.text), ["once", "x"])
    XCTAssertEqual(dir.lines(Outbox.fileName).count, 2)
  }

  func testAcksAndAddsWrittenInOneJobReplayToWhatWasPending() throws {
    var outbox: Outbox? = try open()
    let a = try send(outbox!, "a").get()
    _ = try send(outbox!, "b").get()
    // One loop turn: the ack of a and the add of c go out in one disk job.
    var c: Result<OutboxEntry, OutboxError>?
    outbox?.confirm(id: a.id)
    outbox?.enqueue(room: RoomID("7"), text: "c") { c = $0 }
    outbox?.confirm(through: 0)
    try spin(loop) { c != nil }
    XCTAssertEqual(try c?.get().text, "c")
    outbox = nil
    XCTAssertEqual(try open().pending.map(\.text), ["b", "c"])
  }

  func testConfirmedMessagesAreNotReplayed() throws {
    var outbox: Outbox? = try open()
    let a = try send(outbox!, "a").get()
    _ = try send(outbox!, "b").get()
    outbox?.confirm(id: a.id)
    var idle = false
    outbox?.whenIdle { idle = true }
    try spin(loop) { idle }
    outbox = nil
    XCTAssertEqual(try open().pending.map(\.text), ["b"])
  }

  func testAFullOutboxRefusesWithAClearErrorAndKeepsWhatItHas() throws {
    let outbox = try open(max: 2)
    _ = try send(outbox, "1").get()
    _ = try send(outbox, "2").get()
    guard case .failure(let error) = try send(outbox, "3") else { return XCTFail() }
    XCTAssertEqual(error, .full(limit: 2))
    XCTAssertTrue(error.description.contains("full"))
    XCTAssertEqual(outbox.pending.map(\.text), ["1", "2"])
  }

  func testBatchesThatWaitForRoomAreTakenInTheOrderTheyCameAsConfirmationsMakeRoom() throws {
    let outbox = try open(max: 10)
    let first = try sendBatch(outbox, (1...8).map { "f\($0)" }).get()
    var results: [String: Result<ArraySlice<OutboxEntry>, OutboxError>] = [:]
    func enqueue(_ name: String, _ count: Int, wait: Bool = true) {
      outbox.enqueue(
        room: RoomID("7"), texts: PackedStrings((1...count).map { "\(name)\($0)" }),
        waitForRoom: wait
      ) { results[name] = $0 }
    }
    enqueue("a", 5)  // does not fit: waits
    enqueue("b", 1)  // would fit, but comes after a: waits behind it
    enqueue("c", 1, wait: false)  // refused: others wait for the room it would take
    enqueue("huge", 11)  // could never fit: refused at once
    try spin(loop) { results.count == 2 }
    XCTAssertEqual(results["c"].map { (try? $0.get()) == nil }, true)
    guard case .failure(let full)? = results["huge"] else { return XCTFail("huge was accepted") }
    XCTAssertEqual(full, .full(limit: 10))
    XCTAssertNil(results["a"])
    XCTAssertEqual(outbox.pending.count, 8)
    // Three confirmed: room for a (5 more makes 10), not yet for b.
    outbox.confirm(through: first[first.startIndex + 2].count)
    try spin(loop) { results["a"] != nil }
    XCTAssertNil(results["b"])
    let a = try XCTUnwrap(results["a"]).get()
    XCTAssertEqual(a.map(\.text), ["a1", "a2", "a3", "a4", "a5"])
    XCTAssertEqual(a.first?.count, first.last.map { $0.count + 1 })
    // One confirmed by its echo: room for b, after a.
    outbox.confirm(id: first[first.startIndex + 3].id)
    try spin(loop) { results["b"] != nil }
    let b = try XCTUnwrap(results["b"]).get()
    XCTAssertEqual(b.map(\.count), [a.last!.count + 1])
    XCTAssertEqual(
      outbox.pending.map(\.text), ["f5", "f6", "f7", "f8", "a1", "a2", "a3", "a4", "a5", "b1"])
  }

  func testWaitingForRoomIsBoundedAndWhatWaitsIsNotInTheLog() throws {
    var outbox: Outbox? = try open(max: 1)
    _ = try send(outbox!, "pending").get()
    var results: [Result<ArraySlice<OutboxEntry>, OutboxError>] = []
    // Past the bytes that may wait at once: refused rather than held in memory.
    let big = String(repeating: "x", count: Outbox.waitingTextLimit + 1)
    outbox?.enqueue(room: RoomID("7"), texts: [big], waitForRoom: true) { results.append($0) }
    outbox?.enqueue(room: RoomID("7"), texts: ["small"], waitForRoom: true) { results.append($0) }
    try spin(loop) { results.count == 1 }
    guard case .failure(.full(limit: 1)) = results[0] else { return XCTFail("\(results)") }
    // The small one waits, and is not in the log: a restart has only what was acknowledged.
    outbox = nil
    let reopened = try open(max: 1)
    XCTAssertEqual(reopened.pending.map(\.text), ["pending"])
    XCTAssertEqual(results.count, 1)
  }

  func testClientIDsAreValidatedAndResendingAPendingIDIsIdempotent() throws {
    let outbox = try open()
    let first = try send(outbox, "x", id: "deploy-42").get()
    let again = try send(outbox, "x", id: "deploy-42").get()
    XCTAssertEqual(first, again)
    XCTAssertEqual(outbox.pending.count, 1)
    guard case .failure(.invalidID) = try send(outbox, "x", id: "has space") else {
      return XCTFail()
    }
    guard case .failure(.invalidID) = try send(outbox, "x", id: String(repeating: "a", count: 129))
    else {
      return XCTFail()
    }
  }

  func testReplayCutsATornLineAndSkipsCorruptOnes() throws {
    dir.write(
      Outbox.fileName,
      #"{"op":"add","id":"a","room":7,"count":1,"time":"2026-01-01T00:00:00Z","text":"keep"}"#
        + "\n"
        + "garbage\n"
        + #"{"op":"add","id":"b","room":null,"count":2,"time":"2026-01-01T00:00:00Z","text":"raw"}"#
        + "\n"
        + #"{"op":"add","id":"c","roo"#)
    let outbox = try open()
    XCTAssertEqual(outbox.pending.map(\.id), ["a", "b"])
    XCTAssertNil(outbox.pending[1].room)
    XCTAssertEqual(outbox.corruptLines, 1)
    XCTAssertTrue(dir.read(Outbox.fileName).hasSuffix("\"text\":\"raw\"}\n"))
    XCTAssertEqual(try send(outbox, "next").get().count, 3)
  }

  func testTheLogIsCompactedOnceItGrowsAndStillReplaysCorrectly() throws {
    var outbox: Outbox? = try open(max: 100_000)
    let text = String(repeating: "x", count: 1000)
    var keep: [OutboxEntry] = []
    for i in 0..<1500 {
      // What stays pending has rooms of both kinds (and none), and a text of its own, which
      // the compacted log must keep with its time and count.
      let room = [nil, "7", "ops \"room\""][i / 500]
      let entry = try send(outbox!, i % 500 == 0 ? "kept \(i)\n\u{7F}" : text, room: room).get()
      if i % 500 == 0 { keep.append(entry) } else { outbox?.confirm(id: entry.id) }
    }
    var idle = false
    outbox?.whenIdle { idle = true }
    try spin(loop) { idle }
    XCTAssertLessThan(FileSystem.size(dir.path + "/" + Outbox.fileName) ?? 0, 1_200_000)
    outbox = nil
    let reopened = try open()
    XCTAssertEqual(reopened.pending.map(\.id), keep.map(\.id))
    XCTAssertEqual(Array(reopened.pending), keep)
    XCTAssertEqual(reopened.pending.map(\.room?.name), [nil, "7", "ops \"room\""])
    XCTAssertEqual(try send(reopened, "after").get().count, 1501)
  }

  func testACompactionWritesWhatIsLeftOfEachBatchAsOneLineAndReplaysToTheSameEntries() throws {
    var outbox: Outbox? = try open(max: 100_000)
    let first = try sendBatch(outbox!, ["a0", "a1", "a2 \"middle\"", "a3", "a4\n"]).get()
    let raw = try sendBatch(outbox!, ["r0", "r1"], room: nil).get()
    let single = try send(outbox!, "alone", room: "ops \"room\"").get()
    // An echo confirms one in the middle of the first batch: what is left of it is two runs.
    outbox?.confirm(id: first[first.startIndex + 2].id)
    // Confirmed filler grows the log past the compaction threshold.
    let filler = String(repeating: "x", count: 1000)
    for _ in 0..<1200 {
      let entry = try send(outbox!, filler).get()
      outbox?.confirm(id: entry.id)
    }
    var idle = false
    outbox?.whenIdle { idle = true }
    try spin(loop) { idle }
    let lines = dir.lines(Outbox.fileName)
    XCTAssertTrue(lines[0].hasPrefix(#"{"op":"counter","count":"#), lines[0])
    let kinds = lines.dropFirst().prefix(4).map { $0.prefix(13) }
    XCTAssertEqual(
      kinds, [#"{"op":"batch""#, #"{"op":"batch""#, #"{"op":"batch""#, #"{"op":"add",""#])
    XCTAssertTrue(lines[1].contains(#""texts":["a0","a1"]"#), lines[1])
    XCTAssertTrue(lines[2].contains(#""texts":["a3","a4\n"]"#), lines[2])
    XCTAssertTrue(lines[3].hasPrefix(#"{"op":"batch","room":null,"#), lines[3])
    XCTAssertLessThan(FileSystem.size(dir.path + "/" + Outbox.fileName) ?? 0, 1_000_000)
    outbox = nil
    let reopened = try open()
    var expected = Array(first)
    expected.remove(at: 2)
    expected += Array(raw) + [single]
    XCTAssertEqual(Array(reopened.pending), expected)
    XCTAssertEqual(reopened.pending.map(\.created), expected.map(\.created))
    XCTAssertEqual(try send(reopened, "after").get().count, single.count + 1201)
  }

  func testABigPendingBacklogIsNotRewrittenOnEveryWrite() throws {
    // 1.5 MB of unconfirmed messages (the backend is away): past the 1 MiB threshold, but a
    // compaction cannot shrink it, so it must not run again until the log doubled.
    var outbox: Outbox? = try open(max: 100_000)
    let text = String(repeating: "p", count: 1000)
    _ = try sendBatch(outbox!, Array(repeating: text, count: 1500)).get()
    func inode() -> UInt64 {
      var info = stat()
      return stat(dir.path + "/" + Outbox.fileName, &info) == 0 ? UInt64(info.st_ino) : 0
    }
    var rewrites = 0
    var last = inode()
    for i in 0..<200 {
      _ = try send(outbox!, "small \(i)").get()
      if inode() != last { rewrites += 1 }
      last = inode()
    }
    XCTAssertLessThanOrEqual(rewrites, 1, "the whole backlog was rewritten \(rewrites) times")
    outbox = nil
    XCTAssertEqual(try open(max: 100_000).pending.count, 1700)
  }

  func testAStorageFailureRefusesTheSendAndLeavesNothingHalfWritten() throws {
    let outbox = try open()
    _ = try send(outbox, "before").get()
    let size = FileSystem.size(dir.path + "/" + Outbox.fileName) ?? 0
    let result = try withFileSizeLimit(size + 10) { try send(outbox, "this line does not fit") }
    guard case .failure(.storageFailed) = result else { return XCTFail("\(result)") }
    XCTAssertEqual(outbox.pending.map(\.text), ["before"])
    XCTAssertEqual(FileSystem.size(dir.path + "/" + Outbox.fileName), size)
    XCTAssertEqual(try send(outbox, "after").get().text, "after")
  }

  func testAStorageFailureRefusesEveryMessageOfTheBatchAndKeepsNoneOfThem() throws {
    let outbox = try open()
    _ = try send(outbox, "before").get()
    let size = FileSystem.size(dir.path + "/" + Outbox.fileName) ?? 0
    // The first line alone would fit: the batch must be refused as a whole all the same.
    let result = try withFileSizeLimit(size + 100) {
      try sendBatch(outbox, ["fits", String(repeating: "y", count: 200), "z"])
    }
    guard case .failure(.storageFailed) = result else { return XCTFail("\(result)") }
    XCTAssertEqual(outbox.pending.map(\.text), ["before"])
    XCTAssertEqual(FileSystem.size(dir.path + "/" + Outbox.fileName), size)
    XCTAssertEqual(try sendBatch(outbox, ["after"]).get().map(\.text), ["after"])
    XCTAssertEqual(try open().pending.map(\.text), ["before", "after"])
  }

  func testConfirmingThroughACountRemovesTheOldestAndSurvivesARestart() throws {
    var outbox: Outbox? = try open(max: 10_000)
    var all: [OutboxEntry] = []
    for i in 0..<3000 { all.append(try send(outbox!, "m\(i)").get()) }
    // Generated ids: 16 lowercase hex digits, all different.
    let hex = Set("0123456789abcdef".utf8)
    XCTAssertTrue(all.allSatisfy { $0.id.utf8.count == 16 && $0.id.utf8.allSatisfy(hex.contains) })
    XCTAssertEqual(Set(all.map(\.id)).count, all.count)
    // Confirm in bursts, as pongs do: the dropped prefix is reclaimed along the way.
    var confirmed = 0
    for end in stride(from: 99, to: 2500, by: 100) {
      confirmed += outbox!.confirm(through: all[end].count)
      XCTAssertEqual(outbox!.pending.first?.count, all[end + 1].count)
      XCTAssertEqual(outbox!.pending.count, 3000 - end - 1)
    }
    XCTAssertEqual(confirmed, 2500)
    XCTAssertEqual(Array(outbox!.pending), Array(all[2500...]))
    XCTAssertEqual(outbox!.confirm(through: all[0].count), 0)
    // An echo confirms one entry anywhere in the queue.
    XCTAssertEqual(outbox?.confirm(id: all[2700].id), all[2700])
    XCTAssertNil(outbox?.confirm(id: all[2700].id))
    XCTAssertEqual(outbox?.confirm(id: all[2500].id), all[2500])
    let expected = Array(all[2501..<2700] + all[2701...]).map(\.id)
    XCTAssertEqual(outbox?.pending.map(\.id), expected)
    let next = try send(outbox!, "after").get()
    XCTAssertEqual(outbox?.pending.last, next)
    var idle = false
    outbox?.whenIdle { idle = true }
    try spin(loop) { idle }
    // One ack line a burst, not one a message.
    let acks = dir.lines(Outbox.fileName).filter { $0.hasPrefix(#"{"op":"ack""#) }
    XCTAssertEqual(acks.filter { $0.contains(#""through":"#) }.count, 25)
    XCTAssertEqual(acks.count, 25 + 2)
    outbox = nil
    let reopened = try open(max: 10_000)
    XCTAssertEqual(reopened.pending.map(\.id), expected + [next.id])
    XCTAssertEqual(reopened.confirm(through: UInt64.max), expected.count + 1)
    XCTAssertTrue(reopened.pending.isEmpty)
    XCTAssertFalse(reopened.contains(id: next.id))
  }

  func testTextThatNeedsEscapingIsKeptExactly() throws {
    var outbox: Outbox? = try open()
    let texts = [
      "plain", "quote \" and \\ back", "tab\tbell\u{07}del\u{7F}", "héllo 🚀", "line\r\n",
    ]
    for text in texts { _ = try send(outbox!, text, id: nil) }
    outbox = nil
    XCTAssertEqual(try open().pending.map(\.text), texts)
  }

  func testRoomIDsAreNumbersWhenCanonicalAndStringsOtherwise() {
    XCTAssertEqual(RoomID("7")?.json, Array("7".utf8))
    XCTAssertEqual(RoomID("007")?.json, Array("\"007\"".utf8))
    XCTAssertEqual(RoomID("ops")?.json, Array("\"ops\"".utf8))
    XCTAssertNil(RoomID(""))
    XCTAssertNil(RoomID("a\nb"))
    XCTAssertEqual(Array("\"ops\"".utf8).withUnsafeBytes { RoomID(json: $0) }, RoomID("ops"))
    XCTAssertEqual(Array("12".utf8).withUnsafeBytes { RoomID(json: $0) }, RoomID("12"))
    XCTAssertEqual(RoomID("a\"b")?.json, Array(#""a\"b""#.utf8))
    XCTAssertEqual(Set([RoomID("7"), RoomID("7"), RoomID("8")]).count, 2)
  }

  // MARK: Releases (MQTT QoS 2)

  /// Releases `entries` and spins the loop until `onReleased` reports; returns what it did.
  private func release(_ outbox: Outbox, _ entries: [OutboxEntry]) throws -> [OutboxEntry] {
    var reported: [OutboxEntry]?
    outbox.onReleased = { reported = (reported ?? []) + $0 }
    for entry in entries { outbox.release(entry) }
    try spin(loop) { reported?.count ?? 0 >= entries.count }
    return reported ?? []
  }

  func testAReleaseIsReportedOnlyOnceItsLineIsDurableAndSurvivesARestart() throws {
    var outbox: Outbox? = try open()
    let a = try send(outbox!, "a").get()
    let b = try send(outbox!, "b").get()
    var reported: [OutboxEntry] = []
    outbox?.onReleased = { reported += $0 }
    outbox?.release(a)
    outbox?.release(a)
    XCTAssertEqual(reported, [], "not before its line is written and fsynced")
    try spin(loop) { !reported.isEmpty }
    XCTAssertEqual(reported.map(\.id), [a.id], "one report for a release asked twice")
    XCTAssertTrue(reported[0].released)
    XCTAssertTrue(dir.lines(Outbox.fileName).contains(#"{"op":"released","id":"\#(a.id)"}"#))
    XCTAssertEqual(outbox?.pending.map(\.released), [true, false])
    outbox = nil
    let reopened = try open()
    XCTAssertEqual(reopened.pending.map(\.id), [a.id, b.id])
    XCTAssertEqual(reopened.pending.map(\.released), [true, false])
    XCTAssertEqual(try release(reopened, [a]).map(\.id), [a.id], "already released: at once")
  }

  func testAReleaseOfAnEntryConfirmedMeanwhileIsNothing() throws {
    let outbox = try open()
    let a = try send(outbox, "a").get()
    outbox.confirm(a)
    var reported = false
    outbox.onReleased = { _ in reported = true }
    outbox.release(a)
    try spin(loop, for: 50_000)
    XCTAssertFalse(reported)
    XCTAssertFalse(dir.read(Outbox.fileName).contains("released"))
  }

  func testAReleasedEntryStaysReleasedThroughACompactionAndItsAckRemovesIt() throws {
    var outbox: Outbox? = try open(max: 100_000)
    let kept = try send(outbox!, "kept").get()
    _ = try release(outbox!, [kept])
    let text = String(repeating: "x", count: 1000)
    for _ in 0..<1200 {
      let entry = try send(outbox!, text).get()
      outbox?.confirm(entry)
    }
    var idle = false
    outbox?.whenIdle { idle = true }
    try spin(loop) { idle }
    XCTAssertLessThan(FileSystem.size(dir.path + "/" + Outbox.fileName) ?? 0, 1_000_000)
    outbox = nil
    let reopened = try open()
    XCTAssertEqual(reopened.pending.map(\.id), [kept.id])
    XCTAssertEqual(reopened.pending.map(\.released), [true])
    reopened.confirm(kept)
    idle = false
    reopened.whenIdle { idle = true }
    try spin(loop) { idle }
    XCTAssertEqual(try open().pending, [])
  }

  func testAReleaseWhoseWriteFailsIsRetriedAndReportedOnceWritten() throws {
    let outbox = try open()
    let a = try send(outbox, "a").get()
    let size = FileSystem.size(dir.path + "/" + Outbox.fileName) ?? 0
    var reported: [OutboxEntry] = []
    outbox.onReleased = { reported += $0 }
    try withFileSizeLimit(size + 5) {
      outbox.release(a)
      // Until the disk worker has tried and failed: under load it may take a while, and a
      // write after the limit is lifted would succeed.
      try spin(loop, timeout: 10_000_000) { outbox.failedReleaseWrites > 0 }
    }
    XCTAssertEqual(reported, [], "the disk refused the line")
    XCTAssertEqual(FileSystem.size(dir.path + "/" + Outbox.fileName), size)
    try spin(loop, timeout: 5_000_000) { !reported.isEmpty }
    XCTAssertEqual(reported.map(\.id), [a.id])
    XCTAssertEqual(try open().pending.map(\.released), [true])
  }
}
