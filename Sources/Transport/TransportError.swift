import EventLoop

/// Why a connection could not be made or was lost.
public enum TransportError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The host name did not resolve (getaddrinfo's message).
  case resolutionFailed(host: String, reason: String)
  /// Every address refused or failed; `attempts` lists each address with its error.
  case connectFailed(host: String, port: Int, attempts: [String])
  /// The connection (DNS, TCP and TLS together) did not finish in time.
  case timedOut(phase: String, seconds: Double)
  /// The server's certificate failed verification.
  case certificateRejected(CertificateProblem)
  /// The TLS handshake failed for another reason (protocol version, alert, …).
  case tlsHandshakeFailed(String)
  /// The TLS configuration could not be loaded (e.g. an unreadable CA file).
  case tlsConfiguration(String)
  /// A read or write failed after the connection was up.
  case io(SystemError)
  /// TLS failed after the handshake.
  case tls(String)
  /// A system call needed to set up the connection failed.
  case system(SystemError)
  /// The HTTP proxy refused or broke the CONNECT tunnel.
  case proxyFailed(String)
  /// The peer closed the connection (end of stream, no error).
  case closedByPeer

  public var description: String {
    switch self {
    case .resolutionFailed(let host, let reason): "cannot resolve \(host): \(reason)"
    case .connectFailed(let host, let port, let attempts):
      "cannot connect to \(host) port \(port): \(attempts.joined(separator: "; "))"
    case .timedOut(let phase, let seconds):
      "timed out after \(Self.format(seconds)) s while \(phase)"
    case .certificateRejected(let problem): "TLS certificate rejected: \(problem)"
    case .tlsHandshakeFailed(let why): "TLS handshake failed: \(why)"
    case .tlsConfiguration(let why): "TLS configuration: \(why)"
    case .io(let error): "connection error: \(error.message)"
    case .tls(let why): "TLS error: \(why)"
    case .system(let error): "\(error)"
    case .proxyFailed(let why): "proxy: \(why)"
    case .closedByPeer: "connection closed by the peer"
    }
  }

  private static func format(_ seconds: Double) -> String {
    seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
  }
}

/// Why a certificate was not trusted, named as users search for it.
public enum CertificateProblem: Sendable, Hashable, CustomStringConvertible {
  /// The chain does not end at a trusted CA (unknown CA, self-signed).
  case unknownAuthority(String)
  /// The certificate does not name the host we connected to.
  case hostnameMismatch(host: String)
  /// The certificate (or one in its chain) has expired.
  case expired
  /// The certificate is not valid yet (check the clock).
  case notYetValid
  /// Any other verification failure, with OpenSSL's code and text.
  case other(code: Int, text: String)

  public var description: String {
    switch self {
    case .unknownAuthority(let detail): "unknown CA (\(detail))"
    case .hostnameMismatch(let host): "hostname mismatch: the certificate is not valid for \(host)"
    case .expired: "certificate has expired"
    case .notYetValid: "certificate is not yet valid"
    case .other(let code, let text): "\(text) (X509 error \(code))"
    }
  }
}
