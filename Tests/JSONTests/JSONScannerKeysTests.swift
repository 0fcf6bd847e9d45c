import JSON
import XCTest

/// The scanner's key comparison (a word at a time, by length) and the escapes it reports for
/// nested fields' strings.
final class JSONScannerKeysTests: XCTestCase {
  private func nested(_ data: String, keys: [String]) -> (String, JSONScanner.FieldRanges)? {
    let text = "{\"d\":\(data)}"
    let result = Array(text.utf8).withUnsafeBytes {
      JSONScanner.scan(
        $0, topLevel: JSONScanner.Keys(["d"]), nestedIn: 0, nested: JSONScanner.Keys(keys))
    }
    guard let result else { return nil }
    return (text, result.nested)
  }

  private func slice(_ text: String, _ range: Range<Int>?) -> String? {
    guard let range else { return nil }
    return String(decoding: Array(text.utf8)[range], as: UTF8.self)
  }

  /// A key of `length` bytes, its last byte `last`.
  private func key(_ length: Int, last: Character = "z") -> String {
    String((0..<(length - 1)).map { Character(UnicodeScalar(UInt8(97 + $0 % 26))) }) + String(last)
  }

  func testKeysOfEveryLengthAreFoundAndOnesDifferingInTheirFirstOrLastByteAreNot() throws {
    for length in 1...40 {
      let wanted = key(length)
      let lastDiffers = key(length, last: "y")
      let firstDiffers = "Z" + wanted.dropFirst()
      let longer = wanted + "z"
      let shorter = String(wanted.dropLast())
      var members = [lastDiffers, firstDiffers, longer].map { "\"\($0)\":0" }
      if !shorter.isEmpty { members.append("\"\(shorter)\":0") }
      members.append("\"\(wanted)\":\(length)")
      let (text, ranges) = try XCTUnwrap(
        nested("{" + members.joined(separator: ",") + "}", keys: ["q", wanted]), "\(length)")
      XCTAssertNil(ranges[0], "\(length)")
      XCTAssertEqual(slice(text, ranges[1]), "\(length)", "\(length)")
    }
  }

  func testEachByteOfALongKeyCounts() throws {
    let wanted = key(19)
    for position in 0..<19 {
      var bytes = Array(wanted.utf8)
      bytes[position] = UInt8(ascii: "_")
      let other = String(decoding: bytes, as: UTF8.self)
      let (_, ranges) = try XCTUnwrap(nested("{\"\(other)\":1}", keys: [wanted]))
      XCTAssertNil(ranges[0], "byte \(position)")
    }
  }

  func testTheEmptyKeyAndKeysSharingALengthAreToldApart() throws {
    let (text, ranges) = try XCTUnwrap(
      nested(
        "{\"\":1,\"room_id\":2,\"message\":3,\"msg_id\":4,\"sender\":5}",
        keys: ["message", "room_id", "", "sender", "msg_id"]))
    XCTAssertEqual((0..<5).map { slice(text, ranges[$0]) }, ["3", "2", "1", "5", "4"])
  }

  func testEscapedKeysAreComparedUnescaped() throws {
    let (text, ranges) = try XCTUnwrap(
      nested(#"{"msg\u005fid":"a","r\/":1}"#, keys: ["msg_id", "r\\/", "r/"]))
    XCTAssertEqual(slice(text, ranges[0]), "\"a\"")
    XCTAssertNil(ranges[1])
    XCTAssertEqual(slice(text, ranges[2]), "1")
  }

  private func result(_ text: String) -> JSONScanner.Result? {
    Array(text.utf8).withUnsafeBytes {
      JSONScanner.scan($0, topLevel: JSONScanner.Keys(["a"]), nestedIn: 0)
    }
  }

  func testTheScanReportsWhereStringsHaveEscapes() throws {
    let text = #"{"a":"plain","b\u0041":"x\"y","c":{"s":"\n"},"d":"z"}"#
    let scanned = try XCTUnwrap(result(text))
    let bytes = Array(text.utf8)
    let escapes = bytes.indices.filter { bytes[$0] == UInt8(ascii: "\\") }
    XCTAssertEqual(escapes.count, 3)
    for start in 0...bytes.count {
      for end in start...bytes.count {
        XCTAssertEqual(
          scanned.mayHaveEscapes(in: start..<end), start <= escapes.last! && end > escapes.first!,
          "\(start)..<\(end)")
      }
    }
    let plain = try XCTUnwrap(result(#"{"a":"x","b":[1,"y"],"c":{"d":"e"}}"#))
    XCTAssertFalse(plain.mayHaveEscapes(in: 0..<Int(Int32.max)))
    let array = try XCTUnwrap(
      Array(#"["x",{"k":"\t"}]"#.utf8).withUnsafeBytes { JSONScanner.scanArray($0, elements: 2) })
    XCTAssertTrue(array.mayHaveEscapes(in: 11..<13))
    XCTAssertFalse(array.mayHaveEscapes(in: 0..<11))
  }
}
