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

  func testRejectsInvalidJSONAndDeepNesting() {
    XCTAssertThrowsError(try JSONValue.parse("{"))
    XCTAssertThrowsError(try JSONValue.parse("[1,]"))
    XCTAssertThrowsError(
      try JSONValue.parse(String(repeating: "[", count: 100) + String(repeating: "]", count: 100)))
  }

  func testObjectsLeaveOutNilMembersAndIntegralDoublesPrintAsIntegers() {
    let value = JSONValue.object(["a": .int(1), "b": nil, "c": .double(2.0), "d": .double(0.5)])
    XCTAssertEqual(value.description, #"{"a":1,"c":2,"d":0.5}"#)
    XCTAssertEqual(JSONValue.double(.infinity).description, "null")
    XCTAssertEqual(JSONValue.int(3), JSONValue.double(3))
  }
}
