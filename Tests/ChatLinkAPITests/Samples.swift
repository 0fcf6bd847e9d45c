import ChatLinkAPI
import JSON
import Varlink

/// A value of every type of the contract with every optional field set, so that its JSON has
/// every member its type can have.
enum Samples {
  static let status = DaemonStatus(
    state: .waiting, instance: "prod", url: "wss://chat.example/ws", protocol: "socketio",
    rooms: ["7", "ops"],
    subprotocol: "chat", extensions: "permessage-deflate", session: "n1", namespace: "/",
    sessionNote: "QoS 2 asked, broker granted 1 for chat/7",
    retryIn: 2.5, lastError: "HTTP 503", lastFailure: "a1: muted",
    storeError: "No space left on device", received: 120, sent: 5, confirmed: 4, failed: 1,
    connects: 3,
    outbox: 1, lastSeq: 42, durableSeq: 41, storePath: "/var/lib/chatlink/messages.jsonl",
    version: "0.1.0", duplicatesDropped: 3, historyGaps: 1,
    delivery: "exactly once: ids and catch-up from the newest stored id",
    catchingUp: [CatchUpProgress(room: "7", caughtUp: 50)])

  static let record = StoredRecord(
    seq: 45, time: "2026-12-02T12:00:01.000000Z", direction: .outbound, room: .int(7),
    type: .json, id: "5f1c9a2e0b7d4e31",
    data: .object([("event", .string("send-message")), ("data", .object([]))]))

  static let time = "2026-12-02T12:00:00.000000Z"

  /// One event of each kind the IDL's Event describes.
  static let events: [DaemonEvent] = [
    .connected(time: time, subprotocol: "chat", extensions: "permessage-deflate"),
    .disconnected(time: time, reason: "going away", code: 1001),
    .message(time: time, record: record, room: "7", name: "chat"),
    .sent(time: time, id: "a1", room: "7"),
    .confirmed(time: time, id: "a1", room: "ops"),
    .failed(time: time, id: "a2", room: "7", reason: "muted"),
    .error(time: time, text: "store writes are failing"),
    .status(time: time, text: "Connected to wss://chat.example/ws"),
  ]

  /// One error of each kind the IDL declares, by IDL name.
  static let errors: [String: DaemonError] = [
    "NotConnected": .notConnected(state: .waiting),
    "OutboxFull": .outboxFull(limit: 10_000),
    "StorageFailed": .storageFailed(reason: "No space left on device"),
    "InvalidParameter": .invalidParameter(parameter: "room", reason: "is required"),
    "DeliveryFailed": .deliveryFailed(id: "a1", reason: "muted"),
  ]

  /// The full sample of a parameters or reply type.
  static func value(of type: any JSONRepresentable.Type) -> (any JSONRepresentable)? {
    let all: [any JSONRepresentable] = [
      EmptyObject(), GetStatusReply(status: status),
      SendParameters(room: "7", text: "hi", id: "a1"),
      SendReceipt(id: "a1", state: .queued, count: 12),
      SendBatchParameters(room: "7", texts: ["a", "b"], waitForRoom: true),
      SendBatchReceipt(ids: ["a1", "a2"], count: 12), RoomParameters(room: "ops"),
      ListRoomsReply(rooms: ["7", "ops"]),
      HistoryParameters(room: "7", sinceSeq: 41, sinceTime: time, limit: 10),
      HistoryReply(records: [record]), SubscribeParameters(room: "7"),
      SubscribeReply(event: events[2]), PingReply(rttMs: 1.25),
      GetMetricsReply(text: "# EOF\n"), GetMetricsParameters(format: "prometheus"),
      ServiceInfo(
        vendor: "ChatLink", product: "chatlinkd", version: "0.1.0", url: "https://example.org",
        interfaces: ["org.varlink.service", "io.chatlink.Daemon"]),
      InterfaceName(interface: "io.chatlink.Daemon"),
      InterfaceDescription(description: "interface io.chatlink.Daemon"),
    ]
    return all.first { Swift.type(of: $0) == type }
  }
}
