import EventLoop
import LinkCore

/// Releases: the second step of a send the backend holds until we release it (MQTT QoS 2).
///
/// Once the broker's PUBREC says it holds a message, PUBLISHing it again would deliver it
/// twice (our PUBREL makes the broker forget the id). So the entry is marked released by a
/// `released` line, fsynced before the release goes out; from then on, across reconnects and
/// restarts, only the release is sent for it, until the backend confirms it and an `ack` line
/// removes it.
extension Outbox {
  /// Marks `entry` released, durably; `onReleased` follows once its line is fsynced (at once
  /// when it already was).
  public func release(_ entry: OutboxEntry) {
    let count = entry.count
    // Gone: confirmed or failed meanwhile.
    guard let index = entries.elements.firstIndex(where: { $0.count == count }) else { return }
    if entries.elements[index].released {
      onReleased?([entries.elements[index]])
      return
    }
    // Already on its way to the disk: its `onReleased` will come.
    if releasing.contains(where: { $0.count == count })
      || releasingOnDisk.contains(where: { $0.count == count })
      || releasesToRetry.contains(where: { $0.count == count })
    {
      return
    }
    appendReleasedLine(entry.clientID)
    releasing.append(entry)
    scheduleFlush()
  }

  /// The job that held these entries' `released` lines is durable.
  func markReleased(_ released: [OutboxEntry]) {
    var now: [OutboxEntry] = []
    for entry in released {
      let count = entry.count
      guard let index = entries.elements.firstIndex(where: { $0.count == count }) else {
        continue
      }
      entries.update(at: index) { $0.released = true }
      now.append(entries.elements[index])
    }
    if !now.isEmpty { onReleased?(now) }
  }

  /// The job that held these entries' `released` lines failed: they wait a second, then go
  /// into a job again (a failing disk is not retried in a loop; the job that follows this
  /// one at once must not carry them).
  func retryReleases(_ released: [OutboxEntry]) {
    failedReleaseWrites += 1
    for entry in released where !releasesToRetry.contains(where: { $0.count == entry.count }) {
      releasesToRetry.append(entry)
    }
    releaseRetry?.schedule(after: .seconds(1))
  }

  /// The retry's second is over: the failed releases' lines go into the next job.
  func retryReleasesNow() {
    let entries = releasesToRetry
    releasesToRetry = []
    for entry in entries where !releasing.contains(where: { $0.count == entry.count }) {
      appendReleasedLine(entry.clientID)
      releasing.append(entry)
    }
    scheduleFlush()
  }

  private func appendReleasedLine(_ id: ClientID) {
    batch.append(#"{"op":"released","id":"# as StaticString)
    id.appendJSON(to: &batch)
    batch.append("}\n" as StaticString)
  }
}
