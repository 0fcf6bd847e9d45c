/// Why the client gave up on an authentication (the server's own refusals are
/// `SASLFailure`s).
public enum SASLError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The server offers no mechanism we may use here (PLAIN counts only where allowed).
  case noMechanism(offered: [String])
  /// A SCRAM message that does not follow RFC 5802.
  case malformedChallenge(String)
  /// The server's nonce does not extend ours: a replay or a broken server.
  case nonceMismatch
  /// The server asks for more PBKDF2 rounds than `SCRAMClient.maxIterations`.
  case tooManyIterations(Int, limit: Int)
  /// The server could not prove it knows the password: it is not the server we trust.
  case serverSignatureMismatch
  /// The server's SCRAM error (`e=`).
  case serverError(String)
  /// An element or message the exchange does not expect now.
  case unexpected(String)
  /// The crypto library failed.
  case cryptoFailed

  public var description: String {
    switch self {
    case .noMechanism(let offered):
      "no usable SASL mechanism among [\(offered.joined(separator: ", "))]"
        + (offered.contains("PLAIN") ? " (PLAIN only over wss:// or loopback)" : "")
    case .malformedChallenge(let why): "malformed SCRAM message: \(why)"
    case .nonceMismatch: "the server's SCRAM nonce does not extend ours"
    case .tooManyIterations(let count, let limit):
      "the server asks for \(count) SCRAM iterations (at most \(limit) accepted)"
    case .serverSignatureMismatch: "the server's SCRAM signature is wrong"
    case .serverError(let text): "SCRAM error from the server: \(text)"
    case .unexpected(let what): "unexpected in SASL: \(what)"
    case .cryptoFailed: "the crypto library failed"
    }
  }
}

/// The server refused the authentication (RFC 6120 §6.5): its condition (`not-authorized`,
/// `account-disabled`, …) and its text, if it gave one. Like HTTP 401: retry slowly.
public struct SASLFailure: Hashable, Sendable, CustomStringConvertible {
  public var condition: String
  public var text: String?

  public init(condition: String, text: String? = nil) {
    self.condition = condition
    self.text = text
  }

  public var description: String {
    text.map { "\(condition): \($0)" } ?? condition
  }
}
