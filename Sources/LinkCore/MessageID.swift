import JSON

/// Where an inbound message's id is: among its payload's bytes as they are (a JSON string's
/// content without escapes, or a number), so that reading it costs no allocation, or in bytes
/// of its own (unescaped, or from outside the payload: a header).
public enum MessageIDText: Sendable, Hashable {
  /// The id is the bytes `start..<end` of the record's payload (32-bit offsets keep a record
  /// small; a message is far shorter than 4 GiB).
  case inPayload(start: UInt32, end: UInt32)
  /// The id is these bytes.
  case bytes([UInt8])

  /// Calls `body` with the id's bytes, given the payload's.
  @inlinable
  public func withBytes<R>(
    in payload: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> R
  ) -> R {
    switch self {
    case .inPayload(let start, let end):
      guard start <= end, Int(end) <= payload.count else {
        return body(UnsafeRawBufferPointer(start: nil, count: 0))
      }
      return body(UnsafeRawBufferPointer(rebasing: payload[Int(start)..<Int(end)]))
    case .bytes(let bytes): return bytes.withUnsafeBytes(body)
    }
  }
}

/// A backend's message id read from a JSON value: ids are opaque strings, so a string gives its
/// content and a number its digits; anything else (an object, an array, true, null) is no id.
public enum MessageID {
  /// Where the id the JSON value at `range` of `raw` holds is, or nil: in `raw` itself unless
  /// it has escapes.
  public static func location(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>?)
    -> MessageIDText?
  {
    guard let range, !range.isEmpty else { return nil }
    let first = raw[range.lowerBound]
    if first == UInt8(ascii: "\"") {
      guard range.count > 2 else { return nil }
      let content = (range.lowerBound + 1)..<(range.upperBound - 1)
      var i = content.lowerBound
      while i < content.upperBound {
        if raw[i] == UInt8(ascii: "\\") {
          return .bytes(JSONString.unescape(UnsafeRawBufferPointer(rebasing: raw[content])))
        }
        i += 1
      }
      return inPayload(content)
    }
    guard first == UInt8(ascii: "-") || first.isDigit else { return nil }
    return inPayload(range)
  }

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

  private static func inPayload(_ range: Range<Int>) -> MessageIDText? {
    guard let start = UInt32(exactly: range.lowerBound), let end = UInt32(exactly: range.upperBound)
    else { return nil }
    return .inPayload(start: start, end: end)
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
