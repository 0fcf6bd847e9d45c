import EventLoop
import Foundation
import JSON
import LinkCore
import TestSupport
import XCTest

@testable import ChatLinkDaemon

/// The dedupe window's snapshot as bytes: what it brings back, and every way it can fail to
/// hold, each of which reads the store's tail instead (`DedupeCheckpointTests`: in the store).
final class DedupeSnapshotTests: XCTestCase {
  private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

  private let seq: UInt64 = 42

  private func expectation(
    capacity: Int = 20, configured: [String] = [], storeLastSeq: UInt64 = 42
  ) -> DedupeSnapshot.Expectation {
    DedupeSnapshot.Expectation(
      storeLastSeq: storeLastSeq, capacity: capacity, configuredRooms: configured.map(bytes),
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
    let encoded = DedupeSnapshot.encode(window(), seq: seq, configuredRooms: [bytes("7")])
    let restored = try XCTUnwrap(
      DedupeSnapshot.decode(encoded, expected: expectation(configured: ["7"])))
    XCTAssertEqual(restored.fromSeq, 42)
    XCTAssertEqual(restored.lastSeq, 42)
    XCTAssertEqual(restored.roomSeqs, [:])
    var back = restored.window
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

  func testASnapshotThatKnowsALaterRecordOrOfAnotherWindowSizeOrFewerConfiguredRoomsDoesNotHold() {
    let encoded = DedupeSnapshot.encode(window(), seq: seq, configuredRooms: [bytes("7")])
    XCTAssertTrue(
      nil == DedupeSnapshot.decode(encoded, expected: expectation(storeLastSeq: 41)),
      "a store that ends before the snapshot is not its store")
    XCTAssertEqual(
      DedupeSnapshot.decode(encoded, expected: expectation(storeLastSeq: 900))?.fromSeq, 42,
      "records stored since are read on top")
    XCTAssertTrue(nil == DedupeSnapshot.decode(encoded, expected: expectation(capacity: 30)))
    XCTAssertTrue(
      nil == DedupeSnapshot.decode(encoded, expected: expectation(configured: ["7", "8"])),
      "a room configured since may have been read from the tail only")
    XCTAssertNotNil(DedupeSnapshot.decode(encoded, expected: expectation(configured: [])))
  }

  /// A checkpoint's parts: the header at seq 10, room 7 at seq 15, room 8 at seq 10.
  private func parts(endRooms: Int = 2, lastSeq: UInt64 = 15) throws -> [UInt8] {
    let window = window()
    var out = DedupeSnapshot.header(of: window, fromSeq: 10, configuredRooms: [])
    out += DedupeSnapshot.room(bytes("7"), ids: try XCTUnwrap(window.ids(of: bytes("7"))), seq: 15)
    out += DedupeSnapshot.room(
      bytes(#""ops""#), ids: try XCTUnwrap(window.ids(of: bytes(#""ops""#))), seq: 10)
    out += DedupeSnapshot.end(rooms: endRooms, lastSeq: lastSeq)
    let sum = out.withUnsafeBytes(DedupeSnapshot.checksum)
    withUnsafeBytes(of: sum.littleEndian) { out.append(contentsOf: $0) }
    return out
  }

  func testARoomWrittenAfterTheCheckpointBeganKeepsTheSeqItsIDsRunTo() throws {
    let restored = try XCTUnwrap(
      DedupeSnapshot.decode(try parts(), expected: expectation(storeLastSeq: 20)))
    XCTAssertEqual(restored.fromSeq, 10)
    XCTAssertEqual(restored.lastSeq, 15)
    XCTAssertEqual(restored.roomSeqs, [bytes("7"): 15])
    XCTAssertEqual(restored.window.count, 23)
    XCTAssertTrue(
      nil == DedupeSnapshot.decode(try parts(), expected: expectation(storeLastSeq: 14)),
      "the store lacks a record room 7 knows")
    XCTAssertTrue(
      nil == DedupeSnapshot.decode(try parts(endRooms: 3), expected: expectation(storeLastSeq: 20)),
      "a room's part missing")
    XCTAssertTrue(
      nil == DedupeSnapshot.decode(try parts(lastSeq: 14), expected: expectation(storeLastSeq: 20)),
      "a room past the end's last seq")
    var unknownTag = try parts()
    let end = unknownTag.count - 8 - 13  // the end: its tag, the room count, the last seq
    XCTAssertEqual(unknownTag[end], 2)
    unknownTag[end] = 3
    unknownTag.replaceSubrange(
      (unknownTag.count - 8)...,
      with: withUnsafeBytes(
        of: unknownTag.withUnsafeBytes {
          DedupeSnapshot.checksum(UnsafeRawBufferPointer(rebasing: $0[..<(unknownTag.count - 8)]))
        }.littleEndian, Array.init))
    XCTAssertTrue(
      nil == DedupeSnapshot.decode(unknownTag, expected: expectation(storeLastSeq: 20)),
      "a part of no known kind, its checksum right")
  }

  func testTheChecksumFedInPartsIsTheChecksumOfTheWhole() {
    var generator = SystemRandomNumberGenerator()
    let bytes = (0..<200).map { _ in UInt8.random(in: 0...255, using: &generator) }
    let whole = bytes.withUnsafeBytes(DedupeSnapshot.checksum)
    for first in stride(from: 0, through: 200, by: 3) {
      for second in stride(from: first, through: 200, by: 5) {
        var sum = DedupeSnapshotChecksum()
        bytes.withUnsafeBytes { raw in
          sum.add(UnsafeRawBufferPointer(rebasing: raw[..<first]))
          sum.add(UnsafeRawBufferPointer(rebasing: raw[first..<second]))
          sum.add(UnsafeRawBufferPointer(rebasing: raw[second...]))
        }
        XCTAssertEqual(sum.value, whole, "parts at \(first) and \(second)")
      }
    }
    XCTAssertNotEqual(Array(bytes.dropLast()).withUnsafeBytes(DedupeSnapshot.checksum), whole)
  }

  func testASnapshotOfThePreviousFormatIsRefusedEvenWithItsChecksumRight() {
    // CLDWIN03 hashed ids another way: its hashes would find none of the same ids again.
    let encoded = DedupeSnapshot.encode(window(), seq: seq, configuredRooms: [])
    var older = Array(encoded.dropLast(8))
    older[7] = UInt8(ascii: "3")
    XCTAssertEqual(Array(older[..<8]), bytes("CLDWIN03"))
    let sum = older.withUnsafeBytes(DedupeSnapshot.checksum).littleEndian
    withUnsafeBytes(of: sum) { older.append(contentsOf: $0) }
    XCTAssertNotNil(DedupeSnapshot.decode(encoded, expected: expectation()))
    XCTAssertNil(DedupeSnapshot.decode(older, expected: expectation()))
  }

  func testADamagedOrCutSnapshotIsRefusedAtEveryByte() {
    let encoded = DedupeSnapshot.encode(window(), seq: seq, configuredRooms: [])
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
}
