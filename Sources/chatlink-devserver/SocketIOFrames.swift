import WebSocket

/// The Engine.IO 4 and Socket.IO 5 packets the server sends, each one WebSocket text frame.
enum SocketIOFrames {
  /// `0{…}`: the Engine.IO session's parameters, the first frame on every connection. No
  /// upgrades: the session starts on the WebSocket and stays there.
  static func open(sid: String, options: DevServer.Options) -> [UInt8] {
    var out: [UInt8] = Array(#"0{"sid":"#.utf8)
    out.appendJSONString(sid)
    out.append(#","upgrades":[],"pingInterval":"# as StaticString)
    out.appendDecimal(UInt64(options.pingInterval))
    out.append(#","pingTimeout":"# as StaticString)
    out.appendDecimal(UInt64(options.pingTimeout))
    out.append(#","maxPayload":"# as StaticString)
    out.appendDecimal(UInt64(options.maxPayload))
    out.append(UInt8(ascii: "}"))
    return out
  }

  /// `2`: the server's heartbeat.
  static let ping: [UInt8] = [UInt8(ascii: "2")]

  /// `40[/ns,]{"sid":…}`: the namespace connect accepted.
  static func connected(_ namespace: String, sid: String) -> [UInt8] {
    var out = head("40", namespace)
    out.append(#"{"sid":"# as StaticString)
    out.appendJSONString(sid)
    out.append(UInt8(ascii: "}"))
    return out
  }

  /// `44[/ns,]{"message":…}`: the namespace connect refused.
  static func connectError(_ namespace: String, message: String) -> [UInt8] {
    var out = head("44", namespace)
    out.append(#"{"message":"# as StaticString)
    out.appendJSONString(message)
    out.append(UInt8(ascii: "}"))
    return out
  }

  /// `42[/ns,]["message",{…}]`: a chat message; flood messages carry their `count`.
  static func message(_ message: ChatMessage, _ namespace: String, count: UInt64? = nil)
    -> [UInt8]
  {
    var out = head("42", namespace)
    out.append(#"["message","# as StaticString)
    message.appendData(to: &out, count: count)
    out.append(UInt8(ascii: "]"))
    return out
  }

  /// `42[/ns,]["<name>",<data>]`: an event with its data object.
  static func event(_ name: String, data: [UInt8], _ namespace: String) -> [UInt8] {
    var out = head("42", namespace)
    out.append(UInt8(ascii: "["))
    out.appendJSONString(name)
    out.append(UInt8(ascii: ","))
    out += data
    out.append(UInt8(ascii: "]"))
    return out
  }

  /// `42[/ns,]["error",{"message":…}]`: what went wrong with an event that asked for no ack.
  static func error(_ namespace: String, message: String) -> [UInt8] {
    var out = head("42", namespace)
    out.append(#"["error",{"message":"# as StaticString)
    out.appendJSONString(message)
    out.append("}]" as StaticString)
    return out
  }

  /// `43[/ns,]<id>[{"ok":true}]`, or `[{"error":…}]`: the answer to an event with an ack id.
  static func ack(_ namespace: String, _ id: UInt64, error: String? = nil) -> [UInt8] {
    var out = head("43", namespace)
    out.appendDecimal(id)
    if let error {
      out.append(#"[{"error":"# as StaticString)
      out.appendJSONString(error)
      out.append("}]" as StaticString)
    } else {
      out.append(#"[{"ok":true}]"# as StaticString)
    }
    return out
  }

  /// The packet type, then the namespace and its `,` unless it is the main one.
  private static func head(_ type: StaticString, _ namespace: String) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(64)
    out.append(type)
    if namespace != "/" {
      out += Array(namespace.utf8)
      out.append(UInt8(ascii: ","))
    }
    return out
  }

  /// A new session id: 120 random bits in URL-safe base64, as Engine.IO servers make them.
  static func newID() -> String {
    var random = SecureRandomGenerator()
    let bytes = (0..<15).map { _ in UInt8.random(in: 0...255, using: &random) }
    return String(
      Base64.encode(bytes).map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
  }
}
