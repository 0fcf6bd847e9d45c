/// One room's recent ids for `DedupeWindow`: their hashes in arrival order (a ring), an
/// open-addressing table of ring positions for lookups, and the newest id's bytes.
///
/// An insert into a full ring is the common case of a long flood: it reads and writes both
/// arrays through one pointer each, lent for the call, so that the lookup, the oldest id's
/// removal and the new one's placement cost no bounds or uniqueness checks beyond the first.
struct RecentIDs {
  /// Hashes, oldest at `head` once the ring is full. It grows by doubling up to the window's
  /// capacity, never past it: a full room holds no spare slots.
  private var ring: [UInt64] = []
  private var head = 0
  /// Ring positions by hash (linear probing); `empty` marks a free slot. Its size is a power
  /// of two at least 4/3 of the ids it holds.
  private var table: [UInt32] = Array(repeating: RecentIDs.empty, count: 16)
  private static let empty = UInt32.max
  /// The newest id inserted with its bytes, or one `DedupeWindow.restore` gave.
  var newest: [UInt8]?

  /// How many ids it holds.
  var count: Int { ring.count }

  /// The hashes, oldest first.
  var oldestFirst: [UInt64] { Array(ring[head...] + ring[..<head]) }

  func contains(_ hash: UInt64) -> Bool {
    ring.withUnsafeBufferPointer { ring in
      table.withUnsafeBufferPointer { table in Self.slot(of: hash, ring, table).found }
    }
  }

  /// Adds `hash` unless it is there (false then); `id`, when given, becomes the newest id.
  mutating func insert(_ hash: UInt64, id: UnsafeRawBufferPointer?, capacity: Int) -> Bool {
    let inserted: Bool
    if ring.count < capacity {
      inserted = grow(hash, capacity: capacity)
    } else {
      let head = self.head
      inserted = ring.withUnsafeMutableBufferPointer { ring in
        table.withUnsafeMutableBufferPointer { table in
          guard !Self.slot(of: hash, UnsafeBufferPointer(ring), UnsafeBufferPointer(table)).found
          else { return false }
          // Full: the oldest leaves, the new one takes its place in the ring.
          Self.remove(position: UInt32(head), ring, table)
          ring[head] = hash
          Self.place(UInt32(head), ring, table)
          return true
        }
      }
      if inserted { self.head = head + 1 == ring.count ? 0 : head + 1 }
    }
    if inserted, let id { keepNewest(id) }
    return inserted
  }

  /// An insert while the ring is not full yet.
  private mutating func grow(_ hash: UInt64, capacity: Int) -> Bool {
    let probe = ring.withUnsafeBufferPointer { ring in
      table.withUnsafeBufferPointer { table in Self.slot(of: hash, ring, table) }
    }
    guard !probe.found else { return false }
    if ring.count == ring.capacity { ring.reserveCapacity(min(capacity, max(16, ring.count * 2))) }
    ring.append(hash)
    if ring.count * 4 <= table.count * 3 {
      table[probe.slot] = UInt32(ring.count - 1)
      return true
    }
    table = Array(repeating: Self.empty, count: table.count * 2)
    ring.withUnsafeMutableBufferPointer { ring in
      table.withUnsafeMutableBufferPointer { table in
        for position in ring.indices { Self.place(UInt32(position), ring, table) }
      }
    }
    return true
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

  /// Where `hash` is, or the free slot it would take.
  @inline(__always)
  private static func slot(
    of hash: UInt64, _ ring: UnsafeBufferPointer<UInt64>, _ table: UnsafeBufferPointer<UInt32>
  ) -> (slot: Int, found: Bool) {
    let mask = table.count - 1
    var slot = Int(truncatingIfNeeded: hash) & mask
    while true {
      let position = table[slot]
      if position == empty { return (slot, false) }
      if ring[Int(position)] == hash { return (slot, true) }
      slot = (slot + 1) & mask
    }
  }

  @inline(__always)
  private static func place(
    _ position: UInt32, _ ring: UnsafeMutableBufferPointer<UInt64>,
    _ table: UnsafeMutableBufferPointer<UInt32>
  ) {
    let mask = table.count - 1
    var slot = Int(truncatingIfNeeded: ring[Int(position)]) & mask
    while table[slot] != empty { slot = (slot + 1) & mask }
    table[slot] = position
  }

  /// Removes the ring position `position` from the table, moving later entries of its probe
  /// run back into the gap (deletion without tombstones keeps lookups short however long the
  /// room lives).
  @inline(__always)
  private static func remove(
    position: UInt32, _ ring: UnsafeMutableBufferPointer<UInt64>,
    _ table: UnsafeMutableBufferPointer<UInt32>
  ) {
    let mask = table.count - 1
    var gap = Int(truncatingIfNeeded: ring[Int(position)]) & mask
    while table[gap] != position {
      // Every position in the ring is in the table.
      guard table[gap] != empty else { return }
      gap = (gap + 1) & mask
    }
    var slot = (gap + 1) & mask
    while table[slot] != empty {
      let home = Int(truncatingIfNeeded: ring[Int(table[slot])]) & mask
      // The entry may move into the gap unless its home lies cyclically in (gap, slot].
      if (slot - home) & mask >= (slot - gap) & mask {
        table[gap] = table[slot]
        gap = slot
      }
      slot = (slot + 1) & mask
    }
    table[gap] = empty
  }
}
