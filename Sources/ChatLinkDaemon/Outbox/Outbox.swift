import EventLoop
@preconcurrency import Glibc
import JSON
import LinkCore
import WebSocket

/// The durable queue of outgoing messages: `<Directory>/outbox.jsonl`.
///
/// A message is acknowledged to the sender only after its line is fsynced, and stays until
/// the backend confirms it, so it survives reconnects and restarts (at least once, in order).
/// The file is an append-only log of `add`, `batch`, `released` and `ack` lines
/// (`OutboxLines`, `OutboxLog`), compacted when it grows. A `released` line (MQTT QoS 2: the
/// broker holds the message) is fsynced before the release goes out (`Outbox+Release.swift`).
public final class Outbox {
  /// The file name.
  public static let fileName = "outbox.jsonl"

  /// Unconfirmed entries, oldest first (in `count` order).
  public var pending: ArraySlice<OutboxEntry> { entries.elements }
  /// The most unconfirmed entries accepted.
  public let maxMessages: Int
  /// Lines that did not parse at start (logged and skipped).
  public private(set) var corruptLines = 0
  /// Called after new entries became durable and pending.
  public var onEnqueued: (() -> Void)?
  /// Entries queued since start (durable and accepted): only grows.
  public private(set) var queued = 0
  /// Called when entries' releases became durable (`release(_:)`), with the entries now.
  public var onReleased: (([OutboxEntry]) -> Void)?

  private let loop: EventLoop
  private let disk: BackgroundWorker
  private let file: OutboxFile
  private var nextCount: UInt64 = 1
  private var random = SecureRandomGenerator()
  private var timeFormatter = TimestampFormatter()
  var batch: [UInt8] = []
  /// Entries whose `released` lines are in `batch`, and those in the job on the disk.
  var releasing: [OutboxEntry] = []
  var releasingOnDisk: [OutboxEntry] = []
  /// Disk jobs with `released` lines that failed; `releaseRetry` retries `releasesToRetry`.
  public internal(set) var failedReleaseWrites = 0
  var releasesToRetry: [OutboxEntry] = []
  var releaseRetry: Timer?
  /// The last disk job's memory, for the next batch (`HandedBytes`).
  private var spare: SpareBuffer?
  /// Entries accepted in this loop iteration, waiting for the next disk job.
  private var batchEntries: [OutboxEntry] = []
  /// One per enqueue call: which of `batchEntries` it added, and whom to tell.
  private var batchWaiters: [Waiter] = []
  private var inFlight = false
  private var flushPosted = false
  /// Entries being written by the disk worker: accepted, not yet durable.
  private var inFlightEntries: [OutboxEntry] = []
  /// The pending entries. Confirmations remove a prefix, which costs what they confirm, not
  /// what is still waiting.
  var entries = FIFOBuffer<OutboxEntry>()
  /// Waiters for entries of the job on the disk, added by repeated client ids (see `enqueue`).
  private var inFlightWaiters: [Waiter] = []

  /// Opens the outbox and replays it: every `add` without an `ack` is pending again.
  public init(loop: EventLoop, disk: BackgroundWorker, directory: String, maxMessages: Int)
    throws(SystemError)
  {
    self.loop = loop
    self.disk = disk
    self.maxMessages = maxMessages
    try FileSystem.makeDirectories(directory)
    file = try OutboxFile(path: directory + "/" + Self.fileName)
    logSize = 0
    try replay()
    logSize = file.size
    spare = try SpareBuffer(loop: loop) { [unowned self] in
      if self.batch.isEmpty { self.batch = [] }
    }
    releaseRetry = try loop.makeTimer(accuracy: .milliseconds(50)) { [unowned self] in
      self.retryReleasesNow()
    }
  }

  /// Whether a message with this client id is waiting.
  public func contains(id: String) -> Bool {
    pending.contains { $0.clientID.matches(id) }
      || batchEntries.contains { $0.clientID.matches(id) }
      || inFlightEntries.contains { $0.clientID.matches(id) }
  }

  /// Accepts a message; `completion` runs once it is durable (or refused).
  ///
  /// Sending the same client id again while it is pending is idempotent: the completion gets
  /// the existing entry, once that is durable (it may still be on its way to the disk).
  public func enqueue(
    room: RoomID?, text: String, id: String? = nil,
    completion: @escaping (Result<OutboxEntry, OutboxError>) -> Void
  ) {
    if let id {
      guard OutboxEntry.isValidID(id) else { return completion(.failure(.invalidID(id))) }
      if let existing = pending.first(where: { $0.clientID.matches(id) }) {
        return completion(.success(existing))
      }
      if waitForExisting(id: id, completion: completion) { return }
    }
    guard waitingCount < maxMessages else {
      return completion(.failure(.full(limit: maxMessages)))
    }
    add(room: room, texts: PackedStrings([text]), id: id) { result in
      completion(result.map { $0[$0.startIndex] })
    }
  }

  /// Accepts several messages for one room at once, in order, all or none: `completion` gets
  /// their entries (with consecutive counts) once all are durable, or one error for all.
  ///
  /// One call, one fsync share and one completion for the lot: this is what makes a stream
  /// of sends (`chatlinkctl send -`) cheap per message.
  ///
  /// With `waitForRoom`, a batch that does not fit waits for room behind those already waiting
  /// (a stream's batches are accepted in order) instead; one that could never fit, or would
  /// take the waiting past `waitingTextLimit`, is refused.
  public func enqueue(
    room: RoomID?, texts: PackedStrings, waitForRoom: Bool = false,
    completion: @escaping (Result<ArraySlice<OutboxEntry>, OutboxError>) -> Void
  ) {
    guard !texts.isEmpty else { return completion(.success([])) }
    if roomWaiters.isEmpty && waitingCount + texts.count <= maxMessages {
      return add(room: room, texts: texts, id: nil, completion: completion)
    }
    guard waitForRoom, texts.count <= maxMessages,
      waitingTextBytes + texts.utf8Count <= Self.waitingTextLimit
    else {
      return completion(.failure(.full(limit: maxMessages)))
    }
    roomWaiters.append(RoomWaiter(room: room, texts: texts, completion: completion))
    waitingTextBytes += texts.utf8Count
  }

  /// A batch waiting for room (`enqueue(room:texts:waitForRoom:completion:)`).
  private struct RoomWaiter {
    var room: RoomID?
    var texts: PackedStrings
    var completion: (Result<ArraySlice<OutboxEntry>, OutboxError>) -> Void
  }
  /// Batches waiting for room, oldest first, and their texts' bytes.
  private var roomWaiters = FIFOBuffer<RoomWaiter>()
  private var waitingTextBytes = 0
  /// The most bytes of texts that wait for room at once: a few streams' worth of calls.
  public static let waitingTextLimit = 4 << 20

  /// Accepts the batches waiting for room, oldest first, while they fit.
  private func admitWaiting() {
    while let first = roomWaiters.elements.first,
      waitingCount + first.texts.count <= maxMessages
    {
      roomWaiters.remove(at: roomWaiters.elements.startIndex)
      waitingTextBytes -= first.texts.utf8Count
      add(room: first.room, texts: first.texts, id: nil, completion: first.completion)
    }
  }

  /// Attaches `completion` to the entry with this id that is accepted but not yet durable, if
  /// there is one: the same message is not added twice.
  private func waitForExisting(
    id: String, completion: @escaping (Result<OutboxEntry, OutboxError>) -> Void
  ) -> Bool {
    let one: (Result<ArraySlice<OutboxEntry>, OutboxError>) -> Void = { result in
      completion(result.map { $0[$0.startIndex] })
    }
    if let index = batchEntries.firstIndex(where: { $0.clientID.matches(id) }) {
      batchWaiters.append(Waiter(entries: index..<(index + 1), completion: one))
      return true
    }
    if let index = inFlightEntries.firstIndex(where: { $0.clientID.matches(id) }) {
      inFlightWaiters.append(Waiter(entries: index..<(index + 1), completion: one))
      return true
    }
    return false
  }

  /// Accepted entries not yet confirmed, durable or not: what MaxMessages bounds.
  private var waitingCount: Int { pending.count + batchEntries.count + inFlightEntries.count }

  private func add(
    room: RoomID?, texts: PackedStrings, id: String?,
    completion: @escaping (Result<ArraySlice<OutboxEntry>, OutboxError>) -> Void
  ) {
    let created = Timestamp.now()
    // What every line of this call shares (room, time) is formatted once; the lines are
    // written into a local (swapped out and back, so the buffer stays unique), not into a
    // property checked for exclusive access at every append.
    let shared = OutboxLines.pieces(room: room, created: created, formatter: &timeFormatter)
    var ids: [ClientID]
    if let id {
      ids = [.given(id)]
    } else {
      ids = []
      ids.reserveCapacity(texts.count)
      // Drawn from a local: the property would be checked for exclusive access per id.
      var generator = SecureRandomGenerator()
      swap(&generator, &random)
      for _ in 0..<texts.count { ids.append(.generated(generator.next())) }
      swap(&generator, &random)
    }
    let accepted = OutboxEntry.batch(
      room: room, texts: texts, ids: ids, firstCount: nextCount, created: created)
    var lines: [UInt8] = []
    swap(&lines, &batch)
    OutboxLines.appendAccepted(accepted, shared, to: &lines)
    swap(&lines, &batch)
    let start = batchEntries.count
    batchEntries.append(contentsOf: accepted)
    nextCount += UInt64(accepted.count)
    batchWaiters.append(Waiter(entries: start..<batchEntries.count, completion: completion))
    // An idle disk takes the batch at once; what arrives while it writes and fsyncs shares
    // the next job (group commit).
    if inFlight { scheduleFlush() } else { flush() }
  }

  /// Whom to tell when a range of a disk job's entries is durable.
  private struct Waiter {
    var entries: Range<Int>
    var completion: (Result<ArraySlice<OutboxEntry>, OutboxError>) -> Void
  }

  /// Removes the oldest entries up to and including `count` and returns how many: what a
  /// pong confirms (it answers a ping sent after all of them).
  @discardableResult
  public func confirm(through count: UInt64) -> Int {
    let confirmed = entries.dropFirst(while: { $0.count <= count })
    guard confirmed > 0 else { return 0 }
    // One line for the lot: replayed, it removes every entry up to that count, and entries
    // not yet durable (so not yet sent) all have higher counts.
    batch.append(#"{"op":"ack","through":"# as StaticString)
    batch.appendDecimal(count)
    batch.append("}\n" as StaticString)
    scheduleFlush()
    admitWaiting()
    return confirmed
  }

  /// Removes the entry with this client id, if it is pending.
  @discardableResult
  public func confirm(id: String) -> OutboxEntry? {
    remove { $0.clientID.matches(id) }
  }

  /// Removes `entry` (an echo or an acknowledgement confirmed it, or it failed), if it is
  /// still pending.
  ///
  /// Confirmations arrive in the order the messages went out, so the entry is almost always
  /// the oldest one and the search stops at once.
  @discardableResult
  public func confirm(_ entry: OutboxEntry) -> OutboxEntry? {
    let count = entry.count
    return remove { $0.count == count }
  }

  private func remove(where matches: (OutboxEntry) -> Bool) -> OutboxEntry? {
    guard let index = entries.elements.firstIndex(where: matches) else { return nil }
    let entry = entries.remove(at: index)
    appendAckLine(entry.clientID)
    scheduleFlush()
    admitWaiting()
    return entry
  }

  private func appendAckLine(_ id: ClientID) {
    // Into the same buffer as the adds: an ack only ever names an entry added by an earlier
    // (durable) job, so the order of the two kinds within a job does not matter.
    batch.append(#"{"op":"ack","id":"# as StaticString)
    id.appendJSON(to: &batch)
    batch.append("}\n" as StaticString)
  }

  /// Calls `completion` when everything accepted so far has been written (for shutdown).
  public func whenIdle(_ completion: @escaping () -> Void) {
    if !inFlight && batch.isEmpty {
      completion()
      return
    }
    idleWaiters.append(completion)
    flush()
  }

  private var idleWaiters: [() -> Void] = []

  func scheduleFlush() {
    guard !flushPosted else { return }
    flushPosted = true
    // Whatever is added before the posted flush runs (acks, or sends while a job is on the
    // disk) shares one job and one fsync (group commit).
    loop.post { [weak self] in
      self?.flushPosted = false
      self?.flush()
    }
  }

  private func flush() {
    guard !inFlight else { return }
    if batch.isEmpty {
      let waiters = idleWaiters
      idleWaiters = []
      for waiter in waiters { waiter() }
      return
    }
    let chunk = HandedBytes(batch)
    let waiters = batchWaiters
    // A release goes out only once its line is durable, as a send is accepted only then.
    let sync = !batchEntries.isEmpty || !releasing.isEmpty
    releasingOnDisk = releasing
    releasing = []
    batch = spare?.take(reserving: 0) ?? []
    inFlight = true
    inFlightEntries = batchEntries
    batchEntries = []
    batchWaiters = []
    let compaction = compactionPlan()
    let file = self.file
    disk.submit(
      { () -> DiskOutcome in
        // The compacted image is made here, on the disk thread: it holds every pending
        // entry, and the loop goes on with the next batch meanwhile.
        let image = compaction.map {
          OutboxLines.compactionImage(nextCount: $0.nextCount, pending: $0.pending)
        }
        return DiskOutcome(
          result: file.write(chunk.bytes, sync: sync, replaceWith: image), imageSize: image?.count)
      },
      completion: { [weak self] outcome in
        self?.spare?.keep(chunk)
        self?.finished(outcome, waiters: waiters)
      })
  }

  /// What a disk job reports: the log's new size (or why nothing was written), and the size of
  /// the compacted image the log was rewritten with, if it was.
  private struct DiskOutcome: Sendable {
    var result: Result<Int, SystemError>
    var imageSize: Int?
  }

  /// What a compaction rewrites the log with: the counter and the pending entries.
  private struct CompactionPlan: Sendable {
    var nextCount: UInt64
    var pending: ArraySlice<OutboxEntry>
  }

  /// When the log has grown past `compactAt`, the pending entries (plus what this job adds)
  /// are all it needs to hold: rewrite it with just those.
  private func compactionPlan() -> CompactionPlan? {
    guard logSize > compactAt else { return nil }
    return CompactionPlan(nextCount: nextCount, pending: pending)
  }

  /// The least size at which the log is compacted.
  static let compactionThreshold = 1 << 20
  private var compactAt = Outbox.compactionThreshold
  /// The log's size after the last write, as the disk worker reported it.
  private var logSize: Int

  private func finished(_ outcome: DiskOutcome, waiters jobWaiters: [Waiter]) {
    inFlight = false
    let written = inFlightEntries
    inFlightEntries = []
    let released = releasingOnDisk
    releasingOnDisk = []
    let waiters = jobWaiters + inFlightWaiters
    inFlightWaiters = []
    switch outcome.result {
    case .success(let size):
      logSize = size
      if let imageSize = outcome.imageSize {
        // Many pending entries make a big image: compacting again only once as much again
        // has been appended keeps the cost per message constant (a fixed threshold would
        // rewrite the whole image on every write while more than 1 MiB is pending).
        compactAt = max(Self.compactionThreshold, 2 * imageSize)
      }
      entries.append(contentsOf: written)
      queued += written.count
      for waiter in waiters { waiter.completion(.success(written[waiter.entries])) }
      if !written.isEmpty { onEnqueued?() }
      if !released.isEmpty { markReleased(released) }
    case .failure(let error):
      // The write was rolled back: none of these messages is in the outbox (so there is room
      // for batches waiting for it, which learn how the disk is doing).
      for waiter in waiters { waiter.completion(.failure(.storageFailed(error))) }
      admitWaiting()
      if !released.isEmpty { retryReleases(released) }
    }
    flush()
  }

  private func replay() throws(SystemError) {
    let data = try file.readAll()
    let log = OutboxLog(replaying: data)
    corruptLines = log.corruptLines
    if log.wholeLinesLength < data.count { try file.truncate(to: log.wholeLinesLength) }
    entries.append(contentsOf: log.pending)
    nextCount = log.nextCount
  }
}
