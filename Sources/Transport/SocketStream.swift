import EventLoop
@preconcurrency import Glibc

/// A non-blocking TCP socket, optionally wrapped in TLS, driven by an `IOWatcher`.
public final class SocketStream: ByteStream {
  public weak var delegate: (any ByteStreamDelegate)?
  public let peerDescription: String

  private let loop: EventLoop
  private var fd: Int32
  private var tls: TLSSession?
  private var watcher: IOWatcher?
  private var pending: [UInt8] = []
  private var pendingOffset = 0
  /// TLS may need the socket writable to make progress on a read, and vice versa.
  private var readWantsWritable = false
  private var writeWantsReadable = false
  private var readBuffer: UnsafeMutableRawBufferPointer
  /// At most this many bytes, and about this much time, are spent per wake-up, so one busy
  /// peer cannot starve timers or other clients. Time counts too: compressed input inflates,
  /// and a megabyte of it can be tens of thousands of messages.
  private let readBudget = 1 << 20
  private let timeBudget: Int64 = 5_000_000  // nanoseconds

  /// The largest single read, also the size of the read buffer.
  public static let readChunk = 64 * 1024

  init(loop: EventLoop, fd: Int32, tls: TLSSession?, peer: String) throws(SystemError) {
    self.loop = loop
    self.fd = fd
    self.tls = tls
    peerDescription = tls.map { "\(peer) \($0.protocolVersion)" } ?? peer
    readBuffer = try Self.mapReadBuffer()
    watcher = try loop.watch(fd: fd, events: .readable) { [unowned self] events in
      self.handle(events)
    }
  }

  deinit {
    close()
    munmap(readBuffer.baseAddress, readBuffer.count)
  }

  /// The read buffer is a mapping of its own, not heap memory. Every client of the control
  /// socket has one for as long as it stays connected (a `follow` for minutes), and such
  /// 64 KiB blocks, left among the heap's short-lived ones, hold the heap at its high-water
  /// mark: glibc gives back only the free memory at the heap's top, and the heap's free
  /// memory below stays resident, so each rare moment with more clients than before would
  /// raise the daemon's resident memory for good. A mapping goes back to the kernel when
  /// the stream ends, and only the pages that reads fill become resident.
  private static func mapReadBuffer() throws(SystemError) -> UnsafeMutableRawBufferPointer {
    let start = mmap(nil, readChunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
    guard let start, start != UnsafeMutableRawPointer(bitPattern: -1) else {
      throw SystemError.last("mmap")
    }
    return UnsafeMutableRawBufferPointer(start: start, count: readChunk)
  }

  public var pendingWriteCount: Int { pending.count - pendingOffset }

  public var isReadingPaused = false {
    didSet { updateInterest() }
  }

  public func write(_ bytes: UnsafeRawBufferPointer) {
    guard fd >= 0, bytes.count > 0 else { return }
    if pendingWriteCount == 0 {
      // Try the kernel first: most writes complete at once and need no copy.
      switch writeSome(bytes) {
      case .success(let written):
        if written == bytes.count { return }
        pending.append(contentsOf: bytes[written...])
      case .failure(let error):
        fail(error)
        return
      }
    } else {
      pending.append(contentsOf: bytes)
    }
    updateInterest()
  }

  public func close() {
    guard fd >= 0 else { return }
    watcher?.cancel()
    watcher = nil
    tls?.shutdown()
    tls = nil
    Glibc.close(fd)
    fd = -1
    pending = []
    pendingOffset = 0
  }

  private func handle(_ events: IOEvents) {
    if events.contains(.writable) || (writeWantsReadable && events.contains(.readable)) {
      writeWantsReadable = false
      flush()
      guard fd >= 0 else { return }
    }
    if events.contains(.readable) || events.contains(.hangup) || events.contains(.error)
      || (readWantsWritable && events.contains(.writable))
    {
      readWantsWritable = false
      if !isReadingPaused || events.contains(.error) { readAvailable() }
    }
  }

  private func readAvailable() {
    var total = 0
    let started = Self.monotonicNanoseconds()
    while fd >= 0 && !isReadingPaused && total < readBudget {
      // The fd stays readable (level-triggered), so the loop comes back after other sources.
      if total > 0 && Self.monotonicNanoseconds() - started > timeBudget { return }
      let result = readSome()
      switch result {
      case .bytes(let n):
        total += n
        delegate?.stream(self, didReceive: UnsafeRawBufferPointer(rebasing: readBuffer[0..<n]))
      case .wouldBlock:
        updateInterest()
        return
      case .endOfFile:
        finish(nil)
        return
      case .failed(let error):
        finish(error)
        return
      }
    }
  }

  private static func monotonicNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
  }

  private enum ReadResult {
    case bytes(Int)
    case wouldBlock
    case endOfFile
    case failed(TransportError)
  }

  private func readSome() -> ReadResult {
    if let tls {
      switch tls.read(into: readBuffer) {
      case .done(let n): return n == 0 ? .wouldBlock : .bytes(n)
      case .wantRead: return .wouldBlock
      case .wantWrite:
        readWantsWritable = true
        return .wouldBlock
      case .closed: return .endOfFile
      case .failed(let error): return .failed(error)
      }
    }
    while true {
      let n = recv(fd, readBuffer.baseAddress, readBuffer.count, 0)
      if n > 0 { return .bytes(n) }
      if n == 0 { return .endOfFile }
      switch errno {
      case EINTR: continue
      case EAGAIN: return .wouldBlock
      default: return .failed(.io(SystemError.last("recv")))
      }
    }
  }

  private func writeSome(_ bytes: UnsafeRawBufferPointer) -> Result<Int, TransportError> {
    if let tls {
      var written = 0
      while written < bytes.count {
        switch tls.write(UnsafeRawBufferPointer(rebasing: bytes[written...])) {
        case .done(let n): written += n
        case .wantWrite: return .success(written)
        case .wantRead:
          writeWantsReadable = true
          return .success(written)
        case .closed: return .failure(.io(SystemError("SSL_write", errno: EPIPE)))
        case .failed(let error): return .failure(error)
        }
      }
      return .success(written)
    }
    var written = 0
    while written < bytes.count {
      // MSG_NOSIGNAL: a peer that went away must give EPIPE, not kill the daemon.
      let n = send(fd, bytes.baseAddress! + written, bytes.count - written, Int32(MSG_NOSIGNAL))
      if n >= 0 {
        written += n
        continue
      }
      switch errno {
      case EINTR: continue
      case EAGAIN: return .success(written)
      default: return .failure(.io(SystemError.last("send")))
      }
    }
    return .success(written)
  }

  private func flush() {
    guard pendingWriteCount > 0 else {
      updateInterest()
      return
    }
    let result = pending.withUnsafeBytes { raw in
      writeSome(UnsafeRawBufferPointer(rebasing: raw[pendingOffset...]))
    }
    switch result {
    case .success(let written):
      pendingOffset += written
      if pendingOffset == pending.count {
        pending.removeAll(keepingCapacity: pending.capacity <= 1 << 20)
        pendingOffset = 0
        updateInterest()
        delegate?.streamDidDrain(self)
        return
      }
      if pendingOffset >= 1 << 20 {
        pending.removeSubrange(0..<pendingOffset)
        pendingOffset = 0
      }
      updateInterest()
    case .failure(let error):
      fail(error)
    }
  }

  private func updateInterest() {
    guard let watcher else { return }
    var wanted: IOEvents = []
    if !isReadingPaused || writeWantsReadable { wanted.insert(.readable) }
    if pendingWriteCount > 0 || readWantsWritable { wanted.insert(.writable) }
    if watcher.events != wanted { watcher.events = wanted }
  }

  private func fail(_ error: TransportError) {
    // Report write errors from the loop, not from inside the caller's write().
    loop.post { [weak self] in self?.finish(error) }
  }

  private func finish(_ error: TransportError?) {
    guard fd >= 0 else { return }
    close()
    delegate?.stream(self, didCloseWith: error)
  }
}
