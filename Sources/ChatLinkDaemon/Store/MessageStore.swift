import EventLoop
@preconcurrency import Glibc
import JSON
import LinkCore
import WebSocket

/// The durable JSON-lines message store: `<Directory>/messages.jsonl`.
///
/// Records are formatted on the loop into a buffer; a disk thread writes them and, under
/// `Sync=batch`, a second thread fsyncs what was written (group commit) while the next chunks
/// are written (each one's writeback started as it is written, so the fsync finds little left),
/// so neither a slow fsync nor a full disk delays the loop. A record is durable once `durableSeq`
/// reaches its seq. On a write error (e.g. disk full) nothing partial stays
/// in the file; the records wait in memory and are retried until the disk takes them. A failed
/// fsync is retried as an fsync: the lines are in the file once.
public final class MessageStore {
  /// The file name of the live store file.
  public static let fileName = "messages.jsonl"

  /// The options in force.
  public let options: Options
  /// What recovery found.
  public let recovery: Recovery
  // Unchecked exclusivity (here and on the buffer, its line table, the formatter, `failure`
  // and `dedupe`): each is touched for every record, only on the loop's thread, and no access to
  // one overlaps another access to it (append's inout uses end before it returns).
  /// The last seq assigned.
  @exclusivity(unchecked) public private(set) var lastSeq: UInt64
  /// The highest seq written to the file (maybe not yet synced).
  public private(set) var writtenSeq: UInt64
  /// The highest seq that is durable.
  public private(set) var durableSeq: UInt64
  /// The last write error, while writes are failing.
  @exclusivity(unchecked) public private(set) var failure: SystemError?
  /// What the disk jobs did so far, for metrics.
  public private(set) var statistics = StoreStatistics()
  /// The rooms' recent inbound ids (`MessageStore+Dedupe.swift`).
  @exclusivity(unchecked) var dedupe: StoreDedupe
  /// Called when `durableSeq` advances.
  public var onDurable: ((UInt64) -> Void)?
  /// Called after every write attempt, so a producer paused on `isBehind` can resume.
  public var onWritten: (() -> Void)?
  /// Called when writes start failing (with the error) or recover (with nil).
  public var onHealthChange: ((SystemError?) -> Void)?

  private let loop: EventLoop
  let disk: BackgroundWorker
  /// Runs the fsyncs: one at a time, while the disk worker goes on writing.
  private let syncer: BackgroundWorker
  private let log: RotatingLog
  @exclusivity(unchecked) private var buffer: [UInt8] = []
  /// The last written chunk's memory, for the next one (`HandedBytes`).
  private var spare: SpareBuffer?
  /// Per line of `buffer`, what the room index needs.
  @exclusivity(unchecked) private var bufferLines: [StoreLineInfo] = []
  @exclusivity(unchecked) private var bufferLastSeq: UInt64
  private var inFlightBytes = 0
  private var inFlight = false
  private var flushPosted = false
  /// The file the last write went to: the next fsync's. Every line written before it was
  /// either appended to it or to a file that its rotation synced.
  private var syncFile: AppendFile?
  private var syncInFlight = false
  /// The last write's error and the last fsync's, while they fail; `failure` is either.
  private var writeError: SystemError?
  private var syncError: SystemError?
  /// When the last successful fsync started: the interval runs from one sync's start to the
  /// next's, so a line waits at most the interval plus one fsync (not plus two).
  private var lastSync = MonotonicInstant.origin
  private var syncTimer: Timer?
  private var retryTimer: Timer?
  private var drainWaiters: [() -> Void] = []
  @exclusivity(unchecked) private var timeFormatter = TimestampFormatter()

  /// Opens the store, recovering from a crash: a torn last line is cut off and seq continues
  /// after the last complete record (looking into rotated files if the live one is empty).
  ///
  /// - Parameter syncer: the worker for fsyncs (default: a thread of the store's own).
  public init(
    loop: EventLoop, disk: BackgroundWorker, syncer: BackgroundWorker? = nil, options: Options
  ) throws(SystemError) {
    self.loop = loop
    self.disk = disk
    if let syncer {
      self.syncer = syncer
    } else {
      self.syncer = try BackgroundWorker(loop: loop, name: "chatlink-sync")
    }
    self.options = options
    try FileSystem.makeDirectories(options.directory)
    log = try RotatingLog(
      directory: options.directory, name: Self.fileName, maxFileSize: options.maxFileSize,
      maxFiles: options.maxFiles)
    recovery = try Self.recover(log, maxFiles: options.maxFiles)
    dedupe = StoreDedupe(capacity: options.dedupeWindow, keepsNewest: options.keepsNewestIDs)
    lastSeq = recovery.lastSeq
    writtenSeq = lastSeq
    durableSeq = lastSeq
    bufferLastSeq = lastSeq
    // The disk thread indexes what the live file's room index does not cover yet, before
    // the first write reaches it; READY does not wait for that.
    let log = self.log
    disk.submit({ log.index.prepare(file: log.current, chunk: []) }, completion: { _ in })
    rebuildDedupe()
    syncTimer = try loop.makeTimer(accuracy: .milliseconds(1)) { [unowned self] in self.flush() }
    spare = try SpareBuffer(loop: loop) { [unowned self] in
      if self.buffer.isEmpty { self.buffer = [] }
    }
    retryTimer = try loop.makeTimer(accuracy: .milliseconds(50)) { [unowned self] in
      self.retryPending = false
      self.syncRetryPending = false
      self.flush()
    }
  }

  /// The live file's path.
  public var path: String { log.path }

  /// Every store file, newest first (messages.jsonl, .1, … up to MaxFiles), as the log names them.
  public var filePaths: [String] { (0..<log.maxFiles).map(log.path(generation:)) }

  /// Where the room indexes of the store files are.
  public var indexDirectory: String { options.directory + "/" + RoomIndex.directoryName }

  /// Bytes formatted but not yet written: grows when the disk is slow or full.
  public var backlogBytes: Int { buffer.count + inFlightBytes }

  /// The size of a write: records go to the disk thread once per loop iteration, or once this
  /// many bytes of them are formatted, one write at a time.
  public static let chunkSize = 512 << 10
  /// How far a chunk may overshoot `chunkSize` without reallocating: a producer told to pause
  /// (`isBehind`) stops after the socket read it is in, 64 KiB of frames.
  static let chunkHeadroom = 128 << 10
  /// While writes fail, records wait in memory up to this much (the connection stays up and
  /// keeps what it can); a producer resumes once the backlog is under a quarter of it.
  static let failingBacklogLimit = 64 << 20

  /// Whether a producer should pause: the next chunk is full while the disk still writes the
  /// last one, so more records would only grow memory (and copy the chunk as it grows).
  public var isBehind: Bool {
    failure == nil ? buffer.count >= Self.chunkSize : backlogBytes > Self.failingBacklogLimit
  }

  /// Whether a producer paused by `isBehind` may go on: the full chunk went to the disk.
  public var hasCaughtUp: Bool {
    failure == nil
      ? buffer.count < Self.chunkSize : backlogBytes < Self.failingBacklogLimit / 4
  }

  /// Appends a record, its payload given as its bytes (read where they lie) and its kind;
  /// returns its seq, durable asynchronously (`onDurable`). `roomHash`: the room's, if known.
  @discardableResult
  public func append(
    direction: StoreRecord.Direction, room: [UInt8]?, clientID: ClientID? = nil,
    messageID: UnsafeRawBufferPointer? = nil, messageIDIsPlain: Bool = false,
    meta: [UInt8]? = nil, payload: UnsafeRawBufferPointer, isText: Bool,
    scan: PayloadScan = .unscanned, time: Timestamp = .now(), roomHash: UInt32? = nil
  ) -> UInt64 {
    lastSeq += 1
    let before = buffer.count
    StoreRecord.appendLine(
      seq: lastSeq, time: time, direction: direction, room: room, clientID: clientID,
      messageID: messageID, messageIDIsPlain: messageIDIsPlain, meta: meta, payload: payload,
      isText: isText, scan: scan, to: &buffer, formatter: &timeFormatter)
    let roomHash = roomHash ?? room.map { RoomIndex.roomHash($0) } ?? RoomIndex.nullRoomHash
    bufferLines.append(StoreLineInfo(length: buffer.count - before, room: roomHash))
    bufferLastSeq = lastSeq
    if buffer.count >= Self.chunkSize {
      flush()
    } else if !flushPosted {
      // Everything appended in this loop iteration goes out in one write.
      flushPosted = true
      loop.post { [weak self] in
        self?.flushPosted = false
        self?.flush()
      }
    }
    return lastSeq
  }

  /// Calls `completion` once everything appended so far is durable (or at once when it is).
  public func whenDurable(_ completion: @escaping () -> Void) {
    let target = lastSeq
    if durableSeq >= target {
      completion()
      return
    }
    drainWaiters.append { [unowned self] in
      if self.durableSeq >= target { completion() }
    }
    flush()
  }
  /// Whether someone waits for records to be durable (the backend, for acknowledgements of
  /// records not yet durable): under Sync=batch they are then synced as soon as the disk is
  /// free, not at the next interval. A broker sends only a window of unacknowledged messages
  /// (RabbitMQ's prefetch, MQTT's receive maximum), so waiting for the timer would cap inbound
  /// at one window per SyncIntervalMSec. The interval stays the longest wait; group commit
  /// still happens, since records arriving during one fsync share the next.
  public var syncPromptly = false
  /// How soon a failed write or fsync is tried again.
  static let retryInterval = Duration.seconds(1)
  /// After a failed write, the next attempt waits for the retry timer (once a second), not
  /// for the next record: a full disk must not cost a failing write per inbound message.
  private var retryPending = false
  /// After a failed fsync, likewise for the next one.
  private var syncRetryPending = false

  /// Hands the buffer to the disk worker when it is free, and starts an fsync when one is due.
  ///
  /// An fsync starts only between writes, so it covers every chunk handed over so far: when
  /// one falls due with records in the buffer, they are written first and the fsync follows
  /// that write at once (`syncAfterWrite`), while the next chunk is written. Every write's
  /// completion comes back here, so nothing that falls due while a write runs is missed.
  private func flush() {
    guard !inFlight else { return }
    let now = loop.instant
    let writing = !retryPending && !buffer.isEmpty
    if syncAfterWrite || !writing {
      syncAfterWrite = false
      syncIfDue(now: now)
    } else if !syncInFlight && syncIsDue(now: now) {
      syncAfterWrite = true
    }
    if writing { write(now: now) }
  }

  /// Whether the write under way ends in an fsync of everything written up to it.
  private var syncAfterWrite = false

  /// Whether an fsync should start: under Sync=batch at the interval (from the start of the
  /// last one), at once when someone waits (`whenDurable`, acknowledgements), and at once when
  /// the input pauses (everything received is written) with at least a chunk unsynced: the end
  /// of a burst need not wait out the interval, while a trickle of records still shares one
  /// fsync per interval. Under Sync=always only to retry a failed one (each write job syncs
  /// itself).
  private func syncIsDue(now: MonotonicInstant) -> Bool {
    guard options.sync != .none, !syncRetryPending else { return false }
    guard options.sync == .batch else { return writtenSeq > durableSeq }
    return !drainWaiters.isEmpty || syncPromptly
      || now >= lastSync + options.syncInterval
      || (buffer.isEmpty && writtenBytes - bytesAtSyncStart >= Self.chunkSize)
      || rotationWaits
  }

  /// The live file's size after the last write, and how much of it the last fsync covered.
  private var liveSize = 0
  private var syncedSize = 0
  /// Whether the live file is full but its rotation waits for an fsync to catch up: under
  /// Sync=batch the rotation's own fsync (on the disk thread, which writes wait for) would
  /// otherwise sync up to an interval's worth of lines.
  private var rotationWaits: Bool {
    options.sync == .batch && liveSize >= options.maxFileSize
      && liveSize - syncedSize > Self.chunkSize
  }

  /// Bytes written since start, and how many of them the last fsync started covers.
  private var writtenBytes = 0
  private var bytesAtSyncStart = 0

  private func write(now: MonotonicInstant) {
    // Sync=always syncs in the write job itself: a chunk is durable before the next is written.
    let sync = options.sync == .always
    let chunk = HandedBytes(buffer)
    let chunkBytes = buffer.count
    let lines = bufferLines
    // After a full chunk, the next one is likely full too: room for it and its overshoot.
    let reserve = chunkBytes < Self.chunkSize ? chunkBytes : Self.chunkSize + Self.chunkHeadroom
    buffer = spare?.take(reserving: reserve) ?? []
    bufferLines = []
    bufferLines.reserveCapacity(lines.count)
    let target = bufferLastSeq
    let firstSeq = target &- UInt64(lines.count) &+ 1
    inFlight = true
    inFlightBytes = chunkBytes
    let log = self.log
    let mayRotate = !rotationWaits
    let startWriteback = options.sync == .batch
    disk.submit(
      {
        log.write(
          chunk.bytes, lines: lines, firstSeq: firstSeq, sync: sync, mayRotate: mayRotate,
          startWriteback: startWriteback)
      },
      completion: { [weak self] outcome in
        self?.finished(outcome, chunk: chunk, lines: lines, target: target, startedAt: now)
      })
  }

  /// Starts an fsync of what is written and not yet durable, if none runs and one is due;
  /// otherwise arms the timer for the interval's end.
  private func syncIfDue(now: MonotonicInstant) {
    guard !syncInFlight, writtenSeq > durableSeq, let file = syncFile else { return }
    guard syncIsDue(now: now) else {
      if options.sync == .batch && !syncRetryPending {
        syncTimer?.schedule(at: lastSync + options.syncInterval)
      }
      return
    }
    syncInFlight = true
    let target = writtenSeq
    let size = liveSize
    bytesAtSyncStart = writtenBytes
    syncer.submit(
      { RotatingLog.sync(file) },
      completion: { [weak self] result in
        if case .success = result, file === self?.syncFile { self?.syncedSize = size }
        self?.synced(result, target: target, startedAt: now)
      })
  }

  private func finished(
    _ outcome: RotatingLog.Outcome, chunk: HandedBytes, lines: [StoreLineInfo], target: UInt64,
    startedAt: MonotonicInstant
  ) {
    inFlight = false
    inFlightBytes = 0
    defer { onWritten?() }
    statistics.record(outcome, bytes: chunk.bytes.count, records: lines.count)
    switch outcome {
    case .written(let written, let syncTime):
      wrote(chunk, into: written, through: target)
      if syncTime != nil || options.sync == .none { madeDurable(through: target) }
      if syncTime != nil { lastSync = startedAt }
    case .unsynced(let written, let error):
      // The lines are in the file: they are synced again, never appended again.
      wrote(chunk, into: written, through: target)
      syncFailed(error)
    case .failed(let error):
      // Keep the records, in order, and try again shortly; the file holds no partial line.
      buffer = chunk.take() + buffer
      bufferLines = lines + bufferLines
      writeError = error
      updateHealth()
      retryPending = true
      retryTimer?.schedule(after: Self.retryInterval)
      return
    }
    flush()
  }

  private func wrote(
    _ chunk: HandedBytes, into written: RotatingLog.Written, through target: UInt64
  ) {
    writtenBytes += chunk.bytes.count
    spare?.keep(chunk)
    writtenSeq = target
    if written.file !== syncFile { syncedSize = 0 }
    syncFile = written.file
    liveSize = written.size
    writeError = nil
    updateHealth()
  }

  private func synced(
    _ result: Result<Duration, SystemError>, target: UInt64, startedAt: MonotonicInstant
  ) {
    syncInFlight = false
    statistics.recordSync(result)
    switch result {
    case .success:
      lastSync = startedAt
      syncError = nil
      updateHealth()
      madeDurable(through: target)
    case .failure(let error):
      syncFailed(error)
    }
    flush()
  }

  private func syncFailed(_ error: SystemError) {
    syncError = error
    updateHealth()
    syncRetryPending = true
    retryTimer?.schedule(after: Self.retryInterval)
  }

  private func madeDurable(through target: UInt64) {
    guard target > durableSeq else { return }
    durableSeq = target
    onDurable?(durableSeq)
    checkpointDurable()
    guard !drainWaiters.isEmpty, durableSeq >= lastSeq else { return }
    let waiters = drainWaiters
    drainWaiters = []
    for waiter in waiters { waiter() }
  }

  /// `failure` is the write error, else the fsync error; `onHealthChange` hears when it
  /// starts (the error) and when it ends (nil).
  private func updateHealth() {
    let now = writeError ?? syncError
    guard (now == nil) != (failure == nil) else {
      failure = now
      return
    }
    failure = now
    onHealthChange?(now)
  }
}
