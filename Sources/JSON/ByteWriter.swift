/// A cursor that writes bytes into memory its caller sized beforehand.
///
/// An array append checks capacity and uniqueness each time; a store line's fixed part is a
/// dozen small pieces, so it is written here in one go (into a temporary buffer bounded by
/// the pieces' sizes) and appended to the chunk at once.
public struct ByteWriter {
  /// Where the next byte goes.
  public var position: UnsafeMutablePointer<UInt8> { next }
  @usableFromInline var next: UnsafeMutablePointer<UInt8>

  /// Starts writing at `start`; the caller guarantees room for everything written.
  @inlinable
  public init(_ start: UnsafeMutablePointer<UInt8>) { next = start }

  /// Writes one byte.
  @inlinable
  public mutating func write(_ byte: UInt8) {
    next.pointee = byte
    next += 1
  }

  /// Writes the UTF-8 bytes of a static string.
  @inlinable
  public mutating func write(_ string: StaticString) {
    next.update(from: string.utf8Start, count: string.utf8CodeUnitCount)
    next += string.utf8CodeUnitCount
  }

  /// Writes raw bytes.
  @inlinable
  public mutating func write(_ bytes: UnsafeRawBufferPointer) {
    guard let base = bytes.baseAddress else { return }
    UnsafeMutableRawPointer(next).copyMemory(from: base, byteCount: bytes.count)
    next += bytes.count
  }

  /// Writes the bytes of an array.
  @inlinable
  public mutating func write(_ bytes: [UInt8]) {
    bytes.withUnsafeBytes { write($0) }
  }

  /// Writes `bytes` in quotes, as they are: for strings `JSONString.isPlain` accepted.
  @inlinable
  public mutating func writeQuoted(_ bytes: UnsafeRawBufferPointer) {
    write(UInt8(ascii: "\""))
    write(bytes)
    write(UInt8(ascii: "\""))
  }

  /// How many decimal digits `value` has.
  @inlinable
  public static func decimalLength(_ value: UInt64) -> Int {
    var length = 1
    var rest = value / 10
    while rest > 0 {
      length += 1
      rest /= 10
    }
    return length
  }

  /// Writes the decimal digits of `value` (at most 20 bytes).
  @inlinable
  public mutating func writeDecimal(_ value: UInt64) {
    let length = Self.decimalLength(value)
    var v = value
    var at = next + length
    repeat {
      at -= 1
      at.pointee = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: v % 10)
      v /= 10
    } while v > 0
    next += length
  }

  /// Writes `value` as exactly `width` decimal digits, zero-padded (the caller ensures it fits).
  @inlinable
  public mutating func writeDecimal(_ value: Int, width: Int) {
    var v = value
    var at = next + width
    while at > next {
      at -= 1
      at.pointee = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: v % 10)
      v /= 10
    }
    next += width
  }
}

extension Array where Element == UInt8 {
  /// Appends what `body` writes, given room for at most `maxCount` bytes.
  ///
  /// The bytes are written into a temporary buffer (on the stack when small) and appended in
  /// one copy.
  @inlinable
  public mutating func append(maxCount: Int, _ body: (inout ByteWriter) -> Void) {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: maxCount) { buffer in
      guard let start = buffer.baseAddress else { return }
      var writer = ByteWriter(start)
      body(&writer)
      append(contentsOf: UnsafeBufferPointer(start: start, count: writer.next - start))
    }
  }
}
