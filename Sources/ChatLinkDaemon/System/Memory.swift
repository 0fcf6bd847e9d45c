import CSystem
@preconcurrency import Glibc

/// Keeps the daemon's resident memory small: it runs for months, mostly idle.
public enum Memory {
  /// Tunes glibc malloc for a single-threaded loop with two helper threads; call it first
  /// thing in `main`.
  ///
  /// - One arena per thread would let each helper keep its own freed memory.
  /// - glibc raises its mmap threshold each time a large block is freed, after which the
  ///   1 MiB store and socket buffers of a flood come from the heap and stay there after the
  ///   flood. A fixed threshold keeps them in their own mappings, returned on free.
  /// - Free memory at the top of the heap goes back to the kernel beyond 256 KiB.
  public static func configureAllocator() {
    _ = mallopt(M_ARENA_MAX, 2)
    _ = mallopt(M_MMAP_THRESHOLD, 256 << 10)
    _ = mallopt(M_TRIM_THRESHOLD, 256 << 10)
  }

  /// Returns free heap memory to the kernel (after a burst, or once start-up is over).
  public static func trimHeap() {
    _ = malloc_trim(0)
  }

  /// Unmaps the clean pages of the program and its libraries from our page tables, so that
  /// only what runs from now on becomes resident again. Returns the bytes released.
  ///
  /// Start-up runs code that never runs again (argument parsing, config, the Swift runtime's
  /// metadata scans, the dynamic linker's relocations), and the kernel maps the pages around
  /// every page touched (fault-around, 64 KiB): idle, those clean file pages are most of the
  /// resident set. They stay in the page cache, so nothing is read from disk again; only
  /// read-only mappings of loaded ELF objects (files that also have an executable mapping)
  /// with no private copies (`Anonymous: 0`) are released, so nothing written is lost.
  @discardableResult
  public static func releaseStartupPages() -> Int {
    guard let text = try? FileSystem.readText("/proc/self/smaps", limit: 4 << 20) else { return 0 }
    var released = 0
    for range in releasableRanges(smaps: Array(text.utf8)) {
      let length = Int(range.upperBound - range.lowerBound)
      if madvise(UnsafeMutableRawPointer(bitPattern: range.lowerBound), length, MADV_DONTNEED) == 0
      {
        released += length
      }
    }
    return released
  }

  /// The address ranges `releaseStartupPages` releases, read from the text of
  /// /proc/self/smaps: read-only mappings without private copies of files that also have an
  /// executable mapping.
  ///
  /// Parsed as bytes, not Characters: the text is tens of KiB and this runs on the loop.
  static func releasableRanges(smaps: [UInt8]) -> [Range<UInt>] {
    struct Mapping {
      var range: Range<UInt>
      var writable: Bool
      var executable: Bool
      var path: String
      var anonymous = 0
    }
    var mappings: [Mapping] = []
    let anonymousKey = Array("Anonymous:".utf8)
    var start = 0
    while start < smaps.count {
      let end = smaps[start...].firstIndex(of: UInt8(ascii: "\n")) ?? smaps.count
      let line = smaps[start..<end]
      start = end + 1
      if let header = MappingHeader(line) {
        mappings.append(
          Mapping(
            range: header.range, writable: header.writable, executable: header.executable,
            path: header.path))
      } else if line.starts(with: anonymousKey), !mappings.isEmpty {
        let digits = line.dropFirst(anonymousKey.count).drop { $0 == UInt8(ascii: " ") }
          .prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        mappings[mappings.count - 1].anonymous =
          digits.isEmpty ? 1 : Int(String(decoding: digits, as: UTF8.self)) ?? 1
      }
    }
    let objects = Set(mappings.filter { $0.executable && $0.path.hasPrefix("/") }.map(\.path))
    return mappings.filter { !$0.writable && $0.anonymous == 0 && objects.contains($0.path) }
      .map(\.range)
  }

  /// A mapping's first line: `start-end perms offset dev inode   path` (addresses in lowercase
  /// hex; the path, which may hold spaces, is absent for anonymous mappings).
  private struct MappingHeader {
    var range: Range<UInt>
    var writable: Bool
    var executable: Bool
    var path: String

    init?(_ line: ArraySlice<UInt8>) {
      var index = line.startIndex
      func hex() -> UInt? {
        var value: UInt = 0
        let first = index
        while index < line.endIndex, index - first < 16 {
          let byte = line[index]
          if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
            value = value << 4 | UInt(byte - UInt8(ascii: "0"))
          } else if byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f") {
            value = value << 4 | UInt(byte - UInt8(ascii: "a") + 10)
          } else {
            break
          }
          index += 1
        }
        return index > first ? value : nil
      }
      func skip(_ byte: UInt8) -> Bool {
        guard index < line.endIndex, line[index] == byte else { return false }
        index += 1
        return true
      }
      guard let low = hex(), skip(UInt8(ascii: "-")), let high = hex(), high >= low,
        skip(UInt8(ascii: " ")), line.endIndex - index >= 4
      else { return nil }
      range = low..<high
      writable = line[index + 1] == UInt8(ascii: "w")
      executable = line[index + 2] == UInt8(ascii: "x")
      // Past perms, offset, device and inode, then the spaces before the path.
      var fields = 0
      while index < line.endIndex && fields < 4 {
        while index < line.endIndex && line[index] != UInt8(ascii: " ") { index += 1 }
        while index < line.endIndex && line[index] == UInt8(ascii: " ") { index += 1 }
        fields += 1
      }
      guard fields == 4 else { return nil }
      path = String(decoding: line[index...], as: UTF8.self)
    }
  }
}
