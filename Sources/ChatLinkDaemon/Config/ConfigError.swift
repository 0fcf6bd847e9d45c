/// A configuration error that names the file and line it happened at, so the message points
/// at what to fix.
public struct ConfigError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The file.
  public var file: String
  /// The 1-based line, or 0 for errors about the whole file.
  public var line: Int
  /// `[Section] Key`, when the error is about one assignment.
  public var key: String?
  /// What is wrong, for humans.
  public var message: String

  /// Creates an error.
  public init(file: String, line: Int, key: String? = nil, message: String) {
    self.file = file
    self.line = line
    self.key = key
    self.message = message
  }

  public var description: String {
    let place = line > 0 ? "\(file):\(line)" : file
    if let key { return "\(place): \(key): \(message)" }
    return "\(place): \(message)"
  }
}
