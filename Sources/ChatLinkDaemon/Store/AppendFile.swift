import CSystem
import EventLoop
@preconcurrency import Glibc

/// An append-only file of whole lines, appended to on the disk thread (and synced from the
/// store's sync thread: `sync()`).
///
/// A failed write is rolled back with ftruncate, so the file never holds a partial line,
/// even when the disk fills up in the middle of a write.
final class AppendFile: @unchecked Sendable {
  // @unchecked: created on the loop, then appended to by one thread at a time (the disk
  // worker), handed over through the worker's queue; the one other call is `sync()`.
  let path: String
  private(set) var fd: Int32
  private(set) var size: Int

  /// Opens the file, creating it if needed.
  ///
  /// - Parameter durableName: a file this call creates has its directory synced before the
  ///   call returns, so what is later synced into it cannot vanish with its name in a power
  ///   cut. False for a file that is renamed into place (the rename's directory sync does it).
  init(path: String, mode: mode_t = 0o640, durableName: Bool = true) throws(SystemError) {
    self.path = path
    // O_EXCL tells whether this call made the file, and so whether its name needs a sync.
    var created = true
    var fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, mode)
    if fd < 0 && errno == EEXIST {
      created = false
      fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, mode)
    }
    guard fd >= 0 else { throw .last("open \(path)") }
    var info = stat()
    guard fstat(fd, &info) == 0 else {
      let error = SystemError.last("fstat \(path)")
      Glibc.close(fd)
      throw error
    }
    if created && durableName {
      do throws(SystemError) {
        try FileSystem.syncParent(of: path, for: .create)
      } catch {
        // Unnamed for good: the next attempt creates it again and syncs again.
        Glibc.close(fd)
        unlink(path)
        throw error
      }
    }
    self.fd = fd
    size = Int(info.st_size)
  }

  deinit {
    if fd >= 0 { Glibc.close(fd) }
  }

  /// Appends all of `bytes` or nothing.
  func append(_ bytes: [UInt8]) throws(SystemError) {
    var written = 0
    while written < bytes.count {
      let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
      if n < 0 {
        if errno == EINTR { continue }
        let error = SystemError.last("write \(path)")
        // Roll back whatever part of the chunk reached the file.
        if written > 0 { ftruncate(fd, off_t(size)) }
        throw error
      }
      written += n
    }
    size += bytes.count
  }

  /// Makes everything written durable.
  ///
  /// The one call another thread may make while the owning thread appends (the store's sync
  /// worker): it reads only `fd`, which changes only in `close()`, and the store never closes
  /// a file it may still sync (a rotated file is closed when its last reference goes).
  func sync() throws(SystemError) {
    #if DEBUG
      if FileSystem.failingDataSyncs.decrementIfPositive() {
        throw SystemError("fdatasync \(path) (failed for a test)", errno: EIO)
      }
    #endif
    guard fdatasync(fd) == 0 else { throw .last("fdatasync \(path)") }
  }

  /// Starts writing `count` bytes from `offset` to the disk, without waiting: the fsync that
  /// makes them durable then finds less to do, and the disk is kept busy steadily rather than
  /// in bursts (which hold up the outbox's fsyncs on the same disk). Advisory: an error is
  /// ignored, and the fsync reports any that matters.
  func startWriteback(offset: Int, count: Int) {
    _ = chatlink_start_writeback(fd, Int64(offset), Int64(count))
  }

  /// Cuts the file to `length` bytes.
  func truncate(to length: Int) throws(SystemError) {
    guard ftruncate(fd, off_t(length)) == 0 else { throw .last("ftruncate \(path)") }
    size = length
  }

  /// Reads `count` bytes at `offset`.
  func read(at offset: Int, count: Int) throws(SystemError) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: count)
    var done = 0
    while done < count {
      let n = out.withUnsafeMutableBytes {
        pread(fd, $0.baseAddress! + done, count - done, off_t(offset + done))
      }
      if n < 0 {
        if errno == EINTR { continue }
        throw .last("pread \(path)")
      }
      if n == 0 { break }
      done += n
    }
    return Array(out[..<done])
  }

  func close() {
    if fd >= 0 {
      Glibc.close(fd)
      fd = -1
    }
  }
}

/// Finds the last complete line of a file by reading backwards from its end.
enum TailReader {
  /// The file's content up to and including its last newline, as an offset, and the last
  /// lines (up to `wanted`) before it, newest last. Reads only as much as it needs.
  static func lastLines(
    of file: AppendFile, wanted: Int, where accept: (UnsafeRawBufferPointer) -> Bool
  )
    throws(SystemError) -> (completeLength: Int, lines: [[UInt8]])
  {
    let size = file.size
    var end = size
    var chunk = 64 * 1024
    var completeLength: Int?
    var lines: [[UInt8]] = []
    var carry: [UInt8] = []
    while end > 0 && lines.count < wanted {
      let start = max(0, end - chunk)
      var data = try file.read(at: start, count: end - start)
      data += carry
      carry = []
      var lineEnd = data.count
      if completeLength == nil {
        // Everything after the last newline is a torn line.
        guard let lastNewline = data.lastIndex(of: 0x0A) else {
          if start == 0 {
            completeLength = 0
            break
          }
          carry = data
          end = start
          chunk *= 2
          continue
        }
        completeLength = start + lastNewline + 1
        lineEnd = lastNewline
      } else if data.last == 0x0A {
        lineEnd = data.count - 1
      }
      var cursor = lineEnd
      while cursor > 0 && lines.count < wanted {
        let previous = data[..<cursor].lastIndex(of: 0x0A)
        let lineStart = previous.map { $0 + 1 } ?? 0
        if previous == nil && start > 0 {
          // The line continues before this chunk.
          carry = Array(data[lineStart..<cursor]) + [0x0A]
          break
        }
        let line = Array(data[lineStart..<cursor])
        if !line.isEmpty && line.withUnsafeBytes(accept) { lines.append(line) }
        cursor = previous ?? 0
      }
      end = start
    }
    return (completeLength ?? size, lines.reversed())
  }
}
