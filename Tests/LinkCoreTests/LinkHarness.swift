import JSON
import LinkCore
import TestSupport
import WebSocket

func entry(_ count: UInt64, _ text: String = "hi", id: String? = nil, room: String? = "7")
  -> OutboxEntry
{
  OutboxEntry(
    id: id ?? "id-\(count)", room: room.flatMap(RoomID.init), text: text, count: count,
    created: Timestamp(microseconds: 0))
}

func text(_ string: String) -> Message { .text(Array(string.utf8)) }

// swift-format-ignore: NeverUseForceTry
let testURL = try! WebSocketURL(parsing: "ws://chat.example:9000/ws")

func handshake(subprotocol: String? = nil) -> ClientHandshake.Result {
  ClientHandshake.Result(
    response: HTTPResponseHead(status: 101, reason: "Switching Protocols", headers: HTTPHeaders()),
    subprotocol: subprotocol, deflate: nil)
}

func refusal(_ status: Int, _ headers: [(String, String)] = []) -> ConnectionOutcome {
  var fields = HTTPHeaders()
  for (name, value) in headers { fields.add(name: name, value: value) }
  return .upgradeRefused(
    HTTPResponseHead(status: status, reason: "No", headers: fields),
    receivedAt: Timestamp(rfc3339: "2026-12-02T12:00:00Z")!)
}

func closed(_ code: CloseCode, _ reason: String = "", by initiator: CloseInfo.Initiator = .peer)
  -> ConnectionOutcome
{
  .closed(CloseInfo(code: code, reason: reason, initiator: initiator, clean: true))
}

/// Drives a `LinkCore` as the driver would, with a clock the test moves, and renders the
/// actions as short lines so a test reads like a transcript.
struct Harness {
  var core: LinkCore
  var now = MonotonicInstant.origin

  init(
    rooms: [String] = ["7", "ops"], backend: any BackendProtocol = EnvelopeProtocol(sender: "bot"),
    pingInterval: Duration = .seconds(10), pongTimeout: Duration = .seconds(5),
    reconnect: (Duration, Duration) = (.seconds(1), .seconds(60)), sendBufferLimit: Int = 1000
  ) {
    var settings = LinkSettings(
      url: testURL, pingInterval: pingInterval, pongTimeout: pongTimeout,
      reconnectMin: reconnect.0, reconnectMax: reconnect.1)
    settings.sendBufferLimit = sendBufferLimit
    core = LinkCore(
      settings: settings, rooms: rooms.compactMap(RoomID.init), backend: backend,
      random: SplitMix64())
  }

  /// Drives a core made elsewhere.
  init(core: LinkCore) { self.core = core }

  /// Handles `event` now; returns the actions as lines.
  @discardableResult
  mutating func on(_ event: LinkEvent) -> [String] {
    actions(event).flatMap(Self.lines)
  }

  /// Handles `event` now; returns the actions themselves.
  mutating func actions(_ event: LinkEvent) -> [LinkAction] {
    var actions: [LinkAction] = []
    core.handle(event, now: now, into: &actions)
    return actions
  }

  /// Moves the clock.
  mutating func advance(_ span: Duration) { now = now + span }

  /// Starts and opens a connection; returns the lines of the upgrade.
  @discardableResult
  mutating func open() -> [String] {
    on(.start)
    return on(.upgraded(handshake()))
  }

  /// The lines of one action: a run of outbox sends is a `send` and a `sent` line per entry.
  static func lines(_ action: LinkAction) -> [String] {
    guard case .sendOutbox(let frames, let entries) = action else { return [line(action)] }
    return zip(frames.messages, entries).flatMap { frame, entry in
      [line(.send(frame)), "sent \(entry.id)"]
    }
  }

  static func line(_ action: LinkAction) -> String {
    switch action {
    case .connect: "connect"
    case .send(let message): "send \(message.text ?? "binary \(message.bytes.count)")"
    case .sendPing(let payload): "ping \(Keepalive.counter(payload) ?? 0)"
    case .close(let code, let reason): "close \(code.rawValue) \(reason)"
    case .drop(let code, let reason): "drop \(code.rawValue) \(reason)"
    case .arm(let timer, let delay): "arm \(timer) \(delay.secondsText)"
    case .disarm(let timer): "disarm \(timer)"
    case .store(let record, let acknowledged):
      "store \(record.payload.text ?? "binary")" + (acknowledged ? " (ack held)" : "")
    case .awaitDurability(let awaited): awaited ? "await durability" : "durability not awaited"
    case .confirmed(let sent): "confirmed \(sent.entry.id)"
    case .confirmedThrough(let count, let entries):
      "confirmed through \(count): \(entries.map(\.entry.id).joined(separator: ","))"
    case .failed(let entry, let reason): "failed \(entry.id): \(reason)"
    case .release(let entry): "release \(entry.id)"
    case .journal(let entry): "journal \(entry)"
    case .requestOutbox: "request outbox"
    case .requestPositions(let rooms):
      "request positions \(rooms.map(\.name).joined(separator: ","))"
    case .pauseReading: "pause reading"
    case .resumeReading: "resume reading"
    case .stateChanged(let state, let reason): "state \(state) (\(reason))"
    case .sendOutbox(let frames, _): "send \(frames.count) outbox frames"
    case .pingAnswered(let id, let rtt): "ping \(id) answered in \(rtt.secondsText)"
    case .pingFailed(let id, let error): "ping \(id) failed: \(error)"
    case .report(let report): "report \(report)"
    case .stopped: "stopped"
    }
  }
}

extension OutboxFrames {
  /// Every frame as a message of its own.
  var messages: [Message] { (0..<count).map { self[$0] } }
}
