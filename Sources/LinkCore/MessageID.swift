import JSON

/// A backend's message id read from a JSON value: ids are opaque strings, so a string gives its
/// content and a number its digits; anything else (an object, an array, true, null) is no id.
public enum MessageID {
  /// The id the JSON value at `range` of `raw` holds, or nil.
  public static func text(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>?) -> [UInt8]? {
    guard let range, !range.isEmpty else { return nil }
    let first = raw[range.lowerBound]
    if first == UInt8(ascii: "\"") {
      guard range.count >= 2 else { return nil }
      let content = UnsafeRawBufferPointer(
        rebasing: raw[(range.lowerBound + 1)..<(range.upperBound - 1)])
      guard !content.isEmpty else { return nil }
      return content.contains(UInt8(ascii: "\\")) ? JSONString.unescape(content) : copy(content)
    }
    guard first == UInt8(ascii: "-") || first.isDigit else { return nil }
    return copy(UnsafeRawBufferPointer(rebasing: raw[range]))
  }

  /// The bytes as an array, copied in one piece (every inbound message with an id makes one).
  private static func copy(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
    [UInt8](unsafeUninitializedCapacity: bytes.count) { buffer, count in
      guard let from = bytes.baseAddress, let to = buffer.baseAddress else { return }
      to.initialize(from: from.assumingMemoryBound(to: UInt8.self), count: bytes.count)
      count = bytes.count
    }
  }

  /// The id as a JSON string, for a frame that names it to the backend.
  public static func appendJSON(_ id: [UInt8], to out: inout [UInt8]) {
    id.withUnsafeBytes { JSONString.append($0, to: &out) }
  }
}
