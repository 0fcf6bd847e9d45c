import JSON
import XCTest

final class JSONTests: XCTestCase {
  private func scan(_ text: String, top: [String] = [], nestedIn: Int? = nil, nested: [String] = [])
    -> JSONScanner.Result?
  {
    Array(text.utf8).withUnsafeBytes {
      JSONScanner.scan(
        $0, topLevel: JSONScanner.Keys(top), nestedIn: nestedIn, nested: JSONScanner.Keys(nested))
    }
  }

  private func slice(_ text: String, _ range: Range<Int>?) -> String? {
    guard let range else { return nil }
    return String(decoding: Array(text.utf8)[range], as: UTF8.self)
  }

  func testScannerReportsUpToEightFieldsPerLevelInline() throws {
    let keys = (0..<8).map { "k\($0)" }
    let text = "{" + keys.reversed().map { "\"\($0)\":\"\($0)v\"" }.joined(separator: ",") + "}"
    let result = try XCTUnwrap(scan(text, top: keys))
    XCTAssertEqual(JSONScanner.FieldRanges.capacity, 8)
    XCTAssertEqual(result.topLevel.count, 8)
    XCTAssertEqual(result.topLevel.map { slice(text, $0) }, keys.map { "\"\($0)v\"" })
    XCTAssertTrue(result.nested.isEmpty)
    var ranges = result.topLevel
    ranges[3] = nil
    XCTAssertNil(ranges[3])
    XCTAssertNotEqual(ranges, result.topLevel)
    ranges[3] = result.topLevel[3]
    XCTAssertEqual(ranges, result.topLevel)
    XCTAssertEqual(ranges.hashValue, result.topLevel.hashValue)
  }

  func testScannerAcceptsValidJSONOfEveryKind() {
    for text in [
      "{}", "[]", "0", "-0.5e+10", "\"\"", "true", "false", "null",
      " { \"a\" : [1, 2.0, {\"b\": null}] } ",
      #""\u00e9\n\"\\\/""#, "\"κόσμε\"", "[[[[]]]]", "1E5",
    ] {
      XCTAssertNotNil(scan(text), text)
    }
  }

  func testScannerRejectsInvalidJSON() {
    for text in [
      "", "{", "}", "[1,]", "{\"a\":}", "{a:1}", "01", "1.", ".5", "-", "tru", "nul", "\"abc",
      "\"a\u{01}b\"", #""\x""#, #""\u12G4""#, "{} {}", "[1 2]", "{\"a\" 1}",
      "\"\u{FFFD}\"".replacingOccurrences(of: "\u{FFFD}", with: "\u{FFFD}") + "x",
      String(repeating: "[", count: 200) + String(repeating: "]", count: 200),
    ] {
      XCTAssertNil(scan(text), text)
    }
    // Invalid UTF-8 inside a string.
    XCTAssertNil([UInt8]([0x22, 0xC0, 0xAF, 0x22]).withUnsafeBytes { JSONScanner.scan($0) })
  }

  func testScannerFindsEveryStringStopAtEveryOffsetOfALongString() {
    // Strings are walked eight bytes a step: a quote, a backslash or a control character must
    // end the plain run wherever it falls in a word, and bytes that merely look close (0x1F
    // apart, 0x80 and up, neighbours of the stops) must not.
    let plain: [[UInt8]] = [
      [0x20], [0x21], [0x23], [0x5B], [0x5D], [0x7F], [0xC3, 0xA9], [0xE2, 0x82, 0xAC],
      [0xF0, 0x9F, 0x98, 0x80],
    ]
    for before in 0..<20 {
      for after in [0, 1, 7, 8, 9, 17] {
        let head = [UInt8](repeating: UInt8(ascii: "a"), count: before)
        let tail = [UInt8](repeating: UInt8(ascii: "b"), count: after)
        for middle in plain + [Array(#"\""#.utf8), Array(#"\\"#.utf8), Array(#"\u00e9"#.utf8)] {
          let content = head + middle + tail
          let text = Array(#"{"k":""#.utf8) + content + Array(#""}"#.utf8)
          let result = text.withUnsafeBytes {
            JSONScanner.scan($0, topLevel: JSONScanner.Keys(["k"]))
          }
          XCTAssertEqual(
            result?.topLevel[0], 5..<(7 + content.count), "\(before) \(middle) \(after)")
        }
        for stop: UInt8 in [0x00, 0x01, 0x0A, 0x1F] {
          let text = [0x22] + head + [stop] + tail + [0x22]
          XCTAssertNil(text.withUnsafeBytes { JSONScanner.scan($0) }, "\(before) \(stop) \(after)")
        }
        // A quote anywhere in a word ends the string exactly there.
        let pair =
          Array(#"{"k":""#.utf8) + head + Array(#"","z":""#.utf8) + tail + Array(#""}"#.utf8)
        let ranges = pair.withUnsafeBytes {
          JSONScanner.scan($0, topLevel: JSONScanner.Keys(["k", "z"]))?.topLevel
        }
        XCTAssertEqual(ranges?[0], 5..<(7 + before))
        XCTAssertEqual(ranges?[1], (12 + before)..<(14 + before + after))
      }
    }
  }

  func testDecimalsAreWrittenWithEveryDigitAndNothingMore() {
    for value: UInt64 in [0, 7, 9, 10, 99, 100, 12_345, 1_000_000, UInt64(UInt32.max), .max] {
      var out: [UInt8] = [UInt8(ascii: "<")]
      out.appendDecimal(value)
      out.append(UInt8(ascii: ">"))
      XCTAssertEqual(String(decoding: out, as: UTF8.self), "<\(value)>")
    }
    var out: [UInt8] = []
    out.append(maxCount: 16) { writer in
      writer.writeDecimal(42, width: 6)
      writer.write(UInt8(ascii: ","))
      writer.writeDecimal(0, width: 2)
      writer.write(StaticString(",x"))
      [UInt8(ascii: "y")].withUnsafeBytes { writer.write($0) }
      writer.write(UnsafeRawBufferPointer(start: nil, count: 0))
    }
    XCTAssertEqual(String(decoding: out, as: UTF8.self), "000042,00,xy")
  }

  func testTimestampsFormatTheSameWithAndWithoutTheCachedSecondAndText() {
    var formatter = TimestampFormatter()
    // Repeats (the cached text), steps within a second (the cached date part), steps back,
    // and times before 1970.
    for micros: Int64 in [
      0, 0, 1, 999_999, 1_000_000, 1_764_676_800_123_456, 1_764_676_800_123_456,
      1_764_676_800_123_457, 1_764_676_800_123_456, 1_764_676_799_999_999, -1, -1, -1_000_001,
      1_764_676_800_123_456,
    ] {
      let time = Timestamp(microseconds: micros)
      var cached: [UInt8] = []
      formatter.append(time, to: &cached)
      var fresh: [UInt8] = []
      time.append(to: &fresh)
      XCTAssertEqual(
        String(decoding: cached, as: UTF8.self), String(decoding: fresh, as: UTF8.self))
      XCTAssertEqual(cached.count, TimestampFormatter.length)
    }
  }

  func testAResultFilledInPlaceMatchesTheReturnedOneScanAfterScan() {
    // One result reused across scans, as the envelope dialect keeps it: nothing of an earlier
    // scan may show through.
    var kept = JSONScanner.Result()
    let texts = [
      #"{"event":"message","data":{"room_id":7,"client_id":"c-1"}}"#,
      #"{"event":"other","data":{"message":"no room"}}"#, "not json", "[1,2]",
      #"{"data":{"room_id":"ops"},"event":"message"}"#, #"{"x":1}"#,
    ]
    for keys in [(["event", "data"], ["room_id", "client_id"]), (["x"], [])] {
      for text in texts {
        let bytes = Array(text.utf8)
        let top = JSONScanner.Keys(keys.0)
        let nested = JSONScanner.Keys(keys.1)
        let returned = bytes.withUnsafeBytes {
          JSONScanner.scan($0, topLevel: top, nestedIn: 1, nested: nested)
        }
        let ok = bytes.withUnsafeBytes {
          JSONScanner.scan($0, topLevel: top, nestedIn: 1, nested: nested, into: &kept)
        }
        XCTAssertEqual(ok, returned != nil, text)
        if let returned { XCTAssertEqual(kept, returned, text) }
      }
    }
  }

  func testScannerFindsEnvelopeFieldsIncludingEscapedKeys() {
    let text =
      #"{"data": {"sender":"bob","room_id": 7, "client_id":"c-1"}, "ev\u0065nt":"message"}"#
    let result = scan(text, top: ["event", "data"], nestedIn: 1, nested: ["room_id", "client_id"])
    XCTAssertEqual(slice(text, result?.topLevel[0]), "\"message\"")
    XCTAssertEqual(slice(text, result?.nested[0]), "7")
    XCTAssertEqual(slice(text, result?.nested[1]), "\"c-1\"")
    XCTAssertEqual(result?.isObject, true)
    XCTAssertEqual(result?.hasLineBreaks, false)
  }

  func testKeysOfOneLengthPrefixesTheEmptyKeyAndEscapedOnesAreEachFoundForThemselves() {
    let keys = ["ab", "ba", "a", "", "é", "abc"]
    // Members in another order, with look-alikes that match no key (a longer or shorter key,
    // another case), one key escaped and one non-ASCII.
    let text =
      #"{"abcd":0,"abc":1,"A":9,"ba":2,"":3,"é":4,"ab":5,"a":6,"b":7,"éx":8}"#
    let result = scan(text, top: keys)
    XCTAssertEqual(
      keys.indices.map { slice(text, result?.topLevel[$0]) }, ["5", "2", "6", "3", "4", "1"])
    let nested = #"{"x":{"ba":1,"ab":2},"y":3}"#
    let inner = scan(nested, top: ["y", "x"], nestedIn: 1, nested: ["ab", "ba", "c"])
    XCTAssertEqual(slice(nested, inner?.nested[0]), "2")
    XCTAssertEqual(slice(nested, inner?.nested[1]), "1")
    XCTAssertNil(inner?.nested[2])
    XCTAssertEqual(slice(nested, inner?.topLevel[0]), "3")
    XCTAssertEqual(JSONScanner.Keys(keys).count, 6)
    XCTAssertEqual(JSONScanner.Keys.none.count, 0)
    XCTAssertEqual(JSONScanner.Keys(["k"]), JSONScanner.Keys([Array("k".utf8)]))
  }

  /// `{"data":{"room_id":"A"},"data":{…}}` must not be filed under room A: the last of
  /// duplicate keys is the one JSONValue (and every other parser) reads.
  func testScannerReportsNestedFieldsOfTheLastOccurrenceOfADuplicatedKey() {
    let text = #"{"data":{"room_id":"A","client_id":"c"},"data":{"text":"hi"}}"#
    let result = scan(text, top: ["event", "data"], nestedIn: 1, nested: ["room_id", "client_id"])
    XCTAssertEqual(slice(text, result?.topLevel[1]), #"{"text":"hi"}"#)
    XCTAssertNil(result?.nested[0])
    XCTAssertNil(result?.nested[1])
    let scalar = #"{"data":{"room_id":"A"},"data":5}"#
    let second = scan(scalar, top: ["data"], nestedIn: 0, nested: ["room_id"])
    XCTAssertEqual(slice(scalar, second?.topLevel[0]), "5")
    XCTAssertNil(second?.nested[0])
    let later = #"{"data":{"room_id":"A"},"data":{"room_id":"B"}}"#
    XCTAssertEqual(
      slice(later, scan(later, top: ["data"], nestedIn: 0, nested: ["room_id"])?.nested[0]),
      #""B""#)
  }

  func testLineBreaksOutsideStringsAreReportedAndMinified() {
    let text = "{\n  \"a\": \"x y\",\r\n  \"b\": [1, 2]\n}"
    XCTAssertEqual(scan(text)?.hasLineBreaks, true)
    var out: [UInt8] = []
    Array(text.utf8).withUnsafeBytes { JSONString.minify($0, to: &out) }
    XCTAssertEqual(String(decoding: out, as: UTF8.self), #"{"a":"x y","b":[1,2]}"#)
  }

  func testStringEscapingRoundTripsControlCharactersAndQuotes() {
    let text = "line1\nline2\t\"quoted\" \\ \u{01} é"
    let quoted = JSONString.quoted(text)
    XCTAssertFalse(quoted.contains("\n"))
    XCTAssertNotNil(scan(quoted))
    let content = Array(quoted.utf8).dropFirst().dropLast()
    let back = Array(content).withUnsafeBytes { JSONString.unescape($0) }
    XCTAssertEqual(String(decoding: back, as: UTF8.self), text)
  }

  func testEscapingFindsEveryByteToEscapeAtEveryOffsetAndCopiesTheRestAsIs() {
    // Runs are searched sixteen and eight bytes a step: an escape wherever it falls in a block
    // or a word is found, and bytes near the stops (0x20, 0x21, 0x7E, 0x80 and up) are copied.
    func reference(_ bytes: [UInt8]) -> [UInt8] {
      var out: [UInt8] = [0x22]
      for byte in bytes {
        switch byte {
        case 0x22: out += Array(#"\""#.utf8)
        case 0x5C: out += Array(#"\\"#.utf8)
        case 0x0A: out += Array(#"\n"#.utf8)
        case 0x0D: out += Array(#"\r"#.utf8)
        case 0x09: out += Array(#"\t"#.utf8)
        case 0x08: out += Array(#"\b"#.utf8)
        case 0x0C: out += Array(#"\f"#.utf8)
        case 0..<0x20, 0x7F:
          let hex = Array("0123456789abcdef".utf8)
          out += Array(#"\u00"#.utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
        default: out.append(byte)
        }
      }
      return out + [0x22]
    }
    let specials: [[UInt8]] = [
      [0x22], [0x5C], [0x0A], [0x0D], [0x09], [0x08], [0x0C], [0x00], [0x01], [0x1F], [0x7F],
      [0x20], [0x21], [0x7E], [0xC3, 0xA9], [0xF0, 0x9F, 0x98, 0x80], [0x22, 0x22], [0x0A, 0x7F],
    ]
    for before in 0..<34 {
      for after in [0, 1, 7, 8, 15, 16, 17, 33] {
        for middle in specials {
          let bytes =
            [UInt8](repeating: UInt8(ascii: "a"), count: before) + middle
            + [UInt8](repeating: UInt8(ascii: "b"), count: after)
          var out = Array("x".utf8)
          bytes.withUnsafeBytes { JSONString.append($0, to: &out) }
          XCTAssertEqual(out, Array("x".utf8) + reference(bytes), "\(before) \(middle) \(after)")
          var viaString: [UInt8] = []
          viaString.appendJSONString(String(decoding: bytes, as: UTF8.self))
          XCTAssertEqual(viaString, reference(bytes), "\(before) \(middle) \(after)")
        }
      }
    }
    var empty: [UInt8] = []
    empty.appendJSONString("")
    XCTAssertEqual(empty, Array(#""""#.utf8))
  }

  func testUnescapeJoinsSurrogatePairs() {
    let raw = Array(#"\ud83d\ude00 \u00e9"#.utf8)
    XCTAssertEqual(
      String(decoding: raw.withUnsafeBytes { JSONString.unescape($0) }, as: UTF8.self), "😀 é")
  }
}
