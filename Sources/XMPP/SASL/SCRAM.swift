import WebSocket

/// The hash a SCRAM mechanism is built on.
public enum SCRAMHash: Sendable, Hashable {
  case sha1, sha256

  /// The SASL mechanism's name.
  public var mechanism: String {
    switch self {
    case .sha1: "SCRAM-SHA-1"
    case .sha256: "SCRAM-SHA-256"
    }
  }
}

/// The primitives SCRAM needs, handed in so this module stays pure: the daemon gives it
/// OpenSSL's (`Transport.OpenSSLCrypto`), the tests the same. Each returns nil when the
/// library fails, which ends the authentication with `SASLError.cryptoFailed`.
public struct SCRAMCrypto: Sendable {
  public var hash: @Sendable (SCRAMHash, [UInt8]) -> [UInt8]?
  public var hmac: @Sendable (SCRAMHash, _ key: [UInt8], _ message: [UInt8]) -> [UInt8]?
  public var pbkdf2:
    @Sendable (SCRAMHash, _ password: [UInt8], _ salt: [UInt8], _ iterations: Int) -> [UInt8]?

  public init(
    hash: @escaping @Sendable (SCRAMHash, [UInt8]) -> [UInt8]?,
    hmac: @escaping @Sendable (SCRAMHash, [UInt8], [UInt8]) -> [UInt8]?,
    pbkdf2: @escaping @Sendable (SCRAMHash, [UInt8], [UInt8], Int) -> [UInt8]?
  ) {
    self.hash = hash
    self.hmac = hmac
    self.pbkdf2 = pbkdf2
  }
}

/// The client side of SCRAM (RFC 5802, RFC 7677 for SHA-256), without channel binding
/// (gs2 header `n,,`), as a pure state machine: the nonce is handed in, messages go in and
/// out as bytes (XMPP carries them in base64, `SASLNegotiation`).
///
/// The user name and password are used as their UTF-8 bytes: SASLprep (RFC 4013) leaves
/// printable ASCII as it is, and the module has no Unicode normalisation to apply the rest
/// of it, so a non-ASCII password must be stored in the form the server prepared it in.
public struct SCRAMClient: Sendable {
  /// The highest iteration count accepted from a server. PBKDF2 runs where the session runs;
  /// a hostile server must not make it spin: 600,000 is what OWASP recommends for
  /// PBKDF2-HMAC-SHA256 today, above what Prosody (10,000) and ejabberd (4,096) use.
  public static let maxIterations = 600_000

  private enum State: Sendable {
    case initial
    case sentFirst(bare: [UInt8])
    case sentFinal(serverSignature: [UInt8])
    case verified
    case failed
  }

  public let hash: SCRAMHash
  private let username: String
  private let password: String
  private let clientNonce: String
  private let crypto: SCRAMCrypto
  private var state = State.initial

  /// `clientNonce`: printable ASCII without commas (e.g. base64 of 18 random bytes).
  public init(
    hash: SCRAMHash, username: String, password: String, clientNonce: String,
    crypto: SCRAMCrypto
  ) {
    self.hash = hash
    self.username = username
    self.password = password
    self.clientNonce = clientNonce
    self.crypto = crypto
  }

  /// The client-first message: `n,,n=USER,r=NONCE`.
  public mutating func clientFirst() -> [UInt8] {
    let bare = Array("n=\(Self.escape(username)),r=\(clientNonce)".utf8)
    state = .sentFirst(bare: bare)
    return Array("n,,".utf8) + bare
  }

  /// Reads the server-first message and returns the client-final one, with the proof.
  public mutating func clientFinal(serverFirst: [UInt8]) throws(SASLError) -> [UInt8] {
    guard case .sentFirst(let bare) = state else { throw .unexpected("a second challenge") }
    state = .failed
    let fields = try Self.fields(serverFirst)
    if fields.keys.contains("m") { throw .malformedChallenge("a mandatory extension (m=)") }
    guard let nonce = fields["r"], let saltText = fields["s"], let countText = fields["i"]
    else { throw .malformedChallenge("no r=, s= or i=") }
    guard nonce.hasPrefix(clientNonce), nonce.count > clientNonce.count else {
      throw .nonceMismatch
    }
    guard let salt = Base64.decode(saltText), !salt.isEmpty else {
      throw .malformedChallenge("the salt is not base64")
    }
    guard !countText.isEmpty, countText.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
      countText.count <= 9, let iterations = Int(countText), iterations >= 1
    else { throw .malformedChallenge("the iteration count is not a positive number") }
    guard iterations <= Self.maxIterations else {
      throw .tooManyIterations(iterations, limit: Self.maxIterations)
    }
    guard
      let salted = crypto.pbkdf2(hash, Array(password.utf8), salt, iterations),
      let clientKey = crypto.hmac(hash, salted, Array("Client Key".utf8)),
      let storedKey = crypto.hash(hash, clientKey),
      let serverKey = crypto.hmac(hash, salted, Array("Server Key".utf8))
    else { throw .cryptoFailed }
    // c=biws is base64 of the gs2 header "n,,": no channel binding.
    let withoutProof = Array("c=biws,r=\(nonce)".utf8)
    let authMessage = bare + [UInt8(ascii: ",")] + serverFirst + [UInt8(ascii: ",")] + withoutProof
    guard let clientSignature = crypto.hmac(hash, storedKey, authMessage),
      let serverSignature = crypto.hmac(hash, serverKey, authMessage),
      clientSignature.count == clientKey.count
    else { throw .cryptoFailed }
    let proof = zip(clientKey, clientSignature).map { $0 ^ $1 }
    state = .sentFinal(serverSignature: serverSignature)
    return withoutProof + Array(",p=".utf8) + Array(Base64.encode(proof).utf8)
  }

  /// Checks the server-final message: the server proves it knows the password too.
  public mutating func verify(serverFinal: [UInt8]) throws(SASLError) {
    guard case .sentFinal(let expected) = state else { throw .unexpected("a server-final") }
    state = .failed
    let fields = try Self.fields(serverFinal)
    if let error = fields["e"] { throw .serverError(error) }
    guard let text = fields["v"], let signature = Base64.decode(text) else {
      throw .malformedChallenge("no v= in the server's final message")
    }
    // Constant time, as a habit: nothing secret leaks from a client's comparison, but nothing
    // is lost either.
    var difference = UInt8(signature.count == expected.count ? 0 : 1)
    for (a, b) in zip(signature, expected) { difference |= a ^ b }
    guard difference == 0 else { throw .serverSignatureMismatch }
    state = .verified
  }

  /// Whether the client-first went out and the server-first has not come yet.
  public var awaitsServerFirst: Bool {
    if case .sentFirst = state { true } else { false }
  }

  /// Whether the exchange finished with a verified server signature.
  public var isVerified: Bool {
    if case .verified = state { true } else { false }
  }

  /// `=` and `,` in a saslname (RFC 5802 §5.1).
  static func escape(_ name: String) -> String {
    var out = ""
    for character in name.unicodeScalars {
      switch character {
      case "=": out += "=3D"
      case ",": out += "=2C"
      default: out.unicodeScalars.append(character)
      }
    }
    return out
  }

  /// The `k=value` fields of a SCRAM message, keyed by their one-letter names.
  static func fields(_ message: [UInt8]) throws(SASLError) -> [String: String] {
    guard let text = String(validating: message, as: UTF8.self) else {
      throw .malformedChallenge("not UTF-8")
    }
    var fields: [String: String] = [:]
    for part in text.split(separator: ",", omittingEmptySubsequences: false) {
      let bytes = Array(part.utf8)
      guard bytes.count >= 2, bytes[1] == UInt8(ascii: "="),
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(bytes[0])
      else { throw .malformedChallenge("a field that is not k=value") }
      let key = String(decoding: bytes[..<1], as: UTF8.self)
      guard fields[key] == nil else { throw .malformedChallenge("\(key)= twice") }
      fields[key] = String(decoding: bytes[2...], as: UTF8.self)
    }
    return fields
  }
}
