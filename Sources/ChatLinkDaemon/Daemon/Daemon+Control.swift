import ChatLinkAPI
import EventLoop
import JSON
import LinkCore
import Varlink

/// The daemon as the control socket sees it (`ControlTarget`), and the link's events
/// forwarded to the control socket's subscribers.
///
/// Everything the control socket needs from the backend link, the store and the outbox is in
/// this file: when their APIs change, this is the file to follow them.
extension Daemon: ControlTarget {
  public var status: DaemonStatus {
    var retryIn: Double?
    if case .waiting(let delay) = link.state { retryIn = delay.inSeconds }
    let counters = link.counters
    let session = link.session
    return DaemonStatus(
      state: DaemonState(rawValue: link.state.name), instance: configuration.instance?.name,
      url: link.displayURL,
      protocol: configuration.chatProtocol.rawValue, rooms: link.rooms.map(\.name),
      subprotocol: link.negotiated?.subprotocol,
      extensions: link.negotiated?.deflate.map(\.description), session: session?.id,
      namespace: session?.namespace, sessionNote: session?.note, retryIn: retryIn,
      lastError: link.lastError,
      lastFailure: link.lastFailure, storeError: store.failure?.message,
      received: counters.received, sent: counters.sent, confirmed: counters.confirmed,
      failed: counters.failed, connects: counters.connects, outbox: outbox.pending.count,
      lastSeq: Int(clamping: store.lastSeq), durableSeq: Int(clamping: store.durableSeq),
      storePath: store.path, version: ChatLinkVersion.current,
      duplicatesDropped: store.duplicatesDropped, historyGaps: counters.historyGaps,
      delivery: link.settings.link.dialect.inboundPromise(
        dedupeWindow: store.options.dedupeWindow),
      catchingUp: link.catchUpProgress.map { CatchUpProgress(room: $0.room, caughtUp: $0.caughtUp) }
    )
  }

  public var rooms: [String] { link.rooms.map(\.name) }

  public var hasRooms: Bool { link.hasRooms }

  public var defaultRoom: RoomID? { configuration.rooms.first.flatMap(RoomID.init) }

  public var storeFailure: String? { store.failure?.message }

  public func join(_ room: RoomID) {
    link.join(room)
  }

  public func leave(_ room: RoomID) {
    link.leave(room)
  }

  public func reconnect(reason: String) {
    link.reconnect(reason: reason)
  }

  public func ping(completion: @escaping (Result<Duration, DaemonError>) -> Void) {
    link.ping { [unowned self] result in
      completion(result.mapError { _ in .notConnected(state: self.connectionState) })
    }
  }

  public func enqueue(
    room: RoomID?, text: String, id: String?,
    completion: @escaping (Result<SendReceipt, DaemonError>) -> Void
  ) {
    if let reason = link.refusal(room: room) {
      return completion(.failure(.invalidParameter(parameter: "room", reason: reason)))
    }
    outbox.enqueue(room: room, text: text, id: id) { result in
      switch result {
      case .success(let entry):
        completion(
          .success(SendReceipt(id: entry.id, state: .queued, count: Int(clamping: entry.count))))
      case .failure(let error):
        completion(.failure(Self.daemonError(error)))
      }
    }
  }

  public func enqueue(
    room: RoomID?, texts: PackedStrings, waitForRoom: Bool,
    completion: @escaping (Result<ArraySlice<OutboxEntry>, DaemonError>) -> Void
  ) {
    if let reason = link.refusal(room: room) {
      return completion(.failure(.invalidParameter(parameter: "room", reason: reason)))
    }
    outbox.enqueue(room: room, texts: texts, waitForRoom: waitForRoom) { result in
      completion(result.mapError(Self.daemonError))
    }
  }

  public func history(
    _ query: HistoryQuery, completion: @escaping (Result<[StoredRecord], DaemonError>) -> Void
  ) {
    guard let reader else {
      return completion(.failure(.storageFailed(reason: "the store reader is not running")))
    }
    let paths = store.filePaths
    let indexDirectory = store.indexDirectory
    reader.submit(
      {
        // Parsed on the reader thread too: the loop only encodes the reply.
        HistoryReader.read(paths: paths, query: query, indexDirectory: indexDirectory)
          .map(Self.records(of:))
      },
      completion: { result in
        completion(result.mapError { .storageFailed(reason: $0.description) })
      })
  }

  /// The records of store lines; a line that does not read as one is left out.
  private static func records(of lines: [[UInt8]]) -> [StoredRecord] {
    lines.compactMap { line in
      guard let value = try? JSONValue.parse(line) else { return nil }
      return try? StoredRecord(json: value)
    }
  }

  private var connectionState: DaemonState { DaemonState(rawValue: link.state.name) }

  private static func daemonError(_ error: OutboxError) -> DaemonError {
    switch error {
    case .full(let limit): .outboxFull(limit: limit)
    case .invalidID: .invalidParameter(parameter: "id", reason: error.description)
    case .invalidRoom(let room):
      .invalidParameter(parameter: "room", reason: "invalid room '\(room)'")
    case .storageFailed(let failure): .storageFailed(reason: failure.message)
    }
  }

  /// Hands what the link reports to the control socket's subscribers and watched sends.
  func forwardLinkEvents() {
    let namedEvents = configuration.chatProtocol == .socketio
    // Under Sync=always a message event says its record is stored as the README means it:
    // fsynced. Under Sync=batch and none it goes out at once, before the fsync (the event's
    // seq against GetStatus's durable_seq tells whether it is durable yet).
    let waitForFsync = store.options.sync == .always
    let inbound: (InboundMessage, UInt64, Timestamp) -> Void = {
      [unowned self] inbound, seq, time in
      guard let service = self.service else { return }
      let room = inbound.room.flatMap { raw in raw.withUnsafeBytes { RoomID(json: $0) } }
      let id = inbound.idBytes.map { String(decoding: $0, as: UTF8.self) }
      let held = HeldMessage(
        record: StoreRecord(
          seq: seq, time: time, direction: .inbound, room: inbound.room,
          clientID: id, meta: inbound.meta,
          payload: inbound.payload),
        scan: inbound.scan, room: room)
      let durable = waitForFsync ? self.store.durableSeq : .max
      if let ready = self.heldMessages.admit(held, seq: seq, durable: durable) {
        service.publishMessage(
          ready.record, scan: ready.scan, room: ready.room, namedEvents: namedEvents)
      }
    }
    // Most of the time nobody follows: the link then calls nothing for an inbound record
    // (asking each time whether anyone follows cost reference counting on every frame).
    link.onInbound = service?.hasSubscribers == true ? inbound : nil
    service?.onFollowingChanged = { [unowned self] following in
      self.link.onInbound = following ? inbound : nil
      if !following { self.heldMessages.removeAll() }
    }
    link.onDurable = { [unowned self] seq in
      guard waitForFsync else { return }
      for held in self.heldMessages.release(through: seq) {
        self.service?.publishMessage(
          held.record, scan: held.scan, room: held.room, namedEvents: namedEvents)
      }
    }
    link.onSent = { [unowned self] entries in self.service?.publishSent(entries) }
    link.onConfirmed = { [unowned self] confirmed in
      self.service?.publishConfirmed(confirmed.lazy.map(\.entry))
    }
    link.onFailed = { [unowned self] entry, reason in
      self.service?.publishFailed(entry, reason: reason)
    }
  }
}

/// A Subscribe message event waiting for its record's fsync (`DurableEventGate`).
struct HeldMessage {
  var record: StoreRecord
  var scan: PayloadScan
  var room: RoomID?
}
