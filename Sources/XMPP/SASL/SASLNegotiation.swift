import WebSocket

/// How the connection the password would cross is protected, which decides whether PLAIN
/// (the password itself, in base64) may be used.
public enum SASLTransport: Sendable, Hashable {
  /// wss://: TLS protects the password.
  case encrypted
  /// ws:// to this host: the password never leaves it.
  case loopback
  /// ws:// to another host: anyone on the path could read it.
  case plaintext

  /// The transport of a `scheme://host` URL (`ws` or `wss`).
  public init(secure: Bool, host: String) {
    if secure {
      self = .encrypted
    } else {
      self = Self.isLoopback(host) ? .loopback : .plaintext
    }
  }

  /// Whether PLAIN may be offered the password.
  public var allowsPlain: Bool { self != .plaintext }

  /// `localhost` (RFC 6761 reserves it for loopback), 127.0.0.0/8 and ::1.
  public static func isLoopback(_ host: String) -> Bool {
    let name = host.lowercased().trimmingBrackets
    if name == "localhost" || name.hasSuffix(".localhost") || name == "::1" { return true }
    let octets = name.split(separator: ".", omittingEmptySubsequences: false)
    return octets.count == 4 && octets[0] == "127"
      && octets.allSatisfy { UInt8($0) != nil && $0.count <= 3 }
  }
}

extension String {
  fileprivate var trimmingBrackets: String {
    hasPrefix("[") && hasSuffix("]") ? String(dropFirst().dropLast()) : self
  }
}

/// A SASL mechanism the client speaks.
public enum SASLMechanism: Sendable, Hashable {
  case scram(SCRAMHash)
  case plain

  public var name: String {
    switch self {
    case .scram(let hash): hash.mechanism
    case .plain: "PLAIN"
    }
  }

  /// The best of the server's mechanisms: SCRAM-SHA-256, then SCRAM-SHA-1, then PLAIN where
  /// the transport allows it; nil if none.
  public static func choose(offered: [String], transport: SASLTransport) -> SASLMechanism? {
    let names = Set(offered.map { $0.uppercased() })
    if names.contains("SCRAM-SHA-256") { return .scram(.sha256) }
    if names.contains("SCRAM-SHA-1") { return .scram(.sha1) }
    if names.contains("PLAIN") && transport.allowsPlain { return .plain }
    return nil
  }
}

/// SASL authentication as XMPP carries it (RFC 6120 §6.4): `<auth/>`, then `<challenge/>`s
/// answered by `<response/>`s, ending in `<success/>` or `<failure/>`. Elements in, elements
/// out; the nonce and the crypto are handed in.
public struct SASLNegotiation: Sendable {
  /// The namespace of SASL's elements.
  public static let namespace = "urn:ietf:params:xml:ns:xmpp-sasl"

  /// What to do after an element from the server.
  public enum Outcome: Hashable, Sendable {
    /// Send this element and wait for the next.
    case send(XMLElement)
    /// Authenticated: restart the stream.
    case succeeded
    /// The server refused (wrong password, disabled account, …).
    case refused(SASLFailure)
    /// The client gave up: the server broke the exchange.
    case failed(SASLError)
  }

  public let mechanism: SASLMechanism
  private let username: String
  private let password: String
  private var scram: SCRAMClient?

  /// Chooses the mechanism from the server's `<mechanisms/>` (the names offered).
  public init(
    offered: [String], username: String, password: String, transport: SASLTransport,
    clientNonce: String, crypto: SCRAMCrypto
  ) throws(SASLError) {
    guard let mechanism = SASLMechanism.choose(offered: offered, transport: transport) else {
      throw .noMechanism(offered: offered)
    }
    self.mechanism = mechanism
    self.username = username
    self.password = password
    if case .scram(let hash) = mechanism {
      scram = SCRAMClient(
        hash: hash, username: username, password: password, clientNonce: clientNonce,
        crypto: crypto)
    }
  }

  /// The mechanisms a `<stream:features/>` element offers, in its order.
  public static func offered(in features: XMLElement) -> [String] {
    features.child("mechanisms", namespace: namespace)?.children("mechanism").map(\.text) ?? []
  }

  /// The `<auth/>` that starts the exchange, with the initial response.
  public mutating func start() -> XMLElement {
    let initial: [UInt8]
    if var client = scram {
      initial = client.clientFirst()
      scram = client
    } else {
      // authzid empty: act as the authenticated identity.
      initial = [0] + Array(username.utf8) + [0] + Array(password.utf8)
    }
    // An empty initial response is "=" (RFC 6120 §6.4.2); PLAIN's and SCRAM's never are.
    return Self.element(
      "auth", data: initial, attributes: [XMLAttribute("mechanism", mechanism.name)])
  }

  /// Reads the server's next SASL element.
  public mutating func receive(_ element: XMLElement) -> Outcome {
    guard element.namespace == Self.namespace else {
      return .failed(.unexpected("<\(element.name) xmlns='\(element.namespace)'/>"))
    }
    switch element.name {
    case "challenge":
      guard let data = Self.data(element) else {
        return .failed(.malformedChallenge("the challenge is not base64"))
      }
      guard var client = scram else { return .failed(.unexpected("a challenge to PLAIN")) }
      defer { scram = client }
      do throws(SASLError) {
        if client.awaitsServerFirst {
          return .send(Self.element("response", data: try client.clientFinal(serverFirst: data)))
        }
        // Some servers send the server-final as a last challenge, then an empty success.
        try client.verify(serverFinal: data)
        return .send(Self.element("response", data: []))
      } catch {
        return .failed(error)
      }
    case "success":
      guard let data = Self.data(element) else {
        return .failed(.malformedChallenge("the success data is not base64"))
      }
      guard var client = scram else { return .succeeded }
      defer { scram = client }
      if client.isVerified && data.isEmpty { return .succeeded }
      // Without the server-final the server has not proved it knows the password.
      guard !data.isEmpty else {
        return .failed(.malformedChallenge("a success without the server's signature"))
      }
      do throws(SASLError) {
        try client.verify(serverFinal: data)
        return .succeeded
      } catch {
        return .failed(error)
      }
    case "failure":
      let condition =
        element.children.first { $0.namespace == Self.namespace && $0.name != "text" }?.name
        ?? "not-authorized"
      let text = element.child("text", namespace: Self.namespace)?.text
      return .refused(SASLFailure(condition: condition, text: text))
    default:
      return .failed(.unexpected("<\(element.name)/>"))
    }
  }

  /// An element carrying base64 data, or nothing.
  private static func element(
    _ name: String, data: [UInt8], attributes: [XMLAttribute] = []
  ) -> XMLElement {
    XMLElement(
      name, namespace: namespace, attributes: attributes,
      text: Base64.encode(data))
  }

  /// An element's base64 data: none for an empty element or "=".
  private static func data(_ element: XMLElement) -> [UInt8]? {
    let text = element.text.filter { !$0.isWhitespace }
    return text.isEmpty || text == "=" ? [] : Base64.decode(text)
  }
}
