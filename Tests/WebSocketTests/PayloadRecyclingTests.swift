import WebSocket
import XCTest

/// Payload memory handed back by the consumer (`recycle`) and reused for the next messages:
/// the assembler's side (inflated and fragmented messages) and the session's routing between
/// the assembler and the frame decoder.
final class PayloadRecyclingTests: XCTestCase {
  private func address(_ bytes: [UInt8]) -> UInt? {
    bytes.withUnsafeBufferPointer { $0.baseAddress.map { UInt(bitPattern: $0) } }
  }

  private func frame(_ payload: [UInt8], opcode: Opcode = .text, fin: Bool = true, rsv1: Bool)
    -> Frame
  {
    Frame(
      header: FrameHeader(fin: fin, rsv1: rsv1, opcode: opcode, payloadLength: payload.count),
      payload: payload)
  }

  func testAnInflatedMessageIsBuiltInTheMemoryOfARecycledOne() throws {
    let deflater = try MessageDeflater.make()
    var assembler = MessageAssembler(inflater: try MessageInflater.make())
    let long = Array("the first message, longer than the second".utf8)
    var first = try XCTUnwrap(
      try assembler.consume(frame(try deflater.compress(long), rsv1: true))
    ).bytes
    XCTAssertEqual(first, long)
    let memory = address(first)
    assembler.recycle(first)
    first = []
    XCTAssertTrue(assembler.hasSpare)
    let text = Array("the second".utf8)
    let compressed = try deflater.compress(text)
    let second = try XCTUnwrap(try assembler.consume(frame(compressed, rsv1: true)))
    XCTAssertEqual(second, .text(text))
    XCTAssertEqual(address(second.bytes), memory)
    XCTAssertFalse(assembler.hasSpare)
    // The compressed payload was copied (inflated): it is free for the frame decoder.
    XCTAssertEqual(assembler.takeSpentPayload(), compressed)
    XCTAssertNil(assembler.takeSpentPayload())
  }

  func testAFragmentedMessageReusesTheRecycledMemoryAndAWholeFrameIsNeverSpent() throws {
    var assembler = MessageAssembler()
    let whole = try XCTUnwrap(try assembler.consume(frame(Array("whole".utf8), rsv1: false)))
    // A single uncompressed frame is the message itself: nothing was copied, nothing spent.
    XCTAssertNil(assembler.takeSpentPayload())
    var recycled = [UInt8](repeating: 0, count: 64)
    let memory = address(recycled)
    assembler.recycle(recycled)
    recycled = []
    XCTAssertNil(try assembler.consume(frame(Array("frag".utf8), fin: false, rsv1: false)))
    XCTAssertEqual(assembler.takeSpentPayload(), Array("frag".utf8))
    let message = try XCTUnwrap(
      try assembler.consume(frame(Array("ments".utf8), opcode: .continuation, rsv1: false)))
    XCTAssertEqual(message, .text(Array("fragments".utf8)))
    XCTAssertEqual(address(message.bytes), memory)
    XCTAssertEqual(whole, .text(Array("whole".utf8)))
  }

  func testARecycledMessageStillHeldElsewhereIsNeverChanged() throws {
    let deflater = try MessageDeflater.make()
    var assembler = MessageAssembler(inflater: try MessageInflater.make())
    let kept = try XCTUnwrap(
      try assembler.consume(frame(try deflater.compress(Array("kept".utf8)), rsv1: true)))
    assembler.recycle(kept.bytes)
    let next = try XCTUnwrap(
      try assembler.consume(frame(try deflater.compress(Array("next".utf8)), rsv1: true)))
    XCTAssertEqual(kept, .text(Array("kept".utf8)))
    XCTAssertEqual(next, .text(Array("next".utf8)))
  }

  func testBigMessagesAreNotKept() throws {
    var assembler = MessageAssembler()
    assembler.recycle([UInt8](repeating: 1, count: FrameDecoder.spareCapacity + 1))
    XCTAssertFalse(assembler.hasSpare)
    assembler.recycle([])
    XCTAssertFalse(assembler.hasSpare)
  }
}
