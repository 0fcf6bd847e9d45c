import EventLoop

/// A checkpoint of the dedupe window being written (`DedupeSnapshot`).
struct DedupeCheckpoint {
  /// The rooms that kept windows when it began, in order; `next` is the one to write next.
  var rooms: [[UInt8]]
  var next = 0
  /// How many rooms' parts are written (a room that gave its window up meanwhile has none).
  var written = 0
  /// Who waits for it to end.
  var completion: () -> Void
  /// The last seq the written rooms know, and what to do once it is durable.
  var durableWait: (seq: UInt64, then: () -> Void)?
}

extension MessageStore {
  /// Writes the dedupe window to its snapshot, unless nothing was stored since the last one,
  /// and calls `completion` once it is in place (or given up: the last one stays). A start
  /// reads the snapshot and only the records stored after it, so the daemon takes one every
  /// so often and at a clean stop. One runs at a time: asked during one, another follows it.
  ///
  /// The loop copies one room's tables at a time, each when the disk thread has written the
  /// last: a whole window's copy at once would double the window's memory for the while.
  public func checkpointDedupe(completion: @escaping () -> Void = {}) {
    guard dedupe.window.isEnabled, options.idsConfigured, dedupe.waiters == nil else {
      return completion()
    }
    guard dedupe.checkpoint == nil else {
      dedupe.queuedCheckpoints.append(completion)
      return
    }
    guard dedupe.checkpointedSeq != lastSeq else { return completion() }
    let header = DedupeSnapshot.header(
      of: dedupe.window, fromSeq: lastSeq, configuredRooms: options.rooms.map(\.json))
    dedupe.checkpoint = DedupeCheckpoint(rooms: dedupe.window.roomNames, completion: completion)
    let directory = options.directory
    disk.submit(
      { () -> DedupeSnapshotFile? in
        guard var file = DedupeSnapshotFile(directory: directory) else { return nil }
        return Self.appending(header, to: &file)
      }, completion: { [weak self] file in self?.checkpointNextRoom(file) })
  }

  /// Whether a checkpoint is being written (or waits for its records to be durable: while the
  /// disk fails, it waits as long).
  public var dedupeCheckpointRunning: Bool { dedupe.checkpoint != nil }

  /// Writes the next room's part, or once every room's is written, the end.
  private func checkpointNextRoom(_ file: DedupeSnapshotFile?) {
    guard let file, var run = dedupe.checkpoint else { return endCheckpoint(seq: nil) }
    while run.next < run.rooms.count {
      let room = run.rooms[run.next]
      run.next += 1
      // A room that gave its window up to a newer one is left out, as it is in the window.
      guard let ids = dedupe.window.ids(of: room) else { continue }
      run.written += 1
      dedupe.checkpoint = run
      let part = DedupeSnapshot.room(room, ids: ids, seq: lastSeq)
      disk.submit(
        {
          var file = file
          return Self.appending(part, to: &file)
        }, completion: { [weak self] file in self?.checkpointNextRoom(file) })
      return
    }
    // The snapshot must not know a record a power cut could take: it is put in place only
    // once everything its rooms know is durable.
    let seq = lastSeq
    let end = DedupeSnapshot.end(rooms: run.written, lastSeq: seq)
    run.durableWait = (
      seq,
      { [unowned self] in
        self.disk.submit(
          {
            var file = file
            return Self.appending(end, to: &file)?.commit() ?? false
          }, completion: { [weak self] done in self?.endCheckpoint(seq: done ? seq : nil) })
      }
    )
    dedupe.checkpoint = run
    checkpointDurable()
  }

  /// Goes on with a checkpoint that waits for its last seq to be durable, once it is.
  func checkpointDurable() {
    guard let wait = dedupe.checkpoint?.durableWait, durableSeq >= wait.seq else { return }
    dedupe.checkpoint?.durableWait = nil
    wait.then()
  }

  private func endCheckpoint(seq: UInt64?) {
    let run = dedupe.checkpoint
    dedupe.checkpoint = nil
    if let seq { dedupe.checkpointedSeq = seq }
    run?.completion()
    let queued = dedupe.queuedCheckpoints
    dedupe.queuedCheckpoints = []
    if !queued.isEmpty { checkpointDedupe { for completion in queued { completion() } } }
  }

  /// `file` with `bytes` appended, or nil (and no file left) when they could not be.
  private static func appending(_ bytes: [UInt8], to file: inout DedupeSnapshotFile)
    -> DedupeSnapshotFile?
  {
    guard file.append(bytes) else {
      file.abandon()
      return nil
    }
    return file
  }
}
