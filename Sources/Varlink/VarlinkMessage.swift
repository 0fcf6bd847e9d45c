@preconcurrency import Glibc
import JSON

/// A method call (varlink.org, "Protocol"): `{"method":"…","parameters":{…},"more":true}`.
public struct VarlinkCall: Sendable, Hashable {
  /// The fully qualified method, e.g. "io.chatlink.Daemon.Send".
  public var method: String
  /// The parameters object (empty when absent).
  public var parameters: JSONValue
  /// The caller wants no reply.
  public var oneway: Bool
  /// The caller accepts several replies (streaming).
  public var more: Bool
  /// A server's own bookkeeping for the call (its place in the connection's call order, so
  /// replies can leave in that order); never on the wire, and not part of equality.
  public var tag: UInt64 = 0

  public static func == (lhs: VarlinkCall, rhs: VarlinkCall) -> Bool {
    lhs.method == rhs.method && lhs.parameters == rhs.parameters && lhs.oneway == rhs.oneway
      && lhs.more == rhs.more
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(method)
    hasher.combine(parameters)
    hasher.combine(oneway)
    hasher.combine(more)
  }

  /// Creates a call.
  public init(
    method: String, parameters: JSONValue = .object([]), oneway: Bool = false, more: Bool = false
  ) {
    self.method = method
    self.parameters = parameters
    self.oneway = oneway
    self.more = more
  }

  /// The interface part of `method`.
  public var interface: String {
    guard let dot = method.lastIndex(of: ".") else { return "" }
    return String(method[..<dot])
  }

  /// The wire bytes, NUL included.
  public var encoded: [UInt8] {
    var members: [(key: String, value: JSONValue)] = [("method", .string(method))]
    if case .object(let p) = parameters, !p.isEmpty { members.append(("parameters", parameters)) }
    if oneway { members.append(("oneway", .bool(true))) }
    if more { members.append(("more", .bool(true))) }
    return JSONValue.object(members).bytes + [0]
  }

  /// Reads a call from one message (without its NUL).
  public static func decode(_ message: [UInt8]) throws(VarlinkError) -> VarlinkCall {
    let value: JSONValue
    do {
      value = try JSONValue.parse(message)
    } catch {
      throw .invalidMessage("the request is not valid JSON (UTF-8)")
    }
    guard case .object = value else { throw .invalidMessage("the request is not a JSON object") }
    guard let method = value["method"]?.stringValue, !method.isEmpty else {
      throw .invalidMessage("the request has no \"method\" string")
    }
    let parameters = value["parameters"] ?? .object([])
    guard case .object = parameters else {
      throw .invalidParameter(name: "parameters", reason: "must be an object")
    }
    for flag in ["oneway", "more", "upgrade"] {
      if let v = value[flag], v.boolValue == nil {
        throw .invalidParameter(name: flag, reason: "must be a boolean")
      }
    }
    if value["upgrade"]?.boolValue == true {
      throw .invalidParameter(name: "upgrade", reason: "connection upgrades are not supported")
    }
    return VarlinkCall(
      method: method, parameters: parameters, oneway: value["oneway"]?.boolValue ?? false,
      more: value["more"]?.boolValue ?? false)
  }
}

/// A reply: `{"parameters":{…},"continues":true}` or `{"error":"…","parameters":{…}}`.
public struct VarlinkReply: Sendable, Hashable {
  /// The out-parameters (or error parameters).
  public var parameters: JSONValue
  /// More replies follow (only for calls with `more`).
  public var continues: Bool
  /// The error name, for error replies.
  public var error: String?

  /// Creates a reply.
  public init(parameters: JSONValue = .object([]), continues: Bool = false, error: String? = nil) {
    self.parameters = parameters
    self.continues = continues
    self.error = error
  }

  /// An error reply.
  public init(_ error: VarlinkError) {
    self.init(parameters: error.parameters, error: error.name)
  }

  /// The wire bytes, NUL included.
  public var encoded: [UInt8] {
    var members: [(key: String, value: JSONValue)] = []
    if let error { members.append(("error", .string(error))) }
    members.append(("parameters", parameters))
    if continues { members.append(("continues", .bool(true))) }
    return JSONValue.object(members).bytes + [0]
  }

  /// Reads a reply from one message (without its NUL).
  public static func decode(_ message: [UInt8]) throws(VarlinkError) -> VarlinkReply {
    guard let value = try? JSONValue.parse(message), case .object = value else {
      throw .invalidMessage("the reply is not a JSON object")
    }
    return VarlinkReply(
      parameters: value["parameters"] ?? .object([]),
      continues: value["continues"]?.boolValue ?? false, error: value["error"]?.stringValue)
  }
}

/// Splits a byte stream into NUL-terminated Varlink messages, refusing oversized ones.
public struct VarlinkFramer: Sendable {
  /// The largest message accepted, NUL excluded.
  public let limit: Int
  private var buffer: [UInt8] = []

  /// Creates a framer.
  public init(limit: Int = 64 * 1024) {
    self.limit = limit
  }

  /// Bytes received but not yet part of a complete message.
  public var pendingCount: Int { buffer.count }

  /// Adds bytes; returns every complete message. Throws when a message exceeds the limit.
  public mutating func append(_ bytes: UnsafeRawBufferPointer) throws(VarlinkError) -> [[UInt8]] {
    var messages: [[UInt8]] = []
    guard let base = bytes.baseAddress else { return messages }
    var start = 0
    // memchr finds each NUL many bytes a step: a stream of sends is mostly message text.
    while start < bytes.count, let nul = memchr(base + start, 0, bytes.count - start) {
      let end = base.distance(to: UnsafeRawPointer(nul))
      buffer.append(contentsOf: bytes[start..<end])
      guard buffer.count <= limit else { throw .messageTooLarge(limit: limit) }
      messages.append(buffer)
      buffer = []
      start = end + 1
    }
    buffer.append(contentsOf: bytes[start...])
    guard buffer.count <= limit else { throw .messageTooLarge(limit: limit) }
    return messages
  }
}
