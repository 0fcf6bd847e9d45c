import ChatLinkDaemon
import Foundation
import JSON
import LinkCore
import WebSocket
import XCTest

final class StoreRecordTests: XCTestCase {
  private func line(_ record: StoreRecord) -> String {
    var out: [UInt8] = []
    record.appendLine(to: &out)
    return String(decoding: out, as: UTF8.self)
  }

  private let time = Timestamp(microseconds: 1_764_676_800_123_456)

  func testJSONPayloadsAreEmbeddedAsJSON() throws {
    let text = line(
      StoreRecord(
        seq: 42, time: time, direction: .inbound, room: Array("7".utf8),
        payload: .text(Array(#"{"event":"message","data":{"room_id":7}}"#.utf8))))
    XCTAssertEqual(
      text,
      #"{"seq":42,"time":"2025-12-02T12:00:00.123456Z","dir":"in","room":7,"type":"json","data":{"event":"message","data":{"room_id":7}}}"#
        + "\n")
    let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
    XCTAssertEqual((object?["data"] as? [String: Any])?["event"] as? String, "message")
  }

  /// A JSON line short enough is written in one piece through a stack buffer, a longer one
  /// member by member: the bytes must not tell which, at every length around the limit, for
  /// a string room and a number room, a known and an unknown scan, and a line appended after
  /// others.
  func testJSONLinesAroundTheOnePieceLimitAreTheSameAsAnyOther() throws {
    var formatter = TimestampFormatter()
    for room in [Array("7".utf8), Array(#""lobby""#.utf8)] {
      let fixed =
        #"{"seq":9,"time":"2025-12-02T12:00:00.123456Z","dir":"in","room":"#.utf8.count
        + room.count + #","type":"json","data":"#.utf8.count + 2
      for lineLength in (StoreRecord.inlineLineLimit - 110)...(StoreRecord.inlineLineLimit + 110) {
        let filler = String(repeating: "x", count: max(0, lineLength - fixed - 8))
        let payload = Array(#"{"t":"\#(filler)"}"#.utf8)
        let expected =
          #"{"seq":9,"time":"2025-12-02T12:00:00.123456Z","dir":"in","room":"#
          + String(decoding: room, as: UTF8.self) + #","type":"json","data":"#
          + String(decoding: payload, as: UTF8.self) + "}\n"
        for scan in [PayloadScan.unscanned, .json(hasLineBreaks: false)] {
          var out = Array("earlier\n".utf8)
          StoreRecord(seq: 9, time: time, direction: .inbound, room: room, payload: .text(payload))
            .appendLine(to: &out, scan: scan, formatter: &formatter)
          XCTAssertEqual(String(decoding: out, as: UTF8.self), "earlier\n" + expected)
          // An outbound record with its client id: plain, and one that needs an escape.
          for (id, quoted) in [("0a1b-c.d:e_F", "0a1b-c.d:e_F"), (#"a"b"#, #"a\"b"#)] {
            var out = Array("earlier\n".utf8)
            StoreRecord(
              seq: 9, time: time, direction: .outbound, room: room, clientID: id,
              payload: .text(payload)
            ).appendLine(to: &out, scan: scan, formatter: &formatter)
            let withID = expected.replacingOccurrences(of: #""dir":"in""#, with: #""dir":"out""#)
              .replacingOccurrences(
                of: #","type":"json","data":"#, with: #","type":"json","id":"\#(quoted)","data":"#)
            XCTAssertEqual(String(decoding: out, as: UTF8.self), "earlier\n" + withID)
          }
        }
      }
    }
  }

  func testTextAndBinaryPayloadsAreKeptLosslessly() throws {
    let text = line(
      StoreRecord(
        seq: 1, time: time, direction: .inbound, room: nil,
        payload: .text(Array("not {json}\n\"x\"".utf8))))
    XCTAssertEqual(text.filter { $0 == "\n" }.count, 1)
    let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
    XCTAssertEqual(object?["type"] as? String, "text")
    XCTAssertEqual(object?["data"] as? String, "not {json}\n\"x\"")
    XCTAssertTrue(object?["room"] is NSNull)

    let bytes: [UInt8] = [0, 1, 2, 254, 255]
    let binary = line(
      StoreRecord(seq: 2, time: time, direction: .inbound, room: nil, payload: .binary(bytes)))
    let decoded = try JSONSerialization.jsonObject(with: Data(binary.utf8)) as? [String: Any]
    XCTAssertEqual(decoded?["type"] as? String, "binary")
    XCTAssertEqual(Base64.decode(decoded?["data"] as? String ?? ""), bytes)
  }

  /// A record, and the History reply that carries it, must parse wherever the frame did:
  /// frames too deep to embed with room to spare are kept as text instead.
  func testDeeplyNestedFramesStayReadableInRecordsAndReplies() throws {
    for depth in [JSONScanner.embeddedMaxDepth, JSONScanner.embeddedMaxDepth + 1, 128] {
      let frame = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
      let record = line(
        StoreRecord(
          seq: 1, time: time, direction: .inbound, room: nil, payload: .text(Array(frame.utf8))))
      let reply = #"{"parameters":{"records":["# + record.dropLast() + "]}}"
      let parsed = try JSONValue.parse(reply)
      let stored = parsed["parameters"]?["records"]?.arrayValue?.first
      if depth <= JSONScanner.embeddedMaxDepth {
        XCTAssertEqual(stored?["type"]?.stringValue, "json", "depth \(depth)")
        XCTAssertEqual(stored?["data"]?.description, frame)
      } else {
        XCTAssertEqual(stored?["type"]?.stringValue, "text", "depth \(depth)")
        XCTAssertEqual(stored?["data"]?.stringValue, frame)
      }
    }
  }

  func testPrettyPrintedJSONIsMinifiedOntoOneLine() throws {
    let text = line(
      StoreRecord(
        seq: 3, time: time, direction: .outbound, room: Array("\"ops\"".utf8), clientID: "c-9",
        payload: .text(Array("{\n \"a\": 1\n}".utf8))))
    XCTAssertEqual(text.filter { $0 == "\n" }.count, 1)
    XCTAssertTrue(
      text.contains(#""dir":"out","room":"ops","type":"json","id":"c-9","data":{"a":1}}"#))
  }

  func testSeqIsReadBackFromTheLinePrefix() {
    let text = line(
      StoreRecord(
        seq: 18_446_744_073_709_551_615, time: time, direction: .inbound, room: nil,
        payload: .text([])))
    XCTAssertEqual(Array(text.utf8).withUnsafeBytes { StoreRecord.seq(ofLine: $0) }, UInt64.max)
    XCTAssertNil(Array(#"{"seq":x,"#.utf8).withUnsafeBytes { StoreRecord.seq(ofLine: $0) })
    XCTAssertNil(Array(#"{"other":1}"#.utf8).withUnsafeBytes { StoreRecord.seq(ofLine: $0) })
    XCTAssertNil(
      Array(#"{"seq":99999999999999999999999,"#.utf8).withUnsafeBytes {
        StoreRecord.seq(ofLine: $0)
      })
  }

  func testTheCachingFormatterAgreesWithTheFullFormatter() {
    var formatter = TimestampFormatter()
    for micros: Int64 in [
      0, 1, 999_999, 1_000_000, 1_764_676_800_123_456, 1_764_676_800_999_999, 1_764_676_801_000_000,
      -1,
    ] {
      var fast: [UInt8] = []
      formatter.append(Timestamp(microseconds: micros), to: &fast)
      XCTAssertEqual(
        String(decoding: fast, as: UTF8.self), Timestamp(microseconds: micros).rfc3339, "\(micros)")
    }
  }

  func testTimestampsFormatAndParseRFC3339() {
    XCTAssertEqual(Timestamp(microseconds: 0).rfc3339, "1970-01-01T00:00:00.000000Z")
    XCTAssertEqual(
      Timestamp(microseconds: 951_782_400_000_001).rfc3339, "2000-02-29T00:00:00.000001Z")
    XCTAssertEqual(Timestamp(rfc3339: "2025-12-02T12:00:00.123456Z"), time)
    XCTAssertEqual(Timestamp(rfc3339: "2025-12-02T13:00:00.123456+01:00"), time)
    XCTAssertEqual(Timestamp(rfc3339: "1970-01-01T00:00:01Z")?.microseconds, 1_000_000)
    XCTAssertNil(Timestamp(rfc3339: "2025-13-02T12:00:00Z"))
    XCTAssertNil(Timestamp(rfc3339: "yesterday"))
    let now = Timestamp.now()
    XCTAssertEqual(Timestamp(rfc3339: now.rfc3339), now)
  }
}
