import JSON

extension Array where Element == UInt8 {
  /// Appends `text` as a quoted JSON string.
  ///
  /// Outgoing messages, outbox lines and control replies each quote several strings that
  /// rarely need escaping; this checks that once and copies the bytes in one go, and leaves
  /// the rare string with quotes, backslashes or control characters to `JSONString`.
  mutating func appendJSONString(_ text: String) {
    var text = text
    text.withUTF8 { utf8 in
      let plain = utf8.allSatisfy { $0 >= 0x20 && $0 != 0x22 && $0 != 0x5C && $0 != 0x7F }
      guard plain else {
        JSONString.append(UnsafeRawBufferPointer(utf8), to: &self)
        return
      }
      append(UInt8(ascii: "\""))
      append(contentsOf: utf8)
      append(UInt8(ascii: "\""))
    }
  }

  /// Appends the decimal digits of `value`.
  mutating func appendDecimal(_ value: UInt64) {
    StoreRecord.appendDecimal(value, to: &self)
  }
}
