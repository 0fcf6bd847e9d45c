/// An XMPP address (RFC 7622): `[local@]domain[/resource]`.
///
/// Only what the daemon needs to compare and route addresses: the local part and the domain
/// are compared without case (RFC 7622's preparation folds the case of both; the fuller
/// Unicode rules are the server's), the resource as it is. A JID that does not parse is
/// refused with the reason, so a configuration error names the part that is wrong.
public struct JID: Sendable, Hashable, CustomStringConvertible {
  /// The part before `@`, or "" for a server or a MUC service.
  public let local: String
  /// The domain, lowercased.
  public let domain: String
  /// The part after `/`, or "" for a bare JID.
  public let resource: String

  /// Why a text is not a JID.
  public struct Invalid: Error, Sendable, Hashable, CustomStringConvertible {
    public let description: String
  }

  /// Characters RFC 7622 §3.3.1 forbids in a local part (all ASCII).
  private static let forbiddenInLocal = "\"&'/:<>@"
  /// Characters refused in a domain (all ASCII).
  private static let forbiddenInDomain = "@/ \t\"'<>&"

  /// Parses `text`; the local part and the domain are lowercased.
  ///
  /// It works on the UTF-8 bytes (every address of every stanza comes through here, and
  /// breaking text into Characters is the slow way): the separators and every character
  /// refused are ASCII, and only a part that holds other bytes goes the way of Characters.
  public init(parsing text: String) throws(Invalid) {
    guard !text.isEmpty else { throw Invalid(description: "an empty JID") }
    let utf8 = text.utf8
    var end = utf8.endIndex
    var resource = ""
    if let slash = utf8.firstIndex(of: UInt8(ascii: "/")) {
      resource = String(text[utf8.index(after: slash)...])
      end = slash
      guard !resource.isEmpty else { throw Invalid(description: "an empty resource after '/'") }
    }
    var start = utf8.startIndex
    var local = ""
    if let at = utf8[..<end].firstIndex(of: UInt8(ascii: "@")) {
      local = String(text[..<at])
      start = utf8.index(after: at)
      guard !local.isEmpty else { throw Invalid(description: "an empty local part before '@'") }
      if let bad = Self.first(in: local, of: Self.forbiddenInLocal, orWhitespace: true) {
        throw Invalid(description: "'\(bad)' in the local part '\(local)'")
      }
    }
    let domain = String(text[start..<end])
    guard !domain.isEmpty else { throw Invalid(description: "no domain") }
    if let bad = Self.first(in: domain, of: Self.forbiddenInDomain, orWhitespace: false) {
      throw Invalid(description: "'\(bad)' in the domain '\(domain)'")
    }
    // RFC 7622 §3.1: each part at most 1023 bytes.
    for (name, part) in [("local part", local), ("domain", domain), ("resource", resource)]
    where part.utf8.count > 1023 {
      throw Invalid(description: "a \(name) over 1023 bytes")
    }
    // A byte under 0x20 is a control character (never part of a longer UTF-8 sequence).
    guard !utf8.contains(where: { $0 < 0x20 }) else {
      throw Invalid(description: "a control character")
    }
    self.local = Self.lowercased(local)
    self.domain = Self.lowercased(domain)
    self.resource = resource
  }

  /// The first character of `part` in `set` (or whitespace), byte by byte when it is ASCII.
  private static func first(in part: String, of forbidden: String, orWhitespace: Bool)
    -> Character?
  {
    guard part.utf8.allSatisfy({ $0 < 0x80 }) else {
      return part.first { forbidden.contains($0) || (orWhitespace && $0.isWhitespace) }
    }
    let bad = part.utf8.first {
      forbidden.utf8.contains($0) || (orWhitespace && ($0 == 0x20 || (0x09...0x0D).contains($0)))
    }
    return bad.map { Character(Unicode.Scalar($0)) }
  }

  /// `part` lowercased: ASCII by its bytes, anything else as Unicode says.
  private static func lowercased(_ part: String) -> String {
    guard part.utf8.allSatisfy({ $0 < 0x80 }) else { return part.lowercased() }
    guard part.utf8.contains(where: { (0x41...0x5A).contains($0) }) else { return part }
    return String(
      decoding: part.utf8.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
  }

  /// The JID without a parse, from parts known good.
  public init(local: String, domain: String, resource: String = "") {
    self.local = local.lowercased()
    self.domain = domain.lowercased()
    self.resource = resource
  }

  /// The same address without the resource.
  public var bare: JID { JID(local: local, domain: domain) }

  /// Whether it has no resource.
  public var isBare: Bool { resource.isEmpty }

  /// The bare JID as text: `local@domain`, or `domain`.
  public var bareText: String { local.isEmpty ? domain : local + "@" + domain }

  public var description: String { resource.isEmpty ? bareText : bareText + "/" + resource }

  /// The same bare JID with `resource`.
  public func with(resource: String) -> JID {
    JID(local: local, domain: domain, resource: resource)
  }
}
