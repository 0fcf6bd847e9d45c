/// The client's opening handshake: the request (RFC 6455 §4.1) and the strict check of the
/// server's answer (§4.2.2, RFC 7692 §5, §7).
public struct ClientHandshake: Sendable {
  /// The GUID that RFC 6455 §1.3 appends to the key before hashing.
  static let acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

  /// Where to connect.
  public let url: WebSocketURL
  /// Extra request headers, e.g. Authorization, Origin, User-Agent.
  public let headers: HTTPHeaders
  /// Subprotocols offered, in order of preference.
  public let subprotocols: [String]
  /// permessage-deflate offer, or nil to offer no extension.
  public let deflate: PerMessageDeflateOptions?
  /// The Sec-WebSocket-Key sent (base64 of 16 random bytes).
  public let key: String

  /// What the server agreed to.
  public struct Result: Sendable, Hashable {
    /// The response head, for logging and diagnostics.
    public var response: HTTPResponseHead
    /// The subprotocol the server selected, if any.
    public var subprotocol: String?
    /// The negotiated permessage-deflate parameters, if the server accepted them.
    public var deflate: NegotiatedDeflate?

    /// Creates a result (the handshake's `validate` makes them; tests and drivers may too).
    public init(response: HTTPResponseHead, subprotocol: String?, deflate: NegotiatedDeflate?) {
      self.response = response
      self.subprotocol = subprotocol
      self.deflate = deflate
    }
  }

  /// Headers the handshake owns; a caller may not set them (it would break the upgrade).
  private static let reservedHeaders: Set<String> = [
    "host", "upgrade", "connection", "sec-websocket-key", "sec-websocket-version",
    "sec-websocket-extensions", "sec-websocket-protocol", "content-length", "transfer-encoding",
  ]

  /// Checks one caller-supplied request header, as `init` does; configuration parsers call
  /// it too, so that a value refused here is refused when it is read, not at every connect.
  public static func checkRequestHeader(name: String, value: String) throws(HandshakeError) {
    guard HeaderSyntax.isToken(name) else {
      throw .invalidRequestHeader("'\(name)' is not a valid header name")
    }
    guard !reservedHeaders.contains(name.lowercased()) else {
      throw .invalidRequestHeader("'\(name)' is set by the WebSocket handshake itself")
    }
    // CR, LF and NUL in a value would let it inject headers or end the head early.
    guard !value.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" })
    else {
      throw .invalidRequestHeader("the value of '\(name)' contains CR, LF or NUL")
    }
  }

  /// Checks one offered subprotocol name, as `init` does.
  public static func checkSubprotocol(_ proto: String) throws(HandshakeError) {
    guard HeaderSyntax.isToken(proto) else {
      throw .invalidRequestHeader("subprotocol '\(proto)' is not a token (RFC 6455 §4.1)")
    }
  }

  /// Prepares a handshake and checks the caller's headers and subprotocols.
  public init(
    url: WebSocketURL, headers: HTTPHeaders = HTTPHeaders(), subprotocols: [String] = [],
    deflate: PerMessageDeflateOptions? = PerMessageDeflateOptions(),
    random: inout some RandomNumberGenerator
  ) throws(HandshakeError) {
    for (name, value) in headers {
      try Self.checkRequestHeader(name: name, value: value)
    }
    for proto in subprotocols {
      try Self.checkSubprotocol(proto)
    }
    self.url = url
    self.headers = headers
    self.subprotocols = subprotocols
    self.deflate = deflate
    var nonce = [UInt8]()
    for _ in 0..<2 {
      let word = random.next()
      for shift in stride(from: 0, to: 64, by: 8) {
        nonce.append(UInt8(truncatingIfNeeded: word >> UInt64(shift)))
      }
    }
    key = Base64.encode(nonce)
  }

  /// The request bytes.
  public var requestBytes: [UInt8] {
    var text = "GET \(url.resource) HTTP/1.1\r\n"
    text += "Host: \(url.hostHeader)\r\n"
    text += "Upgrade: websocket\r\n"
    text += "Connection: Upgrade\r\n"
    text += "Sec-WebSocket-Key: \(key)\r\n"
    text += "Sec-WebSocket-Version: 13\r\n"
    if !subprotocols.isEmpty {
      text += "Sec-WebSocket-Protocol: \(subprotocols.joined(separator: ", "))\r\n"
    }
    if let deflate { text += "Sec-WebSocket-Extensions: \(deflate.offer)\r\n" }
    for (name, value) in headers { text += "\(name): \(value)\r\n" }
    text += "\r\n"
    return Array(text.utf8)
  }

  /// The Sec-WebSocket-Accept value the server must answer with.
  public var expectedAccept: String {
    Base64.encode(SHA1.digest(Array((key + Self.acceptGUID).utf8)) ?? [])
  }

  /// Checks the server's response head.
  public func validate(_ response: HTTPResponseHead) throws(HandshakeError) -> Result {
    guard response.status == 101 else { throw .unexpectedStatus(response) }
    let upgrade = response.headers[first: "Upgrade"]
    guard let upgrade, upgrade.lowercased() == "websocket" else {
      throw .missingUpgradeHeader(found: upgrade)
    }
    let connection = response.headers.listElements("Connection")
    guard connection.contains(where: { $0.lowercased() == "upgrade" }) else {
      throw .missingConnectionUpgrade(found: response.headers[first: "Connection"])
    }
    let accept = response.headers[all: "Sec-WebSocket-Accept"]
    guard accept.count == 1, accept[0] == expectedAccept else {
      throw .invalidAccept(expected: expectedAccept, found: accept.first)
    }

    var subprotocol: String?
    let protocols = response.headers.listElements("Sec-WebSocket-Protocol")
    if let chosen = protocols.first {
      // §4.1: exactly one, and one we offered.
      guard protocols.count == 1, subprotocols.contains(chosen) else {
        throw .unexpectedSubprotocol(protocols.joined(separator: ", "))
      }
      subprotocol = chosen
    }

    var negotiated: NegotiatedDeflate?
    for element in response.headers.listElements("Sec-WebSocket-Extensions") {
      let parts = HeaderSyntax.splitList(element, separator: ";")
      guard let name = parts.first?.lowercased() else { continue }
      guard name == "permessage-deflate", let deflate else { throw .unsupportedExtension(name) }
      guard negotiated == nil else {
        throw .invalidExtension("permessage-deflate accepted twice")
      }
      var parameters: [(name: String, value: String?)] = []
      for parameter in parts.dropFirst() {
        if let eq = parameter.firstIndex(of: "=") {
          let key = HeaderSyntax.trim(String(parameter[..<eq]))
          let rawValue = HeaderSyntax.trim(String(parameter[parameter.index(after: eq)...]))
          guard let value = HeaderSyntax.unquote(rawValue) else {
            throw .invalidExtension("bad quoting in '\(parameter)'")
          }
          parameters.append((key, value))
        } else {
          parameters.append((parameter, nil))
        }
      }
      negotiated = try deflate.accept(responseParameters: parameters)
    }
    return Result(response: response, subprotocol: subprotocol, deflate: negotiated)
  }
}
