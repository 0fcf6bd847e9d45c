/// A named instance of chatlinkd (`chatlinkd@NAME.service`): one link of several on a host,
/// with its own configuration, store and control socket, each derived from the name.
///
/// The daemon and chatlinkctl both derive the paths here, so `chatlinkd --instance prod` and
/// `chatlinkctl -i prod` always meet at the same socket.
public struct Instance: Sendable, Hashable, CustomStringConvertible {
  /// Where configuration files live.
  public static let configDirectory = "/etc/chatlink"
  /// Where stores live: the plain service's directly, an instance's in a folder of its name.
  public static let stateDirectory = "/var/lib/chatlink"
  /// Where control sockets live.
  public static let runtimeDirectory = "/run/chatlink"
  /// The plain chatlinkd.service's configuration file.
  public static let defaultConfigPath = configDirectory + "/chatlinkd.conf"
  /// The plain chatlinkd.service's control socket.
  public static let defaultSocket = runtimeDirectory + "/control.sock"
  /// The longest name: the socket path must fit a sockaddr_un, with room to spare.
  public static let maximumLength = 64
  /// The environment variable chatlinkctl reads when neither --socket nor --instance is given.
  public static let environmentVariable = "CHATLINK_INSTANCE"

  /// The name, as in `chatlinkd@NAME.service`.
  public let name: String

  /// Why a name cannot be an instance's.
  public struct NameError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The name as given.
    public var name: String
    /// What is wrong with it.
    public var problem: String

    public var description: String {
      name.isEmpty ? "the instance name is empty" : "invalid instance name '\(name)': \(problem)"
    }
  }

  /// Validates `name`. Accepted: ASCII letters, digits, `_`, `.` and `:` (what systemd-escape
  /// leaves as it is, so the unit name and every path show the name unchanged), not starting
  /// with `.`, at most `maximumLength` bytes, and not a name the plain service's files use.
  public init(_ name: String) throws(NameError) {
    func refuse(_ problem: String) -> NameError { NameError(name: name, problem: problem) }
    guard !name.isEmpty else { throw refuse("empty") }
    if let bad = name.unicodeScalars.first(where: { !Self.allowed($0) }) {
      let shown = bad.properties.generalCategory == .control ? "a control character" : "'\(bad)'"
      throw refuse(
        "\(shown) is not allowed; use letters, digits, '_', '.' and ':' "
          + "(systemd would escape anything else in a unit name)")
    }
    if name.hasPrefix(".") { throw refuse("it must not start with '.'") }
    if name.utf8.count > Self.maximumLength {
      throw refuse("longer than \(Self.maximumLength) characters")
    }
    if name == "chatlinkd" || name == "control" {
      throw refuse("reserved: chatlinkd.service uses chatlinkd.conf and control.sock")
    }
    self.name = name
  }

  private static func allowed(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar {
    case "a"..."z", "A"..."Z", "0"..."9", "_", ".", ":": true
    default: false
    }
  }

  /// `/etc/chatlink/NAME.conf` (drop-ins in `NAME.conf.d/`).
  public var configPath: String { "\(Self.configDirectory)/\(name).conf" }
  /// `/var/lib/chatlink/NAME`.
  public var storeDirectory: String { "\(Self.stateDirectory)/\(name)" }
  /// `/run/chatlink/NAME.sock`.
  public var controlSocket: String { "\(Self.runtimeDirectory)/\(name).sock" }
  /// `chatlinkd@NAME.service`.
  public var unitName: String { "chatlinkd@\(name).service" }

  public var description: String { name }
}
