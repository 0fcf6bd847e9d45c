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
    let now = Self.seq(inserted)
    return table.withUnsafeBytes { raw in
      let base = UnsafeMutableRawPointer(mutating: raw.baseAddress! + offset)
      var bucket = Self.home(hash, buckets)
      for _ in 0..<buckets {
        let scan = Bucket(base + bucket &* 64, hash: hash, now: now, capacity: capacity)
        if scan.matches,
          ring.withUnsafeBufferPointer({
            Self.holds(hash, scan, $0, head: head, now: now, capacity: capacity)
          })
        {
          return true
        }
        guard scan.overflowed else { return false }
        bucket = bucket &+ 1 == buckets ? 0 : bucket &+ 1
      }
      return false
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
    let home = Self.home(hash, buckets)
    let head = self.head
    let added = ring.withUnsafeBufferPointer { ring in
      Self.withBuckets(&table, &offset) { base -> Bool in
        var bucket = home
        var free = -1
        for _ in 0..<buckets {
          let line = base + bucket &* 64
          let scan = Bucket(line, hash: hash, now: now, capacity: capacity)
          if scan.matches, Self.holds(hash, scan, ring, head: head, now: now, capacity: capacity) {
            return false
          }
          // Free slots are written over with a seq that has just left the window, so that
          // no slot left alone keeps a seq until the 22 bits come round to it again.
          scan.refresh(line)
          if free < 0, let lane = scan.firstFree { free = bucket &* Self.lanes &+ lane }
          guard scan.overflowed else { break }
          bucket = bucket &+ 1 == buckets ? 0 : bucket &+ 1
        }
        Self.place(
          Self.fingerprint(hash) | now, seq: now, home: home, slot: free, base,
          buckets: buckets, capacity: capacity)
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
    if inserted <= UInt64(capacity), inserted >= UInt64(buckets &* Self.idsPerBucket) {
      grow(capacity: capacity)
    }
    if let id {
      keepNewest(id)
      newestTime = time
    }
    return true
  }

  /// Whether one of the entries `scan` found with `hash`'s fingerprint is `hash`: the ring at
  /// its seq holds it whole. Out of line: a fingerprint matches about one new id in a hundred.
  @inline(never)
  private static func holds(
    _ hash: UInt64, _ scan: Bucket, _ ring: UnsafeBufferPointer<UInt64>, head: Int, now: UInt32,
    capacity: Int
  ) -> Bool {
    for lane in 0..<(Self.lanes - 1) where scan.matches(lane: lane) {
      let age = Int((now &- scan.entries[lane]) & Self.seqMask)
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

  /// A table twice the size (at most the full window's), filled again from the ring.
  @inline(never)
  private mutating func grow(capacity: Int) {
    let larger = min(Self.buckets(for: UInt64(capacity), capacity: capacity), buckets * 2)
    guard larger > buckets else { return }
    buckets = larger
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

/// One bucket's 16 entries, compared with a hash in one go.
///
/// The comparisons are arithmetic on vectors of one type (a difference's sign spread over its
/// lane), and their results one word of bits: `SIMDMask`'s operations and a comparison with a
/// scalar compiled to loops over the lanes, a conversion between lane types and `wrappedSum` to
/// calls, and a static constant is a lazy global (`swift_once` each time), so the constants are
/// built where they are used.
private struct Bucket {
  let entries: SIMD16<UInt32>
  /// All ones in the lanes whose seq is in the window.
  let live: SIMD16<UInt32>
  /// Bit n: lane n is live. Bit 16 + n: lane n is live with the hash's fingerprint (lane 15, the
  /// overflow seq, may be one: only lanes 0 to 14 are looked for in the ring).
  let bits: UInt32
  /// A seq that has just left the window, for free slots.
  let stale: UInt32

  @inline(__always)
  init(_ line: UnsafeMutableRawPointer, hash: UInt64, now: UInt32, capacity: Int) {
    entries = line.loadUnaligned(as: SIMD16<UInt32>.self)
    let mask = SIMD16<UInt32>(repeating: RecentIDs.seqMask)
    let ages = (SIMD16<UInt32>(repeating: now &- 1) &- entries) & mask
    // Ages and the capacity are below 2^22: the difference's sign says which is smaller, and
    // 0 - sign is all ones or none.
    let zero = SIMD16<UInt32>(repeating: 0)
    live =
      zero &- ((ages &- SIMD16<UInt32>(repeating: UInt32(truncatingIfNeeded: capacity))) &>> 31)
    let other = (entries & ~mask) ^ SIMD16<UInt32>(repeating: RecentIDs.fingerprint(hash))
    // x | -x has its sign bit set unless x is 0.
    let same = ((other | (zero &- other)) &>> 31) &- 1
    let weights = SIMD16<UInt32>(
      1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
    let lanes = (live & weights) | (live & same & (weights &<< 16))
    // The lanes' bits are disjoint: or-ing the halves together sums them.
    let eight = lanes.lowHalf | lanes.highHalf
    let four = eight.lowHalf | eight.highHalf
    let two = four.lowHalf | four.highHalf
    bits = two[0] | two[1]
    stale = (now &- UInt32(truncatingIfNeeded: capacity) &- 1) & RecentIDs.seqMask
  }

  /// Whether an entry may have the hash's fingerprint.
  var matches: Bool { bits > 0xFFFF }

  /// Whether lane `lane` is live with the hash's fingerprint.
  func matches(lane: Int) -> Bool { bits & (1 << (16 + lane)) != 0 }

  /// Whether an id that went past this bucket is live: a lookup goes on to the next.
  var overflowed: Bool { bits & 0x8000 != 0 }

  /// The first free lane, if any.
  var firstFree: Int? {
    let free = ~bits & 0x7FFF
    return free == 0 ? nil : free.trailingZeroBitCount
  }

  /// Writes the bucket back with its free slots' seqs made `stale`.
  @inline(__always)
  func refresh(_ line: UnsafeMutableRawPointer) {
    line.storeBytes(
      of: (entries & live) | (SIMD16<UInt32>(repeating: stale) & ~live), as: SIMD16<UInt32>.self)
  }
}
