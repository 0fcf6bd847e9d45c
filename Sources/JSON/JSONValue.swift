/// A JSON value tree, for the control protocol where messages are small and varied.
///
/// The hot paths (inbound frames, store lines) never build trees; they use `JSONScanner`.
public enum JSONValue: Sendable, Hashable, CustomStringConvertible {
  case null
  case bool(Bool)
  case int(Int64)
  case double(Double)
  case string(String)
  case array([JSONValue])
  /// Members in order; lookups take the last of duplicate keys.
  case object([(key: String, value: JSONValue)])

  public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
    switch (lhs, rhs) {
    case (.null, .null): true
    case (.bool(let a), .bool(let b)): a == b
    case (.int(let a), .int(let b)): a == b
    case (.double(let a), .double(let b)): a == b
    // Exact comparison: `Double(a) == b` would make 2^53 + 1 equal 2^53 as a double, which
    // equals the integer 2^53, and equality would stop being transitive.
    case (.int(let a), .double(let b)), (.double(let b), .int(let a)): Int64(exactly: b) == a
    case (.string(let a), .string(let b)): a == b
    case (.array(let a), .array(let b)): a == b
    case (.object(let a), .object(let b)):
      a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    default: false
    }
  }

  /// Hashes structurally, consistent with `==`: numbers equal across `.int` and `.double`
  /// hash alike, and strings hash as Swift strings (by canonical equivalence), not by bytes.
  public func hash(into hasher: inout Hasher) {
    switch self {
    case .null: hasher.combine(0 as UInt8)
    case .bool(let b):
      hasher.combine(1 as UInt8)
      hasher.combine(b)
    case .int(let i):
      hasher.combine(2 as UInt8)
      hasher.combine(i)
    case .double(let d):
      if let i = Int64(exactly: d) {
        hasher.combine(2 as UInt8)
        hasher.combine(i)
      } else {
        hasher.combine(3 as UInt8)
        hasher.combine(d)
      }
    case .string(let s):
      hasher.combine(4 as UInt8)
      hasher.combine(s)
    case .array(let items):
      hasher.combine(5 as UInt8)
      hasher.combine(items.count)
      for item in items { item.hash(into: &hasher) }
    case .object(let members):
      hasher.combine(6 as UInt8)
      hasher.combine(members.count)
      for member in members {
        hasher.combine(member.key)
        member.value.hash(into: &hasher)
      }
    }
  }

  /// Builds an object from pairs, leaving out nil values.
  public static func object(_ pairs: KeyValuePairs<String, JSONValue?>) -> JSONValue {
    .object(pairs.compactMap { pair in pair.value.map { (pair.key, $0) } })
  }

  /// The member `key` of an object.
  public subscript(key: String) -> JSONValue? {
    guard case .object(let members) = self else { return nil }
    return members.last { $0.key == key }?.value
  }

  public var stringValue: String? {
    if case .string(let s) = self { return s }
    return nil
  }

  public var intValue: Int64? {
    switch self {
    case .int(let i): i
    case .double(let d): Int64(exactly: d)
    default: nil
    }
  }

  public var doubleValue: Double? {
    switch self {
    case .int(let i): Double(i)
    case .double(let d): d
    default: nil
    }
  }

  public var boolValue: Bool? {
    if case .bool(let b) = self { return b }
    return nil
  }

  public var arrayValue: [JSONValue]? {
    if case .array(let a) = self { return a }
    return nil
  }

  public var objectValue: [(key: String, value: JSONValue)]? {
    if case .object(let o) = self { return o }
    return nil
  }

  public var isNull: Bool {
    if case .null = self { return true }
    return false
  }

  // MARK: Serialising

  /// Appends the compact JSON text.
  public func append(to out: inout [UInt8]) {
    switch self {
    case .null: out += Array("null".utf8)
    case .bool(let b): out += Array((b ? "true" : "false").utf8)
    case .int(let i): out += Array(String(i).utf8)
    case .double(let d):
      if d.isFinite {
        out += Array((Int64(exactly: d).map { String($0) } ?? String(d)).utf8)
      } else if d.isNaN {
        out += Array("null".utf8)
      } else {
        // A number beyond Double's range (1e400) parses to infinity; written as 1e999 it
        // stays valid JSON and parses back to the same value, so a round trip is faithful.
        out += Array((d < 0 ? "-1e999" : "1e999").utf8)
      }
    case .string(let s): JSONString.append(s, to: &out)
    case .array(let items):
      out.append(UInt8(ascii: "["))
      for (i, item) in items.enumerated() {
        if i > 0 { out.append(UInt8(ascii: ",")) }
        item.append(to: &out)
      }
      out.append(UInt8(ascii: "]"))
    case .object(let members):
      out.append(UInt8(ascii: "{"))
      for (i, member) in members.enumerated() {
        if i > 0 { out.append(UInt8(ascii: ",")) }
        JSONString.append(member.key, to: &out)
        out.append(UInt8(ascii: ":"))
        member.value.append(to: &out)
      }
      out.append(UInt8(ascii: "}"))
    }
  }

  /// The compact JSON bytes.
  public var bytes: [UInt8] {
    var out: [UInt8] = []
    append(to: &out)
    return out
  }

  /// The compact JSON text.
  public var description: String { String(decoding: bytes, as: UTF8.self) }

  // MARK: Parsing

  /// Why a text is not JSON.
  public struct ParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The byte offset where parsing stopped.
    public var offset: Int
    public var description: String { "invalid JSON at byte \(offset)" }
  }

  /// Parses one JSON value (RFC 8259), with nesting limited to `JSONScanner.maxDepth` levels,
  /// the same limit the store applies to the frames it keeps, so that every stored record
  /// parses.
  public static func parse(_ bytes: UnsafeRawBufferPointer) throws(ParseError) -> JSONValue {
    // Validate first with the scanner (UTF-8, grammar, depth); then build the tree knowing the
    // text is well-formed.
    guard JSONScanner.isValid(bytes) else { throw ParseError(offset: 0) }
    var parser = TreeBuilder(bytes: bytes)
    let value = try parser.value(depth: 0)
    return value
  }

  /// Parses one JSON value.
  public static func parse(_ bytes: [UInt8]) throws(ParseError) -> JSONValue {
    try bytes.withUnsafeBytes { raw in
      Result { () throws(ParseError) in try parse(raw) }
    }.get()
  }

  /// The value of a JSON text, nil when it is not one: for text a scan has validated already,
  /// which always is.
  public static func parsed(_ bytes: UnsafeRawBufferPointer) -> JSONValue? {
    try? Result { () throws(ParseError) in try parse(bytes) }.get()
  }

  /// Parses one JSON value from text.
  public static func parse(_ text: String) throws(ParseError) -> JSONValue {
    try parse(Array(text.utf8))
  }
}

/// Builds a tree from text `JSONScanner` has already validated.
private struct TreeBuilder {
  let bytes: UnsafeRawBufferPointer
  var index = 0

  mutating func skip() {
    while index < bytes.count {
      switch bytes[index] {
      case 0x20, 0x09, 0x0A, 0x0D: index += 1
      default: return
      }
    }
  }

  mutating func value(depth: Int) throws(JSONValue.ParseError) -> JSONValue {
    // The scanner has bounded the nesting already; this guards the recursion regardless.
    guard depth <= JSONScanner.maxDepth else { throw JSONValue.ParseError(offset: index) }
    skip()
    guard index < bytes.count else { throw JSONValue.ParseError(offset: index) }
    switch bytes[index] {
    case UInt8(ascii: "{"):
      return try object(depth: depth)
    case UInt8(ascii: "["):
      return try array(depth: depth)
    case UInt8(ascii: "\""):
      return .string(string())
    case UInt8(ascii: "t"):
      index += 4
      return .bool(true)
    case UInt8(ascii: "f"):
      index += 5
      return .bool(false)
    case UInt8(ascii: "n"):
      index += 4
      return .null
    default:
      return number()
    }
  }

  /// The object at `index` (its `{`), whose members are one level deeper than `depth`.
  private mutating func object(depth: Int) throws(JSONValue.ParseError) -> JSONValue {
    index += 1
    var members: [(key: String, value: JSONValue)] = []
    skip()
    if bytes[index] == UInt8(ascii: "}") {
      index += 1
      return .object(members)
    }
    while true {
      skip()
      let key = string()
      skip()
      index += 1  // :
      members.append((key, try value(depth: depth + 1)))
      skip()
      let c = bytes[index]
      index += 1
      if c == UInt8(ascii: "}") { return .object(members) }
    }
  }

  /// The array at `index` (its `[`), whose items are one level deeper than `depth`.
  private mutating func array(depth: Int) throws(JSONValue.ParseError) -> JSONValue {
    index += 1
    var items: [JSONValue] = []
    skip()
    if bytes[index] == UInt8(ascii: "]") {
      index += 1
      return .array(items)
    }
    while true {
      items.append(try value(depth: depth + 1))
      skip()
      let c = bytes[index]
      index += 1
      if c == UInt8(ascii: "]") { return .array(items) }
    }
  }

  /// The number at `index`: an integer when it has no fraction or exponent and fits Int64,
  /// else a double.
  private mutating func number() -> JSONValue {
    let start = index
    var integral = true
    while index < bytes.count {
      let c = bytes[index]
      if c.isDigit || c == UInt8(ascii: "-") || c == UInt8(ascii: "+") {
        index += 1
      } else if c == UInt8(ascii: ".") || c == UInt8(ascii: "e") || c == UInt8(ascii: "E") {
        integral = false
        index += 1
      } else {
        break
      }
    }
    let text = String(
      decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
    if integral, let i = Int64(text) { return .int(i) }
    return .double(Double(text) ?? 0)
  }

  mutating func string() -> String {
    index += 1
    let start = index
    var escaped = false
    // The scanner validated the text, so a string's only stops are its escapes and its
    // closing quote; the runs between them are skipped many bytes a step.
    if let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) {
      while true {
        index = StringStops.first(in: base, from: index, count: bytes.count)
        guard index < bytes.count, base[index] == UInt8(ascii: "\\") else { break }
        escaped = true
        index += 2
      }
    }
    let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
    index += 1
    if !escaped { return String(decoding: raw, as: UTF8.self) }
    return String(decoding: JSONString.unescape(raw), as: UTF8.self)
  }
}
