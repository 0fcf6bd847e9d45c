import EventLoop
import LinkCore

/// What the store's disk jobs did since the daemon started: counters that only grow, and the
/// fsync durations. Kept on the loop from each job's outcome, so the disk thread shares
/// nothing.
public struct StoreStatistics: Sendable, Hashable {
  /// Bytes appended to messages.jsonl (and its successors after rotations).
  public private(set) var bytesWritten = 0
  /// Records (lines) appended.
  public private(set) var recordsWritten = 0
  /// Rotations of messages.jsonl.
  public private(set) var rotations = 0
  /// Disk jobs that failed: writes (the records stay queued and are written again) and
  /// fsyncs (the lines stay in the file and are synced again).
  public private(set) var writeErrors = 0
  /// How long each fsync of messages.jsonl took, in seconds.
  public private(set) var syncDurations = Histogram(bounds: Histogram.latencyBounds)

  /// Nothing written yet.
  public init() {}

  /// Counts one disk job's outcome: a chunk of `bytes` holding `records` lines.
  mutating func record(_ outcome: RotatingLog.Outcome, bytes: Int, records: Int) {
    switch outcome {
    case .written(let written, let syncTime):
      bytesWritten += bytes
      recordsWritten += records
      if written.rotated { rotations += 1 }
      if let syncTime { syncDurations.observe(syncTime) }
    case .unsynced(let written, _):
      bytesWritten += bytes
      recordsWritten += records
      if written.rotated { rotations += 1 }
      writeErrors += 1
    case .failed:
      writeErrors += 1
    }
  }

  /// Counts one fsync of the sync worker.
  mutating func recordSync(_ result: Result<Duration, SystemError>) {
    switch result {
    case .success(let time): syncDurations.observe(time)
    case .failure: writeErrors += 1
    }
  }
}
