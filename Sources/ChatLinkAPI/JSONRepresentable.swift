import JSON

/// A value of the io.chatlink.Daemon contract that travels as one JSON object: the
/// parameters or the reply of a method, a status, a stored record, an event.
///
/// Decoding never traps: a member of the wrong type, or a required one that is missing,
/// throws an `APIDecodingError` that names the member, so the daemon can answer
/// InvalidParameter with it and a client can say what the daemon got wrong. Members it does
/// not know are ignored, so either side may be newer than the other.
public protocol JSONRepresentable: Sendable, Hashable {
  /// Reads the value from its JSON object.
  init(json: JSONValue) throws(APIDecodingError)
  /// Reads the value from the text of its JSON object, which `JSONScanner` has validated (a
  /// decoded call's `parametersText`). By default the text is parsed into a tree for
  /// `init(json:)`; a type that travels with many members reads the text itself.
  init(validJSON text: UnsafeRawBufferPointer) throws(APIDecodingError)
  /// The JSON object, members in the order the daemon has always written them.
  var json: JSONValue { get }
}

extension JSONRepresentable {
  public init(validJSON text: UnsafeRawBufferPointer) throws(APIDecodingError) {
    guard let value = JSONValue.parsed(text) else {
      throw APIDecodingError(field: "", reason: "must be a JSON object")
    }
    try self.init(json: value)
  }
}

/// Why a JSON value is not the typed value expected: which member, and what it must be.
public struct APIDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The member, with the members it is inside first ("status.received"); empty for the
  /// value itself.
  public var field: String
  /// What is wrong, worded to follow the member's name: "must be an integer".
  public var reason: String

  /// Creates an error.
  public init(field: String, reason: String) {
    self.field = field
    self.reason = reason
  }

  public var description: String {
    field.isEmpty ? "the value \(reason)" : "\(field) \(reason)"
  }

  /// The same error seen from the object that holds it as `key`.
  public func inside(_ key: String) -> APIDecodingError {
    APIDecodingError(field: field.isEmpty ? key : key + "." + field, reason: reason)
  }
}

/// Reads the members of one JSON object for a typed value; every error names the member.
struct ObjectReader {
  let object: JSONValue

  /// Reads `value`, which must be an object.
  init(_ value: JSONValue) throws(APIDecodingError) {
    guard case .object = value else {
      throw APIDecodingError(field: "", reason: "must be an object")
    }
    object = value
  }

  /// The member, nil when it is absent or null.
  func optional(_ key: String) -> JSONValue? {
    guard let value = object[key], !value.isNull else { return nil }
    return value
  }

  /// The member as it is (null included); only absence is an error.
  func present(_ key: String) throws(APIDecodingError) -> JSONValue {
    guard let value = object[key] else { throw missing(key) }
    return value
  }

  func string(_ key: String) throws(APIDecodingError) -> String {
    guard let value = try optionalString(key) else { throw missing(key) }
    return value
  }

  func optionalString(_ key: String) throws(APIDecodingError) -> String? {
    guard let value = optional(key) else { return nil }
    guard let string = value.stringValue else { throw wrong(key, "must be a string") }
    return string
  }

  func int(_ key: String) throws(APIDecodingError) -> Int {
    guard let value = try optionalInt(key) else { throw missing(key) }
    return value
  }

  func optionalInt(_ key: String) throws(APIDecodingError) -> Int? {
    guard let value = optional(key) else { return nil }
    guard let int = value.intValue else { throw wrong(key, "must be an integer") }
    return Int(int)
  }

  func optionalBool(_ key: String) throws(APIDecodingError) -> Bool? {
    guard let value = optional(key) else { return nil }
    guard case .bool(let bool) = value else { throw wrong(key, "must be true or false") }
    return bool
  }

  func optionalDouble(_ key: String) throws(APIDecodingError) -> Double? {
    guard let value = optional(key) else { return nil }
    guard let double = value.doubleValue else { throw wrong(key, "must be a number") }
    return double
  }

  func double(_ key: String) throws(APIDecodingError) -> Double {
    guard let value = try optionalDouble(key) else { throw missing(key) }
    return value
  }

  func strings(_ key: String) throws(APIDecodingError) -> [String] {
    guard let value = optional(key) else { throw missing(key) }
    guard case .array(let items) = value else { throw wrong(key, "must be an array of strings") }
    var strings: [String] = []
    strings.reserveCapacity(items.count)
    for item in items {
      guard case .string(let string) = item else {
        throw wrong(key, "must be an array of strings")
      }
      strings.append(string)
    }
    return strings
  }

  /// A room parameter: a string, or an integer as people type room numbers.
  func optionalRoom(_ key: String) throws(APIDecodingError) -> String? {
    try Self.room(optional(key), key)
  }

  /// A room parameter's value (nil when absent or null) as a room name.
  static func room(_ value: JSONValue?, _ key: String) throws(APIDecodingError) -> String? {
    switch value {
    case nil, .null?: return nil
    case .string(let name)?: return name
    case .int(let number)?: return String(number)
    default: throw APIDecodingError(field: key, reason: "must be a string")
    }
  }

  func decode<Value: JSONRepresentable>(_ key: String, as type: Value.Type = Value.self)
    throws(APIDecodingError) -> Value
  {
    guard let value = optional(key) else { throw missing(key) }
    do {
      return try Value(json: value)
    } catch {
      throw error.inside(key)
    }
  }

  func decodeArray<Value: JSONRepresentable>(_ key: String, of type: Value.Type = Value.self)
    throws(APIDecodingError) -> [Value]
  {
    guard let value = optional(key) else { throw missing(key) }
    guard case .array(let items) = value else { throw wrong(key, "must be an array") }
    var values: [Value] = []
    values.reserveCapacity(items.count)
    for (index, item) in items.enumerated() {
      do {
        values.append(try Value(json: item))
      } catch {
        throw error.inside("\(key)[\(index)]")
      }
    }
    return values
  }

  func missing(_ key: String) -> APIDecodingError {
    APIDecodingError(field: key, reason: "is required")
  }

  func wrong(_ key: String, _ reason: String) -> APIDecodingError {
    APIDecodingError(field: key, reason: reason)
  }
}

/// The empty object: the parameters of a method that takes none, the reply of one that
/// answers with none.
public struct EmptyObject: JSONRepresentable {
  /// The empty object.
  public init() {}

  /// Accepts any object: members this version does not know are ignored.
  public init(json: JSONValue) throws(APIDecodingError) {
    _ = try ObjectReader(json)
  }

  public var json: JSONValue { .object([]) }
}
