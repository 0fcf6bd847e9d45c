import JSON
import LinkCore

/// The chat events of a Socket.IO peer: `join-room` and `leave-room` with `{"room_id":R}`,
/// `send-message` with the envelope's data object. Each is acknowledged when it carries an
/// ack id: `[{"ok":true}]`, or `[{"error":…}]` when refused.
extension SocketIOPeer {
  /// Messages whose text starts with this are refused: a way to demo failed deliveries.
  static let rejectPrefix = "reject:"

  /// `42[/ns,][id]["name",args…]` in a connected namespace.
  func event(_ namespace: String, _ data: UnsafeRawBufferPointer, ackID: UInt64?) {
    guard case .array(let items)? = try? JSONValue.parse(data),
      case .string(let name)? = items.first
    else {
      protocolError("an event whose data is not [\"name\", …]")
      return
    }
    let argument = items.dropFirst().first
    switch name {
    case "join-room", "leave-room":
      guard let room = Self.room(argument) else {
        refuse(namespace, ackID: ackID, "expected {\"room_id\":…} with a number or a string")
        return
      }
      let key = DevServer.RoomKey(namespace: namespace, room: room)
      // Acknowledged first: what the join replays comes after the client knows it is in.
      acknowledge(namespace, ackID)
      if name == "join-room" {
        server.join(self, key, since: Self.since(argument))
      } else {
        server.leave(self, key)
      }
    case "send-message":
      sendMessage(namespace, argument, ackID: ackID)
    default:
      refuse(namespace, ackID: ackID, "unknown event '\(name.prefix(100))'")
    }
  }

  /// Broadcasts the message to its room (the sender included), then acknowledges it.
  private func sendMessage(_ namespace: String, _ argument: JSONValue?, ackID: UInt64?) {
    guard let room = Self.room(argument) else {
      refuse(namespace, ackID: ackID, "expected {\"room_id\":…,\"message\":…}")
      return
    }
    let text = argument?["message"]?.stringValue ?? ""
    guard !text.hasPrefix(Self.rejectPrefix) else {
      refuse(namespace, ackID: ackID, "rejected by the devserver")
      return
    }
    let message = ChatMessage(
      room: room, text: text, sender: argument?["sender"]?.stringValue ?? "anonymous",
      clientID: argument?["client_id"]?.stringValue)
    server.broadcast(message, namespace: namespace, sender: self)
    acknowledge(namespace, ackID)
  }

  /// `[{"ok":true}]` when the event asked for an ack.
  private func acknowledge(_ namespace: String, _ ackID: UInt64?) {
    if let ackID { send(SocketIOFrames.ack(namespace, ackID)) }
  }

  /// `[{"error":…}]` when the event asked for an ack, else an `error` event: the client hears
  /// of it either way.
  func refuse(_ namespace: String, ackID: UInt64?, _ reason: String) {
    if let ackID {
      send(SocketIOFrames.ack(namespace, ackID, error: reason))
    } else {
      send(SocketIOFrames.error(namespace, message: reason))
    }
  }

  /// A join's `since`: a string, or a whole number's digits.
  static func since(_ argument: JSONValue?) -> String? {
    switch argument?["since"] {
    case .string(let text)?: text
    case .int(let number)?: String(number)
    default: nil
    }
  }

  /// The room named by an argument's `room_id`: a number or a string, as the envelope has it.
  static func room(_ argument: JSONValue?) -> String? {
    let name: String? =
      switch argument?["room_id"] {
      case .int(let number)?: String(number)
      case .double(let number)?: Int64(exactly: number).map { String($0) }
      case .string(let text)?: text
      default: nil
      }
    return name.flatMap { RoomID($0)?.name }
  }
}
