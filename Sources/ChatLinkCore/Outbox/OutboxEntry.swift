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

/// One message waiting in the outbox until the backend confirms it.
public struct OutboxEntry: Sendable, Hashable {
  /// The client message id that travels with the message, so backends can de-duplicate.
  public var id: String
  /// The room (nil in raw mode).
  public var room: RoomID?
  /// The message text.
  public var text: String
  /// A counter, monotonic across restarts; sent as the envelope's `count`.
  public var count: UInt64
  /// When it was accepted.
  public var created: Timestamp

  /// Creates an entry.
  public init(id: String, room: RoomID?, text: String, count: UInt64, created: Timestamp) {
    self.id = id
    self.room = room
    self.text = text
    self.count = count
    self.created = created
  }

  /// Whether `id` may be used as a client id: 1–128 characters of A–Z a–z 0–9 . _ : -.
  public static func isValidID(_ id: String) -> Bool {
    !id.isEmpty && id.utf8.count <= 128
      && id.utf8.allSatisfy { b in
        b.isDigit || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2E || b == 0x5F
          || b == 0x3A || b == 0x2D
      }
  }
}
