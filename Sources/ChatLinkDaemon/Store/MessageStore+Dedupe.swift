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

  /// Calls `completion` once the window holds what the store held at start (at once when
  /// it does, or when no ids are kept).
  public func whenDedupeReady(_ completion: @escaping () -> Void) {
    if dedupe.waiters == nil {
      completion()
    } else {
      dedupe.waiters?.append(completion)
    }
  }

  /// Fills the window on the disk thread: from the snapshot a clean stop wrote, when it holds
  /// for this store, else from the store's tail.
  func rebuildDedupe() {
    // A snapshot stays while ids are off: it holds again only if no record is stored meanwhile.
    guard dedupe.window.isEnabled, options.idsConfigured else {
      dedupe.waiters = nil
      return
    }
    let directory = options.directory
    // Only the hash's basis crosses to the disk thread: the window stays the loop's.
    let hasher = dedupe.window.hasher
    let rebuild = DedupeRebuild(capacity: dedupe.window.capacity, hasher: hasher)
    let paths = filePaths
    let livePath = path
    let indexDirectory = self.indexDirectory
    let rooms = options.rooms
    let tailRecords = options.dedupeTailRecords
    let expected = DedupeSnapshot.Expectation(
      point: DedupeSnapshot.StorePoint(lastSeq: lastSeq, liveFileSize: 0),
      capacity: dedupe.window.capacity, configuredRooms: rooms.map(\.json),
      keepsNewest: dedupe.window.keepsNewest)
    disk.submit(
      { () -> DedupeStart in
        var expected = expected
        expected.point.liveFileSize = UInt64(FileSystem.size(livePath) ?? 0)
        if let window = DedupeSnapshot.take(directory: directory, expected: expected) {
          return .snapshot(window)
        }
        return .tail(
          rebuild.read(
            paths: paths, indexDirectory: indexDirectory, configuredRooms: rooms,
            tailRecords: tailRecords))
      },
      completion: { [weak self] start in
        switch start {
        case .snapshot(let window):
          guard let self else { return }
          // The link waits for the window, so nothing is in it yet; if something is (its hash
          // basis is another), the tail is read after all.
          if self.dedupe.window.roomCount == 0 {
            self.dedupe.window = window
            self.dedupeReady()
          } else {
            disk.submit(
              {
                rebuild.read(
                  paths: paths, indexDirectory: indexDirectory, configuredRooms: rooms,
                  tailRecords: tailRecords)
              }, completion: { [weak self] found in self?.restoreDedupe(found) })
          }
        case .tail(let found): self?.restoreDedupe(found)
        }
      })
  }

  /// Writes the window to the store's directory for the next start, once every record is
  /// durable (a clean stop), then calls `completion`; without ids, at once.
  public func saveDedupeSnapshot(completion: @escaping () -> Void) {
    guard dedupe.window.isEnabled, options.idsConfigured, dedupe.waiters == nil,
      durableSeq == lastSeq
    else { return completion() }
    let window = dedupe.window
    let point = DedupeSnapshot.StorePoint(lastSeq: lastSeq, liveFileSize: 0)
    let configured = options.rooms.map(\.json)
    let livePath = path
    let directory = options.directory
    disk.submit(
      {
        var point = point
        // The disk thread wrote every record before this job: the file is as the next start finds it.
        point.liveFileSize = UInt64(FileSystem.size(livePath) ?? 0)
        DedupeSnapshot.write(
          DedupeSnapshot.encode(window, at: point, configuredRooms: configured),
          directory: directory)
      }, completion: { _ in completion() })
  }

  private func restoreDedupe(_ found: [[UInt8]: DedupeRebuild.Room]) {
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

/// Where the window at start came from.
private enum DedupeStart: Sendable {
  case snapshot(DedupeWindow)
  case tail([[UInt8]: DedupeRebuild.Room])
}
