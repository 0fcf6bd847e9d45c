import CBucket

// The bucket table's arithmetic: pure functions over a table's memory and a ring's, which
// `RecentIDs.Handle` calls for each insert and `refill` for each id it places again.

extension RecentIDs {
  /// What a lookup found: whether the hash is there, and if not the first free slot of the
  /// buckets it read (-1: none).
  struct Lookup {
    var found: Bool
    var free: Int
  }

  /// Looks for `hash` from its home bucket on, going on to the next bucket while an id that
  /// went past the one read is live.
  @inline(__always)
  static func lookUp(
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
  static func holds(
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
  static func place(
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
  static func firstFree(
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

  /// Entries a bucket has, the last its overflow seq.
  static let lanes = 16
  /// Ids a bucket holds on average once the table has grown for them.
  static let idsPerBucket = 9
  /// Inserts between two refills of a full table (`refill(capacity:)`).
  static let refreshInterval: UInt64 = 1 << 21
  static let seqBits: UInt32 = 22
  static let seqMask: UInt32 = (1 << seqBits) - 1

  /// How many buckets a room's table has after `inserted` inserts: doubled from one while the
  /// ids come, up to what `capacity` of them need.
  static func buckets(for inserted: UInt64, capacity: Int) -> Int {
    let full = max(1, (capacity + idsPerBucket - 1) / idsPerBucket)
    let ids = Int(min(inserted, UInt64(capacity)))
    var buckets = 1
    while buckets < full, ids >= buckets * idsPerBucket { buckets *= 2 }
    return min(buckets, full)
  }

  /// A table of free slots on a cache line's boundary: each entry's seq is the one
  /// `capacity` + 1 inserts before `inserted`, gone from the window.
  static func emptyTable(buckets: Int, inserted: UInt64, capacity: Int)
    -> (block: UnsafeMutableRawPointer, table: UnsafeMutablePointer<UInt32>)
  {
    let words = buckets * lanes
    // A bucket more than the table from malloc, the table from its first 64-byte boundary:
    // blocks the allocator aligns (`posix_memalign`) leave gaps in the heap, about 20 KiB more
    // RSS a full room.
    let block = UnsafeMutableRawPointer.allocate(byteCount: words * 4 + 64, alignment: 16)
    let start = block + ((64 &- Int(bitPattern: block) & 63) & 63)
    let table = start.bindMemory(to: UInt32.self, capacity: words)
    table.initialize(repeating: seq(inserted &- UInt64(capacity) &- 1), count: words)
    return (block, table)
  }

  /// The insert after `inserted` that refills the table (`Handle.refill(capacity:)`): the next
  /// multiple of `refreshInterval`, or sooner the one that fills the table's buckets with
  /// `idsPerBucket` ids each on average, while that is within the window (as many buckets as a
  /// full window needs hold at least `capacity` that way, so a full table never grows).
  static func nextRefill(after inserted: UInt64, buckets: Int, capacity: Int) -> UInt64 {
    let refresh = (inserted | (refreshInterval &- 1)) &+ 1
    let growth = UInt64(buckets * idsPerBucket)
    return inserted < growth && growth <= UInt64(capacity) ? min(refresh, growth) : refresh
  }

  /// The ring's first size: a room with few ids keeps a few.
  static func firstRing(_ capacity: Int) -> Int { max(1, min(16, capacity)) }

  @inline(__always)
  static func seq(_ inserted: UInt64) -> UInt32 {
    UInt32(truncatingIfNeeded: inserted) & seqMask
  }

  @inline(__always)
  static func fingerprint(_ hash: UInt64) -> UInt32 {
    UInt32(truncatingIfNeeded: hash >> 54) << seqBits
  }

  /// A hash's bucket, from its low half (the fingerprint is its top bits): their product's
  /// high word spreads hashes over any number of buckets.
  @inline(__always)
  static func home(_ hash: UInt64, _ buckets: Int) -> Int {
    Int(truncatingIfNeeded: ((hash & 0xFFFF_FFFF) &* UInt64(buckets)) >> 32)
  }
}
