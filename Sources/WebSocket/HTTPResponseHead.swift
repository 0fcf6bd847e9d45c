/// The status line and header fields of an HTTP/1.1 response (RFC 9112 §4, §5).
public struct HTTPResponseHead: Sendable, Hashable {
  /// The status code, e.g. 101 or 503.
  public var status: Int
  /// The reason phrase, possibly empty.
  public var reason: String
  /// The header fields in order.
  public var headers: HTTPHeaders

  /// Creates a response head.
  public init(status: Int, reason: String, headers: HTTPHeaders) {
    self.status = status
    self.reason = reason
    self.headers = headers
  }

  /// What `Retry-After` asks for (RFC 9110 §10.2.3).
  public enum RetryAfter: Sendable, Hashable {
    /// Wait this many seconds.
    case seconds(Int)
    /// Wait until this HTTP-date, as given (the caller owns the clock).
    case date(String)
  }

  /// The parsed `Retry-After` header, if present and well-formed.
  public var retryAfter: RetryAfter? {
    guard let raw = headers[first: "Retry-After"].map(HeaderSyntax.trim), !raw.isEmpty else {
      return nil
    }
    if raw.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
      return Int(raw).map { .seconds($0) } ?? .seconds(Int.max)
    }
    return .date(raw)
  }

  /// The `Location` of a redirect, if any.
  public var location: String? { headers[first: "Location"] }

  /// Whether the status is a redirect (3xx).
  public var isRedirect: Bool { (300...399).contains(status) }
}

/// Collects bytes until the blank line that ends an HTTP/1.1 head (RFC 9112 §2.1) and splits
/// the head into its start line and header fields. Shared by the request and response parsers.
struct HTTPHeadBuffer: Sendable {
  let limit: Int
  private var buffer: [UInt8] = []
  private var scanned = 0

  init(limit: Int) {
    self.limit = limit
  }

  /// Adds bytes; once the head is complete returns its start line, fields and the bytes
  /// that followed it.
  mutating func append(_ bytes: UnsafeRawBufferPointer) throws(HandshakeError) -> (
    startLine: String, headers: HTTPHeaders, remainder: [UInt8]
  )? {
    buffer.append(contentsOf: bytes)
    // Rescan a few bytes back so a CRLFCRLF split across reads is still found.
    var index = max(0, scanned - 3)
    while index + 3 < buffer.count {
      if buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13
        && buffer[index + 3] == 10
      {
        let headEnd = index + 4
        guard headEnd <= limit else { throw .responseTooLarge(limit: limit) }
        let (startLine, headers) = try Self.split(buffer[..<index])
        return (startLine, headers, Array(buffer[headEnd...]))
      }
      index += 1
    }
    scanned = buffer.count
    if buffer.count > limit { throw .responseTooLarge(limit: limit) }
    return nil
  }

  static func split(_ bytes: ArraySlice<UInt8>) throws(HandshakeError) -> (String, HTTPHeaders) {
    // Header fields are ASCII in practice; obs-text bytes are kept as Latin-1 would map them
    // so a stray byte never fails a head that is otherwise fine.
    var lines: [String] = []
    var start = bytes.startIndex
    var i = bytes.startIndex
    while i < bytes.endIndex {
      if bytes[i] == 13, i + 1 < bytes.endIndex, bytes[i + 1] == 10 {
        lines.append(latin1(bytes[start..<i]))
        i += 2
        start = i
      } else if bytes[i] == 13 || bytes[i] == 10 || bytes[i] == 0 {
        throw .malformedResponse("bare CR, LF or NUL in the head")
      } else {
        i += 1
      }
    }
    lines.append(latin1(bytes[start..<bytes.endIndex]))
    let startLine = lines.removeFirst()
    var headers = HTTPHeaders()
    for line in lines {
      if line.first == " " || line.first == "\t" {
        throw .malformedResponse("obsolete header line folding")
      }
      guard let colon = line.firstIndex(of: ":") else {
        throw .malformedResponse("header line without a colon")
      }
      let name = String(line[..<colon])
      guard HeaderSyntax.isToken(name) else {
        throw .malformedResponse("invalid header name '\(name.prefix(40))'")
      }
      headers.add(name: name, value: HeaderSyntax.trim(String(line[line.index(after: colon)...])))
    }
    return (startLine, headers)
  }

  private static func latin1(_ bytes: ArraySlice<UInt8>) -> String {
    String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
  }
}

/// Finds and parses the response head of the opening handshake as bytes arrive.
public struct HTTPResponseParser: Sendable {
  private var head: HTTPHeadBuffer

  /// The largest head accepted, blank line included.
  public var limit: Int { head.limit }

  /// Creates a parser.
  public init(limit: Int = 64 * 1024) {
    head = HTTPHeadBuffer(limit: limit)
  }

  /// Adds bytes; returns the head and whatever bytes followed it (already frames) once the
  /// blank line has arrived, nil before.
  public mutating func append(_ bytes: UnsafeRawBufferPointer) throws(HandshakeError) -> (
    head: HTTPResponseHead, remainder: [UInt8]
  )? {
    guard let (statusLine, headers, remainder) = try head.append(bytes) else { return nil }
    let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
    guard parts.count >= 2, parts[0] == "HTTP/1.1" || parts[0] == "HTTP/1.0" else {
      throw .malformedResponse("status line '\(statusLine.prefix(80))'")
    }
    guard parts[1].count == 3, parts[1].allSatisfy({ $0.isASCII && $0.isNumber }),
      let status = Int(parts[1])
    else {
      throw .malformedResponse("status code '\(parts[1].prefix(20))'")
    }
    let reason = parts.count > 2 ? String(parts[2]) : ""
    return (HTTPResponseHead(status: status, reason: reason, headers: headers), remainder)
  }
}
