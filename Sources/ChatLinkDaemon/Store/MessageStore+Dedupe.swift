import EventLoop
import JSON
import LinkCore
import WebSocket

/// The store's dedupe window and what it has dropped: the window is filled from the store's
/// tail on the disk thread at start, and from every inbound record with an id the store keeps.
struct StoreDedupe {
  /// The recent ids.
  var window: DedupeWindow
  /// Inbound messages dropped as duplicates since start.
  var dropped = 0
  /// Who waits for the window to be filled from the store; nil once it is.
  var waiters: [() -> Void]? = []
  /// The checkpoint being written (`MessageStore+DedupeCheckpoint.swift`), and who asked for
  /// one while it was.
  var checkpoint: DedupeCheckpoint?
  var queuedCheckpoints: [() -> Void] = []
  /// The last seq of the newest snapshot in place (read at start or written since).
  var checkpointedSeq: UInt64?
  /// Where the window came from at start, once it is filled.
  var source: DedupeSource?

  init(capacity: Int, keepsNewest: Bool) {
    window = DedupeWindow(capacity: capacity, keepsNewest: keepsNewest)
  }
}

extension MessageStore {
  /// Inbound messages dropped as duplicates since start.
  public var duplicatesDropped: Int { dedupe.dropped }

  /// Appends an inbound record, unless its id is among its room's recent ids: then nothing is
  /// stored (the backend delivered it again) and the seq returned is the last one stored,
  /// which the record it repeats is no later than: once that is durable, so is the message.
  /// Inlined into its caller (every inbound record with an id comes here from one place): a
  /// call passing the record's parts cost their moves into registers and out again.
  @inline(__always)
  public func appendInbound(
    room: [UInt8]?, id: MessageIDText?, meta: [UInt8]?, payload: Message, scan: PayloadScan,
    time: Timestamp
  ) -> (seq: UInt64, duplicate: Bool) {
    payload.withUnsafeBytes { raw in
      guard let id else {
        let seq = append(
          direction: .inbound, room: room, meta: meta, payload: raw, isText: payload.isText,
          scan: scan, time: time)
        return (seq, false)
      }
      // One pass over the room's bytes for the window and the room index (both FNV-1a; the
      // window hashes no room as no bytes, the index as `null`).
      let roomHash = room.map { DedupeWindow.roomHash($0) }
      return id.withBytes(payload: raw, meta: meta) { idBytes in
        if !dedupe.window.insert(
          room: room, roomHash: roomHash ?? FNV1a.basis32, id: idBytes, time: time)
        {
          dedupe.dropped += 1
          return (lastSeq, true)
        }
        // An id read where it lies, without escapes, is a JSON string's content or a
        // number's digits: quoted as it is, it is a JSON string again.
        let seq = append(
          direction: .inbound, room: room, messageID: idBytes, messageIDIsPlain: !id.escaped,
          meta: meta, payload: raw, isText: payload.isText, scan: scan, time: time,
          roomHash: roomHash ?? RoomIndex.nullRoomHash)
        return (seq, false)
      }
    }
  }

  /// The newest id stored for each of `rooms` that has one, with its record's time.
  public func newestIDs(of rooms: [RoomID]) -> [RoomID: RoomPosition] {
    var ids: [RoomID: RoomPosition] = [:]
    for room in rooms {
      if let position = dedupe.window.newestPosition(room: room.json) { ids[room] = position }
    }
    return ids
  }

  /// The time of the newest inbound record with an id the window knows, of any room.
  public var newestStoredTime: Timestamp? { dedupe.window.newestTime }

  /// Where the window came from at start, once it is filled (nil before, or without ids).
  public var dedupeSource: DedupeSource? { dedupe.source }

  /// Calls `completion` once the window holds what the store held at start (at once when
  /// it does, or when no ids are kept).
  public func whenDedupeReady(_ completion: @escaping () -> Void) {
    if dedupe.waiters == nil {
      completion()
    } else {
      dedupe.waiters?.append(completion)
    }
  }

  /// Fills the window on the disk thread: from the last snapshot and the records stored after
  /// it, when it holds for this store and they are not too many, else from the store's tail.
  func rebuildDedupe() {
    // A snapshot stays while ids are off: the records stored meanwhile are read on top of it.
    guard dedupe.window.isEnabled, options.idsConfigured else {
      dedupe.waiters = nil
      return
    }
    let directory = options.directory
    // Only the hash's basis crosses to the disk thread: the window stays the loop's.
    let rebuild = DedupeRebuild(capacity: dedupe.window.capacity, hasher: dedupe.window.hasher)
    let paths = filePaths
    let indexDirectory = self.indexDirectory
    let rooms = options.rooms
    let tailRecords = options.dedupeTailRecords
    let expected = DedupeSnapshot.Expectation(
      storeLastSeq: lastSeq, capacity: dedupe.window.capacity,
      configuredRooms: rooms.map(\.json), keepsNewest: dedupe.window.keepsNewest)
    let readTail: @Sendable () -> [[UInt8]: DedupeRebuild.Room] = {
      rebuild.read(
        paths: paths, indexDirectory: indexDirectory, configuredRooms: rooms,
        tailRecords: tailRecords)
    }
    disk.submit(
      { () -> DedupeStart in
        guard let restored = DedupeSnapshot.read(directory: directory, expected: expected),
          // The records on top are hashed as the snapshot's window hashes.
          let since = DedupeRebuild(capacity: rebuild.capacity, hasher: restored.window.hasher)
            .readSince(
              paths: paths, fromSeq: restored.fromSeq, storeLastSeq: expected.storeLastSeq,
              roomSeqs: restored.roomSeqs, limit: tailRecords)
        else { return .tail(readTail()) }
        var window = restored.window
        for (room, ids) in since {
          window.extend(
            room: room, hashes: ids.hashes, newestID: ids.newestID, newestTime: ids.newestTime)
        }
        return .snapshot(window, lastSeq: restored.lastSeq, fromSeq: restored.fromSeq)
      },
      completion: { [weak self] start in
        guard let self else { return }
        switch start {
        // The link waits for the window, so nothing is in it yet; if something is (its hash
        // basis is another), the tail is read after all.
        case .snapshot(let window, let seq, let from) where self.dedupe.window.roomCount == 0:
          self.dedupe.window = window
          self.dedupe.checkpointedSeq = seq
          self.dedupe.source = .snapshot(lastSeq: seq, recordsAfter: expected.storeLastSeq - from)
          self.dedupeReady()
        case .snapshot:
          disk.submit(readTail, completion: { [weak self] found in self?.restoreDedupe(found) })
        case .tail(let found): self.restoreDedupe(found)
        }
      })
  }

  /// Writes the window to its snapshot for the next start once every record is durable (a
  /// clean stop), then calls `completion`; without ids, at once.
  public func saveDedupeSnapshot(completion: @escaping () -> Void) {
    whenDurable { [weak self] in
      guard let self else { return completion() }
      self.checkpointDedupe(completion: completion)
    }
  }

  private func restoreDedupe(_ found: [[UInt8]: DedupeRebuild.Room]) {
    dedupe.source = .tail
    for (room, ids) in found {
      dedupe.window.restore(
        room: room, hashes: ids.hashes, newestID: ids.newestID, newestTime: ids.newestTime)
    }
    dedupeReady()
  }

  private func dedupeReady() {
    let waiters = dedupe.waiters ?? []
    dedupe.waiters = nil
    for waiter in waiters { waiter() }
  }
}

/// Where the dedupe window came from at start, for the log.
public enum DedupeSource: Equatable, Sendable {
  /// A snapshot that knew the records up to `lastSeq`, and `recordsAfter` records read on top.
  case snapshot(lastSeq: UInt64, recordsAfter: UInt64)
  /// The store's tail (no snapshot, or one that did not hold).
  case tail
}

/// Where the window at start came from.
private enum DedupeStart: Sendable {
  case snapshot(DedupeWindow, lastSeq: UInt64, fromSeq: UInt64)
  case tail([[UInt8]: DedupeRebuild.Room])
}
