import EventLoop
@preconcurrency import Glibc
import JSON
import LinkCore

/// The inbound receipts' journal (`<Directory>/mqtt-qos2.jsonl`, with `[MQTT] QoS=2`): which
/// QoS 2 deliveries are stored and not yet released by the broker, so that a redelivery of one
/// after a crash or a power cut is answered without a second record.
///
/// The link core decides every entry (`InboundReceipts`, `LinkAction.journal`); this writes
/// them as `OutboxFile` writes the outbox: on the disk thread, everything that arrived while
/// a write and its fsync ran sharing the next one (group commit), compacted when it grows,
/// and reports how many entries are durable (`onDurable`): a PUBCOMP waits for its release's.
/// At start it is rebuilt from its lines and the store's records after its watermark (a QoS 2
/// record carries its packet id), and rewritten with just what it still says.
public final class ReceiptJournal {
  /// The file name.
  public static let fileName = "mqtt-qos2.jsonl"

  /// The deliveries pending at start, for the link core.
  public let restored: InboundReceipts
  /// Lines that did not parse at start (counted and skipped).
  public let corruptLines: Int
  /// Bytes of a torn last line cut off at start.
  public let tornBytes: Int
  /// Store records read at start: those after the journal's watermark that were QoS 2
  /// deliveries.
  public let recordsRead: Int
  /// Called when entries became durable, with how many (since start) are.
  public var onDurable: ((UInt64) -> Void)?
  /// Called when a write fails (it is retried a second later).
  public var onFailure: ((SystemError) -> Void)?
  /// Entries appended since start.
  public private(set) var appended: UInt64 = 0
  /// Entries durable since start.
  public private(set) var durable: UInt64 = 0

  private let loop: EventLoop
  private let disk: BackgroundWorker
  private let file: OutboxFile
  /// What the journal says, entries not yet written included: a compaction's image.
  private var mirror: ReceiptLog
  private var batch: [UInt8] = []
  private var inFlight = false
  private var flushPosted = false
  private var retryTimer: Timer?
  private var idleWaiters: [() -> Void] = []
  /// The journal's size after the last write, and the size that compacts it.
  private var logSize: Int
  private var compactAt = ReceiptJournal.compactionThreshold
  /// The least size at which the journal is compacted.
  static let compactionThreshold = 256 << 10

  /// Opens the journal in `directory` and rebuilds the pending deliveries from it and from the
  /// store (`storeFiles`, newest first, the last seq `storeLastSeq`), then rewrites it with
  /// them, durably, before anything connects.
  public init(
    loop: EventLoop, disk: BackgroundWorker, directory: String, storeFiles: [String],
    storeLastSeq: UInt64
  ) throws(SystemError) {
    self.loop = loop
    self.disk = disk
    let path = directory + "/" + Self.fileName
    // Without a journal no QoS 2 record was ever stored here: it is written before the first
    // connection.
    let existed = FileSystem.exists(path)
    file = try OutboxFile(path: path)
    let data = try file.readAll()
    let log = ReceiptLog(replaying: data)
    corruptLines = log.corruptLines
    tornBytes = data.count - log.wholeLinesLength
    var records: [(id: UInt16, seq: UInt64)] = []
    if existed && log.watermark < storeLastSeq {
      records = try Self.deliveries(in: storeFiles, after: log.watermark).get()
    }
    recordsRead = records.count
    // A record the store no longer has (a store emptied by hand) proves nothing.
    let pending = log.pending(adding: records).filter { $0.value <= storeLastSeq }
    var fresh = ReceiptLog()
    for (id, seq) in pending { fresh.apply(.received(id: id, seq: seq)) }
    fresh.apply(.watermark(storeLastSeq))
    mirror = fresh
    let image = fresh.compactionImage()
    logSize = try file.write([], sync: true, replaceWith: image).get()
    restored = InboundReceipts(pending: pending, durableThrough: storeLastSeq)
    retryTimer = try loop.makeTimer(accuracy: .milliseconds(50)) { [unowned self] in
      self.flush()
    }
  }

  /// Appends `entry`; `onDurable` reports it once fsynced.
  public func append(_ entry: ReceiptJournalEntry) {
    mirror.apply(entry)
    ReceiptLog.append(entry, to: &batch)
    appended += 1
    scheduleFlush()
  }

  /// Calls `completion` once everything appended so far is written (for shutdown).
  public func whenIdle(_ completion: @escaping () -> Void) {
    guard inFlight || !batch.isEmpty else { return completion() }
    idleWaiters.append(completion)
    flush()
  }

  /// Removes a journal left in `directory` by a run with QoS 2, durably: a run at a lower QoS
  /// answers the broker's releases without writing them, so the journal would go stale.
  /// Returns whether there was one.
  public static func remove(in directory: String) throws(SystemError) -> Bool {
    let path = directory + "/" + fileName
    guard FileSystem.exists(path) else { return false }
    guard unlink(path) == 0 else { throw .last("unlink \(path)") }
    try FileSystem.syncDirectory(directory, for: .compact)
    return true
  }

  private func scheduleFlush() {
    guard !flushPosted else { return }
    flushPosted = true
    // Entries made in one loop iteration (a frame's releases) share one write and fsync.
    loop.post { [weak self] in
      self?.flushPosted = false
      self?.flush()
    }
  }

  private func flush() {
    guard !inFlight else { return }
    guard !batch.isEmpty else {
      let waiters = idleWaiters
      idleWaiters = []
      for waiter in waiters { waiter() }
      return
    }
    let chunk = batch
    batch = []
    let end = appended
    // The image holds every entry appended so far, this chunk's too.
    let plan = logSize > compactAt ? mirror : nil
    let file = self.file
    inFlight = true
    disk.submit(
      { () -> (Result<Int, SystemError>, Int?) in
        let image = plan?.compactionImage()
        return (file.write(image == nil ? chunk : [], sync: true, replaceWith: image), image?.count)
      },
      completion: { [weak self] outcome in
        self?.finished(outcome.0, imageSize: outcome.1, chunk: chunk, end: end)
      })
  }

  private func finished(
    _ result: Result<Int, SystemError>, imageSize: Int?, chunk: [UInt8], end: UInt64
  ) {
    inFlight = false
    switch result {
    case .success(let size):
      logSize = size
      if let imageSize { compactAt = max(Self.compactionThreshold, 2 * imageSize) }
      durable = end
      onDurable?(end)
      flush()
    case .failure(let error):
      // Written again a second from now: every entry says the same when written twice.
      batch = chunk + batch
      onFailure?(error)
      retryTimer?.schedule(after: .seconds(1))
    }
  }

  /// The QoS 2 deliveries among the store's records after `seq`, oldest first.
  static func deliveries(in files: [String], after seq: UInt64)
    -> Result<[(id: UInt16, seq: UInt64)], SystemError>
  {
    let lines = HistoryReader.read(
      paths: files, query: HistoryQuery(sinceSeq: seq, limit: Int.max),
      keeping: { $0.firstRange(of: packetIDKey) != nil })
    return lines.map { lines in
      lines.compactMap { line in
        line.withUnsafeBytes { raw -> (id: UInt16, seq: UInt64)? in
          guard let seq = StoreRecord.seq(ofLine: raw), let meta = metaRange(of: raw),
            let id = MQTTProtocol.twoStepDelivery(meta: UnsafeRawBufferPointer(rebasing: raw[meta]))
          else { return nil }
          return (id, seq)
        }
      }
    }
  }

  private static let packetIDKey = Array(#""packet_id":"#.utf8)
  private static let recordKeys = JSONScanner.Keys(["dir", "meta"])

  /// Where an inbound record's `meta` is.
  private static func metaRange(of line: UnsafeRawBufferPointer) -> Range<Int>? {
    guard let scan = JSONScanner.scan(line, topLevel: recordKeys, knownUTF8: true),
      let dir = scan.topLevel[0],
      String(decoding: UnsafeRawBufferPointer(rebasing: line[dir]), as: UTF8.self) == #""in""#
    else { return nil }
    return scan.topLevel[1]
  }
}
