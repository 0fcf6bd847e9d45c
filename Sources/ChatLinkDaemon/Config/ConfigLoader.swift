import ChatLinkAPI
import EventLoop
import JSON
import Transport
import WebSocket

/// Loads chatlinkd.conf and its drop-ins (`<file>.d/*.conf`, in name order) into a
/// `Configuration`. Later assignments override earlier ones; list keys append, and an empty
/// assignment resets them (systemd's convention). Unknown sections and keys are errors.
public enum ConfigLoader {
  /// Where packages install the file.
  public static let defaultPath = Instance.defaultConfigPath

  /// Loads `path` and its drop-ins, on the defaults of `instance`.
  public static func load(path: String, instance: Instance? = nil) throws(ConfigError)
    -> Configuration
  {
    var files = [path]
    let dropInDirectory = path + ".d"
    files += FileSystem.list(dropInDirectory).filter { $0.hasSuffix(".conf") }.sorted().map {
      dropInDirectory + "/" + $0
    }
    var sources: [(file: String, text: String)] = []
    for file in files {
      do {
        sources.append((file, try FileSystem.readText(file, limit: 1 << 20)))
      } catch {
        throw ConfigError(file: file, line: 0, message: "cannot read: \(error.message)")
      }
    }
    return try load(sources: sources, instance: instance)
  }

  /// Builds a configuration from texts already read, in order, on the defaults of `instance`.
  public static func load(sources: [(file: String, text: String)], instance: Instance? = nil)
    throws(ConfigError) -> Configuration
  {
    var configuration = Configuration(instance: instance)
    for (file, text) in sources {
      for assignment in try INIParser.parse(text, file: file) {
        try apply(assignment, to: &configuration)
      }
    }
    try validate(configuration, file: sources.first?.file ?? defaultPath)
    if configuration.chatProtocol == .xmpp { normalizeXMPPRooms(&configuration) }
    return configuration
  }

  private static func apply(_ a: INIAssignment, to c: inout Configuration) throws(ConfigError) {
    let key = "[\(a.section)] \(a.key)"
    guard let section = schema[a.section] else {
      throw ConfigError(
        file: a.file, line: a.line, key: key,
        message:
          "unknown section [\(a.section)] (known: \(schema.keys.sorted().joined(separator: ", ")))")
    }
    guard let setter = section[a.key] else {
      throw ConfigError(
        file: a.file, line: a.line, key: key,
        message:
          "unknown key (known in [\(a.section)]: \(section.keys.sorted().joined(separator: ", ")))")
    }
    do {
      try setter(&c, a.value)
    } catch {
      throw ConfigError(file: a.file, line: a.line, key: key, message: error.message)
    }
  }

  private static func validate(_ c: Configuration, file: String) throws(ConfigError) {
    func fail(_ key: String, _ message: String) -> ConfigError {
      ConfigError(file: file, line: 0, key: key, message: message)
    }
    if c.url == nil { throw fail("[Backend] URL", "is required (ws://… or wss://…)") }
    if c.reconnectMin > c.reconnectMax {
      throw fail("[Backend] ReconnectMinSec", "is larger than ReconnectMaxSec")
    }
    if c.chatProtocol == .raw && !c.rooms.isEmpty {
      throw fail(
        "[Backend] Rooms",
        "needs Protocol=envelope, socketio, mqtt, stomp or xmpp: raw mode has no rooms to join")
    }
    if c.chatProtocol == .xmpp { try validateXMPP(c, file: file) }
    if c.mqttVersion == .v311 && !c.mqttIDProperty.isEmpty {
      throw fail(
        "[MQTT] IDProperty",
        "needs Version=5: MQTT 3.1.1 has no properties to carry an id (leave IDProperty= empty)")
    }
  }

  /// A value error, turned into a `ConfigError` with the place by `apply`.
  struct ValueError: Error {
    var message: String
  }

  typealias Setter = @Sendable (inout Configuration, String) throws(ValueError) -> Void

  private static func seconds(_ text: String, min: Double = 0.001) throws(ValueError) -> Duration {
    guard let value = ConfigValues.seconds(text), value >= min, value <= 86400 * 7 else {
      throw ValueError(message: "'\(text)' is not a time span such as 10, 2.5s or 500ms")
    }
    return .seconds(value)
  }

  private static func positive(_ text: String, max: Int = Int.max) throws(ValueError) -> Int {
    guard let value = Int(text), value > 0, value <= max else {
      throw ValueError(message: "'\(text)' is not a positive integer (at most \(max))")
    }
    return value
  }

  private static func size(_ text: String, min: Int) throws(ValueError) -> Int {
    guard let value = ConfigValues.size(text), value >= min else {
      throw ValueError(message: "'\(text)' is not a size such as 64M (at least \(min) bytes)")
    }
    return value
  }

  private static func nonEmpty(_ text: String) throws(ValueError) -> String {
    guard !text.isEmpty else { throw ValueError(message: "must not be empty") }
    return text
  }

  private static func choice<T: RawRepresentable & CaseIterable>(_ text: String, _: T.Type)
    throws(ValueError) -> T where T.RawValue == String
  {
    guard let value = T(rawValue: text.lowercased()) else {
      throw ValueError(
        message: "'\(text)' is not one of \(T.allCases.map(\.rawValue).joined(separator: ", "))")
    }
    return value
  }

  private static func field(_ keyPath: WritableKeyPath<Configuration.Envelope, String> & Sendable)
    -> Setter
  {
    { (c: inout Configuration, v: String) throws(ValueError) in
      c.envelope[keyPath: keyPath] = try nonEmpty(v)
    }
  }

  /// Every section and key, with how to apply it.
  static let schema: [String: [String: Setter]] = [
    "Backend": [
      "URL": { (c, v) throws(ValueError) in
        do {
          c.url = try WebSocketURL(parsing: v)
        } catch {
          throw ValueError(message: "\(error)")
        }
      },
      "TokenFile": { (c, v) throws(ValueError) in c.tokenFile = v.isEmpty ? nil : v },
      "Header": { (c, v) throws(ValueError) in
        if v.isEmpty {
          c.headers = []
          return
        }
        guard let colon = v.firstIndex(of: ":") else {
          throw ValueError(message: "expected 'Name: value'")
        }
        let name = INIParser.trim(v[..<colon])
        let value = INIParser.trim(v[v.index(after: colon)...])
        guard !name.isEmpty,
          name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") })
        else {
          throw ValueError(message: "invalid header name '\(name)'")
        }
        if name.lowercased() == "authorization" {
          throw ValueError(
            message: "set the token with TokenFile= (or a credential), never in the config")
        }
        // The handshake's own check, so --check-config refuses what every connect would.
        do {
          try ClientHandshake.checkRequestHeader(name: name, value: value)
        } catch {
          throw ValueError(message: "\(error)")
        }
        c.headers.append((name, value))
      },
      "Subprotocol": { (c, v) throws(ValueError) in
        let protocols = ConfigValues.list(v)
        for proto in protocols {
          do {
            try ClientHandshake.checkSubprotocol(proto)
          } catch {
            throw ValueError(message: "\(error)")
          }
        }
        c.subprotocols = v.isEmpty ? [] : c.subprotocols + protocols
      },
      "CAFile": { (c, v) throws(ValueError) in c.caFile = v.isEmpty ? nil : v },
      "Proxy": { (c, v) throws(ValueError) in
        guard v.isEmpty || ProxyAddress(url: v) != nil else {
          throw ValueError(
            message: "'\(v)' is not a proxy URL such as http://proxy:3128 (no credentials)")
        }
        c.proxy = v.isEmpty ? nil : v
      },
      "Protocol": { (c, v) throws(ValueError) in
        c.chatProtocol = try choice(v, Configuration.ChatProtocol.self)
      },
      "Rooms": { (c, v) throws(ValueError) in
        if v.isEmpty {
          c.rooms = []
          return
        }
        for room in ConfigValues.list(v) where !c.rooms.contains(room) { c.rooms.append(room) }
      },
      "Sender": { (c, v) throws(ValueError) in c.sender = try nonEmpty(v) },
      "PingIntervalSec": { (c, v) throws(ValueError) in c.pingInterval = try seconds(v, min: 0.1) },
      "PongTimeoutSec": { (c, v) throws(ValueError) in c.pongTimeout = try seconds(v, min: 0.1) },
      "ConnectTimeoutSec": { (c, v) throws(ValueError) in
        c.connectTimeout = try seconds(v, min: 0.1)
      },
      "ReconnectMinSec": { (c, v) throws(ValueError) in c.reconnectMin = try seconds(v, min: 0.01)
      },
      "ReconnectMaxSec": { (c, v) throws(ValueError) in c.reconnectMax = try seconds(v, min: 0.01)
      },
      "Compression": { (c, v) throws(ValueError) in
        guard let value = ConfigValues.boolean(v) else {
          throw ValueError(message: "'\(v)' is not yes or no")
        }
        c.compression = value
      },
      "MaxMessageSize": { (c, v) throws(ValueError) in c.maxMessageSize = try size(v, min: 1024) },
    ],
    "Envelope": [
      "IDField": { (c, v) throws(ValueError) in c.envelope.idField = v },
      "SinceField": { (c, v) throws(ValueError) in c.envelope.sinceField = v },
      "TruncatedEvent": field(\.truncatedEvent),
      "EventField": field(\.eventField),
      "DataField": field(\.dataField),
      "RoomField": field(\.roomField),
      "MessageField": field(\.messageField),
      "SenderField": field(\.senderField),
      "CountField": field(\.countField),
      "ClientIDField": field(\.clientIDField),
      "JoinEvent": field(\.joinEvent),
      "LeaveEvent": field(\.leaveEvent),
      "SendEvent": field(\.sendEvent),
      "MessageEvent": field(\.messageEvent),
    ],
    "SocketIO": [
      "Namespace": { (c, v) throws(ValueError) in
        guard v.hasPrefix("/"), v.utf8.count <= 256,
          !v.unicodeScalars.contains(where: { $0.value <= 0x20 || $0 == "," || $0.value == 0x7F })
        else {
          throw ValueError(
            message: "'\(v)' is not a namespace such as / or /chat (no spaces or commas)")
        }
        c.socketIONamespace = v
      },
      "Auth": { (c, v) throws(ValueError) in
        guard let value = try? JSONValue.parse(v.isEmpty ? "{}" : v), value.objectValue != nil
        else {
          throw ValueError(message: "is not a JSON object such as {\"room\":\"x\"}")
        }
        c.socketIOAuth = value
      },
    ],
    "MQTT": mqttSchema,
    "STOMP": stompSchema,
    "XMPP": xmppSchema,
    "Store": [
      "Directory": { (c, v) throws(ValueError) in
        guard v.hasPrefix("/") else { throw ValueError(message: "'\(v)' is not an absolute path") }
        c.storeDirectory = v
      },
      "Sync": { (c, v) throws(ValueError) in c.sync = try choice(v, Configuration.SyncMode.self) },
      "SyncIntervalMSec": { (c, v) throws(ValueError) in
        c.syncInterval = .milliseconds(try positive(v, max: 60_000))
      },
      "MaxFileSize": { (c, v) throws(ValueError) in c.maxFileSize = try size(v, min: 4096) },
      "MaxFiles": { (c, v) throws(ValueError) in
        // At least the live file and one rotated file: the rotated one carries the last seq
        // across a rotation, so seq never restarts.
        c.maxFiles = try positive(v, max: 10_000)
        if c.maxFiles < 2 {
          throw ValueError(message: "must be at least 2 (the live file and one rotated file)")
        }
      },
      "DedupeWindow": { (c, v) throws(ValueError) in
        guard let value = Int(v), (0...1_000_000).contains(value) else {
          throw ValueError(message: "'\(v)' is not a number of ids from 0 to 1000000")
        }
        c.dedupeWindow = value
      },
      "DedupeSnapshotSec": { (c, v) throws(ValueError) in
        guard let value = Int(v), (0...86_400).contains(value) else {
          throw ValueError(message: "'\(v)' is not a number of seconds from 0 to 86400")
        }
        c.dedupeSnapshotInterval = .seconds(value)
      },
    ],
    "Outbox": [
      "MaxMessages": { (c, v) throws(ValueError) in
        c.outboxMaxMessages = try positive(v, max: 10_000_000)
      }
    ],
    "Control": [
      "Socket": { (c, v) throws(ValueError) in
        guard v.hasPrefix("/"), v.utf8.count < 108 else {
          throw ValueError(message: "'\(v)' is not an absolute socket path under 108 bytes")
        }
        c.controlSocket = v
      },
      "SocketMode": { (c, v) throws(ValueError) in
        guard let mode = ConfigValues.mode(v) else {
          throw ValueError(message: "'\(v)' is not an octal mode such as 0660")
        }
        c.socketMode = mode
      },
      "SocketGroup": { (c, v) throws(ValueError) in c.socketGroup = try nonEmpty(v) },
    ],
    "Metrics": [
      "Listen": { (c, v) throws(ValueError) in
        guard !v.isEmpty else {
          c.metricsListen = nil
          return
        }
        switch MetricsListenAddress.parse(v) {
        case .success(let address): c.metricsListen = address
        case .failure(let error): throw ValueError(message: error.message)
        }
      }
    ],
    "Daemon": [
      "LogLevel": { (c, v) throws(ValueError) in
        guard Logger.Level(name: v) != nil else {
          throw ValueError(
            message:
              "'\(v)' is not one of \(Logger.Level.allCases.map(\.description).joined(separator: ", "))"
          )
        }
        c.logLevel = v.lowercased()
      }
    ],
  ]
}
