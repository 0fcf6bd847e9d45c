import JSON

/// A room name as the backend sees it: a JSON number when it looks like one, else a string.
public struct RoomID: Sendable, Hashable, Comparable, CustomStringConvertible {
  /// The room as configured or requested, e.g. "7" or "ops".
  public let name: String
  /// The room as a JSON value: computed once, since every outgoing message and stored
  /// record carries it.
  public let json: [UInt8]

  /// Creates a room id; nil for names that are empty, too long or contain control characters.
  public init?(_ name: String) {
    guard !name.isEmpty, name.utf8.count <= 256,
      !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
    else { return nil }
    self.name = name
    if Self.isNumeric(name) {
      json = Array(name.utf8)
    } else {
      var out: [UInt8] = []
      JSONString.append(name, to: &out)
      json = out
    }
  }

  /// Whether the name is a canonical non-negative integer (sent as a JSON number).
  public var isNumeric: Bool { Self.isNumeric(name) }

  private static func isNumeric(_ name: String) -> Bool {
    let bytes = name.utf8
    return !bytes.isEmpty && bytes.count <= 18 && bytes.allSatisfy(\.isDigit)
      && (bytes.count == 1 || bytes.first != UInt8(ascii: "0"))
  }

  public static func == (lhs: RoomID, rhs: RoomID) -> Bool { lhs.name == rhs.name }

  public func hash(into hasher: inout Hasher) { hasher.combine(name) }

  /// Reads a room from a JSON value (a number or a string), as the backend sent it.
  public init?(json raw: UnsafeRawBufferPointer) {
    guard let first = raw.first else { return nil }
    if first == UInt8(ascii: "\"") && raw.count >= 2 {
      let content = UnsafeRawBufferPointer(rebasing: raw[1..<(raw.count - 1)])
      self.init(String(decoding: JSONString.unescape(content), as: UTF8.self))
    } else {
      self.init(String(decoding: raw, as: UTF8.self))
    }
  }

  public static func < (lhs: RoomID, rhs: RoomID) -> Bool {
    if lhs.isNumeric && rhs.isNumeric, let a = Int(lhs.name), let b = Int(rhs.name) { return a < b }
    return lhs.name < rhs.name
  }

  public var description: String { name }
}
