import LinkCore
import XCTest

final class FIFOBufferTests: XCTestCase {
  func testElementsLeaveFromTheFrontInOrder() {
    var buffer = FIFOBuffer<Int>()
    buffer.append(contentsOf: 1...5)
    XCTAssertEqual(Array(buffer.takeFirst(while: { $0 <= 2 })), [1, 2])
    XCTAssertEqual(Array(buffer.takeFirst(while: { $0 <= 2 })), [])
    XCTAssertEqual(Array(buffer.elements), [3, 4, 5])
    XCTAssertEqual(buffer.count, 3)
    buffer.append(6)
    XCTAssertEqual(Array(buffer.takeFirst(while: { _ in true })), [3, 4, 5, 6])
    XCTAssertTrue(buffer.isEmpty)
  }

  func testDroppingFromTheFrontCountsWhatLeftAndKeepsTheRestAcrossCompaction() {
    var buffer = FIFOBuffer<Int>()
    buffer.append(contentsOf: 0..<3000)
    XCTAssertEqual(buffer.dropFirst(while: { $0 < 0 }), 0)
    XCTAssertEqual(buffer.dropFirst(while: { $0 < 1500 }), 1500)
    XCTAssertEqual(buffer.elements.first, 1500)
    XCTAssertEqual(buffer.count, 1500)
    XCTAssertEqual(buffer.dropFirst(while: { $0 < 2999 }), 1499)
    XCTAssertEqual(Array(buffer.elements), [2999])
    XCTAssertEqual(buffer.dropFirst(while: { _ in true }), 1)
    XCTAssertTrue(buffer.isEmpty)
  }

  func testTakingFromTheFrontSharesMemoryYetNeitherSideSeesTheOthersChanges() {
    var buffer = FIFOBuffer<String>()
    buffer.append(contentsOf: (0..<3000).map { "m\($0)" })
    let first = buffer.takeFirst(while: { $0 != "m1200" })
    XCTAssertEqual(first.count, 1200)
    XCTAssertEqual(first.first, "m0")
    XCTAssertEqual(first.last, "m1199")
    // Taken while the first slice is alive: compaction and appends copy, never change it.
    let second = buffer.takeFirst(while: { $0 != "m2500" })
    buffer.append("new")
    XCTAssertEqual(Array(first), (0..<1200).map { "m\($0)" })
    XCTAssertEqual(Array(second), (1200..<2500).map { "m\($0)" })
    XCTAssertEqual(Array(buffer.elements), (2500..<3000).map { "m\($0)" } + ["new"])
    XCTAssertTrue(buffer.takeFirst(while: { _ in false }).isEmpty)
    XCTAssertEqual(buffer.takeFirst(while: { _ in true }).count, 501)
    XCTAssertTrue(buffer.isEmpty)
  }

  func testAnElementIsRemovedFromTheFrontOrTheMiddleByItsIndex() {
    var buffer = FIFOBuffer<String>()
    buffer.append(contentsOf: ["a", "b", "c", "d"])
    XCTAssertEqual(buffer.remove(at: buffer.elements.startIndex), "a")
    let c = buffer.elements.firstIndex(of: "c")!
    XCTAssertEqual(buffer.remove(at: c), "c")
    XCTAssertEqual(Array(buffer.elements), ["b", "d"])
  }

  func testALongRunOfRemovalsKeepsTheRestIntactAcrossCompaction() {
    var buffer = FIFOBuffer<Int>()
    buffer.append(contentsOf: 0..<10_000)
    var taken: [Int] = []
    for limit in stride(from: 999, to: 10_000, by: 1000) {
      taken += buffer.takeFirst(while: { $0 <= limit })
      XCTAssertEqual(buffer.elements.first, limit + 1 < 10_000 ? limit + 1 : nil)
    }
    XCTAssertEqual(taken, Array(0..<10_000))
    buffer.append(7)
    XCTAssertEqual(Array(buffer.elements), [7])
    buffer.removeAll()
    XCTAssertTrue(buffer.isEmpty)
  }
}
