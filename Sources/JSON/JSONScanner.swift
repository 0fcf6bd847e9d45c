/// A validating, non-allocating JSON scanner (RFC 8259) that also picks out a few fields.
///
/// Every inbound frame passes through here, so it walks the bytes once, builds no tree, and
/// reports only what the store and the envelope protocol need: whether the text is JSON,
/// whether it holds raw line breaks (which JSON Lines cannot carry), and the byte ranges of
/// up to two levels of named fields.
public struct JSONScanner {
  private let base: UnsafePointer<UInt8>
  private let count: Int
  private var index = 0
  private var depth = 0
  /// Whether the string `string()` parsed last had escapes.
  private var lastStringEscaped = false
  /// Where the first and the last escape of any string are (`Result.mayHaveEscapes(in:)`).
  private var escapes: (first: Int32, last: Int32) = (.max, -1)
  private var lineBreaks = false
  /// Nesting beyond this is refused: recursion must stay bounded on hostile input.
  public static let maxDepth = 128
  /// The longest buffer scanned (field ranges are kept as 32-bit offsets); longer ones are
  /// reported as not JSON. No frame, store line or control message comes near it.
  public static let maxLength = Int(Int32.max)
  /// The deepest a frame may be to be embedded as JSON in a store record: the record, and the
  /// Varlink replies and events that carry it (`parameters`, `records`, …), add levels of
  /// their own and must stay within `maxDepth`, which every parser here (JSONValue,
  /// chatlinkctl) applies. Deeper frames are stored as text, losslessly.
  public static let embeddedMaxDepth = maxDepth - 16
  private let limit: Int

  /// The bytes are known to be UTF-8 (e.g. a WebSocket text message): strings skip the check.
  private let knownUTF8: Bool

  private init(_ buffer: UnsafeRawBufferPointer, knownUTF8: Bool, limit: Int) {
    self.limit = limit
    base = buffer.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(bitPattern: 1)!
    count = buffer.count
    self.knownUTF8 = knownUTF8
  }

  /// Validates `buffer` as one JSON value; nil when it is not JSON.
  ///
  /// - Parameters:
  ///   - topLevel: keys of the top-level object whose value ranges to report.
  ///   - nestedIn: the index (in `topLevel`) of an object-valued key to look inside.
  ///   - nested: keys inside that object whose value ranges to report.
  ///   - knownUTF8: the caller has validated the bytes as UTF-8 already (text frames are), so
  ///     strings need not be checked again.
  ///   - maxDepth: the deepest nesting accepted, at most `JSONScanner.maxDepth`.
  public static func scan(
    _ buffer: UnsafeRawBufferPointer, topLevel: Keys = .none, nestedIn: Int? = nil,
    nested: Keys = .none, knownUTF8: Bool = false, maxDepth: Int = maxDepth
  ) -> Result? {
    var result = Result()
    let ok = scan(
      buffer, topLevel: topLevel, nestedIn: nestedIn, nested: nested, knownUTF8: knownUTF8,
      maxDepth: maxDepth, into: &result)
    return ok ? result : nil
  }

  /// Validates `buffer` as one JSON value into `result`; false when it is not JSON (`result`
  /// then holds nothing of use). The same as `scan(_:…)`, for callers on a hot path: the
  /// result (fields of two levels) is filled where the caller keeps it instead of being
  /// copied out as an optional, which costs a frame's worth of copying.
  public static func scan(
    _ buffer: UnsafeRawBufferPointer, topLevel: Keys, nestedIn: Int? = nil,
    nested: Keys = .none, knownUTF8: Bool = false, maxDepth: Int = maxDepth,
    into result: inout Result
  ) -> Bool {
    result = Result(
      topLevel: FieldRanges(count: topLevel.count), nested: FieldRanges(count: nested.count),
      hasLineBreaks: false, isObject: false)
    guard buffer.count <= Self.maxLength else { return false }
    var scanner = JSONScanner(buffer, knownUTF8: knownUTF8, limit: min(maxDepth, Self.maxDepth))
    scanner.skipWhitespace()
    guard scanner.index < scanner.count else { return false }
    result.isObject = scanner.peek == UInt8(ascii: "{")
    let ok: Bool
    if result.isObject && topLevel.count > 0 {
      ok = topLevel.withTable { top in
        nested.withTable { inner in
          scanner.members(top, nestedIn: nestedIn, inner, into: &result)
        }
      }
    } else {
      ok = scanner.value()
    }
    guard ok else { return false }
    scanner.skipWhitespace()
    guard scanner.index == scanner.count else { return false }
    result.hasLineBreaks = scanner.lineBreaks
    (result.firstEscape, result.lastEscape) = scanner.escapes
    return true
  }

  /// The top-level object's members: `top`'s fields, and `inner`'s inside member `nestedIn`.
  private mutating func members(
    _ top: Table, nestedIn: Int?, _ inner: Table, into result: inout Result
  ) -> Bool {
    object { scanner, key, start in
      guard let which = scanner.index(of: key, in: top) else { return scanner.value() }
      if which == nestedIn {
        // The last of duplicate keys wins, as in JSONValue: whatever an earlier occurrence
        // held must not be reported as if this one held it.
        for i in result.nested.indices { result.nested[i] = nil }
      }
      if which == nestedIn && scanner.peek == UInt8(ascii: "{") {
        guard scanner.fields(inner, into: &result.nested) else { return false }
        result.topLevel[which] = start..<scanner.index
        return true
      }
      guard scanner.value() else { return false }
      result.topLevel[which] = start..<scanner.index
      return true
    }
  }

  /// Validates `buffer` as one JSON array; nil when it is not JSON or not an array.
  ///
  /// The result's `topLevel` holds the ranges of the first `elements` elements (fewer when
  /// the array is shorter: the rest are nil), and `nested` the ranges of `nested` keys inside
  /// element `nestedIn` when that element is an object. A Socket.IO event (`["name", {…}]`)
  /// is read this way, in one pass.
  public static func scanArray(
    _ buffer: UnsafeRawBufferPointer, elements: Int, nestedIn: Int? = nil,
    nested: Keys = .none, knownUTF8: Bool = false, maxDepth: Int = maxDepth
  ) -> Result? {
    guard buffer.count <= Self.maxLength else { return nil }
    var scanner = JSONScanner(buffer, knownUTF8: knownUTF8, limit: min(maxDepth, Self.maxDepth))
    var result = Result(
      topLevel: FieldRanges(count: elements), nested: FieldRanges(count: nested.count),
      hasLineBreaks: false, isObject: false)
    scanner.skipWhitespace()
    guard scanner.peek == UInt8(ascii: "[") else { return nil }
    let ok = nested.withTable { inner in
      scanner.array { scanner, position, start in
        if position == nestedIn && scanner.peek == UInt8(ascii: "{") {
          guard scanner.fields(inner, into: &result.nested) else { return false }
        } else {
          guard scanner.value() else { return false }
        }
        if position < elements { result.topLevel[position] = start..<scanner.index }
        return true
      }
    }
    guard ok else { return nil }
    scanner.skipWhitespace()
    guard scanner.index == scanner.count else { return nil }
    result.hasLineBreaks = scanner.lineBreaks
    (result.firstEscape, result.lastEscape) = scanner.escapes
    return result
  }

  /// Whether `buffer` is exactly one JSON value.
  public static func isValid(_ buffer: UnsafeRawBufferPointer) -> Bool {
    scan(buffer) != nil
  }

  // MARK: Grammar

  private var peek: UInt8 { index < count ? base[index] : 0 }

  // Called around every token: inlined, and done at once when the next byte is not
  // whitespace (the usual case in the minified JSON backends send); the blanks themselves are
  // skipped out of line, which keeps the parsing functions small enough to inline their
  // callees.
  @inline(__always)
  private mutating func skipWhitespace() {
    guard index < count, base[index] <= 0x20 else { return }
    skipBlanks()
  }

  @inline(never)
  private mutating func skipBlanks() {
    while index < count {
      switch base[index] {
      case 0x20, 0x09: index += 1
      case 0x0A, 0x0D:
        lineBreaks = true
        index += 1
      default: return
      }
    }
  }

  /// Parses a value at `index`; the caller has skipped the blanks before it.
  private mutating func value() -> Bool {
    guard index < count else { return false }
    switch base[index] {
    case UInt8(ascii: "{"): return object { scanner, _, _ in scanner.value() }
    case UInt8(ascii: "["): return array()
    case UInt8(ascii: "\""): return string() != nil
    case UInt8(ascii: "t"): return literal("true")
    case UInt8(ascii: "f"): return literal("false")
    case UInt8(ascii: "n"): return literal("null")
    default: return number()
    }
  }

  /// Parses an object; `member` parses each member's value, given the key's content range
  /// (without quotes) and the index where the value starts.
  private mutating func object(
    _ member: (inout JSONScanner, _ key: Key, _ valueStart: Int) -> Bool
  ) -> Bool {
    depth += 1
    defer { depth -= 1 }
    guard depth <= limit else { return false }
    index += 1  // {
    skipWhitespace()
    if peek == UInt8(ascii: "}") {
      index += 1
      return true
    }
    while true {
      skipWhitespace()
      guard peek == UInt8(ascii: "\""), let keyRange = string() else { return false }
      let key = Key(range: keyRange, escaped: lastStringEscaped)
      skipWhitespace()
      guard peek == UInt8(ascii: ":") else { return false }
      index += 1
      skipWhitespace()
      guard member(&self, key, index) else { return false }
      skipWhitespace()
      switch peek {
      case UInt8(ascii: ","): index += 1
      case UInt8(ascii: "}"):
        index += 1
        return true
      default: return false
      }
    }
  }

  /// Parses an object, reporting the value ranges of `keys` into `ranges`.
  private mutating func fields(_ keys: Table, into ranges: inout FieldRanges) -> Bool {
    object { scanner, key, start in
      guard let which = scanner.index(of: key, in: keys) else { return scanner.value() }
      guard scanner.value() else { return false }
      ranges[which] = start..<scanner.index
      return true
    }
  }

  private mutating func array() -> Bool {
    array { scanner, _, _ in scanner.value() }
  }

  /// Parses an array; `element` parses each element, given its position and where it starts.
  private mutating func array(
    _ element: (inout JSONScanner, _ position: Int, _ valueStart: Int) -> Bool
  ) -> Bool {
    depth += 1
    defer { depth -= 1 }
    guard depth <= limit else { return false }
    index += 1  // [
    skipWhitespace()
    if peek == UInt8(ascii: "]") {
      index += 1
      return true
    }
    var position = 0
    while true {
      skipWhitespace()
      guard element(&self, position, index) else { return false }
      position += 1
      skipWhitespace()
      switch peek {
      case UInt8(ascii: ","): index += 1
      case UInt8(ascii: "]"):
        index += 1
        return true
      default: return false
      }
    }
  }

  /// Parses a string; returns the range of its content (between the quotes).
  ///
  /// Inlined into its callers, which parse a dozen strings in every frame: the usual string,
  /// without escapes, costs one search for its closing quote here; the rest go the long way.
  @inline(__always)
  private mutating func string() -> Range<Int>? {
    let start = index + 1
    let end = StringStops.first(in: base, from: start, count: count)
    if end < count && base[end] == UInt8(ascii: "\"") && (knownUTF8 || isUTF8(start..<end)) {
      index = end + 1
      lastStringEscaped = false
      return start..<end
    }
    return escapedString(from: start)
  }

  /// A string with escapes, or one that is not valid: walked from its start, escape by escape.
  @inline(never)
  private mutating func escapedString(from start: Int) -> Range<Int>? {
    index = start
    var utf8 = UTF8Validator()
    var plainStart = index
    lastStringEscaped = false
    while true {
      index = StringStops.first(in: base, from: index, count: count)
      guard index < count else { return nil }
      let byte = base[index]
      if byte == UInt8(ascii: "\"") {
        guard validate(&utf8, plainStart..<index), utf8.isComplete else { return nil }
        let range = start..<index
        index += 1
        return range
      }
      guard byte == UInt8(ascii: "\\") else { return nil }  // control characters must be escaped
      guard validate(&utf8, plainStart..<index), utf8.isComplete else { return nil }
      lastStringEscaped = true
      escapes = (
        min(escapes.first, Int32(truncatingIfNeeded: index)), Int32(truncatingIfNeeded: index)
      )
      index += 1
      guard index < count else { return nil }
      switch base[index] {
      case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
        UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
        index += 1
      case UInt8(ascii: "u"):
        guard index + 4 < count else { return nil }
        for offset in 1...4 where !base[index + offset].isHexDigit { return nil }
        index += 5
      default:
        return nil
      }
      plainStart = index
    }
  }

  /// Whether `range` holds complete UTF-8.
  private func isUTF8(_ range: Range<Int>) -> Bool {
    var utf8 = UTF8Validator()
    return validate(&utf8, range) && utf8.isComplete
  }

  private func validate(_ validator: inout UTF8Validator, _ range: Range<Int>) -> Bool {
    guard !range.isEmpty, !knownUTF8 else { return true }
    return validator.validate(
      UnsafeRawBufferPointer(start: base + range.lowerBound, count: range.count))
  }

  private mutating func literal(_ word: StaticString) -> Bool {
    let length = word.utf8CodeUnitCount
    guard index + length <= count else { return false }
    for i in 0..<length where base[index + i] != word.utf8Start[i] { return false }
    index += length
    return true
  }

  private mutating func number() -> Bool {
    let start = index
    if peek == UInt8(ascii: "-") { index += 1 }
    guard index < count else { return false }
    if base[index] == UInt8(ascii: "0") {
      index += 1
    } else if base[index].isDigit {
      while index < count && base[index].isDigit { index += 1 }
    } else {
      return false
    }
    if peek == UInt8(ascii: ".") {
      index += 1
      guard peek.isDigit else { return false }
      while index < count && base[index].isDigit { index += 1 }
    }
    if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
      index += 1
      if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
      guard peek.isDigit else { return false }
      while index < count && base[index].isDigit { index += 1 }
    }
    return index > start
  }

  /// An object member's key: the range of its content (without quotes), and whether it has
  /// escapes.
  private struct Key {
    var range: Range<Int>
    var escaped: Bool
  }

  /// Which of `keys` this member's key is: compared as raw bytes, or decoded when it has
  /// escapes.
  @inline(__always)
  private func index(of key: Key, in keys: Table) -> Int? {
    if key.escaped { return escapedIndex(of: key, in: keys) }
    return keys.index(
      of: UnsafeBufferPointer(start: base + key.range.lowerBound, count: key.range.count))
  }

  @inline(never)
  private func escapedIndex(of key: Key, in keys: Table) -> Int? {
    let raw = UnsafeRawBufferPointer(start: base + key.range.lowerBound, count: key.range.count)
    return JSONString.unescape(raw).withUnsafeBufferPointer { keys.index(of: $0) }
  }
}
