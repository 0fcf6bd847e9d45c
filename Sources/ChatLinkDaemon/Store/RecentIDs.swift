/// One room's recent ids for `DedupeWindow`: their hashes in arrival order (a ring), the same
/// hashes in an open-addressing table for lookups, and the newest id's bytes.
///
/// The table holds the hashes themselves, so a lookup compares slots where they lie: with 10
/// rooms' windows full (more than a core's L2), every probe into a table of ring positions also
/// read the ring at random, a second cache miss for each id looked up, evicted or moved. An
/// insert into a full ring now costs two: the new id's probe and the oldest's. The ring keeps
/// only a hash's low half, from which its home slot follows (`home`), enough to find the
/// oldest's entry in its probe run; the table is sized for its ids at most 2/3 full, in any
/// size rather than a power of two (a multiply maps a hash onto it), so a full room of 10,000
/// ids takes about 160 KiB.
struct RecentIDs {
  /// Hashes, oldest at `head` once the ring is full. It grows by doubling up to the window's
  /// capacity, never past it: a full room holds no spare slots.
  private var ring: [UInt32] = []
  private var head = 0
  /// The hashes by slot (linear probing); 0 marks a free slot (a hash of 0 is kept as 1).
  private var table = [UInt64](repeating: 0, count: 16)
  /// The newest id inserted with its bytes, or one `DedupeWindow.restore` gave.
  var newest: [UInt8]?
  /// When the newest id's record was stored, in microseconds since the epoch (0: unknown).
  var newestTime: Int64 = 0
  /// When `DedupeWindow` last saw the room (its clock), to give up the room least recently
  /// seen: kept with the ids, which every insert writes anyway.
  var lastSeen: UInt64 = 0

  /// How many ids it holds.
  var count: Int { ring.count }

  /// An empty room.
  init() {}

  /// A room as `parts` gave it (a snapshot of the window written at a clean stop), or nil when
  /// they cannot be one for `capacity`: the ring no longer than the capacity and as many ids in
  /// the table as in the ring, so a free slot ends every probe run (and `insert` keeps it so).
  init?(ring: [UInt32], head: Int, table: [UInt64], capacity: Int) {
    guard ring.count <= capacity, head >= 0, head < max(1, ring.count),
      table.count >= 16, table.count * 2 >= ring.count * 3,
      table.reduce(0, { $0 + ($1 == 0 ? 0 : 1) }) == ring.count
    else { return nil }
    self.ring = ring
    self.head = head
    self.table = table
  }

  /// Its ring, the ring's oldest position and its table, as `init(ring:head:table:capacity:)`
  /// takes them back: the table is kept as it lies, so a snapshot is read without a probe.
  var parts: (ring: [UInt32], head: Int, table: [UInt64]) { (ring, head, table) }

  /// The hashes, oldest first.
  var oldestFirst: [UInt64] {
    table.withUnsafeBufferPointer { table in
      (ring[head...] + ring[..<head]).map { Self.entry(low: $0, table) ?? UInt64($0) }
    }
  }

  func contains(_ hash: UInt64) -> Bool {
    table.withUnsafeBufferPointer { Self.probe(Self.stored(hash), $0).found }
  }

  /// Adds `hash` unless it is there (false then); `id`, when given, becomes the newest id,
  /// stored at `time` (microseconds since the epoch).
  @inline(__always)
  mutating func insert(
    _ hash: UInt64, id: UnsafeRawBufferPointer?, time: Int64 = 0, capacity: Int
  ) -> Bool {
    let hash = Self.stored(hash)
    let inserted: Bool
    if ring.count < capacity {
      inserted = grow(hash, capacity: capacity)
    } else {
      let oldest = ring[head]
      inserted = table.withUnsafeMutableBufferPointer { table in
        let probe = Self.probe(hash, UnsafeBufferPointer(table))
        guard !probe.found else { return false }
        // Full: the oldest leaves, the new one takes its place in the ring. Only a table
        // that does not hold every id of its ring (a damaged snapshot's) lacks the oldest;
        // the new one then stays out of it too, so the table never holds more ids than the
        // ring, and a free slot always ends a probe.
        let freed = Self.remove(low: oldest, table)
        guard freed >= 0 else { return true }
        // The removal frees one slot: the new hash takes it when it lies on its probe before
        // the free slot the probe found (where `place` would put it, without probing again).
        let home = Self.home(hash, table.count)
        let onPath =
          Self.distance(home, freed, table.count) < Self.distance(home, probe.slot, table.count)
        table[onPath ? freed : probe.slot] = hash
        return true
      }
      if inserted {
        ring[head] = UInt32(truncatingIfNeeded: hash)
        head = head + 1 == ring.count ? 0 : head + 1
      }
    }
    if inserted, let id {
      keepNewest(id)
      newestTime = time
    }
    return inserted
  }

  /// An insert while the ring is not full yet: inlined, its rare paths out of line, so that
  /// each insert into a growing room does not save and restore registers for a call.
  @inline(__always)
  private mutating func grow(_ hash: UInt64, capacity: Int) -> Bool {
    let probe = table.withUnsafeBufferPointer { Self.probe(hash, $0) }
    guard !probe.found else { return false }
    if ring.count == ring.capacity { enlargeRing(capacity: capacity) }
    ring.append(UInt32(truncatingIfNeeded: hash))
    if ring.count * 3 <= table.count * 2 {
      table[probe.slot] = hash
      return true
    }
    enlargeTable(adding: hash, capacity: capacity)
    return true
  }

  /// Room for twice as many ids in the ring, up to the window's capacity. Out of line, as
  /// `enlargeTable` is: the usual insert, which needs neither, then saves no registers for them.
  @inline(never)
  private mutating func enlargeRing(capacity: Int) {
    ring.reserveCapacity(min(capacity, max(16, ring.count * 2)))
  }

  /// A larger table, with `hash` in it as well: at most 2/3 full, and no bigger than the full
  /// window needs.
  @inline(never)
  private mutating func enlargeTable(adding hash: UInt64, capacity: Int) {
    let old = table
    let size = min(table.count * 2, max(16, (capacity * 3 + 1) / 2))
    table = [UInt64](repeating: 0, count: max(size, (ring.count * 3 + 1) / 2))
    table.withUnsafeMutableBufferPointer { table in
      for held in old where held != 0 { Self.place(held, table) }
      Self.place(hash, table)
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

  /// The hash as the table keeps it: never 0, which marks a free slot.
  @inline(__always)
  private static func stored(_ hash: UInt64) -> UInt64 { hash == 0 ? 1 : hash }

  /// Where a hash would sit in a table of `size` slots if nothing were in the way, from its
  /// low half (all the ring keeps): their product's high word spreads hashes over any size.
  @inline(__always)
  private static func home(_ hash: UInt64, _ size: Int) -> Int {
    Int(truncatingIfNeeded: (UInt64(UInt32(truncatingIfNeeded: hash)) &* UInt64(size)) >> 32)
  }

  /// The table's hash whose low half is `low`, if any.
  private static func entry(low: UInt32, _ table: UnsafeBufferPointer<UInt64>) -> UInt64? {
    var slot = home(UInt64(low), table.count)
    while table[slot] != 0 {
      if UInt32(truncatingIfNeeded: table[slot]) == low { return table[slot] }
      slot = slot + 1 == table.count ? 0 : slot + 1
    }
    return nil
  }

  /// Where `hash` is, or the free slot it would take.
  @inline(__always)
  private static func probe(_ hash: UInt64, _ table: UnsafeBufferPointer<UInt64>) -> (
    slot: Int, found: Bool
  ) {
    var slot = home(hash, table.count)
    while true {
      let held = table[slot]
      if held == 0 { return (slot, false) }
      if held == hash { return (slot, true) }
      slot = slot + 1 == table.count ? 0 : slot + 1
    }
  }

  @inline(__always)
  private static func place(_ hash: UInt64, _ table: UnsafeMutableBufferPointer<UInt64>) {
    let slot = probe(hash, UnsafeBufferPointer(table)).slot
    table[slot] = hash
  }

  /// Removes the hash whose low half is `low` from the table (the first of its probe run: two
  /// of a room's ids whose hashes share 32 bits and a run are about one in 2³² a pair), moving
  /// later entries of its run back into the gap (deletion without tombstones keeps lookups short
  /// however long the room lives).
  /// Returns the slot left free (every other slot stays as full as it was), or -1 when no hash
  /// has that low half.
  @inline(__always)
  private static func remove(low: UInt32, _ table: UnsafeMutableBufferPointer<UInt64>) -> Int {
    let size = table.count
    var gap = home(UInt64(low), size)
    while true {
      let held = table[gap]
      guard held != 0 else { return -1 }
      if UInt32(truncatingIfNeeded: held) == low { break }
      gap = gap + 1 == size ? 0 : gap + 1
    }
    var slot = gap + 1 == size ? 0 : gap + 1
    // How far `slot` is past the gap, counted as they move rather than worked out each step.
    var toGap = 1
    while true {
      let held = table[slot]
      if held == 0 { break }
      // The entry may move into the gap unless its home lies cyclically in (gap, slot].
      if distance(home(held, size), slot, size) >= toGap {
        table[gap] = held
        gap = slot
        toGap = 0
      }
      slot = slot + 1 == size ? 0 : slot + 1
      toGap += 1
    }
    table[gap] = 0
    return gap
  }

  /// How many slots on from `from` `to` is, round the table's end.
  @inline(__always)
  private static func distance(_ from: Int, _ to: Int, _ size: Int) -> Int {
    to >= from ? to - from : to + size - from
  }
}
