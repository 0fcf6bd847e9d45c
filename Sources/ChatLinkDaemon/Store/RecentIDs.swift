import CBucket

/// One room's recent ids for `DedupeWindow`: their hashes in arrival order (a ring), and a
/// table of 64-byte buckets that finds them.
///
/// A table entry is 32 bits: 10 bits of the hash (its fingerprint) and the number of the insert
/// that brought it (its seq, 22 bits). An id is live while it is among the room's last
/// `capacity` inserts, which its seq tells without reading anything else, so the oldest id
/// leaves the window at no cost: its slot is simply free for the next id of its bucket. An
/// insert reads and writes one bucket (one cache line, compared in one go as a vector) and the
/// ring's next slot; the ring, which holds each hash whole, is read only when a fingerprint
/// matches (a duplicate, or one id in about a hundred), to compare all 64 bits. A bucket holds 15
/// entries and, in its last lane, the seq of the newest id that went past it because it was
/// full: a lookup goes on to the next bucket only while that id is live. The table is sized for 9
/// ids a bucket on average (60 % of its slots), so about one lookup in ten reads a second
/// bucket; a full room of 10,000 ids takes 80 KiB of ring and 70 KiB of table.
struct RecentIDs {
  /// The hashes, oldest at `head` once the ring is full. It grows by doubling up to the
  /// window's capacity, never past it.
  private var ring: [UInt64] = []
  private var head = 0
  /// The buckets, 16 entries each, from `offset` bytes in: the first 64-byte boundary of the
  /// storage (which has one bucket more than `buckets` for that) when it was last written. An
  /// array's storage starts on no such boundary, and a bucket across two cache lines would cost
  /// two misses; a copy of the array (a snapshot's, then written) may start elsewhere, so each
  /// write moves the buckets to the boundary of the storage it writes when they are not there.
  private var table: [UInt32]
  private var offset = 0
  /// How many buckets the table has: `Self.buckets(for: inserted, capacity:)`.
  private(set) var buckets: Int
  /// How many ids were ever inserted: the next id's seq.
  private(set) var inserted: UInt64 = 0
  /// The newest id inserted with its bytes, or one `DedupeWindow.restore` gave.
  var newest: [UInt8]?
  /// When the newest id's record was stored, in microseconds since the epoch (0: unknown).
  var newestTime: Int64 = 0
  /// When `DedupeWindow` last saw the room (its clock), to give up the room least recently
  /// seen: kept with the ids, which every insert writes anyway.
  var lastSeen: UInt64 = 0

  /// An empty room of a window of `capacity` ids.
  init(capacity: Int) {
    buckets = 1
    table = Self.emptyTable(buckets: 1, inserted: 0, capacity: capacity)
    offset = Self.boundary(of: table)
  }

  /// A room as `parts` gave it (a snapshot of the window), or nil when they cannot be one for
  /// `capacity`: as many hashes in the ring as its inserts leave live, its oldest where its
  /// inserts put it, and the table the size those inserts made it.
  init?(parts: Parts, capacity: Int) {
    let buckets = Self.buckets(for: parts.inserted, capacity: capacity)
    guard capacity > 0, parts.ring.count == Int(min(parts.inserted, UInt64(capacity))),
      parts.head == Int(parts.inserted % UInt64(capacity)),
      parts.table.count == buckets * Self.lanes
    else { return nil }
    ring = parts.ring
    head = parts.head
    inserted = parts.inserted
    self.buckets = buckets
    table = Self.emptyTable(buckets: buckets, inserted: 0, capacity: capacity)
    offset = Self.boundary(of: table)
    Self.withBuckets(&table, &offset) { base in
      parts.table.withUnsafeBytes { words in
        guard let from = words.baseAddress else { return }
        base.copyMemory(from: from, byteCount: words.count)
      }
    }
  }

  /// What a snapshot keeps of a room, as `init(parts:capacity:)` takes it back: the table as it
  /// lies, so that a snapshot is read without an insert.
  struct Parts {
    var inserted: UInt64
    var head: Int
    var ring: [UInt64]
    var table: [UInt32]
  }

  /// Its ring, its inserts and its table, without the table's alignment.
  var parts: Parts {
    let words = Array(table[(offset / 4)..<(offset / 4 + buckets * Self.lanes)])
    return Parts(inserted: inserted, head: head, ring: ring, table: words)
  }

  /// How many ids it holds.
  var count: Int { ring.count }

  /// The hashes, oldest first.
  var oldestFirst: [UInt64] { Array(ring[head...] + ring[..<head]) }

  /// Whether `hash` is among its ids.
  func contains(_ hash: UInt64, capacity: Int) -> Bool {
    table.withUnsafeBytes { raw in
      guard let base = raw.baseAddress else { return false }
      return ring.withUnsafeBufferPointer { ring in
        Self.lookUp(
          hash, base + offset, ring, head: head, buckets: buckets, now: Self.seq(inserted),
          capacity: capacity
        ).found
      }
    }
  }

  /// Adds `hash` unless it is there (false then); `id`, when given, becomes the newest id,
  /// stored at `time` (microseconds since the epoch).
  @inline(__always)
  mutating func insert(
    _ hash: UInt64, id: UnsafeRawBufferPointer?, time: Int64 = 0, capacity: Int
  ) -> Bool {
    let now = Self.seq(inserted)
    let buckets = self.buckets
    let head = self.head
    let added = ring.withUnsafeBufferPointer { ring in
      Self.withBuckets(&table, &offset) { base -> Bool in
        let lookup = Self.lookUp(
          hash, base, ring, head: head, buckets: buckets, now: now, capacity: capacity)
        if lookup.found { return false }
        Self.place(
          Self.fingerprint(hash) | now, seq: now, home: Self.home(hash, buckets),
          slot: lookup.free, base, buckets: buckets, capacity: capacity)
        return true
      }
    }
    guard added else { return false }
    if ring.count < capacity {
      if ring.count == ring.capacity { enlargeRing(capacity: capacity) }
      ring.append(hash)
      self.head = ring.count == capacity ? 0 : ring.count
    } else {
      ring[head] = hash
      self.head = head &+ 1 == capacity ? 0 : head &+ 1
    }
    inserted &+= 1
    // After the insert, not before: a duplicate must not grow the table, whose size then
    // follows from the inserts alone (`buckets(for:capacity:)`, which a snapshot is checked by).
    if inserted & (Self.refreshInterval &- 1) == 0
      || (inserted <= UInt64(capacity) && inserted >= UInt64(buckets &* Self.idsPerBucket))
    {
      refill(capacity: capacity)
    }
    if let id {
      keepNewest(id)
      newestTime = time
    }
    return true
  }

  /// What a lookup found: whether the hash is there, and if not the first free slot of the
  /// buckets it read (-1: none).
  private struct Lookup {
    var found: Bool
    var free: Int
  }

  /// Looks for `hash` from its home bucket on, going on to the next bucket while an id that
  /// went past the one read is live.
  @inline(__always)
  private static func lookUp(
    _ hash: UInt64, _ base: UnsafeRawPointer, _ ring: UnsafeBufferPointer<UInt64>, head: Int,
    buckets: Int, now: UInt32, capacity: Int
  ) -> Lookup {
    let fingerprint = Self.fingerprint(hash)
    var bucket = home(hash, buckets)
    var free = -1
    for _ in 0..<buckets {
      let line = base + bucket &* 64
      let bits = chatlink_bucket_scan(line, fingerprint, now, UInt32(truncatingIfNeeded: capacity))
      if bits > 0xFFFF,
        holds(hash, bits >> 16, line, ring, head: head, now: now, capacity: capacity)
      {
        return Lookup(found: true, free: free)
      }
      let unused = ~bits & 0x7FFF
      if free < 0, unused != 0 { free = bucket &* lanes &+ unused.trailingZeroBitCount }
      guard bits & 0x8000 != 0 else { break }
      bucket = bucket &+ 1 == buckets ? 0 : bucket &+ 1
    }
    return Lookup(found: false, free: free)
  }

  /// Whether one of the lanes of `line` set in `same` (live, with `hash`'s fingerprint) is
  /// `hash`: the ring at its seq holds it whole. Out of line: a fingerprint matches about one
  /// new id in a hundred.
  @inline(never)
  private static func holds(
    _ hash: UInt64, _ same: UInt32, _ line: UnsafeRawPointer, _ ring: UnsafeBufferPointer<UInt64>,
    head: Int, now: UInt32, capacity: Int
  ) -> Bool {
    var same = same
    while same != 0 {
      let lane = same.trailingZeroBitCount
      same &= same &- 1
      let entry = line.load(fromByteOffset: lane &* 4, as: UInt32.self)
      let age = Int((now &- entry) & Self.seqMask)
      let position = head >= age ? head - age : head + capacity - age
      if position >= 0, position < ring.count, ring[position] == hash { return true }
    }
    return false
  }

  /// Puts `entry` in `slot`, or when the lookup found none the first free slot past its
  /// buckets, marking each full bucket it goes past with `seq`.
  @inline(__always)
  private static func place(
    _ entry: UInt32, seq: UInt32, home: Int, slot: Int, _ base: UnsafeMutableRawPointer,
    buckets: Int, capacity: Int
  ) {
    let slot =
      slot >= 0 ? slot : firstFree(from: home, base, buckets: buckets, now: seq, capacity: capacity)
    let bucket = slot / lanes
    var passed = home
    while passed != bucket {
      base.storeBytes(of: seq, toByteOffset: passed &* 64 &+ 60, as: UInt32.self)
      passed = passed &+ 1 == buckets ? 0 : passed &+ 1
    }
    base.storeBytes(of: entry, toByteOffset: slot &* 4, as: UInt32.self)
  }

  /// The first free slot from bucket `home` on. A table is never full (at most 60 % of its
  /// slots are live); a damaged snapshot's that is gives slot 0, losing an id, not the daemon.
  @inline(never)
  private static func firstFree(
    from home: Int, _ base: UnsafeMutableRawPointer, buckets: Int, now: UInt32, capacity: Int
  ) -> Int {
    var bucket = home
    for _ in 0..<buckets {
      for lane in 0..<(lanes - 1) {
        let entry = base.load(fromByteOffset: bucket &* 64 &+ lane &* 4, as: UInt32.self)
        if (now &- entry &- 1) & seqMask >= UInt32(truncatingIfNeeded: capacity) {
          return bucket &* lanes &+ lane
        }
      }
      bucket = bucket &+ 1 == buckets ? 0 : bucket &+ 1
    }
    return 0
  }

  /// Room for twice as many ids in the ring, up to the window's capacity and never past it
  /// (`append` would double a full room's 10,000 to 16,384).
  @inline(never)
  private mutating func enlargeRing(capacity: Int) {
    ring.reserveCapacity(min(capacity, max(16, ring.count * 2)))
  }

  /// The table filled again from the ring: twice the size (at most the full window's) while
  /// the ids come, the same size every `refreshInterval` inserts after. Refilled, the table's
  /// free slots hold a seq that has just left the window: a slot left alone would come back to
  /// life when the 22 bits of the seqs came round to it, 2^22 inserts on, and be neither free
  /// nor found (the ring holds another id at its seq) until the next refill.
  @inline(never)
  private mutating func refill(capacity: Int) {
    let full = Self.buckets(for: UInt64(capacity), capacity: capacity)
    buckets = inserted <= UInt64(capacity) ? min(full, buckets * 2) : buckets
    table = Self.emptyTable(buckets: buckets, inserted: inserted, capacity: capacity)
    offset = Self.boundary(of: table)
    let first = inserted &- UInt64(ring.count)
    let now = Self.seq(inserted)
    let buckets = self.buckets
    let hashes = oldestFirst
    Self.withBuckets(&table, &offset) { base in
      for (n, hash) in hashes.enumerated() {
        let seq = Self.seq(first &+ UInt64(n))
        let slot = Self.firstFree(
          from: Self.home(hash, buckets), base, buckets: buckets, now: now, capacity: capacity)
        Self.place(
          Self.fingerprint(hash) | seq, seq: seq, home: Self.home(hash, buckets), slot: slot,
          base, buckets: buckets, capacity: capacity)
      }
    }
  }

  /// Keeps `id` as the newest, in place when it is as long as the last (the ids of one
  /// backend mostly are).
  private mutating func keepNewest(_ id: UnsafeRawBufferPointer) {
    guard newest?.count == id.count, let from = id.baseAddress else {
      newest = Array(id)
      return
    }
    newest?.withUnsafeMutableBytes { $0.baseAddress?.copyMemory(from: from, byteCount: id.count) }
  }

  /// Entries a bucket has, the last its overflow seq.
  static let lanes = 16
  /// Ids a bucket holds on average once the table has grown for them.
  static let idsPerBucket = 9
  /// Inserts between two refills of a full table (`refill(capacity:)`).
  static let refreshInterval: UInt64 = 1 << 21
  fileprivate static let seqBits: UInt32 = 22
  fileprivate static let seqMask: UInt32 = (1 << seqBits) - 1

  /// How many buckets a room's table has after `inserted` inserts: doubled from one while the
  /// ids come, up to what `capacity` of them need.
  static func buckets(for inserted: UInt64, capacity: Int) -> Int {
    let full = max(1, (capacity + idsPerBucket - 1) / idsPerBucket)
    let ids = Int(min(inserted, UInt64(capacity)))
    var buckets = 1
    while buckets < full, ids >= buckets * idsPerBucket { buckets *= 2 }
    return min(buckets, full)
  }

  /// A table of free slots: each entry's seq is the one `capacity` + 1 inserts before
  /// `inserted`, gone from the window.
  private static func emptyTable(buckets: Int, inserted: UInt64, capacity: Int) -> [UInt32] {
    [UInt32](repeating: seq(inserted &- UInt64(capacity) &- 1), count: (buckets + 1) * lanes)
  }

  @inline(__always)
  fileprivate static func seq(_ inserted: UInt64) -> UInt32 {
    UInt32(truncatingIfNeeded: inserted) & seqMask
  }

  @inline(__always)
  fileprivate static func fingerprint(_ hash: UInt64) -> UInt32 {
    UInt32(truncatingIfNeeded: hash >> 54) << seqBits
  }

  /// A hash's bucket, from its low half (the fingerprint is its top bits): their product's
  /// high word spreads hashes over any number of buckets.
  @inline(__always)
  private static func home(_ hash: UInt64, _ buckets: Int) -> Int {
    Int(truncatingIfNeeded: ((hash & 0xFFFF_FFFF) &* UInt64(buckets)) >> 32)
  }

  /// The buckets of `table` to write, first moved to its storage's 64-byte boundary when they
  /// are not there (the array was copied since).
  @inline(__always)
  private static func withBuckets<R>(
    _ table: inout [UInt32], _ offset: inout Int, _ body: (UnsafeMutableRawPointer) -> R
  ) -> R {
    let (result, boundary) = table.withUnsafeMutableBytes { raw -> (R, Int) in
      // An array's storage is never empty here: it has a bucket more than the table.
      let start = raw.baseAddress.unsafelyUnwrapped
      let boundary = (64 &- Int(bitPattern: start) & 63) & 63
      if boundary != offset {
        (start + boundary).copyMemory(from: start + offset, byteCount: raw.count &- 64)
      }
      return (body(start + boundary), boundary)
    }
    offset = boundary
    return result
  }

  /// Where the first 64-byte boundary of `table`'s storage lies, in bytes.
  private static func boundary(of table: [UInt32]) -> Int {
    table.withUnsafeBytes { (64 &- Int(bitPattern: $0.baseAddress) & 63) & 63 }
  }
}
