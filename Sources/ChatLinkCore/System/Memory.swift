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
    struct Mapping {
      var start: UInt
      var end: UInt
      var writable: Bool
      var executable: Bool
      var path: Substring
      var anonymous = 0
    }
    var mappings: [Mapping] = []
    for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
      let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
      if let first = fields.first, first.contains("-"), fields.count >= 5,
        let dash = first.firstIndex(of: "-"),
        let start = UInt(first[..<dash], radix: 16),
        let end = UInt(first[first.index(after: dash)...], radix: 16)
      {
        let perms = fields[1]
        let path = fields.count == 6 ? fields[5].drop { $0 == " " } : ""
        mappings.append(
          Mapping(
            start: start, end: end, writable: perms.contains("w"), executable: perms.contains("x"),
            path: path))
      } else if line.hasPrefix("Anonymous:"), !mappings.isEmpty {
        let value = line.dropFirst("Anonymous:".count).split(separator: " ").first
        mappings[mappings.count - 1].anonymous = value.flatMap { Int($0) } ?? 1
      }
    }
    let objects = Set(mappings.filter { $0.executable && $0.path.hasPrefix("/") }.map(\.path))
    var released = 0
    for mapping in mappings
    where !mapping.writable && mapping.anonymous == 0 && objects.contains(mapping.path) {
      let length = Int(mapping.end - mapping.start)
      if madvise(UnsafeMutableRawPointer(bitPattern: mapping.start), length, MADV_DONTNEED) == 0 {
        released += length
      }
    }
    return released
  }
}
