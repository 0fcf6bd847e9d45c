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

  /// Characters RFC 7622 §3.3.1 forbids in a local part.
  private static let forbiddenInLocal: Set<Character> = ["\"", "&", "'", "/", ":", "<", ">", "@"]

  /// Parses `text`; the local part and the domain are lowercased.
  public init(parsing text: String) throws(Invalid) {
    guard !text.isEmpty else { throw Invalid(description: "an empty JID") }
    var rest = Substring(text)
    var resource = ""
    if let slash = rest.firstIndex(of: "/") {
      resource = String(rest[rest.index(after: slash)...])
      rest = rest[..<slash]
      guard !resource.isEmpty else { throw Invalid(description: "an empty resource after '/'") }
    }
    var local = ""
    if let at = rest.firstIndex(of: "@") {
      local = String(rest[..<at])
      rest = rest[rest.index(after: at)...]
      guard !local.isEmpty else { throw Invalid(description: "an empty local part before '@'") }
      if let bad = local.first(where: { Self.forbiddenInLocal.contains($0) || $0.isWhitespace }) {
        throw Invalid(description: "'\(bad)' in the local part '\(local)'")
      }
    }
    let domain = String(rest)
    guard !domain.isEmpty else { throw Invalid(description: "no domain") }
    if let bad = domain.first(where: { "@/ \t\"'<>&".contains($0) }) {
      throw Invalid(description: "'\(bad)' in the domain '\(domain)'")
    }
    // RFC 7622 §3.1: each part at most 1023 bytes.
    for (name, part) in [("local part", local), ("domain", domain), ("resource", resource)]
    where part.utf8.count > 1023 {
      throw Invalid(description: "a \(name) over 1023 bytes")
    }
    guard !(resource + local + domain).unicodeScalars.contains(where: { $0.value < 0x20 }) else {
      throw Invalid(description: "a control character")
    }
    self.local = local.lowercased()
    self.domain = domain.lowercased()
    self.resource = resource
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
