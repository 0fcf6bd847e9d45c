/// Strings kept as one UTF-8 buffer and the place where each starts and ends.
///
/// A `SendBatch` carries hundreds of messages: read from its JSON into one buffer, they cost
/// two allocations for the lot, where an array of `String`s costs one for each text (and one
/// more to free it), and the outbox line, the frame and the store record that each message
/// becomes read its bytes in place.
public struct PackedStrings: Sendable, Hashable, RandomAccessCollection, ExpressibleByArrayLiteral {
  /// The strings' bytes, one after the other.
  @usableFromInline private(set) var bytes: [UInt8] = []
  /// Where each string starts in `bytes`, and where the last ends: string `i` is
  /// `bounds[i]..<bounds[i + 1]`, with no test for the first.
  @usableFromInline private(set) var bounds: [Int32] = [0]

  /// No strings.
  public init() {}

  /// The strings of `strings`, in order.
  public init(_ strings: [String]) {
    bounds.reserveCapacity(strings.count + 1)
    for string in strings { append(string) }
  }

  public init(arrayLiteral strings: String...) {
    self.init(strings)
  }

  public var startIndex: Int { 0 }
  public var endIndex: Int { bounds.count - 1 }

  /// The string at `index`, made on each call: the paths every message takes read its bytes
  /// with `withUTF8(at:_:)`.
  public subscript(index: Int) -> String {
    var string = ""
    withUTF8(at: index) { string = String(decoding: $0, as: UTF8.self) }
    return string
  }

  /// The byte count of all the strings.
  public var utf8Count: Int { bytes.count }

  /// The byte count of the string at `index`.
  public func utf8Count(at index: Int) -> Int {
    Int(bounds[index + 1]) - Int(bounds[index])
  }

  /// Calls `body` with the UTF-8 bytes of the string at `index`, read where they are kept.
  /// Not generic: across modules, a generic result would look up its type's metadata on every
  /// call, and this is called for every message several times (inlinable, so that `body`
  /// is not a closure called through a pointer).
  @inlinable
  public func withUTF8(at index: Int, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
    let start = Int(bounds[index])
    let end = Int(bounds[index + 1])
    bytes.withUnsafeBufferPointer { all in
      body(UnsafeBufferPointer(rebasing: all[start..<end]))
    }
  }

  /// Appends a string.
  public mutating func append(_ string: String) {
    bytes.append(contentsOf: string.utf8)
    endString()
  }

  /// Appends a string given as its UTF-8 bytes.
  public mutating func append(utf8: UnsafeRawBufferPointer) {
    bytes.append(contentsOf: utf8)
    endString()
  }

  /// Appends a string that `body` writes in place, given room for at most `maxCount` bytes
  /// (it writes UTF-8, or the caller knows what else it keeps).
  public mutating func append(maxCount: Int, _ body: (inout ByteWriter) -> Void) {
    // Written where it stays: room made (copied from zeros, which costs less than writing
    // the string elsewhere and copying it), the string written into it, the rest cut off.
    let start = bytes.count
    if maxCount <= Self.zeros.count {
      bytes.append(contentsOf: Self.zeros[..<maxCount])
    } else {
      bytes.append(contentsOf: repeatElement(0, count: maxCount))
    }
    let written = bytes.withUnsafeMutableBufferPointer { all -> Int in
      guard let base = all.baseAddress else { return 0 }
      var out = ByteWriter(base + start)
      body(&out)
      return out.position - (base + start)
    }
    precondition(written <= maxCount, "wrote past the room asked for")
    if written < maxCount { bytes.removeSubrange((start + written)...) }
    endString()
  }

  /// Room for a string written in place.
  private static let zeros = [UInt8](repeating: 0, count: 4096)

  /// Removes the last string.
  public mutating func removeLast() {
    precondition(count > 0, "no string to remove")
    bounds.removeLast()
    bytes.removeSubrange(Int(bounds[bounds.count - 1])...)
  }

  /// Makes room for `count` more strings of `bytes` bytes in all.
  public mutating func reserveCapacity(_ count: Int, bytes byteCount: Int) {
    bounds.reserveCapacity(bounds.count + count)
    bytes.reserveCapacity(bytes.count + byteCount)
  }

  /// Notes where the string just appended ends. The offsets are 32-bit (a `SendBatch` is at
  /// most 64 KiB): past 2 GiB they could not say where a string is.
  private mutating func endString() {
    precondition(bytes.count <= Int32.max, "PackedStrings holds at most 2 GiB")
    bounds.append(Int32(truncatingIfNeeded: bytes.count))
  }

  /// What reading a JSON array of strings found.
  public enum ArrayReading: Sendable, Hashable {
    /// Every element was a string: here they are, unescaped.
    case strings(PackedStrings)
    /// The value is not an array.
    case notAnArray
    /// Element `index` is not a string (the elements before it were).
    case notAString(index: Int)
  }

  /// Reads `json`, one JSON value that `JSONScanner` has validated, as an array of strings.
  ///
  /// Nothing is checked again (the scanner checked grammar and UTF-8), but every read is
  /// bounded by `json`, so text that was not validated gives a wrong answer, never a crash.
  /// Strings without escapes (nearly all) are copied as they are, found many bytes a step.
  public static func readJSONArray(_ json: UnsafeRawBufferPointer) -> ArrayReading {
    guard let raw = json.baseAddress, json.count > 0 else { return .notAnArray }
    let base = raw.assumingMemoryBound(to: UInt8.self)
    let count = json.count
    var index = skipBlanks(base, 0, count)
    guard index < count, base[index] == UInt8(ascii: "[") else { return .notAnArray }
    index = skipBlanks(base, index + 1, count)
    var result = PackedStrings()
    // The strings' bytes are fewer than the array's; their count grows as it goes.
    result.bytes.reserveCapacity(count)
    guard index < count, base[index] != UInt8(ascii: "]") else { return .strings(result) }
    while index < count {
      guard base[index] == UInt8(ascii: "\"") else {
        return .notAString(index: result.count)
      }
      let start = index + 1
      var end = StringStops.first(in: base, from: start, count: count)
      if end < count && base[end] == UInt8(ascii: "\"") {
        result.append(utf8: UnsafeRawBufferPointer(start: base + start, count: end - start))
      } else {
        // Escapes: find the closing quote stepping over each escape, then decode the content.
        while end < count && base[end] != UInt8(ascii: "\"") {
          end = StringStops.first(
            in: base, from: base[end] == UInt8(ascii: "\\") ? end + 2 : end + 1, count: count)
        }
        guard end < count else { return .notAString(index: result.count) }
        let content = JSONString.unescape(
          UnsafeRawBufferPointer(start: base + start, count: end - start))
        content.withUnsafeBytes { result.append(utf8: $0) }
      }
      index = skipBlanks(base, end + 1, count)
      guard index < count, base[index] == UInt8(ascii: ",") else { break }
      index = skipBlanks(base, index + 1, count)
    }
    return .strings(result)
  }

  private static func skipBlanks(_ base: UnsafePointer<UInt8>, _ from: Int, _ count: Int) -> Int {
    var index = from
    while index < count
      && (base[index] == 0x20 || base[index] == 0x0A || base[index] == 0x0D
        || base[index] == 0x09)
    {
      index += 1
    }
    return index
  }
}
