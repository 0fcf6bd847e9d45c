import LinkCore
import XMPP

/// The dialects' sections of chatlinkd.conf: [MQTT], [STOMP] and [XMPP].
extension ConfigLoader {
  /// The keys of [MQTT].
  static let mqttSchema: [String: Setter] = [
    "Version": { (c, v) throws(ValueError) in
      switch v {
      case "5", "5.0": c.mqttVersion = .v5
      case "3.1.1", "311", "4": c.mqttVersion = .v311
      default: throw ValueError(message: "'\(v)' is not 5 or 3.1.1")
      }
    },
    "ClientID": { (c, v) throws(ValueError) in
      guard v.utf8.count <= 65535, !v.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
        throw ValueError(message: "is not a client id (printable, at most 65535 bytes)")
      }
      c.mqttClientID = v.isEmpty ? nil : v
    },
    "CleanStart": { (c, v) throws(ValueError) in
      guard let value = ConfigValues.boolean(v) else {
        throw ValueError(message: "'\(v)' is not yes or no")
      }
      c.mqttCleanStart = value
    },
    "SessionExpirySec": { (c, v) throws(ValueError) in
      guard let value = Int(v), (0...4_294_967_295).contains(value) else {
        throw ValueError(message: "'\(v)' is not a number of seconds (0 to 4294967295)")
      }
      c.mqttSessionExpiry = .seconds(value)
    },
    "KeepAliveSec": { (c, v) throws(ValueError) in
      guard let value = Int(v), (1...65535).contains(value) else {
        throw ValueError(message: "'\(v)' is not a number of seconds from 1 to 65535")
      }
      c.mqttKeepAlive = .seconds(value)
    },
    "Username": { (c, v) throws(ValueError) in c.mqttUsername = v.isEmpty ? nil : v },
    "QoS": { (c, v) throws(ValueError) in
      guard let value = Int(v), (0...2).contains(value) else {
        throw ValueError(message: "'\(v)' is not 0, 1 or 2")
      }
      c.mqttQoS = UInt8(value)
    },
    "TopicPrefix": { (c, v) throws(ValueError) in
      guard !v.contains(where: { $0 == "+" || $0 == "#" }) else {
        throw ValueError(message: "'\(v)' has wildcards; a topic prefix cannot")
      }
      c.mqttTopicPrefix = v
    },
    "IDProperty": { (c, v) throws(ValueError) in
      // A user property's name is any UTF-8 string; one written in a config has no
      // controls (nor U+0000, which MQTT forbids).
      guard v.utf8.count <= 65535,
        !v.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
      else {
        throw ValueError(
          message: "'\(v)' is not a user property name (no control characters) or "
            + "correlation-data")
      }
      c.mqttIDProperty = v
    },
  ]

  /// The keys of [STOMP].
  static let stompSchema: [String: Setter] = [
    "VirtualHost": { (c, v) throws(ValueError) in
      guard !v.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
        throw ValueError(message: "is not a virtual host name (no control characters)")
      }
      c.stompVirtualHost = v.isEmpty ? "/" : v
    },
    "Username": { (c, v) throws(ValueError) in c.stompUsername = v.isEmpty ? nil : v },
    "IDHeader": { (c, v) throws(ValueError) in
      guard
        !v.unicodeScalars.contains(where: { $0.value <= 0x20 || $0 == ":" || $0.value == 0x7F })
      else {
        throw ValueError(message: "'\(v)' is not a header name (no spaces, colons or controls)")
      }
      // The record keeps these two as its room and its payload's length, not as headers.
      guard v != "destination" && v != "content-length" else {
        throw ValueError(message: "'\(v)' is not kept as a header; name the one that holds the id")
      }
      c.stompIDHeader = v
    },
    "HeartBeatMSec": { (c, v) throws(ValueError) in
      guard let value = Int(v), value == 0 || (100...3_600_000).contains(value) else {
        throw ValueError(message: "'\(v)' is not 0 (no heart-beats) or 100 to 3600000 ms")
      }
      c.stompHeartBeat = .milliseconds(value)
    },
  ]
}

/// [XMPP]: the account, its nick and resource.
extension ConfigLoader {
  /// The keys of [XMPP].
  static let xmppSchema: [String: Setter] = [
    "JID": { (c, v) throws(ValueError) in
      guard !v.isEmpty else {
        c.xmppJID = nil
        return
      }
      c.xmppJID = try account(v).bareText
    },
    "Nick": { (c, v) throws(ValueError) in
      guard v.utf8.count <= 1023, !v.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
        throw ValueError(message: "is not a nick (printable, at most 1023 bytes)")
      }
      c.xmppNick = v.isEmpty ? nil : v
    },
    "Resource": { (c, v) throws(ValueError) in
      guard v.utf8.count <= 1023, !v.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
        throw ValueError(message: "is not a resource (printable, at most 1023 bytes)")
      }
      c.xmppResource = v.isEmpty ? nil : v
    },
    "CatchUp": { (c, v) throws(ValueError) in
      switch v.lowercased() {
      case "", "new": c.xmppCatchUpAll = false
      case "all": c.xmppCatchUpAll = true
      default:
        throw ValueError(
          message: "'\(v)' is not new (a room never stored starts from now) or all (its whole "
            + "archive)")
      }
    },
  ]

  /// An account's JID: a bare JID with a local part.
  static func account(_ text: String) throws(ValueError) -> JID {
    let jid: JID
    do {
      jid = try JID(parsing: text)
    } catch {
      throw ValueError(message: "'\(text)' is not a JID: \(error)")
    }
    guard !jid.local.isEmpty, jid.isBare else {
      throw ValueError(
        message: "'\(text)' is not an account's bare JID such as bot@example.org "
          + "(a local part, no resource)")
    }
    return jid
  }

  /// Protocol=xmpp needs [XMPP] JID=, and its rooms are MUC rooms' bare JIDs.
  static func validateXMPP(_ c: Configuration, file: String) throws(ConfigError) {
    guard c.xmppJID != nil else {
      throw ConfigError(
        file: file, line: 0, key: "[XMPP] JID",
        message: "is required with Protocol=xmpp (the account, such as bot@example.org)")
    }
    for room in c.rooms {
      do throws(ValueError) {
        _ = try account(room)
      } catch {
        throw ConfigError(
          file: file, line: 0, key: "[Backend] Rooms",
          message: "'\(room)' is not a room's JID such as lobby@conference.example.org")
      }
    }
  }

  /// Rooms as the server writes their JIDs (the local part and domain lowercased), which is
  /// how their records name them; two spellings of one room are one room.
  static func normalizeXMPPRooms(_ c: inout Configuration) {
    var seen: Set<String> = []
    c.rooms = c.rooms.map { (try? JID(parsing: $0))?.bareText ?? $0 }.filter {
      seen.insert($0).inserted
    }
  }
}
