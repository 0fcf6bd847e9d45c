@preconcurrency import Glibc

/// The dedupe window as a file, written at a clean stop and read at the next start in place
/// of the store's tail: the tail is tens of megabytes of records, the snapshot a few of tables.
///
/// It holds for exactly the store it was written with: the last seq and the live file's size
/// at the stop are in it, and a start whose store differs (a record written since, a crash,
/// a power cut that took records, files moved) reads the tail as before. So does one whose
/// window size or configured rooms differ, or whose file does not check out. It is removed
/// once read, and written under a temporary name and renamed, so a file that exists is whole
/// or fails its check. It keeps the window's hash basis, the secret that makes ids chosen to
/// collide hard to work out, so it is readable by the daemon's user only.
///
/// Layout, little-endian: the magic; the basis, capacity, last seq and live file size (8 bytes
/// each); the configured rooms (a count, then each room's length and JSON); the rooms (a count,
/// then each room's length and JSON, its newest id's length (-1: none) and bytes, its newest
/// time, its ring's oldest position, its ring and its table, each a count and the values as
/// they lie in memory: the machine that writes a snapshot reads it); then a hash of everything
/// before it.
enum DedupeSnapshot {
  /// The file's name in the store's directory.
  static let fileName = "dedupe-window"

  /// What the store is at the stop that writes a snapshot, and must be at the start that reads it.
  struct StorePoint: Equatable, Sendable {
    /// The last seq assigned (all of them durable).
    var lastSeq: UInt64
    /// The live file's size.
    var liveFileSize: UInt64
  }

  /// What a start expects of a snapshot, beside its store point.
  struct Expectation: Sendable {
    var point: StorePoint
    var capacity: Int
    /// Rooms whose windows start full however far back their records lie: a room configured
    /// since the snapshot was written may have been read only from the tail then.
    var configuredRooms: [[UInt8]]
    var keepsNewest: Bool
  }

  private static let magic = Array("CLDWIN01".utf8)
  /// Bounds a file cannot pass: they keep a damaged count from asking for gigabytes.
  private static let maxRoomBytes = 1 << 16
  private static let maxRooms = 1 << 16

  /// The bytes of a snapshot of `window`, taken with the store at `point`.
  static func encode(_ window: DedupeWindow, at point: StorePoint, configuredRooms: [[UInt8]])
    -> [UInt8]
  {
    let rooms = window.roomIDs
    var out = magic
    out.reserveCapacity(
      rooms.reduce(1024) {
        $0 + 64 + $1.room.count + $1.ids.count * 4 + $1.ids.parts.table.count * 8
      }
        + configuredRooms.reduce(0) { $0 + 4 + $1.count })
    for value in [window.hasher.basis, UInt64(window.capacity), point.lastSeq, point.liveFileSize] {
      put(value, &out)
    }
    put(UInt32(configuredRooms.count), &out)
    for room in configuredRooms { putBytes(room, &out) }
    put(UInt32(rooms.count), &out)
    for (room, ids) in rooms {
      putBytes(room, &out)
      if let newest = ids.newest {
        putBytes(newest, &out)
      } else {
        put(UInt32.max, &out)
      }
      put(UInt64(bitPattern: ids.newestTime), &out)
      let parts = ids.parts
      put(UInt32(parts.head), &out)
      put(UInt32(parts.ring.count), &out)
      parts.ring.withUnsafeBytes { out.append(contentsOf: $0) }
      put(UInt32(parts.table.count), &out)
      parts.table.withUnsafeBytes { out.append(contentsOf: $0) }
    }
    put(out.withUnsafeBytes(checksum), &out)
    return out
  }

  /// The window a snapshot holds, or nil when it does not check out or does not hold for
  /// `expected`.
  static func decode(_ bytes: [UInt8], expected: Expectation) -> DedupeWindow? {
    guard bytes.count >= magic.count + 8 else { return nil }
    var reader = Reader(bytes: bytes, end: bytes.count - 8)
    let stored = Reader(bytes: bytes, offset: bytes.count - 8, end: bytes.count)
    guard
      bytes.withUnsafeBytes({ checksum(UnsafeRawBufferPointer(rebasing: $0[..<reader.end])) })
        == stored.load(UInt64.self),
      reader.take(magic.count) == magic[...],
      let basis = reader.u64(), let capacity = reader.u64(), let lastSeq = reader.u64(),
      let liveFileSize = reader.u64(),
      capacity == UInt64(expected.capacity),
      StorePoint(lastSeq: lastSeq, liveFileSize: liveFileSize) == expected.point,
      let configured = reader.u32(), configured <= maxRooms
    else { return nil }
    var configuredThen: Set<[UInt8]> = []
    for _ in 0..<configured {
      guard let room = reader.counted() else { return nil }
      configuredThen.insert(room)
    }
    guard expected.configuredRooms.allSatisfy(configuredThen.contains),
      let roomCount = reader.u32(), roomCount <= maxRooms
    else { return nil }
    var window = DedupeWindow(
      capacity: expected.capacity, keepsNewest: expected.keepsNewest, basis: basis)
    for _ in 0..<roomCount {
      guard let room = reader.counted(), let newestCount = reader.u32() else { return nil }
      var newest: [UInt8]?
      if newestCount != UInt32.max {
        guard newestCount <= maxRoomBytes, let bytes = reader.take(Int(newestCount)) else {
          return nil
        }
        newest = Array(bytes)
      }
      guard let time = reader.u64(), let head = reader.u32(),
        let ringCount = reader.u32(), ringCount <= expected.capacity,
        let ring = reader.values(Int(ringCount), of: UInt32.self),
        let tableCount = reader.u32(), tableCount <= 4 * expected.capacity + 16,
        let table = reader.values(Int(tableCount), of: UInt64.self),
        var ids = RecentIDs(ring: ring, head: Int(head), table: table, capacity: expected.capacity)
      else { return nil }
      ids.newest = newest
      ids.newestTime = Int64(bitPattern: time)
      guard window.adopt(room: room, ids: ids) else { return nil }
    }
    return reader.offset == reader.end ? window : nil
  }

  /// Writes a snapshot to `directory` (under a temporary name, synced, renamed into place);
  /// failures leave no file, and the next start reads the tail.
  static func write(_ bytes: [UInt8], directory: String) {
    let path = directory + "/" + fileName
    let temporary = path + ".tmp"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { return }
    var done = 0
    while done < bytes.count {
      let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, $0.count - done) }
      if n < 0 && errno == EINTR { continue }
      if n <= 0 { break }
      done += n
    }
    let synced = fsync(fd) == 0
    close(fd)
    if done < bytes.count || !synced || rename(temporary, path) != 0 { unlink(temporary) }
  }

  /// Reads and removes the snapshot in `directory`: the window it holds if it holds for
  /// `expected`, else nil. Removed either way, so it is read at most once.
  static func take(directory: String, expected: Expectation) -> DedupeWindow? {
    let path = directory + "/" + fileName
    guard let bytes = try? FileSystem.read(path, limit: 1 << 30) else { return nil }
    unlink(path)
    return decode(bytes, expected: expected)
  }

  /// A hash of the file's bytes (a damaged file is what it guards against): four words a
  /// step in four independent lanes, a multiply each, so the multiplies overlap; the tail
  /// and the length through the ids' hash.
  static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
    var lanes: (UInt64, UInt64, UInt64, UInt64) = (1, 2, 3, 4)
    let prime: UInt64 = 0x9E37_79B9_7F4A_7C15
    let words = bytes.count / 32 * 4
    var offset = 0
    while offset < words * 8 {
      lanes.0 = (lanes.0 ^ bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* prime
      lanes.1 =
        (lanes.1 ^ bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)) &* prime
      lanes.2 =
        (lanes.2 ^ bytes.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self)) &* prime
      lanes.3 =
        (lanes.3 ^ bytes.loadUnaligned(fromByteOffset: offset + 24, as: UInt64.self)) &* prime
      // A shift keeps high bits flowing into the low ones, which the multiply alone never does.
      lanes.0 ^= lanes.0 >> 29
      lanes.1 ^= lanes.1 >> 29
      lanes.2 ^= lanes.2 >> 29
      lanes.3 ^= lanes.3 >> 29
      offset += 32
    }
    func rotated(_ x: UInt64, _ k: UInt64) -> UInt64 { x << k | x >> (64 - k) }
    let hasher = IDHasher(
      basis: lanes.0 ^ rotated(lanes.1, 13) ^ rotated(lanes.2, 29) ^ rotated(lanes.3, 47))
    return hasher.hash(UnsafeRawBufferPointer(rebasing: bytes[offset...])) ^ UInt64(bytes.count)
  }

  private static func put<T: FixedWidthInteger>(_ value: T, _ out: inout [UInt8]) {
    withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
  }

  private static func putBytes(_ bytes: [UInt8], _ out: inout [UInt8]) {
    put(UInt32(bytes.count), &out)
    out.append(contentsOf: bytes)
  }

  /// Reads a snapshot's fields in order, up to `end`; nil past it.
  private struct Reader {
    let bytes: [UInt8]
    var offset = 0
    let end: Int

    /// The value at `offset`, which the caller has checked lies before `end`.
    func load<T: FixedWidthInteger>(_: T.Type) -> T {
      bytes.withUnsafeBytes {
        T(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: T.self))
      }
    }

    mutating func take(_ count: Int) -> ArraySlice<UInt8>? {
      guard count >= 0, count <= end - offset else { return nil }
      defer { offset += count }
      return bytes[offset..<(offset + count)]
    }

    mutating func u32() -> UInt32? { integer() }

    mutating func u64() -> UInt64? { integer() }

    private mutating func integer<T: FixedWidthInteger>() -> T? {
      guard MemoryLayout<T>.size <= end - offset else { return nil }
      defer { offset += MemoryLayout<T>.size }
      return load(T.self)
    }

    /// A room's or id's bytes after their length.
    mutating func counted() -> [UInt8]? {
      guard let count = u32(), count <= DedupeSnapshot.maxRoomBytes,
        let bytes = take(Int(count))
      else { return nil }
      return Array(bytes)
    }

    /// `count` values as they lay in the memory of the process that wrote them.
    mutating func values<T: FixedWidthInteger>(_ count: Int, of: T.Type) -> [T]? {
      guard let bytes = take(count * MemoryLayout<T>.size) else { return nil }
      return [T](unsafeUninitializedCapacity: count) { buffer, initialized in
        bytes.withUnsafeBytes { UnsafeMutableRawBufferPointer(buffer).copyMemory(from: $0) }
        initialized = count
      }
    }
  }
}
