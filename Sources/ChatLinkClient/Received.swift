import ChatLinkAPI
import JSON

/// A typed value read from the daemon, with the JSON object it came in.
///
/// Code reads the typed value; `--json` output prints `json`, the object exactly as the
/// daemon sent it, so scripts see every member, in the daemon's order, even those this
/// version does not know. Members of the value read through: `status.state`.
@dynamicMemberLookup
public struct Received<Value: JSONRepresentable>: Sendable, Hashable {
  /// The typed value.
  public var value: Value
  /// The object as it came.
  public var json: JSONValue

  /// A value with the object it was read from.
  public init(value: Value, json: JSONValue) {
    self.value = value
    self.json = json
  }

  /// A value made here rather than received: its object is its own encoding.
  public init(_ value: Value) {
    self.init(value: value, json: value.json)
  }

  /// Reads the value from `json`.
  public init(json: JSONValue) throws(APIDecodingError) {
    self.init(value: try Value(json: json), json: json)
  }

  /// A member of the value.
  public subscript<Member>(dynamicMember keyPath: KeyPath<Value, Member>) -> Member {
    value[keyPath: keyPath]
  }
}
