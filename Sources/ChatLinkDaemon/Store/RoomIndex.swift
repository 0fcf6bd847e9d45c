import LinkCore

/// The room index of one store file: a disposable sidecar that lets a History query for a
/// rare room skip the parts of the store that hold none of its records, instead of reading
/// every file backwards to the start.
///
/// The file is cut into blocks of whole lines (about 64 KiB each); the index lists, per block,
/// its byte range, its seq range and the 32-bit hashes of the rooms it holds. A block whose
/// hashes do not include the queried room cannot hold one of its records and is not read. A
/// hash collision only costs a block read; the lines themselves are always matched exactly.
///
/// It lives in `<Directory>/.index/<first seq>.rooms`: named after the first seq of its store
/// file, so rotation (which renames store files) never has to touch it, and a hidden directory,
/// so `messages.jsonl*` globs never match it. Little-endian:
///
/// ```
/// header  32 B  "CLROOMS1", file's first seq (u64), identity (u64), 0 (u64)
/// entry   40 B  start, end (u64 byte offsets), first seq, last seq (u64), count (u32),
///               check (u32: FNV-1a of the entry without it)
///         + count × u32 room hashes, ascending
/// ```
/// The identity is a hash of the start of the store file's first line, which holds its seq and
/// a microsecond timestamp, so an index left over from a deleted store is never taken for the
/// current one. The index is a cache: it is never fsynced, anything that does not check out is
/// ignored (the reader then scans that part of the file), and `.index/` may be deleted at any
/// time.
public enum RoomIndex {
  /// The magic of the header: format version 1.
  static let magic: [UInt8] = Array("CLROOMS1".utf8)
  /// Bytes of the header.
  static let headerSize = 32
  /// Bytes of an entry before its room hashes.
  static let entryHeaderSize = 40
  /// A block is closed once it holds this many bytes of lines.
  static let blockTarget = 64 * 1024
  /// … or this many distinct rooms, which bounds an entry's size.
  static let maxRooms = 512
  /// Bytes of the first line that make the identity.
  static let identityLength = 64
  /// The name of the index directory inside the store directory.
  public static let directoryName = ".index"

  /// One block of a store file.
  struct Entry: Sendable, Hashable {
    /// Byte offset of the block's first line.
    var start: Int
    /// Byte offset just past the block's last newline.
    var end: Int
    /// Seq of the block's first record (0 if it holds none).
    var firstSeq: UInt64
    /// Seq of the block's last record (0 if it holds none).
    var lastSeq: UInt64
    /// Distinct room hashes, ascending.
    var rooms: [UInt32]

    /// Whether the block may hold a record of the room with this hash.
    func mayContain(room hash: UInt32) -> Bool {
      var low = 0
      var high = rooms.count
      while low < high {
        let middle = (low + high) / 2
        if rooms[middle] == hash { return true }
        if rooms[middle] < hash { low = middle + 1 } else { high = middle }
      }
      return false
    }
  }

  /// What a store file starts with: the seq of its first line and the identity hash.
  struct FileIdentity: Sendable, Hashable {
    var firstSeq: UInt64
    var hash: UInt64
  }

  /// A parsed index file.
  struct Parsed: Sendable, Hashable {
    var identity: FileIdentity
    /// The entries that check out, in file order.
    var entries: [Entry]
    /// Bytes of the index file those entries (and the header) span: anything after is torn.
    var validLength: Int
  }

  /// The index file's name for a store file whose first seq is `firstSeq`.
  static func fileName(firstSeq: UInt64) -> String { "\(firstSeq).rooms" }

  /// The first seq a file name stands for, or nil if it is not an index file's name.
  static func firstSeq(ofFileName name: String) -> UInt64? {
    guard name.hasSuffix(".rooms") else { return nil }
    return UInt64(name.dropLast(6))
  }

  /// The hash under which a room is indexed: FNV-1a of its JSON as stored (`7`, `"general"`,
  /// `null`).
  static func roomHash(_ bytes: some Sequence<UInt8>) -> UInt32 {
    FNV1a.hash32(bytes)
  }

  /// The hash of `null`, the room of records without one.
  static let nullRoomHash = roomHash("null".utf8)

  /// The identity of a store file from its first bytes (at least up to the first newline or
  /// `identityLength` bytes); nil if they are not the start of one of our records.
  static func identity(ofFileStart bytes: UnsafeRawBufferPointer) -> FileIdentity? {
    var length = min(bytes.count, identityLength)
    if let newline = bytes[..<length].firstIndex(of: 0x0A) { length = newline }
    let head = UnsafeRawBufferPointer(rebasing: bytes[..<length])
    guard let seq = StoreRecord.seq(ofLine: head) else { return nil }
    return FileIdentity(firstSeq: seq, hash: FNV1a.hash64(head))
  }

  /// The header of an index file.
  static func header(for identity: FileIdentity) -> [UInt8] {
    var out = magic
    appendLittleEndian(identity.firstSeq, to: &out)
    appendLittleEndian(identity.hash, to: &out)
    appendLittleEndian(UInt64(0), to: &out)
    return out
  }

  /// Appends an encoded entry.
  static func encode(_ entry: Entry, to out: inout [UInt8]) {
    let begin = out.count
    appendLittleEndian(UInt64(entry.start), to: &out)
    appendLittleEndian(UInt64(entry.end), to: &out)
    appendLittleEndian(entry.firstSeq, to: &out)
    appendLittleEndian(entry.lastSeq, to: &out)
    appendLittleEndian(UInt32(entry.rooms.count), to: &out)
    let checkAt = out.count
    appendLittleEndian(UInt32(0), to: &out)
    for room in entry.rooms { appendLittleEndian(room, to: &out) }
    let check = checksum(out[begin..<checkAt], out[(checkAt + 4)...])
    out.withUnsafeMutableBytes {
      $0.storeBytes(of: check.littleEndian, toByteOffset: checkAt, as: UInt32.self)
    }
  }

  /// Parses an index file; nil if its header is not ours. Entries are read up to the first one
  /// that does not check out (a torn write, garbage), which ends the valid part.
  static func parse(_ bytes: [UInt8]) -> Parsed? {
    bytes.withUnsafeBytes { raw -> Parsed? in
      guard raw.count >= headerSize, raw[..<magic.count].elementsEqual(magic) else { return nil }
      let identity = FileIdentity(
        firstSeq: load(UInt64.self, raw, 8), hash: load(UInt64.self, raw, 16))
      var entries: [Entry] = []
      var offset = headerSize
      var previousEnd = 0
      while raw.count - offset >= entryHeaderSize {
        let count = Int(load(UInt32.self, raw, offset + 32))
        let size = entryHeaderSize + 4 * count
        guard count <= maxRooms, raw.count - offset >= size else { break }
        let stored = load(UInt32.self, raw, offset + 36)
        let check = checksum(raw[offset..<(offset + 36)], raw[(offset + 40)..<(offset + size)])
        guard stored == check else { break }
        let start = load(UInt64.self, raw, offset)
        let end = load(UInt64.self, raw, offset + 8)
        let entry = Entry(
          start: Int(truncatingIfNeeded: start), end: Int(truncatingIfNeeded: end),
          firstSeq: load(UInt64.self, raw, offset + 16),
          lastSeq: load(UInt64.self, raw, offset + 24),
          rooms: (0..<count).map { load(UInt32.self, raw, offset + 40 + 4 * $0) })
        guard start <= UInt64(Int.max), end <= UInt64(Int.max), entry.start >= previousEnd,
          entry.end > entry.start, entry.firstSeq <= entry.lastSeq,
          zip(entry.rooms, entry.rooms.dropFirst()).allSatisfy({ $0 < $1 })
        else { break }
        entries.append(entry)
        previousEnd = entry.end
        offset += size
      }
      return Parsed(identity: identity, entries: entries, validLength: offset)
    }
  }

  /// A part of a store file as a query sees it.
  enum Segment: Sendable, Hashable {
    /// An indexed block.
    case block(Entry)
    /// Bytes no entry covers, scanned line by line.
    case unindexed(start: Int, end: Int)
  }

  /// The file's `[0, size)` as indexed blocks and the unindexed gaps between them, oldest
  /// first. Entries reaching past `size` (the file was cut after a crash) are not used.
  static func segments(_ entries: [Entry], size: Int) -> [Segment] {
    var segments: [Segment] = []
    var covered = 0
    for entry in entries where entry.end <= size {
      if entry.start > covered { segments.append(.unindexed(start: covered, end: entry.start)) }
      segments.append(.block(entry))
      covered = entry.end
    }
    if size > covered { segments.append(.unindexed(start: covered, end: size)) }
    return segments
  }

  private static func checksum(_ a: some Sequence<UInt8>, _ b: some Sequence<UInt8>) -> UInt32 {
    FNV1a.hash32(b, continuing: FNV1a.hash32(a))
  }

  private static func appendLittleEndian<T: FixedWidthInteger>(_ value: T, to out: inout [UInt8]) {
    withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
  }

  private static func load<T: FixedWidthInteger>(
    _: T.Type, _ raw: UnsafeRawBufferPointer, _ offset: Int
  ) -> T {
    T(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: T.self))
  }
}

/// Groups appended lines into index blocks: fed every line in file order, it hands back each
/// block as it closes.
struct RoomIndexBuilder: Sendable {
  private var start: Int
  private var offset: Int
  private var firstSeq: UInt64 = 0
  private var lastSeq: UInt64 = 0
  private var rooms = RoomHashSet()

  /// A builder whose first block starts at byte `offset` of the store file.
  init(offset: Int) {
    start = offset
    self.offset = offset
  }

  /// Where the next line will start.
  var end: Int { offset }

  /// Adds the next line: `length` bytes with its newline, its seq and its room hash (nil for a
  /// line that is not one of our records). Returns the block it closed, if any.
  mutating func add(length: Int, seq: UInt64?, room: UInt32?) -> RoomIndex.Entry? {
    offset += length
    if let seq {
      if firstSeq == 0 { firstSeq = seq }
      lastSeq = seq
    }
    if let room { rooms.insert(room) }
    if offset - start >= RoomIndex.blockTarget || rooms.count >= RoomIndex.maxRooms {
      return finish()
    }
    return nil
  }

  /// Closes the block in progress, if it holds any line.
  mutating func finish() -> RoomIndex.Entry? {
    guard offset > start else { return nil }
    let entry = RoomIndex.Entry(
      start: start, end: offset, firstSeq: firstSeq, lastSeq: lastSeq, rooms: rooms.sorted())
    start = offset
    firstSeq = 0
    lastSeq = 0
    rooms.removeAll()
    return entry
  }
}

/// The distinct room hashes of one block. It sees every stored record on the disk thread, so
/// it is a fixed open-addressing table (twice `RoomIndex.maxRooms` slots, never rehashed)
/// with a fast path for a run of one room, rather than a `Set`.
private struct RoomHashSet: Sendable {
  private static let capacity = 2 * RoomIndex.maxRooms
  /// Slots hold hash + 1; 0 marks an empty slot.
  private var slots = [UInt64](repeating: 0, count: RoomHashSet.capacity)
  private var members: [UInt32] = []
  private var last: UInt32?

  var count: Int { members.count }

  mutating func insert(_ hash: UInt32) {
    if hash == last { return }
    last = hash
    let key = UInt64(hash) + 1
    var slot = Int(hash.multipliedFullWidth(by: 0x9E37_79B9).high) & (Self.capacity - 1)
    while true {
      let current = slots[slot]
      if current == key { return }
      if current == 0 {
        slots[slot] = key
        members.append(hash)
        return
      }
      slot = (slot + 1) & (Self.capacity - 1)
    }
  }

  func sorted() -> [UInt32] { members.sorted() }

  mutating func removeAll() {
    // Clear only the slots in use: a block of one room costs one store, not 1024.
    for hash in members {
      var slot = Int(hash.multipliedFullWidth(by: 0x9E37_79B9).high) & (Self.capacity - 1)
      while slots[slot] != 0 {
        slots[slot] = 0
        slot = (slot + 1) & (Self.capacity - 1)
      }
    }
    members.removeAll(keepingCapacity: true)
    last = nil
  }
}
