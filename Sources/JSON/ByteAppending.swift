// The byte-level appends that every writer of JSON lines and frames uses: store records,
// outbox lines, envelopes and control replies. Inlinable: they run per message on hot paths
// in other modules.

extension Array where Element == UInt8 {
  /// Appends the UTF-8 bytes of a static string.
  @inlinable
  public mutating func append(_ string: StaticString) {
    append(
      contentsOf: UnsafeBufferPointer(start: string.utf8Start, count: string.utf8CodeUnitCount))
  }

  /// Appends `text` as a quoted JSON string.
  ///
  /// Outgoing messages, outbox lines and control replies each quote several strings that
  /// rarely need escaping; this checks that once and copies the bytes in one go, and leaves
  /// the rare string with quotes, backslashes or control characters to `JSONString`.
  @inlinable
  public mutating func appendJSONString(_ text: String) {
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

  /// Appends the decimal digits of `value`, without allocating.
  @inlinable
  public mutating func appendDecimal(_ value: UInt64) {
    append(maxCount: 20) { $0.writeDecimal(value) }
  }
}
