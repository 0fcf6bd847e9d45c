import EventLoop
import TestSupport
import XCTest

@testable import ChatLinkDaemon

/// The buffers handed to the disk thread and back (`HandedBytes`, `SpareBuffer`).
final class BufferReuseTests: XCTestCase {
  private var loop: EventLoop!

  override func setUpWithError() throws {
    loop = try EventLoop()
  }

  func testTakingTheBytesLeavesTheBoxEmptyAndTheTakenArrayItsOnlyOwner() {
    let box = HandedBytes(Array(repeating: 7, count: 100_000))
    var taken = box.take()
    XCTAssertTrue(box.bytes.isEmpty)
    let address = taken.withUnsafeBufferPointer { $0.baseAddress }
    taken.removeAll(keepingCapacity: true)
    taken.append(1)
    // Unique: emptying and refilling it moved nothing.
    XCTAssertEqual(taken.withUnsafeBufferPointer { $0.baseAddress }, address)
  }

  func testASpareIsHandedOutEmptyWithItsMemoryForTheNextWrite() throws {
    let spare = try SpareBuffer(loop: loop) {}
    var written = Array(repeating: UInt8(9), count: 300_000)
    let capacity = written.capacity
    let box = HandedBytes(written)
    written = []  // the box is the only owner, as the loop's buffer is once handed over
    spare.keep(box)
    let next = spare.take(reserving: 1000)
    XCTAssertTrue(next.isEmpty)
    XCTAssertEqual(next.capacity, capacity)
    // Taken once: the following write starts fresh, with what it asks for.
    let after = spare.take(reserving: 1000)
    XCTAssertGreaterThanOrEqual(after.capacity, 1000)
    XCTAssertLessThan(after.capacity, capacity)
  }

  func testOutsizedBuffersAreNotKept() throws {
    let spare = try SpareBuffer(loop: loop) {}
    spare.keep(HandedBytes(Array(repeating: 1, count: SpareBuffer.limit + 1)))
    XCTAssertEqual(spare.take(reserving: 0).capacity, 0)
  }

  func testTheSpareIsGivenBackASecondAfterTheLastWrite() throws {
    var released = 0
    let spare = try SpareBuffer(loop: loop) { released += 1 }
    spare.keep(HandedBytes(Array(repeating: 1, count: 500_000)))
    let start = loop.now
    try spin(loop, timeout: 3_000_000) { released == 1 }
    XCTAssertGreaterThanOrEqual(loop.now - start, SpareBuffer.keepFor.wholeMicroseconds - 200_000)
    XCTAssertEqual(spare.take(reserving: 0).capacity, 0, "the memory was not given back")
  }
}
