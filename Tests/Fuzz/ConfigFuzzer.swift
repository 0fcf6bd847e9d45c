// libFuzzer target for chatlinkd.conf: INIParser.parse and ConfigLoader.load(sources:)
// (Sources/ChatLinkDaemon/Config) on arbitrary text split into 1-3 files (the main file and
// drop-ins), checked against a reference written from systemd.syntax(7), chatlinkd.conf(5)
// and the shipped config/chatlinkd.conf.
//
// scripts/fuzz.sh builds ChatLinkDaemon and the targets it imports as modules and compiles
// this file against them (public API only), with .build/fuzz/gen/Shipped.swift: the shipped
// file's bytes (`shippedConfigHex`).
//
// Input layout (Tests/Fuzz/make_seed_corpus.py writes the seeds in it):
//
//   byte 0   mode, taken modulo 3:
//              0 arbitrary text: the payload, split at its first two NUL bytes into up to
//                three files (chatlinkd.conf, then two drop-ins), read as UTF-8 with
//                repair (as FileSystem.readText does)
//              1 the shipped file with a subset of its commented defaults uncommented
//                (payload bits choose which, flags A and B how they are written); it must
//                load as exactly the defaults
//              2 one assignment: flags A picks the key (settingKeys), the payload is the
//                value, after a minimal valid file
//   byte 1   flags A
//   byte 2   flags B
//   byte 3…  the payload
//
// Oracles (a failure prints what broke, then traps with `precondition`):
//  - nothing crashes; every error is a ConfigError whose `file` is one of the names given
//    and whose `line` is within that file's line count (0 only for whole-file errors, which
//    name the main file and one of the validated keys);
//  - INIParser.parse agrees with a reference parser (assignments: section, key, value, file,
//    line; errors: file, line), and ConfigLoader.load with a reference loader (the values,
//    list appending and resets, drop-in order, the errors' file, line and key) on every
//    text whose characters are single Unicode scalars (there Swift's grapheme-based String
//    splitting and byte-based reading agree);
//  - the shipped file, with any subset of its commented defaults uncommented, in any of the
//    equivalent spellings (spacing, case, units, drop-ins, continuation lines, CRLF), loads
//    as exactly the defaults;
//  - any configuration that loads satisfies its invariants (URL present and canonical,
//    ReconnectMinSec <= ReconnectMaxSec, MaxFiles >= 2, every bound the loader enforces, no
//    line breaks inside values) and is usable: its headers and subprotocols are accepted by
//    the WebSocket handshake the daemon will build from them.
//
// Bugs this fuzzer found, all fixed (their inputs stay in Tests/Fuzz/corpus/config/crash-*):
// INIParser read a CRLF file as one line; the loader accepted Header= and Subprotocol=
// values the handshake refuses (so every connect failed); a continuation line ending in a
// backslash and blanks did not continue; URL= took an IPv6 address with a stray bracket
// outside brackets as a host name.

import ChatLinkDaemon
import EventLoop
import Glibc
import JSON
import LinkCore
import Transport
import WebSocket
import XMPP

// MARK: - Entry point

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  guard size >= 3 else { return 0 }
  let a = data[1]
  let b = data[2]
  let payload = Array(UnsafeBufferPointer(start: data + 3, count: size - 3))
  switch data[0] % 3 {
  case 0: runFiles(payload)
  case 1: runDefaults(a, b, payload)
  default: runSetting(a, b, payload)
  }
  return 0
}

// MARK: - Helpers

/// A string with control characters made visible, shortened.
func show(_ s: some StringProtocol, limit: Int = 200) -> String {
  var out = ""
  for scalar in s.unicodeScalars.prefix(limit) {
    switch scalar {
    case "\n": out += "\\n"
    case "\r": out += "\\r"
    case "\t": out += "\\t"
    case "\0": out += "\\0"
    case "\\": out += "\\\\"
    default: out.unicodeScalars.append(scalar)
    }
  }
  return "\"" + out + (s.unicodeScalars.count > limit ? "…" : "") + "\""
}

let fileNames = [
  "/etc/chatlink/chatlinkd.conf", "/etc/chatlink/chatlinkd.conf.d/50-local.conf",
  "/etc/chatlink/chatlinkd.conf.d/90-override.conf",
]

typealias Source = (file: String, text: String)

/// Lines as a byte-based reader counts them: LF-terminated, the last one possibly not.
func lineCount(_ text: String) -> Int {
  text.unicodeScalars.filter { $0 == "\n" }.count + 1
}

/// Whether every Character is one scalar: then grapheme-based and scalar-based reading of
/// the text agree, and the reference applies. CR LF is one Character of two scalars.
func isSimple(_ text: String) -> Bool {
  text.allSatisfy { $0.unicodeScalars.count == 1 }
}

func hasCRLF(_ text: String) -> Bool {
  zip(text.utf8, text.utf8.dropFirst()).contains { $0 == 0x0D && $1 == 0x0A }
}

/// Whether the reference applies to these texts: single Unicode scalars once CRs are dropped
/// (see the header's oracles).
func referenceApplies(_ sources: [Source]) -> Bool {
  sources.allSatisfy { source in
    var plain = source.text
    plain.unicodeScalars.removeAll { $0 == "\r" }
    return isSimple(plain)
  }
}

// MARK: - Reference INI parser (systemd.syntax(7))

struct RefAssignment: Equatable {
  var section: String
  var key: String
  var value: String
  var file: String
  var line: Int
}

struct RefError: Error, Equatable {
  var file: String
  var line: Int
  var key: String?
}

func isBlank(_ c: Unicode.Scalar) -> Bool { c == " " || c == "\t" }

func trimmed(_ s: ArraySlice<Unicode.Scalar>) -> ArraySlice<Unicode.Scalar> {
  var t = s
  while let c = t.first, isBlank(c) { t = t.dropFirst() }
  while let c = t.last, isBlank(c) { t = t.dropLast() }
  return t
}

func string(_ s: some Sequence<Unicode.Scalar>) -> String {
  var out = ""
  out.unicodeScalars.append(contentsOf: s)
  return out
}

func isASCIIAlnum(_ c: Unicode.Scalar) -> Bool {
  ("a"..."z").contains(c) || ("A"..."Z").contains(c) || ("0"..."9").contains(c)
}

/// Lines split at LF, one CR before it dropped; blank and #/; lines skipped; [Section]
/// headers; Key=Value with blanks around both trimmed; a line ending in a backslash
/// (trailing blanks ignored) continues on the next, joined with a space, and comment lines
/// inside a continuation are skipped.
func referenceParse(_ text: String, file: String) -> Result<[RefAssignment], RefError> {
  let scalars = Array(text.unicodeScalars)
  var lines = scalars.split(separator: "\n", omittingEmptySubsequences: false)
  if scalars.isEmpty { lines = [[]] }
  var assignments: [RefAssignment] = []
  var section: String?
  var pending: (text: [Unicode.Scalar], line: Int)?

  func assign(_ text: [Unicode.Scalar], _ line: Int) -> RefError? {
    guard let eq = text.firstIndex(of: "=") else { return RefError(file: file, line: line) }
    let key = trimmed(text[..<eq])
    let value = trimmed(text[(eq + 1)...])
    guard !key.isEmpty, key.allSatisfy(isASCIIAlnum) else {
      return RefError(file: file, line: line)
    }
    guard let section else { return RefError(file: file, line: line, key: string(key)) }
    assignments.append(
      RefAssignment(
        section: section, key: string(key), value: string(value), file: file, line: line))
    return nil
  }

  for (index, rawLine) in lines.enumerated() {
    let number = index + 1
    var line = rawLine
    if line.last == "\r" { line = line.dropLast() }
    let t = trimmed(line)
    if var continued = pending {
      if t.first == "#" || t.first == ";" { continue }
      let continues = t.last == "\\"
      let piece = continues ? trimmed(t.dropLast()) : t
      continued.text += [" "] + piece
      if continues {
        pending = continued
        continue
      }
      pending = nil
      if let error = assign(continued.text, continued.line) { return .failure(error) }
      continue
    }
    if t.isEmpty || t.first == "#" || t.first == ";" { continue }
    if t.first == "[" {
      guard t.last == "]", t.count > 2 else { return .failure(RefError(file: file, line: number)) }
      let name = t.dropFirst().dropLast()
      guard
        name.allSatisfy({
          Character($0).isLetter || Character($0).isNumber || $0 == "-" || $0 == "_"
        })
      else { return .failure(RefError(file: file, line: number)) }
      section = string(name)
      continue
    }
    if t.last == "\\" {
      pending = (Array(trimmed(t.dropLast())), number)
      continue
    }
    if let error = assign(Array(t), number) { return .failure(error) }
  }
  if let pending, let error = assign(pending.text, pending.line) { return .failure(error) }
  return .success(assignments)
}

// MARK: - Reference loader (chatlinkd.conf(5))

enum Applied {
  case ok
  case unknownSection
  case unknownKey
  case invalid
}

func seconds(_ text: String, min: Double) -> Double? {
  let units: [String: Double] = [
    "usec": 1e-6, "us": 1e-6, "msec": 1e-3, "ms": 1e-3, "seconds": 1, "second": 1, "sec": 1,
    "s": 1, "minutes": 60, "minute": 60, "min": 60, "m": 60, "hours": 3600, "hour": 3600,
    "hr": 3600, "h": 3600, "days": 86400, "day": 86400, "d": 86400,
  ]
  let s = Array(text.lowercased().unicodeScalars)
  var i = 0
  var total = 0.0
  var components = 0
  while true {
    while i < s.count, s[i] == " " { i += 1 }
    if i == s.count { break }
    let start = i
    while i < s.count, ("0"..."9").contains(s[i]) || s[i] == "." { i += 1 }
    guard i > start, let value = Double(string(s[start..<i])) else { return nil }
    while i < s.count, s[i] == " " { i += 1 }
    let unitStart = i
    while i < s.count, ("a"..."z").contains(s[i]) { i += 1 }
    var factor = 1.0
    if i > unitStart {
      guard let unit = units[string(s[unitStart..<i])] else { return nil }
      factor = unit
    }
    total += value * factor
    components += 1
  }
  guard components > 0, total >= min, total <= 7 * 86400 else { return nil }
  return total
}

func size(_ text: String, min: Int) -> Int? {
  var s = Array(text.uppercased().unicodeScalars)
  if s.last == "B" { s.removeLast() }
  var factor = 1
  if let last = s.last, let power = ["K": 1, "M": 2, "G": 3, "T": 4][String(last)] {
    factor = 1 << (10 * power)
    s.removeLast()
  }
  guard !s.isEmpty, s.allSatisfy({ ("0"..."9").contains($0) }), let value = Int(string(s)) else {
    return nil
  }
  let (result, overflow) = value.multipliedReportingOverflow(by: factor)
  guard !overflow, result >= min else { return nil }
  return result
}

func positive(_ text: String, max: Int) -> Int? {
  guard let value = Int(text), value > 0, value <= max else { return nil }
  return value
}

func boolean(_ text: String) -> Bool? {
  switch text.lowercased() {
  case "1", "yes", "y", "true", "t", "on": true
  case "0", "no", "n", "false", "f", "off": false
  default: nil
  }
}

func list(_ text: String) -> [String] {
  text.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\t" }).map(String.init)
}

let envelopeFields: [String: WritableKeyPath<Configuration.Envelope, String> & Sendable] = [
  "EventField": \.eventField, "DataField": \.dataField, "RoomField": \.roomField,
  "MessageField": \.messageField, "SenderField": \.senderField, "CountField": \.countField,
  "ClientIDField": \.clientIDField, "JoinEvent": \.joinEvent, "LeaveEvent": \.leaveEvent,
  "SendEvent": \.sendEvent, "MessageEvent": \.messageEvent, "TruncatedEvent": \.truncatedEvent,
]

/// [Envelope] keys that may be empty (the catch-up extension is off when they are).
let optionalEnvelopeFields: [String: WritableKeyPath<Configuration.Envelope, String> & Sendable] =
  ["IDField": \.idField, "SinceField": \.sinceField]

let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

/// Every section and key chatlinkd.conf(5) documents.
let settingKeys: [(section: String, key: String)] =
  [
    ("Backend", "URL"), ("Backend", "TokenFile"), ("Backend", "Header"),
    ("Backend", "Subprotocol"), ("Backend", "CAFile"), ("Backend", "Proxy"),
    ("Backend", "Protocol"), ("Backend", "Rooms"), ("Backend", "Sender"),
    ("Backend", "PingIntervalSec"), ("Backend", "PongTimeoutSec"),
    ("Backend", "ConnectTimeoutSec"), ("Backend", "ReconnectMinSec"),
    ("Backend", "ReconnectMaxSec"), ("Backend", "Compression"), ("Backend", "MaxMessageSize"),
    ("Store", "Directory"), ("Store", "Sync"), ("Store", "SyncIntervalMSec"),
    ("Store", "MaxFileSize"), ("Store", "MaxFiles"), ("Store", "DedupeWindow"),
    ("Store", "DedupeSnapshotSec"),
    ("Outbox", "MaxMessages"),
    ("Control", "Socket"), ("Control", "SocketMode"), ("Control", "SocketGroup"),
    ("Daemon", "LogLevel"), ("Metrics", "Listen"), ("SocketIO", "Namespace"), ("SocketIO", "Auth"),
    ("MQTT", "Version"), ("MQTT", "ClientID"), ("MQTT", "CleanStart"),
    ("MQTT", "SessionExpirySec"), ("MQTT", "KeepAliveSec"), ("MQTT", "Username"), ("MQTT", "QoS"),
    ("MQTT", "TopicPrefix"), ("MQTT", "IDProperty"), ("STOMP", "VirtualHost"),
    ("STOMP", "Username"),
    ("STOMP", "HeartBeatMSec"), ("STOMP", "IDHeader"), ("XMPP", "JID"), ("XMPP", "Nick"),
    ("XMPP", "Resource"), ("XMPP", "CatchUp"),
  ] + (envelopeFields.keys.sorted() + optionalEnvelopeFields.keys.sorted()).map { ("Envelope", $0) }

/// An integer in `range`, as Swift reads one (an optional sign, then digits).
func refInteger(_ text: String, _ range: ClosedRange<Int>) -> Int? {
  guard let value = Int(text), range.contains(value) else { return nil }
  return value
}

/// [SocketIO], [MQTT] and [STOMP], as chatlinkd.conf(5) describes them.
func referenceDialect(_ a: RefAssignment, to c: inout Configuration) -> Applied {
  let v = a.value
  let scalars = Array(v.unicodeScalars)
  func set<T>(_ value: T?, _ apply: (T) -> Void) -> Applied {
    guard let value else { return .invalid }
    apply(value)
    return .ok
  }
  switch (a.section, a.key) {
  case ("SocketIO", "Namespace"):
    let ok =
      scalars.first == "/" && v.utf8.count <= 256
      && !scalars.contains { $0.value <= 0x20 || $0 == "," || $0.value == 0x7F }
    return set(ok ? v : nil) { c.socketIONamespace = $0 }
  case ("SocketIO", "Auth"):
    let value = try? JSONValue.parse(v.isEmpty ? "{}" : v)
    return set(value?.objectValue != nil ? value : nil) { c.socketIOAuth = $0 }
  case ("MQTT", "Version"):
    let version: MQTTVersion? =
      ["5", "5.0"].contains(v) ? .v5 : ["3.1.1", "311", "4"].contains(v) ? .v311 : nil
    return set(version) { c.mqttVersion = $0 }
  case ("MQTT", "ClientID"):
    guard v.utf8.count <= 65535, !scalars.contains(where: { $0.value < 0x20 }) else {
      return .invalid
    }
    c.mqttClientID = v.isEmpty ? nil : v
  case ("MQTT", "CleanStart"): return set(boolean(v)) { c.mqttCleanStart = $0 }
  case ("MQTT", "SessionExpirySec"):
    return set(refInteger(v, 0...4_294_967_295)) { c.mqttSessionExpiry = .seconds($0) }
  case ("MQTT", "KeepAliveSec"):
    return set(refInteger(v, 1...65535)) { c.mqttKeepAlive = .seconds($0) }
  case ("MQTT", "Username"): c.mqttUsername = v.isEmpty ? nil : v
  case ("MQTT", "QoS"): return set(refInteger(v, 0...2)) { c.mqttQoS = UInt8($0) }
  case ("MQTT", "TopicPrefix"):
    return set(scalars.contains { $0 == "+" || $0 == "#" } ? nil : v) { c.mqttTopicPrefix = $0 }
  case ("MQTT", "IDProperty"):
    guard v.utf8.count <= 65535, !scalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
    else { return .invalid }
    c.mqttIDProperty = v
  case ("STOMP", "VirtualHost"):
    guard !scalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else { return .invalid }
    c.stompVirtualHost = v.isEmpty ? "/" : v
  case ("STOMP", "Username"): c.stompUsername = v.isEmpty ? nil : v
  case ("STOMP", "HeartBeatMSec"):
    let value = refInteger(v, 0...3_600_000).flatMap { $0 == 0 || $0 >= 100 ? $0 : nil }
    return set(value) { c.stompHeartBeat = .milliseconds($0) }
  case ("STOMP", "IDHeader"):
    guard !scalars.contains(where: { $0.value <= 0x20 || $0 == ":" || $0.value == 0x7F }),
      v != "destination", v != "content-length"
    else { return .invalid }
    c.stompIDHeader = v
  // The JID grammar is XMPP's own (RFC 7622, `JIDTests`); what the reference checks is what
  // the loader does with it: an account's bare JID, with a local part.
  case ("XMPP", "JID"):
    guard !v.isEmpty else {
      c.xmppJID = nil
      return .ok
    }
    guard let jid = try? JID(parsing: v), !jid.local.isEmpty, jid.isBare else { return .invalid }
    c.xmppJID = jid.bareText
  case ("XMPP", "Nick"), ("XMPP", "Resource"):
    guard v.utf8.count <= 1023, !scalars.contains(where: { $0.value < 0x20 }) else {
      return .invalid
    }
    if a.key == "Nick" {
      c.xmppNick = v.isEmpty ? nil : v
    } else {
      c.xmppResource = v.isEmpty ? nil : v
    }
  case ("XMPP", "CatchUp"):
    switch v.lowercased() {
    case "", "new": c.xmppCatchUpAll = false
    case "all": c.xmppCatchUpAll = true
    default: return .invalid
    }
  default: return .unknownKey
  }
  return .ok
}

func referenceApply(_ a: RefAssignment, to c: inout Configuration) -> Applied {
  let v = a.value
  /// Headers the WebSocket handshake writes itself (RFC 6455 §4.1, RFC 7230 framing).
  let refHandshakeHeaders: Set<String> = [
    "host", "upgrade", "connection", "sec-websocket-key", "sec-websocket-version",
    "sec-websocket-extensions", "sec-websocket-protocol", "content-length", "transfer-encoding",
  ]
  /// An RFC 7230 token: one or more tchar.
  func isRefToken(_ s: String) -> Bool {
    !s.isEmpty
      && s.unicodeScalars.allSatisfy { u in
        isASCIIAlnum(u) || "!#$%&'*+-.^_`|~".unicodeScalars.contains(u)
      }
  }
  func set<T>(_ value: T?, _ apply: (T) -> Void) -> Applied {
    guard let value else { return .invalid }
    apply(value)
    return .ok
  }
  switch a.section {
  case "Backend":
    switch a.key {
    case "URL": return set(try? WebSocketURL(parsing: v)) { c.url = $0 }
    case "TokenFile": c.tokenFile = v.isEmpty ? nil : v
    case "CAFile": c.caFile = v.isEmpty ? nil : v
    case "Header":
      if v.isEmpty {
        c.headers = []
        return .ok
      }
      let s = Array(v.unicodeScalars)
      guard let colon = s.firstIndex(of: ":") else { return .invalid }
      let name = string(trimmed(s[..<colon]))
      let value = string(trimmed(s[(colon + 1)...]))
      guard !name.isEmpty, name.unicodeScalars.allSatisfy({ isASCIIAlnum($0) || $0 == "-" }),
        name.lowercased() != "authorization",
        !refHandshakeHeaders.contains(name.lowercased()),
        !value.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" })
      else { return .invalid }
      c.headers.append((name, value))
    case "Subprotocol":
      let protocols = list(v)
      guard protocols.allSatisfy(isRefToken) else { return .invalid }
      c.subprotocols = v.isEmpty ? [] : c.subprotocols + protocols
    case "Proxy":
      guard v.isEmpty || ProxyAddress(url: v) != nil else { return .invalid }
      c.proxy = v.isEmpty ? nil : v
    case "Protocol":
      return set(Configuration.ChatProtocol(rawValue: v.lowercased())) { c.chatProtocol = $0 }
    case "Rooms":
      if v.isEmpty {
        c.rooms = []
        return .ok
      }
      for room in list(v) where !c.rooms.contains(room) { c.rooms.append(room) }
    case "Sender": return set(v.isEmpty ? nil : v) { c.sender = $0 }
    case "PingIntervalSec": return set(seconds(v, min: 0.1)) { c.pingInterval = .seconds($0) }
    case "PongTimeoutSec": return set(seconds(v, min: 0.1)) { c.pongTimeout = .seconds($0) }
    case "ConnectTimeoutSec": return set(seconds(v, min: 0.1)) { c.connectTimeout = .seconds($0) }
    case "ReconnectMinSec": return set(seconds(v, min: 0.01)) { c.reconnectMin = .seconds($0) }
    case "ReconnectMaxSec": return set(seconds(v, min: 0.01)) { c.reconnectMax = .seconds($0) }
    case "Compression": return set(boolean(v)) { c.compression = $0 }
    case "MaxMessageSize": return set(size(v, min: 1024)) { c.maxMessageSize = $0 }
    default: return .unknownKey
    }
  case "Envelope":
    if let field = optionalEnvelopeFields[a.key] {
      c.envelope[keyPath: field] = v
      return .ok
    }
    guard let field = envelopeFields[a.key] else { return .unknownKey }
    return set(v.isEmpty ? nil : v) { c.envelope[keyPath: field] = $0 }
  case "Store":
    switch a.key {
    case "Directory": return set(v.hasPrefix("/") ? v : nil) { c.storeDirectory = $0 }
    case "Sync": return set(Configuration.SyncMode(rawValue: v.lowercased())) { c.sync = $0 }
    case "SyncIntervalMSec":
      return set(positive(v, max: 60_000)) { c.syncInterval = .milliseconds($0) }
    case "MaxFileSize": return set(size(v, min: 4096)) { c.maxFileSize = $0 }
    case "MaxFiles":
      guard let n = positive(v, max: 10_000) else { return .invalid }
      // The loader stores the number before refusing 1; the load fails either way.
      c.maxFiles = n
      return n >= 2 ? .ok : .invalid
    case "DedupeWindow": return set(refInteger(v, 0...1_000_000)) { c.dedupeWindow = $0 }
    case "DedupeSnapshotSec":
      return set(refInteger(v, 0...86_400)) { c.dedupeSnapshotInterval = .seconds($0) }
    default: return .unknownKey
    }
  case "Outbox":
    guard a.key == "MaxMessages" else { return .unknownKey }
    return set(positive(v, max: 10_000_000)) { c.outboxMaxMessages = $0 }
  case "Control":
    switch a.key {
    case "Socket":
      return set(v.hasPrefix("/") && v.utf8.count < 108 ? v : nil) { c.controlSocket = $0 }
    case "SocketMode":
      let s = Array(v.unicodeScalars)
      let mode =
        !s.isEmpty && s.count <= 4 && s.allSatisfy({ ("0"..."7").contains($0) })
        ? UInt32(v, radix: 8) : nil
      return set(mode) { c.socketMode = $0 }
    case "SocketGroup": return set(v.isEmpty ? nil : v) { c.socketGroup = $0 }
    default: return .unknownKey
    }
  case "SocketIO", "MQTT", "STOMP", "XMPP":
    return referenceDialect(a, to: &c)
  case "Metrics":
    guard a.key == "Listen" else { return .unknownKey }
    if v.isEmpty {
      c.metricsListen = nil
      return .ok
    }
    return set(referenceListen(v)) { c.metricsListen = $0 }
  case "Daemon":
    guard a.key == "LogLevel" else { return .unknownKey }
    return set(logLevels.contains(v.lowercased()) ? v.lowercased() : nil) { c.logLevel = $0 }
  default:
    return .unknownSection
  }
  return .ok
}

/// [Metrics] Listen=: PORT (loopback), IPV4:PORT or [IPV6]:PORT, addresses as inet_pton reads
/// them, the port 1 to 5 digits from 1 to 65535.
func referenceListen(_ v: String) -> MetricsListenAddress? {
  let chars = Array(v.unicodeScalars)
  var host = "127.0.0.1"
  var portChars = chars[...]
  if chars.first == "[" {
    guard let close = chars.firstIndex(of: "]"), close + 1 < chars.count, chars[close + 1] == ":"
    else { return nil }
    host = String(String.UnicodeScalarView(chars[1..<close]))
    portChars = chars[(close + 2)...]
    var buffer = [UInt8](repeating: 0, count: 16)
    guard inet_pton(AF_INET6, host, &buffer) == 1 else { return nil }
  } else if let colon = chars.lastIndex(of: ":") {
    host = String(String.UnicodeScalarView(chars[..<colon]))
    portChars = chars[(colon + 1)...]
    var buffer = [UInt8](repeating: 0, count: 4)
    guard inet_pton(AF_INET, host, &buffer) == 1 else { return nil }
  }
  guard (1...5).contains(portChars.count), portChars.allSatisfy({ ("0"..."9").contains($0) })
  else { return nil }
  let port = portChars.reduce(0) { $0 * 10 + Int($1.value - 48) }
  guard (1...65535).contains(port) else { return nil }
  return MetricsListenAddress(host: host, port: UInt16(port))
}

func referenceLoad(_ sources: [Source]) -> Result<Configuration, RefError> {
  var c = Configuration()
  for (file, text) in sources {
    switch referenceParse(text, file: file) {
    case .failure(let error): return .failure(error)
    case .success(let assignments):
      for a in assignments where referenceApply(a, to: &c) != .ok {
        return .failure(RefError(file: a.file, line: a.line, key: "[\(a.section)] \(a.key)"))
      }
    }
  }
  let main = sources.first?.file ?? ConfigLoader.defaultPath
  if c.url == nil { return .failure(RefError(file: main, line: 0, key: "[Backend] URL")) }
  if c.reconnectMin > c.reconnectMax {
    return .failure(RefError(file: main, line: 0, key: "[Backend] ReconnectMinSec"))
  }
  if c.chatProtocol == .raw && !c.rooms.isEmpty {
    return .failure(RefError(file: main, line: 0, key: "[Backend] Rooms"))
  }
  // MQTT 3.1.1 has no properties to read an id from.
  if c.mqttVersion == .v311 && !c.mqttIDProperty.isEmpty {
    return .failure(RefError(file: main, line: 0, key: "[MQTT] IDProperty"))
  }
  if c.chatProtocol == .xmpp {
    // Rooms as the server writes their JIDs, once each.
    var seen: Set<String> = []
    c.rooms = c.rooms.map { (try? JID(parsing: $0))?.bareText ?? $0 }.filter {
      seen.insert($0).inserted
    }
    if c.xmppJID == nil { return .failure(RefError(file: main, line: 0, key: "[XMPP] JID")) }
    for room in c.rooms {
      guard let jid = try? JID(parsing: room), !jid.local.isEmpty, jid.isBare else {
        return .failure(RefError(file: main, line: 0, key: "[Backend] Rooms"))
      }
    }
  }
  return .success(c)
}

// MARK: - The checks every load gets

func describe(_ c: Configuration) -> String {
  "url \(c.url?.description ?? "nil") headers \(c.headers) subprotocols \(c.subprotocols) "
    + "rooms \(c.rooms) sender \(show(c.sender)) ping \(c.pingInterval) pong \(c.pongTimeout) "
    + "connect \(c.connectTimeout) reconnect \(c.reconnectMin)...\(c.reconnectMax) "
    + "maxMessage \(c.maxMessageSize) store \(show(c.storeDirectory)) sync \(c.sync) "
    + "maxFiles \(c.maxFiles) socket \(show(c.controlSocket)) mode \(c.socketMode) "
    + "log \(c.logLevel) envelope \(c.envelope)"
}

/// Loads `sources` and checks everything that holds for any text.
@discardableResult
func checkLoad(_ sources: [Source]) -> Configuration? {
  let names = sources.map(\.file)
  // INIParser on each file alone.
  var firstParseFailure: (index: Int, error: ConfigError)?
  let reference = referenceApplies(sources)
  for (index, (file, text)) in sources.enumerated() {
    let lines = lineCount(text)
    do {
      let assignments = try INIParser.parse(text, file: file)
      var previous = 0
      for a in assignments {
        require(a.file == file, "assignment from \(a.file), parsing \(file)")
        require(a.line > previous && a.line <= lines, "assignment line \(a.line) of \(lines)")
        previous = a.line
        require(
          !a.key.isEmpty && a.key.unicodeScalars.allSatisfy(isASCIIAlnum), "key \(show(a.key))")
        require(!a.section.isEmpty, "empty section name")
        require(
          a.value.unicodeScalars.first.map(isBlank) != true
            && a.value.unicodeScalars.last.map(isBlank) != true,
          "value \(show(a.value)) is not trimmed")
        require(!a.value.unicodeScalars.contains("\n"), "a line break in \(show(a.value))")
      }
      if reference {
        let expected = referenceParse(text, file: file)
        let got = assignments.map {
          RefAssignment(
            section: $0.section, key: $0.key, value: $0.value, file: $0.file, line: $0.line)
        }
        require(
          expected == .success(got),
          "INIParser.parse(\(show(text))) = \(got.map { "\($0.line):[\($0.section)] \($0.key)=\(show($0.value))" }), "
            + "reference \(expected)")
      }
    } catch {
      require(error.file == file, "INIParser error names \(error.file), parsing \(file)")
      require(
        error.line >= 1 && error.line <= lines, "INIParser error line \(error.line) of \(lines)")
      _ = error.description
      if reference {
        let expected = referenceParse(text, file: file)
        if case .failure(let e) = expected {
          require(
            e.line == error.line,
            "INIParser fails at line \(error.line), reference at \(e.line): \(show(text))")
        } else {
          require(
            false,
            "INIParser refuses \(show(text)) at line \(error.line): \(error.message); reference accepts"
          )
        }
      }
      if firstParseFailure == nil { firstParseFailure = (index, error) }
    }
  }

  let loaded: Configuration
  do {
    loaded = try ConfigLoader.load(sources: sources)
  } catch {
    _ = error.description
    guard let index = names.firstIndex(of: error.file) else {
      require(false, "ConfigError names \(error.file), not one of \(names)")
      return nil
    }
    let lines = lineCount(sources[index].text)
    require(error.line >= 0 && error.line <= lines, "error line \(error.line) of \(lines)")
    if error.line == 0 {
      require(index == 0, "a whole-configuration error names a drop-in: \(error)")
      require(
        ["[Backend] URL", "[Backend] ReconnectMinSec", "[Backend] Rooms", "[MQTT] IDProperty"]
          .contains(error.key ?? ""),
        "line 0 for \(error)")
      require(firstParseFailure == nil, "validation error \(error) though a file does not parse")
    }
    if case (let failed, let parseError)? = firstParseFailure {
      require(
        error.line == 0 || index < failed || error == parseError,
        "load reports \(error), but \(names[failed]) fails first: \(parseError)")
    }
    if reference {
      switch referenceLoad(sources) {
      case .success(let c):
        require(false, "ConfigLoader refuses (\(error)), reference loads \(describe(c))")
      case .failure(let e):
        require(
          e.file == error.file && e.line == error.line && (e.key == error.key || e.key == nil),
          "ConfigLoader: \(error) (key \(String(describing: error.key))); reference: \(e)")
      }
    }
    return nil
  }
  require(
    firstParseFailure == nil, "loaded though \(names[firstParseFailure!.index]) does not parse")
  checkInvariants(loaded, sources)
  if reference {
    switch referenceLoad(sources) {
    case .success(let c):
      require(c == loaded, "ConfigLoader: \(describe(loaded))\nreference:    \(describe(c))")
    case .failure(let e):
      require(false, "ConfigLoader loads \(describe(loaded)); reference fails: \(e)")
    }
  }
  require((try? ConfigLoader.load(sources: sources)) == loaded, "loading is not deterministic")
  return loaded
}

func checkInvariants(_ c: Configuration, _ sources: [Source]) {
  guard let url = c.url else {
    require(false, "loaded without a URL")
    return
  }
  require((try? WebSocketURL(parsing: url.description)) == url, "URL \(url) is not canonical")
  require(!url.host.isEmpty && (1...65535).contains(url.port), "URL \(url) host or port")
  require(url.resource.hasPrefix("/"), "URL resource \(show(url.resource))")
  require(c.reconnectMin <= c.reconnectMax, "ReconnectMinSec > ReconnectMaxSec")
  require(c.reconnectMin >= .milliseconds(10), "ReconnectMinSec \(c.reconnectMin)")
  for (name, value) in [
    ("PingIntervalSec", c.pingInterval), ("PongTimeoutSec", c.pongTimeout),
    ("ConnectTimeoutSec", c.connectTimeout), ("ReconnectMaxSec", c.reconnectMax),
  ] {
    require(value >= .milliseconds(10) && value <= .seconds(7 * 86400), "\(name) \(value)")
  }
  require((2...10_000).contains(c.maxFiles), "MaxFiles \(c.maxFiles)")
  require(c.maxMessageSize >= 1024, "MaxMessageSize \(c.maxMessageSize)")
  require(c.maxFileSize >= 4096, "MaxFileSize \(c.maxFileSize)")
  require(
    (.milliseconds(1) ... .milliseconds(60_000)).contains(c.syncInterval),
    "SyncIntervalMSec \(c.syncInterval)")
  require((1...10_000_000).contains(c.outboxMaxMessages), "MaxMessages \(c.outboxMaxMessages)")
  require(c.storeDirectory.hasPrefix("/"), "Directory \(show(c.storeDirectory))")
  require(
    c.controlSocket.hasPrefix("/") && c.controlSocket.utf8.count < 108,
    "Socket \(show(c.controlSocket))")
  require(c.socketMode <= 0o7777, "SocketMode \(c.socketMode)")
  require(logLevels.contains(c.logLevel), "LogLevel \(c.logLevel)")
  require(!(c.chatProtocol == .raw && !c.rooms.isEmpty), "raw protocol with rooms")
  require(!(c.mqttVersion == .v311 && !c.mqttIDProperty.isEmpty), "IDProperty under 3.1.1")
  require(Set(c.rooms).count == c.rooms.count, "duplicate rooms \(c.rooms)")
  // Separators are Characters: a space followed by a combining mark is one Character, not a
  // separator (the same grapheme rule as CR LF, but harmless: nobody types that by accident).
  let separators: Set<Character> = [" ", ",", "\t"]
  for item in c.rooms + c.subprotocols {
    require(!item.isEmpty && !item.contains(where: separators.contains), "list item \(show(item))")
  }
  require(!c.sender.isEmpty && !c.socketGroup.isEmpty, "empty Sender or SocketGroup")
  let e = c.envelope
  for field in [
    e.eventField, e.dataField, e.roomField, e.messageField, e.senderField, e.countField,
    e.clientIDField, e.joinEvent, e.leaveEvent, e.sendEvent, e.messageEvent,
  ] {
    require(!field.isEmpty, "an empty [Envelope] name")
  }
  for header in c.headers {
    require(
      !header.name.isEmpty
        && header.name.unicodeScalars.allSatisfy({ isASCIIAlnum($0) || $0 == "-" }),
      "header name \(show(header.name))")
    require(header.name.lowercased() != "authorization", "an Authorization header")
  }
  // Values come from single lines (continuations are joined with spaces).
  let strings =
    [c.sender, c.socketGroup, c.storeDirectory, c.controlSocket, c.tokenFile ?? "", c.caFile ?? ""]
    + c.rooms + c.subprotocols + c.headers.flatMap { [$0.name, $0.value] }
  for s in strings {
    require(!s.unicodeScalars.contains("\n"), "a line break inside the value \(show(s))")
  }
  // The daemon builds this handshake on every connection attempt: a configuration that
  // loads must not fail there every time.
  var random = SystemRandomNumberGenerator()
  do {
    _ = try ClientHandshake(
      url: url, headers: HTTPHeaders(c.headers), subprotocols: c.subprotocols,
      random: &random)
  } catch {
    require(false, "loads, but the handshake refuses it: \(error); \(describe(c))")
  }
}

// MARK: - Mode 0: arbitrary files

func runFiles(_ payload: [UInt8]) {
  var files: [[UInt8]] = [[]]
  for byte in payload {
    if byte == 0 && files.count < 3 {
      files.append([])
    } else {
      files[files.count - 1].append(byte)
    }
  }
  let sources: [Source] = files.enumerated().map {
    (fileNames[$0.offset], String(decoding: $0.element, as: UTF8.self))
  }
  checkLoad(sources)
}

// MARK: - Mode 1: the shipped defaults

/// The shipped file and what it must load as.
struct Shipped {
  let text: String
  let lines: [String]
  /// Indices of the commented-out settings (`#Key=value`).
  let defaults: [Int]
  let expected: Configuration

  init() {
    var bytes: [UInt8] = []
    var high: UInt8?
    for c in shippedConfigHex.utf8 {
      let v = c <= UInt8(ascii: "9") ? c - UInt8(ascii: "0") : c - UInt8(ascii: "a") + 10
      if let h = high {
        bytes.append(h << 4 | v)
        high = nil
      } else {
        high = v
      }
    }
    text = String(decoding: bytes, as: UTF8.self)
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    self.lines = lines
    defaults = lines.indices.filter { i in
      let line = lines[i]
      guard line.hasPrefix("#"), let eq = line.firstIndex(of: "=") else { return false }
      let key = line[line.index(after: line.startIndex)..<eq]
      return !key.isEmpty && key.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
    }
    // The defaults, and the URL the shipped file sets (the only uncommented setting).
    var c = Configuration()
    let url = lines.first { $0.hasPrefix("URL=") }.map { String($0.dropFirst(4)) }
    c.url = url.flatMap { try? WebSocketURL(parsing: $0) }
    expected = c
  }
}

nonisolated(unsafe) var shippedCache: Shipped?

var shipped: Shipped {
  if let s = shippedCache { return s }
  let s = Shipped()
  require(!s.defaults.isEmpty && s.expected.url != nil, "cannot read the shipped file's settings")
  let plain = checkLoad([(fileNames[0], s.text)])
  require(
    plain == s.expected,
    "the shipped file loads as \(plain.map(describe) ?? "an error"), not the defaults")
  // Every documented key is shown in the shipped file.
  for (section, key) in settingKeys where key != "URL" {
    require(
      s.defaults.contains { s.lines[$0].hasPrefix("#\(key)=") },
      "the shipped file does not show [\(section)] \(key)=")
  }
  shippedCache = s
  return s
}

/// Equivalent spellings of some defaults.
let equivalents: [String: [String]] = [
  "Protocol": ["ENVELOPE", "Envelope"],
  "Compression": ["YES", "true", "on", "1", "y", "T"],
  "PingIntervalSec": ["10s", "10000ms", "10 sec", "10.0", "5s 5000ms"],
  "PongTimeoutSec": ["10seconds", "10 s"],
  "ConnectTimeoutSec": ["5s 5s", "10000 msec"],
  "ReconnectMinSec": ["1s", "1000ms", "1.000"],
  "ReconnectMaxSec": ["1min", "1m", "60s", "1minute", "0.5min 30s"],
  "MaxMessageSize": ["16384K", "16777216", "16MB", "16m", "16384kb"],
  "MaxFileSize": ["65536K", "64m", "67108864", "64MB"],
  "Sync": ["BATCH", "Batch"],
  "SyncIntervalMSec": ["+50", "050"],
  "MaxFiles": ["08", "+8"],
  "MaxMessages": ["010000"],
  "SocketMode": ["660", "0660"],
  "LogLevel": ["INFO", "Info"],
]

func runDefaults(_ a: UInt8, _ b: UInt8, _ payload: [UInt8]) {
  let s = shipped
  let spaced = a & 1 != 0
  let indented = a & 2 != 0
  let trailing = a & 4 != 0
  let crlf = a & 8 != 0
  let dropIn = a & 0x10 != 0
  let continued = a & 0x20 != 0
  let comments = a & 0x40 != 0
  let doubled = a & 0x80 != 0
  let respell = b & 1 != 0
  func chosen(_ n: Int) -> Bool {
    let byte = n / 8
    return byte < payload.count ? payload[byte] & (1 << (n % 8)) != 0 : false
  }
  var main: [String] = []
  var extra: [String] = []
  var section = ""
  for (i, line) in s.lines.enumerated() {
    if line.hasPrefix("[") { section = line }
    guard let n = s.defaults.firstIndex(of: i), chosen(n) else {
      main.append(line)
      continue
    }
    let setting = line.dropFirst()
    let eq = setting.firstIndex(of: "=")!
    let key = String(setting[..<eq])
    var value = String(setting[setting.index(after: eq)...])
    if respell, let options = equivalents[key] {
      value = options[(Int(b >> 1) + n) % options.count]
    }
    var written: [String] = []
    let pre = indented ? " \t" : ""
    let post = trailing ? " \t " : ""
    let eqText = spaced ? " = " : "="
    if continued && !value.isEmpty {
      written.append(pre + key + eqText + "\\")
      if comments { written.append("# a comment inside a continuation") }
      written.append("   " + value + post)
    } else {
      written.append(pre + key + eqText + value + post)
    }
    if comments { written.insert("; set from the default", at: 0) }
    if doubled { written += written }
    if dropIn {
      main.append(line)
      extra.append(section)
      extra += written
    } else {
      main += written
    }
  }
  let eol = crlf ? "\r\n" : "\n"
  var sources: [Source] = [(fileNames[0], main.joined(separator: eol))]
  if dropIn { sources.append((fileNames[1], extra.joined(separator: eol) + eol)) }
  let loaded = checkLoad(sources)
  require(
    loaded == s.expected,
    "uncommented defaults load as \(loaded.map(describe) ?? "an error")\nnot as \(describe(s.expected))\n"
      + sources.map { "\($0.file): \(show($0.text, limit: 4000))" }.joined(separator: "\n"))
}

// MARK: - Mode 2: one setting

func runSetting(_ a: UInt8, _ b: UInt8, _ payload: [UInt8]) {
  let (section, key) = settingKeys[Int(a) % settingKeys.count]
  let value = String(decoding: payload, as: UTF8.self)
  let base = "[Backend]\nURL=ws://127.0.0.1:8765/\n"
  let assignment = "[\(section)]\n\(key)=\(value)\n"
  switch b % 3 {
  case 0: checkLoad([(fileNames[0], base + assignment)])
  case 1: checkLoad([(fileNames[0], base), (fileNames[1], assignment)])
  default:
    // Set twice: the drop-in's value wins (lists append).
    checkLoad([(fileNames[0], base + assignment), (fileNames[2], assignment)])
  }
}
