@preconcurrency import Glibc
import JSON

/// Where an inbound message's id is: bytes of the record itself (its payload, or its `meta`),
/// as offsets, so that the id costs a record no allocation and no reference of its own. A
/// JSON string's content with escapes is marked so, and read unescaped.
///
/// A record moves through the link many times; every reference-counted field it holds makes
/// each move a copy and a destroy, so the id keeps none.
public struct MessageIDText: Sendable, Hashable {
  /// The bytes the offsets are into.
  public enum Place: UInt8, Sendable, Hashable {
    /// The record's payload.
    case payload
    /// The record's `meta`.
    case meta
  }

  /// Whose bytes hold the id.
  public var place: Place
  /// Whether the bytes are a JSON string's content with escapes in it: the id is then their
  /// unescaped text.
  public var escaped: Bool
  /// The id's bytes are `start..<end` (32-bit offsets keep a record small; a message is far
  /// shorter than 4 GiB).
  public var start: UInt32
  public var end: UInt32

  /// The id at `range` of `place`; nil when the range is empty, starts beyond
  /// `maximumStart` or is longer than `maximumLength`.
  @inlinable @inline(__always)
  public init?(_ place: Place, _ range: Range<Int>, escaped: Bool = false) {
    guard !range.isEmpty, range.lowerBound <= Self.maximumStart,
      range.count <= Self.maximumLength
    else { return nil }
    self.place = place
    self.escaped = escaped
    self.start = UInt32(range.lowerBound)
    self.end = UInt32(range.upperBound)
  }

  /// The furthest into its bytes an id may start (32 MiB, twice the default MaxMessageSize=)
  /// and the longest it may be (128 KiB), so that `packed` fits in 44 bits. An id beyond is
  /// none: its message is stored without being checked for duplicates.
  public static let maximumStart = 1 << 25 - 1
  public static let maximumLength = 1 << 17 - 1

  /// The id in 44 bits, never 0 (an id is not empty): its start, its length, where it is and
  /// whether it has escapes.
  @inlinable @inline(__always)
  var packed: UInt64 {
    UInt64(start) | UInt64(end - start) << 25 | (place == .meta ? 1 << 42 : 0)
      | (escaped ? 1 << 43 : 0)
  }

  /// The id `packed` holds, or nil for 0.
  @inlinable @inline(__always)
  init?(packed: UInt64) {
    let length = UInt32(truncatingIfNeeded: packed >> 25) & (1 << 17 - 1)
    guard length != 0 else { return nil }
    start = UInt32(truncatingIfNeeded: packed) & (1 << 25 - 1)
    end = start + length
    place = packed & 1 << 42 != 0 ? .meta : .payload
    escaped = packed & 1 << 43 != 0
  }

  /// Calls `body` with the id's bytes, given the record's payload and meta (an empty id when
  /// the offsets do not fit them).
  @inlinable
  public func withBytes<R>(
    payload: UnsafeRawBufferPointer, meta: [UInt8]?, _ body: (UnsafeRawBufferPointer) -> R
  ) -> R {
    switch place {
    case .payload: return withBytes(in: payload, body)
    case .meta:
      guard let meta else { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
      return meta.withUnsafeBytes { withBytes(in: $0, body) }
    }
  }

  @inlinable
  func withBytes<R>(in raw: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    guard start <= end, Int(end) <= raw.count else {
      return body(UnsafeRawBufferPointer(start: nil, count: 0))
    }
    let bytes = UnsafeRawBufferPointer(rebasing: raw[Int(start)..<Int(end)])
    guard escaped else { return body(bytes) }
    return JSONString.unescape(bytes).withUnsafeBytes(body)
  }
}

extension InboundMessage {
  /// The record's id as bytes of their own, or nil: for what is not on the inbound path
  /// (the control socket's events, tests).
  public var idBytes: [UInt8]? {
    guard let id else { return nil }
    return payload.withUnsafeBytes { raw in id.withBytes(payload: raw, meta: meta) { Array($0) } }
  }
}

/// A backend's message id read from a JSON value: ids are opaque strings, so a string gives its
/// content and a number its digits; anything else (an object, an array, true, null, an empty
/// string) is no id.
public enum MessageID {
  /// Where the id the JSON value at `range` of `raw` holds is, or nil; `place` says whose
  /// bytes `raw` is.
  @inlinable
  public static func location(
    _ raw: UnsafeRawBufferPointer, _ range: Range<Int>?, in place: MessageIDText.Place = .payload
  ) -> MessageIDText? {
    location(raw, range, plain: false, in: place)
  }

  /// `location(_:_:in:)`, told whether the caller knows that the value holds no backslash
  /// (`plain`, from `JSONScanner.Result.mayHaveEscapes(in:)`): a string's content is then
  /// not searched for escapes, a call for every inbound envelope's id.
  @inlinable
  public static func location(
    _ raw: UnsafeRawBufferPointer, _ range: Range<Int>?, plain: Bool,
    in place: MessageIDText.Place = .payload
  ) -> MessageIDText? {
    guard let range, !range.isEmpty else { return nil }
    let first = raw[range.lowerBound]
    if first == UInt8(ascii: "\"") {
      guard range.count > 2 else { return nil }
      let content = (range.lowerBound + 1)..<(range.upperBound - 1)
      let escaped =
        !plain
        && raw.baseAddress.map {
          memchr($0 + content.lowerBound, Int32(UInt8(ascii: "\\")), content.count) != nil
        } ?? false
      return MessageIDText(place, content, escaped: escaped)
    }
    guard first == UInt8(ascii: "-") || first.isDigit else { return nil }
    return MessageIDText(place, range)
  }

  /// The id as a JSON string, for a frame that names it to the backend.
  public static func appendJSON(_ id: [UInt8], to out: inout [UInt8]) {
    id.withUnsafeBytes { JSONString.append($0, to: &out) }
  }
}
