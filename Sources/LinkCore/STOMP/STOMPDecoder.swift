import JSON

/// Why the server's bytes are not STOMP.
public struct STOMPDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
  /// What is wrong, for the log and the close reason.
  public var reason: String

  /// Creates an error.
  public init(_ reason: String) {
    self.reason = reason
  }

  public var description: String { "malformed STOMP: \(reason)" }
}

/// Splits the server's byte stream into STOMP frames and heart-beats (every command is read,
/// so tests and fuzzing can read what the client sends too).
///
/// Over WebSocket a server usually sends one frame per message, but a message may hold
/// several frames, or part of one, and end-of-lines between frames are heart-beats. So the
/// decoder keeps what has arrived and `next()` returns each item once it is complete: nil means
/// "need more bytes". A body is read up to its content-length, else up to the first NUL.
/// A malformed frame is an error, after which the connection must end: nothing after it can be
/// trusted. The scan resumes where it stopped, so a large frame arriving in many pieces costs
/// one pass.
public struct STOMPDecoder: Sendable {
  /// What the stream holds next.
  public enum Item: Sendable, Hashable {
    /// An end-of-line between frames: the server's heart-beat.
    case heartbeat
    /// A whole frame.
    case frame(STOMPFrame)
  }

  /// A frame's command and headers, read once its blank line arrived.
  private struct Head: Sendable {
    var command: STOMPCommand
    var headers: [STOMPHeader]
    /// Where the body starts, from the frame's start.
    var bodyOffset: Int
    var contentLength: Int?
  }

  /// The largest frame accepted (command, headers and body).
  public var maximumFrameSize: Int
  private var pending = PendingBytes()
  /// How far from `pending.start` the search for the blank line, or for the body's NUL, got.
  private var scanned = 0
  private var head: Head?

  /// Creates a decoder.
  public init(maximumFrameSize: Int) {
    self.maximumFrameSize = maximumFrameSize
  }

  /// Bytes received and not yet returned.
  public var pendingCount: Int { pending.count }

  /// Adds received bytes.
  public mutating func append(_ bytes: [UInt8]) {
    pending.append(bytes)
  }

  /// The next heart-beat or complete frame, or nil when more bytes are needed.
  public mutating func next() throws(STOMPDecodingError) -> Item? {
    if head == nil {
      guard pending.start < pending.bytes.count else { return nil }
      switch pending.bytes[pending.start] {
      case .lf:
        pending.start += 1
        return .heartbeat
      case .cr:
        guard pending.start + 1 < pending.bytes.count else { return nil }
        guard pending.bytes[pending.start + 1] == .lf else {
          throw STOMPDecodingError("a CR that does not end a line")
        }
        pending.start += 2
        return .heartbeat
      default:
        break
      }
      guard let end = try headEnd() else { return nil }
      let parsed = try Self.head(
        pending.bytes[pending.start..<(pending.start + end)], bodyOffset: end)
      if let length = parsed.contentLength, length > maximumFrameSize - end {
        throw tooLarge(end + length)
      }
      head = parsed
      scanned = end
    }
    return try body()
  }

  private func tooLarge(_ size: Int) -> STOMPDecodingError {
    STOMPDecodingError("a frame of \(size) bytes or more, over the limit of \(maximumFrameSize)")
  }

  /// Where the blank line after the headers ends, from `pending.start`; nil until it has arrived.
  private mutating func headEnd() throws(STOMPDecodingError) -> Int? {
    var index = pending.start + scanned
    let count = pending.bytes.count
    while index < count {
      let byte = pending.bytes[index]
      if byte == 0 { throw STOMPDecodingError("a NUL before the blank line after the headers") }
      if byte == .lf {
        // An empty line ends the headers: LF LF or LF CR LF.
        guard index + 1 < count else { break }
        if pending.bytes[index + 1] == .lf { return index + 2 - pending.start }
        if pending.bytes[index + 1] == .cr {
          guard index + 2 < count else { break }
          if pending.bytes[index + 2] == .lf { return index + 3 - pending.start }
        }
      }
      index += 1
    }
    // Come back to this LF, whose line may still turn out blank.
    scanned = index - pending.start
    if count - pending.start > maximumFrameSize { throw tooLarge(count - pending.start) }
    return nil
  }

  /// The body, once all of it and its NUL have arrived.
  private mutating func body() throws(STOMPDecodingError) -> Item? {
    guard let head else { return nil }
    let bodyStart = pending.start + head.bodyOffset
    let bodyEnd: Int
    if let length = head.contentLength {
      guard pending.bytes.count > bodyStart + length else { return nil }
      bodyEnd = bodyStart + length
      guard pending.bytes[bodyEnd] == 0 else {
        throw STOMPDecodingError("no NUL after the \(length) bytes the content-length promised")
      }
    } else {
      guard let nul = pending.bytes[(pending.start + scanned)...].firstIndex(of: 0) else {
        scanned = pending.bytes.count - pending.start
        if scanned > maximumFrameSize { throw tooLarge(scanned) }
        return nil
      }
      if nul - pending.start > maximumFrameSize { throw tooLarge(nul - pending.start) }
      bodyEnd = nul
    }
    let frame = STOMPFrame(
      head.command, head.headers, body: Array(pending.bytes[bodyStart..<bodyEnd]))
    pending.start = bodyEnd + 1
    scanned = 0
    self.head = nil
    return .frame(frame)
  }

  /// The command and headers: `bytes` runs from the command to the blank line, included.
  private static func head(_ bytes: ArraySlice<UInt8>, bodyOffset: Int) throws(STOMPDecodingError)
    -> Head
  {
    // The last two pieces are the blank line and what follows its LF (nothing).
    let lines = bytes.split(separator: .lf, omittingEmptySubsequences: false).dropLast(2)
    guard let first = lines.first else { throw STOMPDecodingError("a frame without a command") }
    let name = try line(first)
    guard let command = STOMPCommand(rawValue: String(decoding: name, as: UTF8.self)) else {
      let shown = STOMPFrame.printable(String(decoding: name.prefix(32), as: UTF8.self))
      throw STOMPDecodingError("an unknown command '\(shown)'")
    }
    var headers: [STOMPHeader] = []
    var contentLength: Int?
    var seenLength = false
    for raw in lines.dropFirst() {
      let text = try line(raw)
      guard let colon = text.firstIndex(of: .colon) else {
        throw STOMPDecodingError("a header line without a colon")
      }
      let header = STOMPHeader(
        try unescape(text[..<colon], command.escapesHeaders),
        try unescape(text[(colon + 1)...], command.escapesHeaders))
      if header.name.isEmpty { throw STOMPDecodingError("a header without a name") }
      if header.name == "content-length" && !seenLength {
        seenLength = true
        contentLength = try length(header.value)
      }
      headers.append(header)
    }
    return Head(
      command: command, headers: headers, bodyOffset: bodyOffset, contentLength: contentLength)
  }

  /// A line without its EOL's CR; a CR anywhere else is not STOMP.
  private typealias Bytes = ArraySlice<UInt8>

  private static func line(_ raw: Bytes) throws(STOMPDecodingError) -> Bytes {
    let text = raw.last == .cr ? raw.dropLast() : raw
    if text.contains(.cr) { throw STOMPDecodingError("a CR inside a line") }
    return text
  }

  private static func length(_ value: String) throws(STOMPDecodingError) -> Int {
    guard !value.isEmpty, value.utf8.count <= 12, value.utf8.allSatisfy(\.isDigit),
      let length = Int(value)
    else {
      throw STOMPDecodingError(
        "a content-length that is not a number: '\(STOMPFrame.printable(String(value.prefix(32))))'"
      )
    }
    return length
  }

  /// A header's name or value, its escapes (\r \n \c \\) undone when the command has them.
  static func unescape(_ bytes: ArraySlice<UInt8>, _ escaped: Bool) throws(STOMPDecodingError)
    -> String
  {
    guard escaped, bytes.contains(.backslash) else { return try string(bytes) }
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count)
    var index = bytes.startIndex
    while index < bytes.endIndex {
      let byte = bytes[index]
      index += 1
      guard byte == .backslash else {
        out.append(byte)
        continue
      }
      guard index < bytes.endIndex else {
        throw STOMPDecodingError("a header ending in a lone backslash")
      }
      switch bytes[index] {
      case UInt8(ascii: "r"): out.append(.cr)
      case UInt8(ascii: "n"): out.append(.lf)
      case UInt8(ascii: "c"): out.append(.colon)
      case .backslash: out.append(.backslash)
      case let other:
        let shown = other >= 0x21 && other < 0x7F ? String(UnicodeScalar(other)) : "0x\(other)"
        throw STOMPDecodingError("an undefined escape \\\(shown) in a header")
      }
      index += 1
    }
    return try string(out[...])
  }

  private static func string(_ bytes: ArraySlice<UInt8>) throws(STOMPDecodingError) -> String {
    guard UTF8Validator.isValid(bytes) else {
      throw STOMPDecodingError("a header that is not UTF-8")
    }
    return String(decoding: bytes, as: UTF8.self)
  }
}

extension UInt8 {
  static let lf = UInt8(ascii: "\n")
  static let cr = UInt8(ascii: "\r")
  static let colon = UInt8(ascii: ":")
  static let backslash = UInt8(ascii: "\\")
}
