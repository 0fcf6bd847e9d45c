@preconcurrency import Glibc
import JSON
import XCTest

/// `PackedStrings` and its reader of JSON string arrays: the texts of a SendBatch.
final class PackedStringsTests: XCTestCase {
  private func read(_ json: String) -> PackedStrings.ArrayReading {
    Array(json.utf8).withUnsafeBytes { PackedStrings.readJSONArray($0) }
  }

  private func strings(_ json: String, file: StaticString = #filePath, line: UInt = #line)
    -> [String]?
  {
    guard case .strings(let packed) = read(json) else { return nil }
    return Array(packed)
  }

  func testStringsKeepTheirBytesOrderAndLengths() {
    var packed = PackedStrings(["a", "", "héllo 😀", "last"])
    packed.append("more")
    XCTAssertEqual(packed.count, 5)
    XCTAssertEqual(Array(packed), ["a", "", "héllo 😀", "last", "more"])
    XCTAssertEqual(packed[2], "héllo 😀")
    XCTAssertEqual(packed.utf8Count(at: 1), 0)
    XCTAssertEqual(packed.utf8Count(at: 2), "héllo 😀".utf8.count)
    var bytes: [UInt8] = []
    packed.withUTF8(at: 3) { bytes = Array($0) }
    XCTAssertEqual(bytes, Array("last".utf8))
    XCTAssertEqual(packed, ["a", "", "héllo 😀", "last", "more"])
    XCTAssertNotEqual(PackedStrings(["ab", "c"]), PackedStrings(["a", "bc"]))
    XCTAssertTrue(PackedStrings().isEmpty)
  }

  func testAStringWrittenInPlaceCanBeTakenBackLeavingTheOthersAsTheyWere() {
    var packed: PackedStrings = ["first"]
    packed.reserveCapacity(2, bytes: 64)
    packed.append(maxCount: 16) { out in
      out.write("in place ")
      out.writeDecimal(42)
    }
    XCTAssertEqual(Array(packed), ["first", "in place 42"])
    packed.append(maxCount: 0) { _ in }
    XCTAssertEqual(Array(packed), ["first", "in place 42", ""])
    packed.removeLast()
    packed.removeLast()
    XCTAssertEqual(packed, ["first"])
    packed.append("next")
    XCTAssertEqual(packed, ["first", "next"])
    XCTAssertEqual(packed.utf8Count(at: 1), 4)
  }

  func testAnArrayOfPlainStringsIsReadAsItIs() {
    XCTAssertEqual(strings(#"["a","bc","😀 é"]"#), ["a", "bc", "😀 é"])
    XCTAssertEqual(strings(#"[]"#), [])
    XCTAssertEqual(strings(" [ \"a\" ,\n\t\"b\" ] "), ["a", "b"])
    let long = String(repeating: "a long chat message ", count: 40)
    XCTAssertEqual(strings(#"[""# + long + #"",""]"#), [long, ""])
  }

  func testEscapesAreDecodedWhereverTheyAre() {
    XCTAssertEqual(
      strings(#"["say \"hi\"","a\\b","line\nbreak","\u00e9\ud83d\ude00","tab\t/\/"]"#),
      ["say \"hi\"", "a\\b", "line\nbreak", "é😀", "tab\t//"])
    XCTAssertEqual(strings(#"["\\","\"","x\\\""]"#), ["\\", "\"", "x\\\""])
    // Past the vector search's sixteen bytes, and at its edges.
    let prefix = String(repeating: "p", count: 15)
    XCTAssertEqual(
      strings(#"[""# + prefix + #"\"q","# + #"""# + prefix + #"x\\"]"#),
      [prefix + "\"q", prefix + "x\\"])
  }

  func testWhatIsNotAnArrayOfStringsSaysWhereItStops() {
    XCTAssertEqual(read(#"{"a":1}"#), .notAnArray)
    XCTAssertEqual(read(#""text""#), .notAnArray)
    XCTAssertEqual(read(""), .notAnArray)
    XCTAssertEqual(read(#"[1]"#), .notAString(index: 0))
    XCTAssertEqual(read(#"["a","b",null]"#), .notAString(index: 2))
    XCTAssertEqual(read(#"["a",["b"]]"#), .notAString(index: 1))
  }

  /// Reads `bytes` placed at the very end of a page followed by one that may not be read, so
  /// that a read past their end crashes the test instead of going unnoticed.
  private func readAtPageEnd(_ bytes: [UInt8]) throws {
    let page = Int(sysconf(Int32(_SC_PAGESIZE)))
    guard bytes.count <= page else { return XCTFail("too long for one page") }
    let memory = try XCTUnwrap(
      mmap(nil, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))
    XCTAssertNotEqual(memory, MAP_FAILED)
    defer { munmap(memory, 2 * page) }
    XCTAssertEqual(mprotect(memory + page, page, PROT_NONE), 0)
    let start = memory + page - bytes.count
    bytes.withUnsafeBytes { start.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
    _ = PackedStrings.readJSONArray(UnsafeRawBufferPointer(start: start, count: bytes.count))
  }

  func testTextThatWasNotValidatedNeverReadsPastItsEnd() throws {
    // Cut anywhere, or with any byte replaced by one that matters to the grammar, the reader
    // answers something and stays within the bytes it was given.
    let json = Array(#"["one","tw\"o","three\\",  "four\u0041"]"#.utf8)
    for cut in 0...json.count { try readAtPageEnd(Array(json[..<cut])) }
    for index in json.indices {
      for byte: UInt8 in [0x22, 0x5C, 0x00, 0x5B, 0x5D, 0x2C, 0x20, 0xFF] {
        var bytes = json
        bytes[index] = byte
        // Cut right after the replaced byte too: an escape or quote at the very end.
        try readAtPageEnd(bytes)
        try readAtPageEnd(Array(bytes[...index]))
      }
    }
    XCTAssertEqual(read(#"["unterminated"#), .notAString(index: 0))
    XCTAssertEqual(read(#"["ends in an escape\"#), .notAString(index: 0))
  }
}
