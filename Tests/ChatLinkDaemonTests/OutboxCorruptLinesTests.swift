import JSON
import LinkCore
import XCTest

@testable import ChatLinkDaemon

/// The outbox log replayed with lines of every kind damaged in every way a crash, a disk or a
/// hand can damage them: each damaged line is skipped and counted, and no good line around it
/// is lost.
final class OutboxCorruptLinesTests: XCTestCase {
  private let before =
    Array(
      #"{"op":"add","id":"a","room":7,"count":1,"time":"2026-01-01T00:00:00Z","text":"first"}"#.utf8
    )
    + [0x0A]
  private let after =
    Array(
      #"{"op":"batch","room":"ops","count":2,"time":"2026-01-01T00:00:00Z","ids":["b","c"],"texts":["x","y"]}"#
        .utf8) + [0x0A]

  /// Damaged lines, by the kind of line they were meant to be.
  private let damaged: [String: [[UInt8]]] = [
    "add": [
      #"{"op":"add","id":5,"room":7,"count":9,"text":"t"}"#,
      #"{"op":"add","room":7,"count":9,"text":"t"}"#,
      #"{"op":"add","id":"x","room":7,"count":9,"text":5}"#,
      #"{"op":"add","id":"x","room":7,"count":9}"#,
      #"{"op":"add","id":"x","room":7,"count":"9","text":"t"}"#,
      #"{"op":"add","id":"x","room":7,"count":-9,"text":"t"}"#,
      #"{"op":"add","id":"x","room":7,"count":9.5,"text":"t"}"#,
      #"{"op":"add","id":"x","room":7,"count":18446744073709551616,"text":"t"}"#,
      #"{"op":"add","id":"x","room":7,"count":9,"text":"t""#,
      #"{"op":"add","id":"x","room":7,"count":9,"te"#,
      #"{"op":"add","id":"x","room":7,"count":9,"text":"t"}}"#,
    ].map { Array($0.utf8) },
    "batch": [
      #"{"op":"batch","room":7,"count":9,"ids":["x"],"texts":[5]}"#,
      #"{"op":"batch","room":7,"count":9,"ids":["x","y"],"texts":["p"]}"#,
      #"{"op":"batch","room":7,"count":9,"ids":["x"],"texts":["p""#,
      #"{"op":"batch","room":7,"count":9,"ids":["x"],"texts":"p"}"#,
    ].map { Array($0.utf8) },
    "ack": [
      #"{"op":"ack","id":5}"#, #"{"op":"ack"}"#, #"{"op":"ack","through":-1}"#,
      #"{"op":"ack","through":"1"}"#, #"{"op":"ack","id":"a""#,
    ].map { Array($0.utf8) },
    "counter": [
      #"{"op":"counter","count":"9"}"#, #"{"op":"counter","count":-9}"#, #"{"op":"counter"}"#,
      #"{"op":"counter","count":9"#,
    ].map { Array($0.utf8) },
    "any": [
      #"{"op":"move","id":"a"}"#, #"{"id":"a","count":9,"text":"t"}"#, #"{"op":7}"#, "[]",
      #""add""#,
      "", " ", "garbage", "null",
      // A bit flipped in a key or in the op.
      #"{"oq":"add","id":"x","room":7,"count":9,"text":"t"}"#,
      #"{"op":"adf","id":"x","room":7,"count":9,"text":"t"}"#,
    ].map { Array($0.utf8) } + [
      // Zeros where a crash left a hole, alone and before a line that was written after it.
      [UInt8](repeating: 0, count: 4096),
      [0, 0, 0] + Array(#"{"op":"add","id":"x","room":7,"count":9,"text":"t"}"#.utf8),
      // Bytes that are not UTF-8, and a line cut short with the next one glued to it.
      [0xFF, 0xFE, 0x7B, 0x7D],
      Array(#"{"op":"add","id":"x","ro{"op":"add","id":"y","room":7,"count":9,"text":"t"}"#.utf8),
    ],
  ]

  func testEveryKindOfDamagedLineIsSkippedAndCountedAndTheGoodLinesAroundItStay() {
    var total = 0
    for (kind, lines) in damaged.sorted(by: { $0.key < $1.key }) {
      for line in lines {
        let log = OutboxLog(replaying: before + line + [0x0A] + after)
        let shown = "\(kind): \(String(decoding: line.prefix(80), as: UTF8.self))"
        XCTAssertEqual(log.corruptLines, 1, shown)
        XCTAssertEqual(log.pending.map(\.id), ["a", "b", "c"], shown)
        XCTAssertEqual(log.pending.map(\.text), ["first", "x", "y"], shown)
        XCTAssertEqual(log.pending.map(\.count), [1, 2, 3], shown)
        XCTAssertEqual(log.nextCount, 4, "a damaged line's count is not taken: \(shown)")
        XCTAssertEqual(log.wholeLinesLength, before.count + line.count + 1 + after.count, shown)
        total += 1
      }
    }
    // All of them at once: each is counted once, and the good lines still stand.
    var all: [UInt8] = before
    for line in damaged.values.joined() { all += line + [0x0A] }
    all += after + Array(#"{"op":"ack","id":"b"}"#.utf8) + [0x0A]
    let log = OutboxLog(replaying: all)
    XCTAssertEqual(log.corruptLines, total)
    XCTAssertEqual(log.pending.map(\.id), ["a", "c"])
    XCTAssertEqual(log.nextCount, 4)
  }
}
