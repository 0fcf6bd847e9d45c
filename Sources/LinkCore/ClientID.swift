import JSON

/// A message's client id, which travels with it so that backends can de-duplicate.
///
/// The outbox draws one for every message sent without one: 16 lowercase hex digits of a
/// random number. It keeps the number, not the text, and writes the digits where the id is
/// written (the outbox line, the frame, the store record, the reply), so a message costs no
/// string for its id.
public enum ClientID: Sendable, Hashable, CustomStringConvertible {
  /// Drawn by the outbox: the 16 hex digits of this number.
  case generated(UInt64)
  /// Given by the sender (`Send`'s `id`) or read back from the outbox log.
  case given(String)

  /// The id's text.
  public var description: String {
    switch self {
    case .generated: withUTF8 { String(decoding: $0, as: UTF8.self) }
    case .given(let text): text
    }
  }

  /// The length of the id's text in bytes.
  public var utf8Count: Int {
    switch self {
    case .generated: 16
    case .given(let text): text.utf8.count
    }
  }

  /// Calls `body` with the id's UTF-8 bytes.
  @inlinable @inline(__always)
  public func withUTF8<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows
    -> Result
  {
    switch self {
    case .generated(let value):
      return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) { digits in
        for i in 0..<16 { digits[i] = Self.digit(i, of: value) }
        return try body(UnsafeBufferPointer(digits))
      }
    case .given(var text):
      return try text.withUTF8(body)
    }
  }

  /// The `i`th of a drawn id's 16 lowercase hex digits, most significant first.
  @inlinable @inline(__always)
  static func digit(_ i: Int, of value: UInt64) -> UInt8 {
    let nibble = UInt8(truncatingIfNeeded: value >> UInt64(60 - 4 * i)) & 0xF
    return nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
  }

  /// Appends the id as a JSON string (quoted, escaped if it must be).
  public func appendJSON(to out: inout [UInt8]) {
    switch self {
    case .generated(let value):
      out.append(maxCount: 18) { line in
        line.write(UInt8(ascii: "\""))
        for i in 0..<16 { line.write(Self.digit(i, of: value)) }
        line.write(UInt8(ascii: "\""))
      }
    case .given(let text):
      JSONString.append(text, to: &out)
    }
  }

  /// Whether the id goes into a JSON string as it is (a drawn one always does).
  public var isPlain: Bool {
    switch self {
    case .generated: true
    case .given: withUTF8(JSONString.isPlain)
    }
  }

  /// Whether this id's text is `text` (an echo's id, say).
  public func matches(_ text: String) -> Bool {
    withUTF8 { id in text.utf8.elementsEqual(id) }
  }

  /// Ids are equal when their texts' bytes are: a drawn id read back from the outbox log is
  /// `given`.
  public static func == (a: ClientID, b: ClientID) -> Bool {
    switch (a, b) {
    case (.generated(let x), .generated(let y)): x == y
    case (.given(let x), .given(let y)): x.utf8.elementsEqual(y.utf8)
    default: a.withUTF8 { x in b.withUTF8 { y in x.elementsEqual(y) } }
    }
  }

  public func hash(into hasher: inout Hasher) {
    withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
  }
}
