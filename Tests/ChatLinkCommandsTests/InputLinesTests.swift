import XCTest

@testable import ChatLinkCommands

/// `send -`'s reader of standard input: lines found wherever the reads split them.
final class InputLinesTests: XCTestCase {
  /// Every line `InputLines` gives for `input`, read `piece` bytes at a time (the first read
  /// of `first` bytes), with a buffer of `bufferSize`.
  private func lines(_ input: [UInt8], first: Int, piece: Int, bufferSize: Int) -> [[UInt8]] {
    var rest = input[...]
    var reads = 0
    var reader = InputLines(
      read: { buffer in
        reads += 1
        let count = min(buffer.count, rest.count, reads == 1 ? first : piece)
        for (offset, byte) in rest.prefix(count).enumerated() { buffer[offset] = byte }
        rest = rest.dropFirst(count)
        return count
      }, pieceSize: bufferSize)
    var found: [[UInt8]] = []
    while reader.next({ found.append(Array($0)) }) {}
    XCTAssertFalse(reader.next { _ in XCTFail("a line after the end") })
    return found
  }

  func testLinesAreFoundWhereverTheReadsSplitThem() {
    let input = Array("one\r\ntwo\n\n\r\n  three  \nä😀\nlast without newline".utf8)
    let expected = ["one", "two", "  three  ", "ä😀", "last without newline"].map { Array($0.utf8) }
    for first in 1...input.count {
      for piece in [1, 2, 3, 7, 64] {
        XCTAssertEqual(
          lines(input, first: first, piece: piece, bufferSize: 8), expected,
          "first read \(first), then \(piece)")
      }
    }
    XCTAssertEqual(lines(input, first: 4096, piece: 4096, bufferSize: 65536), expected)
  }

  func testALineLongerThanTheBufferGrowsItAndArrivesWhole() {
    let long = Array(repeating: UInt8(ascii: "x"), count: 10_000)
    let input = Array("a\n".utf8) + long + Array("\nb".utf8)
    XCTAssertEqual(
      lines(input, first: 3, piece: 100, bufferSize: 16), [[UInt8(ascii: "a")], long, [0x62]])
  }

  func testBytesThatAreNotUTF8AreRepairedAsAStringWouldHaveThem() {
    let input: [UInt8] = [0x61, 0xFF, 0x62, 0x0A, 0xE2, 0x82, 0x0A, 0x63, 0xC3]
    let repaired = [[0x61, 0xFF, 0x62], [0xE2, 0x82], [0x63, 0xC3]].map {
      Array(String(decoding: $0 as [UInt8], as: UTF8.self).utf8)
    }
    XCTAssertEqual(repaired[0], Array("a\u{FFFD}b".utf8))
    XCTAssertEqual(lines(input, first: 2, piece: 3, bufferSize: 4), repaired)
  }

  func testNoInputAndOnlyEmptyLinesGiveNoLines() {
    XCTAssertEqual(lines([], first: 1, piece: 1, bufferSize: 4), [])
    XCTAssertEqual(lines(Array("\n\r\n\n\r".utf8), first: 1, piece: 1, bufferSize: 1), [])
  }
}
