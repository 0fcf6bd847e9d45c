import JSON

/// The commands of STOMP 1.2 (and 1.1), both directions.
public enum STOMPCommand: String, Sendable, Hashable, CaseIterable {
  /// Opens the session (client).
  case connect = "CONNECT"
  /// Opens the session, the 1.2 spelling (client).
  case stomp = "STOMP"
  /// The server accepted the session.
  case connected = "CONNECTED"
  /// A message to a destination (client).
  case send = "SEND"
  /// Subscribes to a destination (client).
  case subscribe = "SUBSCRIBE"
  /// Ends a subscription (client).
  case unsubscribe = "UNSUBSCRIBE"
  /// Acknowledges a message (client).
  case ack = "ACK"
  /// Refuses a message (client).
  case nack = "NACK"
  /// Starts a transaction (client).
  case begin = "BEGIN"
  /// Commits a transaction (client).
  case commit = "COMMIT"
  /// Aborts a transaction (client).
  case abort = "ABORT"
  /// Ends the session politely (client).
  case disconnect = "DISCONNECT"
  /// A message from a subscription (server).
  case message = "MESSAGE"
  /// The answer to a frame that asked for a receipt (server).
  case receipt = "RECEIPT"
  /// Something went wrong; the server closes the connection after it (server).
  case error = "ERROR"

  /// Whether its headers are written without escapes (STOMP 1.2: CONNECT and CONNECTED stay
  /// readable by 1.0 peers).
  public var escapesHeaders: Bool {
    self != .connect && self != .connected && self != .stomp
  }
}

/// One header line.
public struct STOMPHeader: Sendable, Hashable {
  /// The name, unescaped.
  public var name: String
  /// The value, unescaped.
  public var value: String

  /// Creates a header.
  public init(_ name: String, _ value: String) {
    self.name = name
    self.value = value
  }
}

/// One STOMP frame: a command, headers in order, and a body.
public struct STOMPFrame: Sendable, Hashable {
  /// The command.
  public var command: STOMPCommand
  /// The headers, in the order they came (a repeated name: the first one counts).
  public var headers: [STOMPHeader]
  /// The body, as sent.
  public var body: [UInt8]

  /// Creates a frame.
  public init(_ command: STOMPCommand, _ headers: [STOMPHeader] = [], body: [UInt8] = []) {
    self.command = command
    self.headers = headers
    self.body = body
  }

  /// The value of the first header called `name` (STOMP 1.2 §"Repeated Header Entries").
  public subscript(name: String) -> String? {
    headers.first { $0.name == name }?.value
  }

  /// An ERROR's explanation: its message header and its body, as far as they say anything.
  public var errorText: String {
    let message = self["message"].map { Self.printable($0) } ?? ""
    var detail = ""
    if UTF8Validator.isValid(body) {
      detail = Self.printable(String(decoding: body.prefix(1024), as: UTF8.self))
    }
    switch (message.isEmpty, detail.isEmpty) {
    case (true, true): return "no reason given"
    case (false, true): return message
    case (true, false): return detail
    case (false, false): return detail.hasPrefix(message) ? detail : "\(message): \(detail)"
    }
  }

  /// `text` on one line, trimmed, control characters as spaces: fit for the log and status.
  static func printable(_ text: String) -> String {
    let flat = String(
      String.UnicodeScalarView(
        text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : $0 }))
    return flat.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
  }
}
