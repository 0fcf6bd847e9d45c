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

  /// Appends `text` as a quoted JSON string (`JSONString.append`, which copies the runs
  /// without escapes whole: outgoing messages, outbox lines and control replies each quote
  /// several strings that rarely need escaping).
  @inlinable
  public mutating func appendJSONString(_ text: String) {
    var text = text
    text.withUTF8 { JSONString.append(UnsafeRawBufferPointer($0), to: &self) }
  }

  /// Appends the decimal digits of `value`, without allocating.
  @inlinable
  public mutating func appendDecimal(_ value: UInt64) {
    append(maxCount: 20) { $0.writeDecimal(value) }
  }
}
