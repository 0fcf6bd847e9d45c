/// An HTTP/1.1 request head (RFC 9112 §3).
public struct HTTPRequestHead: Sendable, Hashable {
  /// The method, e.g. GET.
  public var method: String
  /// The request target, e.g. "/ws?room=7".
  public var target: String
  /// The header fields in order.
  public var headers: HTTPHeaders
}

/// The server side of the opening handshake (RFC 6455 §4.2), for test and demo servers.
public struct ServerHandshake: Sendable {
  /// Why a request is not a valid WebSocket upgrade; `status` is the HTTP answer to give.
  public struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
    public var status: Int
    public var reason: String
    public var description: String { "\(status): \(reason)" }

    /// Creates a refusal.
    public init(status: Int, reason: String) {
      self.status = status
      self.reason = reason
    }
  }

  /// What the server agreed to.
  public struct Accepted: Sendable {
    /// The request, for the server's own checks (path, Authorization, …).
    public var request: HTTPRequestHead
    /// The 101 response to send.
    public var response: [UInt8]
    /// The subprotocol chosen, if any.
    public var subprotocol: String?
    /// Compression to use, if the client offered permessage-deflate and we accepted it.
    public var compression: FrameSession.Compression?
  }

  private var head: HTTPHeadBuffer

  /// Creates a parser for one request head of at most `limit` bytes.
  public init(limit: Int = 16 * 1024) {
    head = HTTPHeadBuffer(limit: limit)
  }

  /// Adds bytes; once the head is complete, returns it and the bytes after it.
  public mutating func append(_ bytes: UnsafeRawBufferPointer) throws(Refusal) -> (
    request: HTTPRequestHead, remainder: [UInt8]
  )? {
    let parsed: (startLine: String, headers: HTTPHeaders, remainder: [UInt8])?
    do {
      parsed = try head.append(bytes)
    } catch {
      throw Refusal(status: 400, reason: "\(error)")
    }
    guard let parsed else { return nil }
    let parts = parsed.startLine.split(separator: " ")
    guard parts.count == 3, parts[2] == "HTTP/1.1" else {
      throw Refusal(status: 400, reason: "request line '\(parsed.startLine.prefix(80))'")
    }
    return (
      HTTPRequestHead(method: String(parts[0]), target: String(parts[1]), headers: parsed.headers),
      parsed.remainder
    )
  }

  /// Checks an upgrade request and builds the 101 answer.
  ///
  /// - Parameters:
  ///   - subprotocols: what the server speaks, in preference order.
  ///   - deflate: accept permessage-deflate when offered (no parameters requested).
  public static func accept(
    _ request: HTTPRequestHead, subprotocols: [String] = [], deflate: Bool = false,
    extraHeaders: HTTPHeaders = HTTPHeaders()
  ) throws(Refusal) -> Accepted {
    guard request.method == "GET" else { throw Refusal(status: 405, reason: "method must be GET") }
    guard request.headers[first: "Upgrade"]?.lowercased() == "websocket",
      request.headers.listElements("Connection").contains(where: { $0.lowercased() == "upgrade" })
    else { throw Refusal(status: 426, reason: "not a WebSocket upgrade") }
    guard request.headers[first: "Sec-WebSocket-Version"] == "13" else {
      throw Refusal(status: 426, reason: "Sec-WebSocket-Version must be 13")
    }
    guard let key = request.headers[first: "Sec-WebSocket-Key"], Base64.decode(key)?.count == 16
    else { throw Refusal(status: 400, reason: "invalid Sec-WebSocket-Key") }
    let offered = request.headers.listElements("Sec-WebSocket-Protocol")
    let chosen = subprotocols.first { offered.contains($0) }
    var response =
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    let accept = Base64.encode(SHA1.digest(Array((key + ClientHandshake.acceptGUID).utf8)) ?? [])
    response += "Sec-WebSocket-Accept: \(accept)\r\n"
    if let chosen { response += "Sec-WebSocket-Protocol: \(chosen)\r\n" }
    var compression: FrameSession.Compression?
    if deflate, let (accepted, settings) = acceptDeflate(request.headers) {
      response += "Sec-WebSocket-Extensions: \(accepted)\r\n"
      compression = settings
    }
    for (name, value) in extraHeaders { response += "\(name): \(value)\r\n" }
    response += "\r\n"
    return Accepted(
      request: request, response: Array(response.utf8), subprotocol: chosen,
      compression: compression)
  }

  /// A refusal response, e.g. 401 with WWW-Authenticate or 503 with Retry-After.
  public static func refusal(status: Int, reason: String, headers: HTTPHeaders = HTTPHeaders())
    -> [UInt8]
  {
    var text = "HTTP/1.1 \(status) \(reason)\r\nContent-Length: 0\r\nConnection: close\r\n"
    for (name, value) in headers { text += "\(name): \(value)\r\n" }
    return Array((text + "\r\n").utf8)
  }

  /// Accepts the first permessage-deflate offer whose parameters we can honour (RFC 7692
  /// §7.1): the server's window and context takeover as asked; the client's window is left
  /// to the client, since we inflate with a full window.
  static func acceptDeflate(_ headers: HTTPHeaders) -> (String, FrameSession.Compression)? {
    offers: for offer in headers.listElements("Sec-WebSocket-Extensions") {
      let parts = HeaderSyntax.splitList(offer, separator: ";")
      guard parts.first?.lowercased() == "permessage-deflate" else { continue }
      var response = ["permessage-deflate"]
      var windowBits = 15
      var resetOurs = false
      var resetTheirs = false
      var seen = Set<String>()
      for parameter in parts.dropFirst() {
        let pieces = parameter.split(separator: "=", maxSplits: 1).map {
          HeaderSyntax.trim(String($0))
        }
        let name = pieces[0].lowercased()
        guard seen.insert(name).inserted else { continue offers }
        let value = pieces.count > 1 ? HeaderSyntax.unquote(pieces[1]) : nil
        switch name {
        case "server_no_context_takeover":
          guard pieces.count == 1 else { continue offers }
          resetOurs = true
          response.append("server_no_context_takeover")
        case "client_no_context_takeover":
          guard pieces.count == 1 else { continue offers }
          resetTheirs = true
          response.append("client_no_context_takeover")
        case "server_max_window_bits":
          guard let value, let bits = Int(value), (8...15).contains(bits) else { continue offers }
          windowBits = bits
          response.append("server_max_window_bits=\(bits)")
        case "client_max_window_bits":
          if let value {
            guard let bits = Int(value), (8...15).contains(bits) else { continue offers }
          }
        default:
          continue offers
        }
      }
      return (
        response.joined(separator: "; "),
        FrameSession.Compression(
          outgoingWindowBits: windowBits, outgoingNoContextTakeover: resetOurs,
          incomingNoContextTakeover: resetTheirs, threshold: 32, level: 1)
      )
    }
    return nil
  }
}
