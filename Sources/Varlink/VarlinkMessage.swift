@preconcurrency import Glibc
import JSON

/// A method call (varlink.org, "Protocol"): `{"method":"…","parameters":{…},"more":true}`.
public struct VarlinkCall: Sendable, Hashable {
  /// The fully qualified method, e.g. "io.chatlink.Daemon.Send".
  public var method: String
  /// The parameters object (empty when absent). A decoded call keeps the object's text and
  /// parses it on each read: its method reads it once, or reads `parametersText` instead.
  public var parameters: JSONValue {
    get { body.value }
    set { body = ParametersBody(newValue) }
  }
  /// The parameters object's JSON text as the call carried it, validated (grammar, UTF-8,
  /// depth) with the rest of the call; nil when there was none or the call was made here.
  /// A method whose parameters are large (a batch of messages) reads them from this without
  /// building a tree.
  public var parametersText: ArraySlice<UInt8>? { body.text }
  private var body: ParametersBody
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
    body = ParametersBody(parameters)
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

  /// The members of a call, as `decode` looks for them.
  private static let members = JSONScanner.Keys([
    "method", "parameters", "oneway", "more", "upgrade",
  ])

  /// Reads a call from one message (without its NUL).
  ///
  /// One scan validates the message and finds its members; no tree is built, so a call's
  /// parameters cost nothing until its method reads them.
  public static func decode(_ message: [UInt8]) throws(VarlinkError) -> VarlinkCall {
    let scanned = message.withUnsafeBytes { JSONScanner.scan($0, topLevel: members) }
    guard let scanned else { throw .invalidMessage("the request is not valid JSON (UTF-8)") }
    guard scanned.isObject else { throw .invalidMessage("the request is not a JSON object") }
    let found = scanned.topLevel
    guard let methodRange = found[0], let method = string(message[methodRange]), !method.isEmpty
    else {
      throw .invalidMessage("the request has no \"method\" string")
    }
    var parametersText: ArraySlice<UInt8>?
    if let range = found[1] {
      guard message[range.lowerBound] == UInt8(ascii: "{") else {
        throw .invalidParameter(name: "parameters", reason: "must be an object")
      }
      parametersText = message[range]
    }
    var flags: [Bool] = []
    for (index, flag) in ["oneway", "more", "upgrade"].enumerated() {
      guard let range = found[2 + index] else {
        flags.append(false)
        continue
      }
      guard let value = boolean(message[range]) else {
        throw .invalidParameter(name: flag, reason: "must be a boolean")
      }
      flags.append(value)
    }
    if flags[2] {
      throw .invalidParameter(name: "upgrade", reason: "connection upgrades are not supported")
    }
    var call = VarlinkCall(method: method, oneway: flags[0], more: flags[1])
    if let parametersText { call.body = ParametersBody(text: parametersText) }
    return call
  }

  /// A member's value as a string, nil when it is something else.
  static func string(_ value: ArraySlice<UInt8>) -> String? {
    guard value.first == UInt8(ascii: "\"") else { return nil }
    return value.withUnsafeBytes(JSONValue.parsed)?.stringValue
  }

  /// A member's value as a boolean, nil when it is something else.
  static func boolean(_ value: ArraySlice<UInt8>) -> Bool? {
    if value.elementsEqual("true".utf8) { return true }
    if value.elementsEqual("false".utf8) { return false }
    return nil
  }
}

/// A call's or a reply's parameters: a value made here, or the text a decoded message carried,
/// validated with it and parsed when read.
private struct ParametersBody: Sendable {
  let text: ArraySlice<UInt8>?
  private let made: JSONValue

  init(_ value: JSONValue) {
    text = nil
    made = value
  }

  init(text: ArraySlice<UInt8>) {
    self.text = text
    made = .object([])
  }

  var value: JSONValue {
    guard let text else { return made }
    return text.withUnsafeBytes(JSONValue.parsed) ?? .object([])
  }
}

/// A reply: `{"parameters":{…},"continues":true}` or `{"error":"…","parameters":{…}}`.
public struct VarlinkReply: Sendable, Hashable {
  /// The out-parameters (or error parameters). A decoded reply keeps their text and parses it
  /// on each read: read it once, or read `parametersText` instead.
  public var parameters: JSONValue {
    get { body.value }
    set { body = ParametersBody(newValue) }
  }
  /// The parameters' JSON text as the reply carried it, validated with the rest of it; nil
  /// when there was none or the reply was made here. A client reads a large reply (the ids of
  /// a batch) from this without building a tree.
  public var parametersText: ArraySlice<UInt8>? { body.text }
  private var body: ParametersBody
  /// More replies follow (only for calls with `more`).
  public var continues: Bool
  /// The error name, for error replies.
  public var error: String?

  /// Creates a reply.
  public init(parameters: JSONValue = .object([]), continues: Bool = false, error: String? = nil) {
    body = ParametersBody(parameters)
    self.continues = continues
    self.error = error
  }

  /// An error reply.
  public init(_ error: VarlinkError) {
    self.init(parameters: error.parameters, error: error.name)
  }

  public static func == (lhs: VarlinkReply, rhs: VarlinkReply) -> Bool {
    lhs.parameters == rhs.parameters && lhs.continues == rhs.continues && lhs.error == rhs.error
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(parameters)
    hasher.combine(continues)
    hasher.combine(error)
  }

  /// The wire bytes, NUL included.
  public var encoded: [UInt8] {
    var members: [(key: String, value: JSONValue)] = []
    if let error { members.append(("error", .string(error))) }
    members.append(("parameters", parameters))
    if continues { members.append(("continues", .bool(true))) }
    return JSONValue.object(members).bytes + [0]
  }

  private static let members = JSONScanner.Keys(["parameters", "continues", "error"])

  /// Reads a reply from one message (without its NUL): one scan, no tree.
  public static func decode(_ message: [UInt8]) throws(VarlinkError) -> VarlinkReply {
    let scanned = message.withUnsafeBytes { JSONScanner.scan($0, topLevel: members) }
    guard let scanned, scanned.isObject else {
      throw .invalidMessage("the reply is not a JSON object")
    }
    let found = scanned.topLevel
    // A member of the wrong type reads as absent, as it always has.
    var reply = VarlinkReply(
      continues: found[1].map { VarlinkCall.boolean(message[$0]) == true } ?? false,
      error: found[2].flatMap { VarlinkCall.string(message[$0]) })
    if let range = found[0] { reply.body = ParametersBody(text: message[range]) }
    return reply
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
