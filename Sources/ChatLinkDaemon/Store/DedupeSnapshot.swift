@preconcurrency import Glibc

/// The dedupe window as a file, read at start in place of the store's tail: the tail is tens of
/// megabytes of records, the snapshot a few of tables.
///
/// The store writes one every so often while it runs (a checkpoint) and one at a clean stop. A
/// start reads it, then the records stored after it (when they are no more than the tail it would
/// read otherwise), so after a crash or a power cut only the traffic since the last checkpoint is
/// read. A snapshot is renamed into place only once every record it knows is durable, so a power
/// cut cannot leave it knowing a record the store lost; a start whose store ends before the
/// snapshot's last seq (files replaced), whose window size or configured rooms differ, whose
/// records after the snapshot are too many or not all there, or whose file does not check out,
/// reads the tail as before. It keeps the window's hash basis, the secret that makes ids chosen to
/// collide hard to work out, so it is readable by the daemon's user only.
///
/// A checkpoint is written a room at a time, each room as it is when its turn comes (so only
/// one room's tables are ever copied), with the seq its ids run to: the records read on top
/// start after the seq the checkpoint began at, and skip, for each room, those its ids hold.
///
/// Layout, little-endian: the magic; the basis, capacity and the seq the snapshot began at
/// (8 bytes each); the configured rooms (a count, then each room's length and JSON); each room
/// (a 1 byte, its length and JSON, the seq its ids run to, its newest id's length (-1: none)
/// and bytes, its newest time, how many ids it was ever given, its ring's oldest position, its
/// ring of hashes and its table of buckets, each a count and the values as they lie in memory:
/// the machine that writes a snapshot reads it);
/// a 2 byte, the count of rooms and the last seq any of them knows; then a hash of everything
/// before it.
enum DedupeSnapshot {
  /// The file's name in the store's directory.
  static let fileName = "dedupe-window"

  /// What a start expects of a snapshot.
  struct Expectation: Sendable {
    /// The store's last seq: a snapshot that knows a later one is not of this store.
    var storeLastSeq: UInt64
    var capacity: Int
    /// Rooms whose windows start full however far back their records lie: a room configured
    /// since the snapshot was written may have been read only from the tail then.
    var configuredRooms: [[UInt8]]
    var keepsNewest: Bool
  }

  /// A snapshot read back.
  struct Restored: Sendable {
    var window: DedupeWindow
    /// The records after this seq are read on top of it.
    var fromSeq: UInt64
    /// The seq each room's ids run to, where it is past `fromSeq`.
    var roomSeqs: [[UInt8]: UInt64]
    /// The last seq the snapshot knows.
    var lastSeq: UInt64
  }

  private static let magic = Array("CLDWIN04".utf8)
  private static let roomTag: UInt8 = 1
  private static let endTag: UInt8 = 2
  /// Bounds a file cannot pass: they keep a damaged count from asking for gigabytes.
  private static let maxRoomBytes = 1 << 16
  private static let maxRooms = 1 << 16

  /// The snapshot's start: the hash basis, the window size, the seq it begins at, the rooms
  /// configured.
  static func header(of window: DedupeWindow, fromSeq: UInt64, configuredRooms: [[UInt8]])
    -> [UInt8]
  {
    var out = magic
    for value in [window.hasher.basis, UInt64(window.capacity), fromSeq] { put(value, &out) }
    put(UInt32(configuredRooms.count), &out)
    for room in configuredRooms { putBytes(room, &out) }
    return out
  }

  /// One room's part: its ids, which run to the record `seq`.
  static func room(_ room: [UInt8], ids: RecentIDs, seq: UInt64) -> [UInt8] {
    let parts = ids.parts
    var out: [UInt8] = [roomTag]
    out.reserveCapacity(64 + room.count + parts.ring.count * 8 + parts.table.count * 4)
    putBytes(room, &out)
    put(seq, &out)
    if let newest = ids.newest {
      putBytes(newest, &out)
    } else {
      put(UInt32.max, &out)
    }
    put(UInt64(bitPattern: ids.newestTime), &out)
    put(parts.inserted, &out)
    put(UInt32(parts.head), &out)
    put(UInt32(parts.ring.count), &out)
    parts.ring.withUnsafeBytes { out.append(contentsOf: $0) }
    put(UInt32(parts.table.count), &out)
    parts.table.withUnsafeBytes { out.append(contentsOf: $0) }
    return out
  }

  /// The snapshot's end, before its hash: how many rooms it holds, and the last seq they know.
  static func end(rooms: Int, lastSeq: UInt64) -> [UInt8] {
    var out: [UInt8] = [endTag]
    put(UInt32(rooms), &out)
    put(lastSeq, &out)
    return out
  }

  /// The bytes of a snapshot of `window` as it is with the store's last seq `seq`.
  static func encode(_ window: DedupeWindow, seq: UInt64, configuredRooms: [[UInt8]]) -> [UInt8] {
    var out = header(of: window, fromSeq: seq, configuredRooms: configuredRooms)
    let rooms = window.roomIDs
    for (name, ids) in rooms { out += room(name, ids: ids, seq: seq) }
    out += end(rooms: rooms.count, lastSeq: seq)
    put(out.withUnsafeBytes(checksum), &out)
    return out
  }

  /// What a snapshot holds, or nil when it does not check out or does not hold for `expected`.
  static func decode(_ bytes: [UInt8], expected: Expectation) -> Restored? {
    bytes.withUnsafeBytes { decode($0, expected: expected) }
  }

  /// `decode` of bytes where they lie (the file's mapping).
  static func decode(_ bytes: UnsafeRawBufferPointer, expected: Expectation) -> Restored? {
    guard bytes.count >= magic.count + 8 else { return nil }
    var reader = Reader(bytes: bytes, end: bytes.count - 8)
    let stored = Reader(bytes: bytes, offset: bytes.count - 8, end: bytes.count)
    guard
      checksum(UnsafeRawBufferPointer(rebasing: bytes[..<reader.end])) == stored.load(UInt64.self),
      reader.take(magic.count).map({ $0.elementsEqual(magic) }) == true,
      let basis = reader.u64(), let capacity = reader.u64(), let fromSeq = reader.u64(),
      capacity == UInt64(expected.capacity), fromSeq <= expected.storeLastSeq,
      let configured = reader.u32(), configured <= maxRooms
    else { return nil }
    var configuredThen: Set<[UInt8]> = []
    for _ in 0..<configured {
      guard let room = reader.counted() else { return nil }
      configuredThen.insert(room)
    }
    guard expected.configuredRooms.allSatisfy(configuredThen.contains) else { return nil }
    var restored = Restored(
      window: DedupeWindow(
        capacity: expected.capacity, keepsNewest: expected.keepsNewest, basis: basis),
      fromSeq: fromSeq, roomSeqs: [:], lastSeq: fromSeq)
    var rooms = 0
    while true {
      guard let tag = reader.take(1)?.first else { return nil }
      if tag == endTag { break }
      guard tag == roomTag, rooms < maxRooms,
        readRoom(&reader, into: &restored, expected: expected)
      else { return nil }
      rooms += 1
    }
    guard let count = reader.u32(), count == rooms, let lastSeq = reader.u64(),
      reader.offset == reader.end, lastSeq >= fromSeq, lastSeq <= expected.storeLastSeq,
      restored.roomSeqs.values.allSatisfy({ $0 <= lastSeq })
    else { return nil }
    restored.lastSeq = lastSeq
    return restored
  }

  /// Reads one room's part into `restored`; false when it does not fit.
  private static func readRoom(
    _ reader: inout Reader, into restored: inout Restored, expected: Expectation
  ) -> Bool {
    guard let room = reader.counted(), let seq = reader.u64(), seq >= restored.fromSeq,
      let newestCount = reader.u32()
    else { return false }
    var newest: [UInt8]?
    if newestCount != UInt32.max {
      guard newestCount <= maxRoomBytes, let bytes = reader.take(Int(newestCount)) else {
        return false
      }
      newest = Array(bytes)
    }
    guard let time = reader.u64(), let inserted = reader.u64(), let head = reader.u32(),
      let ringCount = reader.u32(), ringCount <= expected.capacity,
      let ring = reader.values(Int(ringCount), of: UInt64.self),
      let tableCount = reader.u32(), tableCount <= 2 * expected.capacity + RecentIDs.lanes,
      let table = reader.values(Int(tableCount), of: UInt32.self),
      let ids = RecentIDs(
        parts: RecentIDs.Parts(inserted: inserted, head: Int(head), ring: ring, table: table),
        capacity: expected.capacity)
    else { return false }
    ids.newest = newest
    ids.newestTime = Int64(bitPattern: time)
    guard restored.window.adopt(room: room, ids: ids) else { return false }
    if seq > restored.fromSeq { restored.roomSeqs[room] = seq }
    return true
  }

  /// Reads the snapshot in `directory`: what it holds if it holds for `expected`, else nil.
  /// It stays: the next start after a crash reads it again, with the records since.
  ///
  /// The file is mapped, its pages populated at once, not read: reading it copied 3 MB into fresh
  /// memory, which the kernel clears page by page first, on the path every start waits on.
  static func read(directory: String, expected: Expectation) -> Restored? {
    let fd = open(directory + "/" + fileName, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0, info.st_size > 0, info.st_size <= 1 << 30 else { return nil }
    let size = Int(info.st_size)
    guard let base = mmap(nil, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0),
      base != MAP_FAILED
    else { return nil }
    defer { munmap(base, size) }
    return decode(UnsafeRawBufferPointer(start: base, count: size), expected: expected)
  }

  /// The hash that ends a snapshot, of everything before it (`DedupeSnapshotChecksum`).
  static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
    var sum = DedupeSnapshotChecksum()
    sum.add(bytes)
    return sum.value
  }

  private static func put<T: FixedWidthInteger>(_ value: T, _ out: inout [UInt8]) {
    withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
  }

  private static func putBytes(_ bytes: [UInt8], _ out: inout [UInt8]) {
    put(UInt32(bytes.count), &out)
    out.append(contentsOf: bytes)
  }

  /// Reads a snapshot's fields in order, up to `end`; nil past it. It lives inside one
  /// `decode`, which is lent the bytes.
  private struct Reader {
    let bytes: UnsafeRawBufferPointer
    var offset = 0
    let end: Int

    /// The value at `offset`, which the caller has checked lies before `end`.
    func load<T: FixedWidthInteger>(_: T.Type) -> T {
      T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    mutating func take(_ count: Int) -> UnsafeRawBufferPointer? {
      guard count >= 0, count <= end - offset else { return nil }
      defer { offset += count }
      return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
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
        UnsafeMutableRawBufferPointer(buffer).copyMemory(from: bytes)
        initialized = count
      }
    }
  }
}
