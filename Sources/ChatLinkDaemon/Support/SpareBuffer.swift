import EventLoop

/// The memory of a writer's last disk write, kept for its next one for as long as writes keep
/// coming, and given back a second after the last.
final class SpareBuffer {
  private var spare: [UInt8] = []
  private var releaseTimer: Timer?
  /// Buffers beyond this are never kept: the store writes chunks of 512 KiB and pauses its
  /// producer when the next one is full (`MessageStore.chunkSize`), so a bigger buffer holds
  /// one outsized record or a backlog of a failing disk. Either is rare, and a kept spare is
  /// resident in full from the start where a fresh buffer becomes resident only as it fills.
  static let limit = 1 << 20
  /// How long a spare outlives the last write.
  static let keepFor = Duration.seconds(1)

  /// `onRelease` runs when the spare is given back: the owner drops its own buffer's memory
  /// too, if that is empty (it may have been the spare of the write before).
  init(loop: EventLoop, onRelease: @escaping () -> Void) throws(SystemError) {
    releaseTimer = try loop.makeTimer(accuracy: .milliseconds(100)) { [unowned self] in
      self.spare = []
      onRelease()
    }
  }

  /// A buffer for the next records: the spare if there is one, else a fresh one with
  /// `capacity` reserved.
  func take(reserving capacity: Int) -> [UInt8] {
    var buffer = spare
    spare = []
    if buffer.capacity < capacity { buffer.reserveCapacity(capacity) }
    return buffer
  }

  /// Keeps the bytes of a finished write (emptied) for the next one.
  func keep(_ box: HandedBytes) {
    var bytes = box.take()
    guard bytes.capacity <= Self.limit, bytes.capacity > spare.capacity else { return }
    bytes.removeAll(keepingCapacity: true)
    spare = bytes
    releaseTimer?.schedule(after: Self.keepFor)
  }

  deinit {
    releaseTimer?.cancel()
  }
}
