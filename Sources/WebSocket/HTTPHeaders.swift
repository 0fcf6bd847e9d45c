/// An ordered list of HTTP header fields with case-insensitive lookup (RFC 9110 §5.1).
public struct HTTPHeaders: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
  /// The fields in the order received or added.
  public private(set) var fields: [(name: String, value: String)]

  /// Creates headers from name/value pairs.
  public init(_ fields: [(name: String, value: String)] = []) {
    self.fields = fields
  }

  public init(dictionaryLiteral elements: (String, String)...) {
    fields = elements.map { (name: $0.0, value: $0.1) }
  }

  /// Appends a field.
  public mutating func add(name: String, value: String) {
    fields.append((name: name, value: value))
  }

  /// The first value of `name`, compared case-insensitively.
  public subscript(first name: String) -> String? {
    let key = name.lowercased()
    return fields.first { $0.name.lowercased() == key }?.value
  }

  /// All values of `name`, compared case-insensitively.
  public subscript(all name: String) -> [String] {
    let key = name.lowercased()
    return fields.filter { $0.name.lowercased() == key }.map(\.value)
  }

  /// Whether any field named `name` is present.
  public func contains(_ name: String) -> Bool { self[first: name] != nil }

  /// Comma-separated list elements across all fields named `name` (RFC 9110 §5.6.1),
  /// trimmed; quoted commas are not split.
  public func listElements(_ name: String) -> [String] {
    self[all: name].flatMap { HeaderSyntax.splitList($0, separator: ",") }
  }

  public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
    fields.makeIterator()
  }

  public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
    lhs.fields.count == rhs.fields.count
      && zip(lhs.fields, rhs.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
  }

  public func hash(into hasher: inout Hasher) {
    for field in fields {
      hasher.combine(field.name)
      hasher.combine(field.value)
    }
  }
}

/// Small pieces of HTTP field syntax shared by the handshake code.
enum HeaderSyntax {
  /// Splits on `separator` outside double quotes, trimming optional whitespace; drops empty
  /// elements, as RFC 9110 §5.6.1 asks recipients to.
  static func splitList(_ value: String, separator: Character) -> [String] {
    var parts: [String] = []
    var current = ""
    var quoted = false
    var escaped = false
    for ch in value {
      if escaped {
        current.append(ch)
        escaped = false
      } else if quoted && ch == "\\" {
        current.append(ch)
        escaped = true
      } else if ch == "\"" {
        quoted.toggle()
        current.append(ch)
      } else if ch == separator && !quoted {
        parts.append(current)
        current = ""
      } else {
        current.append(ch)
      }
    }
    parts.append(current)
    return parts.map(trim).filter { !$0.isEmpty }
  }

  /// Trims spaces and horizontal tabs (HTTP's OWS).
  static func trim(_ s: String) -> String {
    var scalars = Substring(s)
    while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
    while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
    return String(scalars)
  }

  /// Whether `s` is an HTTP token (RFC 9110 §5.6.2).
  static func isToken(_ s: String) -> Bool {
    !s.isEmpty
      && s.utf8.allSatisfy { byte in
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
          UInt8(ascii: "0")...UInt8(ascii: "9"):
          return true
        default:
          return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
      }
  }

  /// Removes surrounding double quotes and backslash escapes from a quoted-string.
  static func unquote(_ s: String) -> String? {
    guard s.hasPrefix("\"") else { return s }
    guard s.count >= 2, s.hasSuffix("\"") else { return nil }
    var out = ""
    var escaped = false
    for ch in s.dropFirst().dropLast() {
      if escaped {
        out.append(ch)
        escaped = false
      } else if ch == "\\" {
        escaped = true
      } else {
        out.append(ch)
      }
    }
    return escaped ? nil : out
  }
}
