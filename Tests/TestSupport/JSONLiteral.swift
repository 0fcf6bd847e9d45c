import JSON
import XCTest

/// Parses a JSON literal written in a test; bad JSON fails the test at its line and reads as
/// null.
public func json(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> JSONValue {
  do {
    return try JSONValue.parse(text)
  } catch {
    XCTFail("bad JSON in test: \(text)", file: file, line: line)
    return .null
  }
}
