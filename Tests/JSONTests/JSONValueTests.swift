import JSON
import XCTest

final class JSONValueTests: XCTestCase {
  func testParsesAndSerialisesEveryKind() throws {
    let text = #"{"a":[1,-2.5,true,false,null,"x\"y"],"b":{"c":"é"},"d":12345678901}"#
    let value = try JSONValue.parse(text)
    XCTAssertEqual(value["a"]?.arrayValue?.count, 6)
    XCTAssertEqual(value["a"]?.arrayValue?[1].doubleValue, -2.5)
    XCTAssertEqual(value["b"]?["c"]?.stringValue, "é")
    XCTAssertEqual(value["d"]?.intValue, 12_345_678_901)
    XCTAssertEqual(value.description, text)
    XCTAssertEqual(try JSONValue.parse(value.description), value)
  }

  func testStringsWithEscapesAnywhereInAWordOrABlockParseToTheirText() throws {
    // Strings are skipped to their next escape many bytes a step.
    for before in 0..<34 {
      for after in [0, 1, 7, 8, 16, 17] {
        for (escape, meaning) in [
          (#"\""#, "\""), (#"\\"#, "\\"), (#"\n"#, "\n"), (#"\u00e9"#, "é"), ("é", "é"),
          (#"\\\""#, "\\\""),
        ] {
          let head = String(repeating: "a", count: before)
          let tail = String(repeating: "b", count: after)
          let value = try JSONValue.parse(#"["\#(head)\#(escape)\#(tail)","next"]"#)
          XCTAssertEqual(
            value.arrayValue?.map(\.stringValue), [head + meaning + tail, "next"],
            "\(before) \(escape) \(after)")
        }
      }
    }
  }

  func testRejectsInvalidJSONAndDeepNesting() {
    XCTAssertThrowsError(try JSONValue.parse("{"))
    XCTAssertThrowsError(try JSONValue.parse("[1,]"))
    XCTAssertThrowsError(try JSONValue.parse(nested(JSONScanner.maxDepth + 1)))
  }

  /// The store keeps every frame the scanner accepts, and History parses records with
  /// JSONValue: a limit lower than the scanner's would silently drop stored messages.
  func testParseAcceptsExactlyTheNestingTheScannerAccepts() throws {
    for depth in [63, 64, 65, 100, JSONScanner.maxDepth] {
      let text = nested(depth)
      XCTAssertTrue(Array(text.utf8).withUnsafeBytes { JSONScanner.isValid($0) })
      XCTAssertEqual(try JSONValue.parse(text).description, text, "depth \(depth)")
    }
    let tooDeep = nested(JSONScanner.maxDepth + 1)
    XCTAssertFalse(Array(tooDeep.utf8).withUnsafeBytes { JSONScanner.isValid($0) })
  }

  func testNumbersBeyondDoubleRangeSurviveARoundTrip() throws {
    for text in ["1e400", "-1e400", "[1e999,-2E+500]"] {
      let value = try JSONValue.parse(text)
      XCTAssertEqual(try JSONValue.parse(value.description), value, text)
    }
    XCTAssertEqual(try JSONValue.parse("1e400").description, "1e999")
    XCTAssertEqual(JSONValue.double(.nan).description, "null")
  }

  func testEqualValuesHashAlikeAndEqualityIsTransitive() throws {
    // 2^53 + 1 is not a double: it must not equal 2^53.0, which equals the integer 2^53.
    let big = JSONValue.int(9_007_199_254_740_993)
    XCTAssertNotEqual(big, .double(9_007_199_254_740_992))
    XCTAssertEqual(JSONValue.int(9_007_199_254_740_992), .double(9_007_199_254_740_992))
    XCTAssertEqual(JSONValue.int(0), .double(-0.0))
    let pairs: [(JSONValue, JSONValue)] = [
      (.int(3), .double(3)),
      (.int(0), .double(-0.0)),
      (.string("\u{E9}"), .string("e\u{301}")),
      (
        try JSONValue.parse(#"{"a":[1,"é"]}"#),
        .object([("a", .array([.double(1), .string("e\u{301}")]))])
      ),
    ]
    for (a, b) in pairs {
      XCTAssertEqual(a, b)
      XCTAssertEqual(a.hashValue, b.hashValue, "\(a) and \(b)")
      XCTAssertEqual(Set([a, b]).count, 1)
    }
    XCTAssertNotEqual(JSONValue.array([.int(1)]).hashValue, JSONValue.array([.int(2)]).hashValue)
  }

  private func nested(_ depth: Int) -> String {
    String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
  }

  func testObjectsLeaveOutNilMembersAndIntegralDoublesPrintAsIntegers() {
    let value = JSONValue.object(["a": .int(1), "b": nil, "c": .double(2.0), "d": .double(0.5)])
    XCTAssertEqual(value.description, #"{"a":1,"c":2,"d":0.5}"#)
    XCTAssertEqual(JSONValue.double(.infinity).description, "1e999")
    XCTAssertEqual(JSONValue.int(3), JSONValue.double(3))
  }
}
