import EventLoop
@preconcurrency import Glibc

/// What the room index needs of one appended store line.
struct StoreLineInfo: Sendable, Hashable {
  /// Bytes of the line, newline included.
  var length: Int
  /// `RoomIndex.roomHash` of its room.
  var room: UInt32
}

/// Keeps the live store file's room index (`RoomIndex`) up to date as lines are appended; used
/// on the disk thread only.
///
/// The index is a cache, so nothing here can fail a store write: an index that cannot be
/// written is dropped for that store file and History scans it instead.
final class RoomIndexWriter: @unchecked Sendable {
  // @unchecked: touched only by the disk worker, like the RotatingLog that owns it.
  private enum State {
    /// No store file is being indexed yet (start, or just after a rotation).
    case closed
    /// Appending to the index of the live file.
    case open(fd: Int32, size: Int)
    /// The live file is not indexed (an index write failed, or it is not in our format).
    case disabled
  }

  /// `<store directory>/.index`.
  let directory: String
  // Unchecked exclusivity: touched for every appended line, only on the disk thread, never
  // through overlapping accesses.
  @exclusivity(unchecked) private var state = State.closed
  @exclusivity(unchecked) private var builder = RoomIndexBuilder(offset: 0)
  @exclusivity(unchecked) private var pending: [UInt8] = []

  init(storeDirectory: String) {
    directory = storeDirectory + "/" + RoomIndex.directoryName
  }

  deinit { close() }

  /// Called before `chunk` is appended to `file`. Opens the file's index if needed, first
  /// cutting off entries for bytes the file no longer has (lost in a crash), so that no reader
  /// can take them for the lines about to be written there.
  ///
  /// Lines the index does not cover yet (the last, partial block of the previous run, or a
  /// whole file written before indexes existed) are indexed here, up to `catchUpLimit` bytes;
  /// the store calls this once at start, as a disk job, so it rarely delays a write.
  func prepare(file: AppendFile, chunk: [UInt8]) {
    guard case .closed = state, file.size > 0 || !chunk.isEmpty else { return }
    let identity: RoomIndex.FileIdentity?
    if file.size == 0 {
      identity = chunk.withUnsafeBytes { RoomIndex.identity(ofFileStart: $0) }
    } else {
      let head = try? file.read(at: 0, count: RoomIndex.identityLength)
      identity = head?.withUnsafeBytes { RoomIndex.identity(ofFileStart: $0) }
    }
    guard let identity else {
      state = .disabled
      return
    }
    mkdir(directory, 0o750)
    let path = directory + "/" + RoomIndex.fileName(firstSeq: identity.firstSeq)
    let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o640)
    guard fd >= 0 else {
      state = .disabled
      return
    }
    // Keep what an earlier run indexed of this same file, up to its present size.
    var keep = 0
    var covered = 0
    if file.size > 0, let bytes = try? FileSystem.read(path, limit: 256 << 20),
      let parsed = RoomIndex.parse(bytes), parsed.identity == identity
    {
      keep = RoomIndex.headerSize
      for entry in parsed.entries {
        guard entry.end <= file.size else { break }
        keep += RoomIndex.entryHeaderSize + 4 * entry.rooms.count
        covered = entry.end
      }
    }
    guard ftruncate(fd, off_t(keep)) == 0 else {
      Glibc.close(fd)
      state = .disabled
      return
    }
    state = .open(fd: fd, size: keep)
    if keep == 0 { write(RoomIndex.header(for: identity)) }
    if file.size - covered <= Self.catchUpLimit {
      builder = RoomIndexBuilder(offset: covered)
      var entries: [RoomIndex.Entry] = []
      RoomIndexFiles.index(fd: file.fd, from: covered, to: file.size, builder: &builder) {
        entries.append($0)
      }
      for entry in entries { RoomIndex.encode(entry, to: &pending) }
      if !pending.isEmpty {
        write(pending)
        pending.removeAll(keepingCapacity: true)
      }
    } else {
      // Too much to index without holding up the writes behind it: that part stays a gap,
      // which queries scan, until the file is rotated and a query indexes it.
      builder = RoomIndexBuilder(offset: file.size)
    }
  }

  /// Bytes of unindexed lines `prepare` indexes at most: the default MaxFileSize, so a live
  /// file of the default size is indexed whole, and reading it holds up the writes behind it
  /// only briefly.
  static let catchUpLimit = 64 << 20

  /// Records the lines just appended at byte `offset` of the live file.
  func appended(_ lines: [StoreLineInfo], firstSeq: UInt64, at offset: Int) {
    guard case .open = state else { return }
    guard offset == builder.end else {
      // Bytes this writer did not see (cannot happen while one writer owns the file); the
      // index would misplace every later block.
      disable()
      return
    }
    var seq = firstSeq
    for line in lines {
      if let entry = builder.add(length: line.length, seq: seq, room: line.room) {
        RoomIndex.encode(entry, to: &pending)
      }
      seq += 1
    }
    if !pending.isEmpty {
      write(pending)
      pending.removeAll(keepingCapacity: true)
    }
  }

  /// Called when the live file is complete (before it is rotated away): writes its last,
  /// partial block so the rotated file is indexed to its end, and closes the index.
  func finishFile() {
    if case .open = state, let entry = builder.finish() {
      RoomIndex.encode(entry, to: &pending)
      write(pending)
      pending.removeAll(keepingCapacity: true)
    }
    close()
    state = .closed
  }

  /// Removes index files whose store file is gone (rotated out, or the store was deleted),
  /// and temporary files a reader left behind.
  ///
  /// - Parameter storePaths: every store file that may exist, newest first.
  func removeStale(storePaths: [String]) {
    var live: Set<UInt64> = []
    for path in storePaths {
      let fd = open(path, O_RDONLY | O_CLOEXEC)
      guard fd >= 0 else { continue }
      var head = [UInt8](repeating: 0, count: RoomIndex.identityLength)
      let n = head.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
      Glibc.close(fd)
      guard n > 0 else { continue }
      if let identity = head.withUnsafeBytes({
        RoomIndex.identity(ofFileStart: UnsafeRawBufferPointer(rebasing: $0[..<n]))
      }) {
        live.insert(identity.firstSeq)
      }
    }
    for name in FileSystem.list(directory) {
      if let seq = RoomIndex.firstSeq(ofFileName: name), live.contains(seq) { continue }
      unlink(directory + "/" + name)
    }
  }

  private func write(_ bytes: [UInt8]) {
    guard case .open(let fd, let size) = state else { return }
    var done = 0
    while done < bytes.count {
      let n = bytes.withUnsafeBytes {
        pwrite(fd, $0.baseAddress! + done, $0.count - done, off_t(size + done))
      }
      if n < 0 && errno == EINTR { continue }
      if n <= 0 {
        // A full disk: leave no torn entry behind, and stop indexing this file.
        ftruncate(fd, off_t(size))
        disable()
        return
      }
      done += n
    }
    state = .open(fd: fd, size: size + bytes.count)
  }

  private func disable() {
    close()
    state = .disabled
  }

  private func close() {
    if case .open(let fd, _) = state { Glibc.close(fd) }
  }
}
