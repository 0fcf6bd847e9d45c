/// A close status code (RFC 6455 §7.4).
///
/// Codes that the RFC does not name, or that were registered later with IANA, are kept
/// losslessly in `.unknown`: a valid code from the peer is reported and echoed exactly as it
/// came, even one this version has no name for.
public enum CloseCode: Sendable, Hashable, CustomStringConvertible {
  /// 1000: the purpose of the connection has been fulfilled (RFC 6455 §7.4.1).
  case normalClosure
  /// 1001: the endpoint is going away, e.g. a server shutting down (RFC 6455 §7.4.1).
  case goingAway
  /// 1002: the endpoint saw a protocol error (RFC 6455 §7.4.1).
  case protocolError
  /// 1003: the endpoint received a data type it cannot accept (RFC 6455 §7.4.1).
  case unsupportedData
  /// 1005: no status code was present. Reserved: never sent on the wire (RFC 6455 §7.4.1).
  case noStatusReceived
  /// 1006: the connection closed without a close frame. Reserved: never sent (RFC 6455 §7.4.1).
  case abnormalClosure
  /// 1007: message data was inconsistent with its type, e.g. invalid UTF-8 (RFC 6455 §7.4.1).
  case invalidFramePayloadData
  /// 1008: a message violated the endpoint's policy (RFC 6455 §7.4.1).
  case policyViolation
  /// 1009: a message was too big to process (RFC 6455 §7.4.1).
  case messageTooBig
  /// 1010: the client expected an extension the server did not negotiate (RFC 6455 §7.4.1).
  case mandatoryExtension
  /// 1011: the server met an unexpected condition (RFC 6455 §7.4.1).
  case internalServerError
  /// 1012: the service is restarting (IANA registry, "Service Restart").
  case serviceRestart
  /// 1013: try again later (IANA registry, "Try Again Later").
  case tryAgainLater
  /// 1014: a gateway got an invalid response upstream (IANA registry, "Bad Gateway").
  case badGateway
  /// 1015: the TLS handshake failed. Reserved: never sent (RFC 6455 §7.4.1).
  case tlsHandshakeFailure
  /// Any other code, kept as received.
  case unknown(UInt16)

  /// Maps a wire value onto a case; every value round-trips through `rawValue`.
  public init(rawValue: UInt16) {
    switch rawValue {
    case 1000: self = .normalClosure
    case 1001: self = .goingAway
    case 1002: self = .protocolError
    case 1003: self = .unsupportedData
    case 1005: self = .noStatusReceived
    case 1006: self = .abnormalClosure
    case 1007: self = .invalidFramePayloadData
    case 1008: self = .policyViolation
    case 1009: self = .messageTooBig
    case 1010: self = .mandatoryExtension
    case 1011: self = .internalServerError
    case 1012: self = .serviceRestart
    case 1013: self = .tryAgainLater
    case 1014: self = .badGateway
    case 1015: self = .tlsHandshakeFailure
    default: self = .unknown(rawValue)
    }
  }

  /// The numeric code.
  public var rawValue: UInt16 {
    switch self {
    case .normalClosure: 1000
    case .goingAway: 1001
    case .protocolError: 1002
    case .unsupportedData: 1003
    case .noStatusReceived: 1005
    case .abnormalClosure: 1006
    case .invalidFramePayloadData: 1007
    case .policyViolation: 1008
    case .messageTooBig: 1009
    case .mandatoryExtension: 1010
    case .internalServerError: 1011
    case .serviceRestart: 1012
    case .tryAgainLater: 1013
    case .badGateway: 1014
    case .tlsHandshakeFailure: 1015
    case .unknown(let code): code
    }
  }

  /// Whether the code may appear in a close frame on the wire (RFC 6455 §7.4.1, §7.4.2).
  ///
  /// 0–999 are unused, 1004 is reserved, 1005/1006/1015 are for local reporting only,
  /// 1016–2999 are reserved for future protocol revisions, and 5000 and above are undefined.
  /// 3000–3999 (registered) and 4000–4999 (private use) are allowed.
  public var isSendable: Bool {
    let code = rawValue
    switch code {
    case 1000...1003, 1007...1014: return true
    case 3000...4999: return true
    default: return false
    }
  }

  public var description: String {
    let name: String
    switch self {
    case .normalClosure: name = "normal closure"
    case .goingAway: name = "going away"
    case .protocolError: name = "protocol error"
    case .unsupportedData: name = "unsupported data"
    case .noStatusReceived: name = "no status received"
    case .abnormalClosure: name = "abnormal closure"
    case .invalidFramePayloadData: name = "invalid frame payload data"
    case .policyViolation: name = "policy violation"
    case .messageTooBig: name = "message too big"
    case .mandatoryExtension: name = "mandatory extension"
    case .internalServerError: name = "internal server error"
    case .serviceRestart: name = "service restart"
    case .tryAgainLater: name = "try again later"
    case .badGateway: name = "bad gateway"
    case .tlsHandshakeFailure: name = "TLS handshake failure"
    case .unknown: name = "unknown"
    }
    return "\(rawValue) (\(name))"
  }
}
