import ChatLinkAPI
import JSON
import LinkCore

/// What the control socket asks of the daemon, and all it asks: `ControlService` reaches the
/// backend link, the store and the outbox only through this. `Daemon` conforms
/// (Daemon+Control.swift); tests give the service a fake, so every method is tested without a
/// backend, a disk or a clock.
///
/// Everything is called on the loop thread, and every completion must run on it too, later
/// or at once: the service answers in completions, and a reply may only be written there.
public protocol ControlTarget: AnyObject {
  /// The status now, as GetStatus returns it; its `text` is the daemon's STATUS= line.
  var status: DaemonStatus { get }
  /// The rooms joined now, in join order.
  var rooms: [String] { get }
  /// Whether the chat protocol has rooms at all (Protocol=raw has none).
  var hasRooms: Bool { get }
  /// Where a Send or SendBatch that names no room goes: the first of Rooms=, if any.
  var defaultRoom: RoomID? { get }
  /// Why the store cannot write, while it cannot. The outbox shares its disk, so sends are
  /// refused then rather than accepted and lost.
  var storeFailure: String? { get }
  /// The metrics now, as text of `format` (GetMetrics, and the HTTP endpoint).
  func metricsText(_ format: OpenMetricsRenderer.Format) -> String

  /// Joins `room` now and after every reconnect.
  func join(_ room: RoomID)
  /// Leaves `room` and stops joining it.
  func leave(_ room: RoomID)
  /// Drops the backend connection and connects again at once.
  func reconnect(reason: String)
  /// Measures a round trip to the backend: the time it took, or `.notConnected`.
  func ping(completion: @escaping (Result<Duration, DaemonError>) -> Void)
  /// Queues one message in the outbox; `completion` gets its receipt (state queued) once it is
  /// durable, or why it was refused (`.outboxFull`, `.storageFailed`, `.invalidParameter`).
  func enqueue(
    room: RoomID?, text: String, id: String?,
    completion: @escaping (Result<SendReceipt, DaemonError>) -> Void)
  /// Queues messages for one room, in order, all or none; `completion` gets their outbox
  /// entries (the reply's ids and counts) once all are durable, or one refusal. With
  /// `waitForRoom`, a full outbox holds them until it has room (`Outbox.enqueue`).
  func enqueue(
    room: RoomID?, texts: PackedStrings, waitForRoom: Bool,
    completion: @escaping (Result<ArraySlice<OutboxEntry>, DaemonError>) -> Void)
  /// Reads stored records off the loop; `completion` gets them oldest first, or
  /// `.storageFailed`.
  func history(
    _ query: HistoryQuery, completion: @escaping (Result<[StoredRecord], DaemonError>) -> Void)
}
