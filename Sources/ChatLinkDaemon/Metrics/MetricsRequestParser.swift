/// The head of one HTTP/1.x request, as much of it as the metrics endpoint needs.
public struct MetricsRequest: Sendable, Equatable {
  public var method: String
  /// The request target's path, without the query.
  public var path: String
  /// The Accept header's value, if any.
  public var accept: String?

  /// Creates a request head.
  public init(method: String, path: String, accept: String? = nil) {
    self.method = method
    self.path = path
    self.accept = accept
  }
}

/// Reads an HTTP/1.x request head from bytes as they arrive, in any split: pure, no I/O, and
/// bounded (a head larger than `limit` is refused with 431 rather than buffered).
///
/// The metrics endpoint answers one request per connection and closes it, so anything after
/// the head (a body, a pipelined request) is never read.
public struct MetricsRequestParser: Sendable {
  /// What the bytes so far amount to.
  public enum Result: Sendable, Equatable {
    /// The head is not complete yet.
    case needMore
    /// A complete head.
    case request(MetricsRequest)
    /// Not a request we can read: answer with this status and close.
    case invalid(status: Int)
  }

  /// The most bytes a head may take.
  public let limit: Int
  private var buffer: [UInt8] = []
  /// Where the search for the blank line resumes: bytes before it were searched already.
  private var searched = 0
  private var finished: Result?

  /// A parser that refuses heads over `limit` bytes.
  public init(limit: Int = 8192) {
    self.limit = limit
  }

  /// Adds `bytes`; returns what all the bytes so far amount to. Once a request or a refusal is
  /// returned, it stays the answer.
  public mutating func feed(_ bytes: some Collection<UInt8>) -> Result {
    if let finished { return finished }
    buffer.append(contentsOf: bytes.prefix(limit + 4 - min(buffer.count, limit + 4)))
    let end = headEnd()
    guard let end else {
      // A blank line that starts within the limit may take three bytes more (LF CR LF): only
      // once they are here is there surely none, whatever the reads were.
      if buffer.count >= limit + 3 { return finish(.invalid(status: 431)) }
      searched = max(0, buffer.count - 3)
      return .needMore
    }
    guard end <= limit else { return finish(.invalid(status: 431)) }
    return finish(Self.parse(buffer[..<end]))
  }

  private mutating func finish(_ result: Result) -> Result {
    finished = result
    buffer = []
    return result
  }

  /// The index where the head ends (at its blank line), if it has ended.
  private func headEnd() -> Int? {
    var index = searched
    while index < buffer.count {
      if buffer[index] == 0x0A {
        // LF LF or LF CR LF: a blank line (RFC 9112 allows a bare LF as a line end).
        if index + 1 < buffer.count && buffer[index + 1] == 0x0A { return index }
        if index + 2 < buffer.count && buffer[index + 1] == 0x0D && buffer[index + 2] == 0x0A {
          return index
        }
      }
      index += 1
    }
    return nil
  }

  /// Reads the head as bytes, as HTTP is: as Characters, a combining mark after a space or a
  /// colon would join it into one, and the request line or a header would not split there.
  private static func parse(_ head: ArraySlice<UInt8>) -> Result {
    var lines = head.split(separator: 0x0A, omittingEmptySubsequences: false).map {
      $0.last == 0x0D ? $0.dropLast() : $0
    }
    guard !lines.isEmpty else { return .invalid(status: 400) }
    let requestLine = lines.removeFirst().split(separator: 0x20, omittingEmptySubsequences: false)
    guard requestLine.count == 3, !requestLine[0].isEmpty, requestLine[1].first == UInt8(ascii: "/")
    else {
      return .invalid(status: 400)
    }
    let version = requestLine[2]
    guard version.elementsEqual("HTTP/1.1".utf8) || version.elementsEqual("HTTP/1.0".utf8) else {
      return .invalid(status: version.starts(with: "HTTP/".utf8) ? 505 : 400)
    }
    var accept: String?
    for line in lines where !line.isEmpty {
      guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return .invalid(status: 400) }
      if String(decoding: line[..<colon], as: UTF8.self).lowercased() == "accept" {
        let value = line[(colon + 1)...].drop { $0 == 0x20 || $0 == 0x09 }
        accept = (accept.map { $0 + "," } ?? "") + String(decoding: value, as: UTF8.self)
      }
    }
    let path = requestLine[1].prefix { $0 != UInt8(ascii: "?") }
    return .request(
      MetricsRequest(
        method: String(decoding: requestLine[0], as: UTF8.self),
        path: String(decoding: path, as: UTF8.self), accept: accept))
  }
}
