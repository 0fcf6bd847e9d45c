/// permessage-deflate settings: what we offer, and what the server agreed (RFC 7692 §7).
public struct PerMessageDeflateOptions: Sendable, Hashable {
  /// Ask the server to reset its compression context after each message.
  public var requestServerNoContextTakeover: Bool
  /// Tell the server we reset our own context after each message.
  public var offerClientNoContextTakeover: Bool
  /// Ask the server to use at most this LZ77 window (8...15).
  public var requestServerMaxWindowBits: Int?
  /// Tell the server we can limit our window; with a value, the limit we would like.
  /// RFC 7692 §7.1.2.2: without this in the offer the server may not limit our window.
  public var clientMaxWindowBits: ClientWindowBitsOffer
  /// Messages shorter than this are sent uncompressed: deflate cannot shrink them.
  public var compressionThreshold: Int
  /// zlib compression level, 1 (fast) to 9 (small).
  public var compressionLevel: Int32

  /// How `client_max_window_bits` appears in the offer.
  public enum ClientWindowBitsOffer: Sendable, Hashable {
    /// Leave the parameter out.
    case omitted
    /// `client_max_window_bits` with no value: the server may pick.
    case serverMayChoose
    /// `client_max_window_bits=N`.
    case value(Int)
  }

  /// Creates options; the defaults make the common offer, `permessage-deflate;
  /// client_max_window_bits` (what browsers send), which any server that compresses accepts.
  public init(
    requestServerNoContextTakeover: Bool = false, offerClientNoContextTakeover: Bool = false,
    requestServerMaxWindowBits: Int? = nil,
    clientMaxWindowBits: ClientWindowBitsOffer = .serverMayChoose, compressionThreshold: Int = 32,
    compressionLevel: Int32 = 6
  ) {
    self.requestServerNoContextTakeover = requestServerNoContextTakeover
    self.offerClientNoContextTakeover = offerClientNoContextTakeover
    self.requestServerMaxWindowBits = requestServerMaxWindowBits
    self.clientMaxWindowBits = clientMaxWindowBits
    self.compressionThreshold = compressionThreshold
    self.compressionLevel = compressionLevel
  }

  /// The `Sec-WebSocket-Extensions` offer.
  public var offer: String {
    var parts = ["permessage-deflate"]
    if requestServerNoContextTakeover { parts.append("server_no_context_takeover") }
    if offerClientNoContextTakeover { parts.append("client_no_context_takeover") }
    if let bits = requestServerMaxWindowBits { parts.append("server_max_window_bits=\(bits)") }
    switch clientMaxWindowBits {
    case .omitted: break
    case .serverMayChoose: parts.append("client_max_window_bits")
    case .value(let bits): parts.append("client_max_window_bits=\(bits)")
    }
    return parts.joined(separator: "; ")
  }

  /// Checks a server's response against this offer (RFC 7692 §7.1).
  public func accept(responseParameters: [(name: String, value: String?)]) throws(HandshakeError)
    -> NegotiatedDeflate
  {
    var result = NegotiatedDeflate(
      serverNoContextTakeover: false, clientNoContextTakeover: offerClientNoContextTakeover,
      serverMaxWindowBits: 15, clientMaxWindowBits: 15)
    if case .value(let bits) = clientMaxWindowBits { result.clientMaxWindowBits = bits }
    var seen = Set<String>()
    for (name, value) in responseParameters {
      let key = name.lowercased()
      guard seen.insert(key).inserted else {
        throw .invalidExtension("permessage-deflate: \(key) given twice")
      }
      switch key {
      case "server_no_context_takeover":
        guard value == nil else {
          throw .invalidExtension("permessage-deflate: \(key) takes no value")
        }
        result.serverNoContextTakeover = true
      case "client_no_context_takeover":
        guard value == nil else {
          throw .invalidExtension("permessage-deflate: \(key) takes no value")
        }
        result.clientNoContextTakeover = true
      case "server_max_window_bits":
        let bits = try Self.windowBits(key, value)
        // §7.1.2.1: the server may not exceed a window we asked for.
        if let asked = requestServerMaxWindowBits, bits > asked {
          throw .invalidExtension(
            "permessage-deflate: server_max_window_bits=\(bits) exceeds \(asked)")
        }
        result.serverMaxWindowBits = bits
      case "client_max_window_bits":
        // §7.1.2.2: the server may only send this if we offered it.
        if clientMaxWindowBits == .omitted {
          throw .invalidExtension("permessage-deflate: client_max_window_bits was not offered")
        }
        let bits = try Self.windowBits(key, value)
        if case .value(let offered) = clientMaxWindowBits, bits > offered {
          throw .invalidExtension(
            "permessage-deflate: client_max_window_bits=\(bits) exceeds \(offered)")
        }
        result.clientMaxWindowBits = bits
      default:
        throw .invalidExtension("permessage-deflate: unknown parameter \(name)")
      }
    }
    return result
  }

  private static func windowBits(_ name: String, _ value: String?) throws(HandshakeError) -> Int {
    guard let value, value.utf8.count <= 2, value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
      let bits = Int(value), (8...15).contains(bits), !value.hasPrefix("0")
    else {
      throw .invalidExtension("permessage-deflate: \(name) needs a value from 8 to 15")
    }
    return bits
  }
}

/// The permessage-deflate parameters in force for a connection.
public struct NegotiatedDeflate: Sendable, Hashable, CustomStringConvertible {
  /// The server resets its context after each message.
  public var serverNoContextTakeover: Bool
  /// We reset our context after each message.
  public var clientNoContextTakeover: Bool
  /// The server's LZ77 window.
  public var serverMaxWindowBits: Int
  /// Our LZ77 window limit.
  public var clientMaxWindowBits: Int

  /// Creates negotiated parameters.
  public init(
    serverNoContextTakeover: Bool, clientNoContextTakeover: Bool, serverMaxWindowBits: Int,
    clientMaxWindowBits: Int
  ) {
    self.serverNoContextTakeover = serverNoContextTakeover
    self.clientNoContextTakeover = clientNoContextTakeover
    self.serverMaxWindowBits = serverMaxWindowBits
    self.clientMaxWindowBits = clientMaxWindowBits
  }

  /// Whether we can compress at all. zlib cannot make raw deflate with an 8-bit window, so
  /// under `client_max_window_bits=8` every message goes out uncompressed, which RFC 7692
  /// §6 allows per message (RSV1 clear).
  public var canCompress: Bool { clientMaxWindowBits >= 9 }

  /// The extension as a response header would name it, for logs and status.
  public var description: String {
    var parts = ["permessage-deflate"]
    if serverNoContextTakeover { parts.append("server_no_context_takeover") }
    if clientNoContextTakeover { parts.append("client_no_context_takeover") }
    if serverMaxWindowBits != 15 { parts.append("server_max_window_bits=\(serverMaxWindowBits)") }
    if clientMaxWindowBits != 15 { parts.append("client_max_window_bits=\(clientMaxWindowBits)") }
    return parts.joined(separator: "; ")
  }
}
