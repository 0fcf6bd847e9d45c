/// Finds the bearer token: a systemd credential named "token" wins over TokenFile=.
///
/// The token is only ever put into the Authorization header; errors name the file, never
/// its content.
public enum TokenSource {
  /// Why the token could not be read.
  public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
    public var path: String
    public var reason: String
    public var description: String { "cannot read the token from \(path): \(reason)" }
  }

  /// Where the token comes from, or nil when none is configured.
  public static func path(tokenFile: String?, credentialsDirectory: String?) -> String? {
    if let credentialsDirectory {
      let credential = credentialsDirectory + "/token"
      if FileSystem.exists(credential) { return credential }
    }
    return tokenFile
  }

  /// Reads and trims the token; nil when none is configured.
  public static func read(tokenFile: String?, credentialsDirectory: String?) throws(Failure)
    -> String?
  {
    guard let path = path(tokenFile: tokenFile, credentialsDirectory: credentialsDirectory) else {
      return nil
    }
    let text: String
    do {
      text = try FileSystem.readText(path, limit: 64 * 1024)
    } catch {
      throw Failure(path: path, reason: error.message)
    }
    // By scalars: "\r\n" is one Character, which neither "\n" nor "\r" would remove.
    let token = INIParser.trim(
      String(String.UnicodeScalarView(text.unicodeScalars.filter { $0 != "\n" && $0 != "\r" })))
    guard !token.isEmpty else { throw Failure(path: path, reason: "the file is empty") }
    guard token.unicodeScalars.allSatisfy({ $0.value >= 0x21 && $0.value < 0x7F }) else {
      throw Failure(path: path, reason: "the token contains spaces or non-ASCII characters")
    }
    return token
  }
}
