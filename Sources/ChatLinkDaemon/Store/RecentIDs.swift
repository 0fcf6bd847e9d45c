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
final class RecentIDs: @unchecked Sendable {
  // Everything an insert reads and writes lies in memory this object allocates, reached
  // through one constant pointer, so an insert pays neither a uniqueness check (arrays in a
  // value would cost three: the window's array of rooms, the ring's, the table's) nor a run-time
  // exclusivity check (stored properties of an object would cost one each). Unchecked
  // `Sendable`: a room's ids belong to one thread at a time (built on the disk thread from a
  // snapshot, handed to the loop whole with their window, touched by the loop alone after).

  /// What `state` points to.
  fileprivate struct State {
    /// The hashes, oldest at `head` once the ring is full; room for `ringCapacity`, which grows
    /// by doubling up to the window's capacity, never past it.
    var ring: UnsafeMutablePointer<UInt64>
    var ringCapacity: Int
    var count = 0
    var head = 0
    /// The buckets, 16 entries each, on a 64-byte boundary: a bucket across two cache lines
    /// would cost two misses.
    var table: UnsafeMutablePointer<UInt32>
    /// The allocation the table lies in (`RecentIDs.emptyTable`), to free.
    var tableBlock: UnsafeMutableRawPointer
    /// How many buckets the table has: `RecentIDs.buckets(for: inserted, capacity:)`.
    var buckets: Int
    /// How many ids were ever inserted: the next id's seq.
    var inserted: UInt64 = 0
    /// `inserted` at the next refill (`RecentIDs.nextRefill`): one compare an insert.
    var refillAt: UInt64
    var newest: [UInt8]?
    var newestTime: Int64 = 0
    var lastSeen: UInt64 = 0
  }

  private let state: UnsafeMutablePointer<State>

  /// The pointer an insert goes through: the window keeps one for each room beside the room's
  /// object, so that an insert neither retains nor releases the object.
  var handle: Handle { Handle(state: state) }

  /// The newest id inserted with its bytes, or one `DedupeWindow.restore` gave.
  var newest: [UInt8]? {
    get { state.pointee.newest }
    set { state.pointee.newest = newValue }
  }

  /// When the newest id's record was stored, in microseconds since the epoch (0: unknown).
  var newestTime: Int64 {
    get { state.pointee.newestTime }
    set { state.pointee.newestTime = newValue }
  }

  /// When `DedupeWindow` last saw the room (its clock), to give up the room least recently
  /// seen: kept with the ids, which every insert writes anyway.
  var lastSeen: UInt64 {
    get { state.pointee.lastSeen }
    set { state.pointee.lastSeen = newValue }
  }

  /// How many buckets the table has: `Self.buckets(for: inserted, capacity:)`.
  var buckets: Int { state.pointee.buckets }

  /// How many ids were ever inserted: the next id's seq.
  var inserted: UInt64 { state.pointee.inserted }

  /// An empty room of a window of `capacity` ids.
  init(capacity: Int) {
    let empty = Self.emptyTable(buckets: 1, inserted: 0, capacity: capacity)
    state = .allocate(capacity: 1)
    state.initialize(
      to: State(
        ring: .allocate(capacity: Self.firstRing(capacity)), ringCapacity: Self.firstRing(capacity),
        table: empty.table, tableBlock: empty.block, buckets: 1,
        refillAt: Self.nextRefill(after: 0, buckets: 1, capacity: capacity)))
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
    let ringCapacity = max(parts.ring.count, Self.firstRing(capacity))
    let ring = UnsafeMutablePointer<UInt64>.allocate(capacity: ringCapacity)
    _ = UnsafeMutableBufferPointer(start: ring, count: ringCapacity).initialize(from: parts.ring)
    let (block, table) = Self.emptyTable(buckets: buckets, inserted: 0, capacity: capacity)
    _ = UnsafeMutableBufferPointer(start: table, count: buckets * Self.lanes)
      .initialize(from: parts.table)
    state = .allocate(capacity: 1)
    state.initialize(
      to: State(
        ring: ring, ringCapacity: ringCapacity, count: parts.ring.count, head: parts.head,
        table: table, tableBlock: block, buckets: buckets, inserted: parts.inserted,
        refillAt: Self.nextRefill(after: parts.inserted, buckets: buckets, capacity: capacity)))
  }

  deinit {
    state.pointee.ring.deallocate()
    state.pointee.tableBlock.deallocate()
    state.deinitialize(count: 1)
    state.deallocate()
  }

  /// What a snapshot keeps of a room, as `init(parts:capacity:)` takes it back: the table as it
  /// lies, so that a snapshot is read without an insert.
  struct Parts {
    var inserted: UInt64
    var head: Int
    var ring: [UInt64]
    var table: [UInt32]
  }

  /// Its ring, its inserts and its table, copied.
  var parts: Parts {
    let s = state.pointee
    return Parts(
      inserted: s.inserted, head: s.head,
      ring: Array(UnsafeBufferPointer(start: s.ring, count: s.count)),
      table: Array(UnsafeBufferPointer(start: s.table, count: s.buckets * Self.lanes)))
  }

  /// How many ids it holds.
  var count: Int { state.pointee.count }

  /// Where its table starts, for the tests.
  var tableAddress: Int { Int(bitPattern: state.pointee.table) }

  /// The hashes, oldest first.
  var oldestFirst: [UInt64] { handle.oldestFirst }

  /// Whether `hash` is among its ids.
  func contains(_ hash: UInt64, capacity: Int) -> Bool {
    let s = state.pointee
    return Self.lookUp(
      hash, UnsafeRawPointer(s.table), UnsafeBufferPointer(start: s.ring, count: s.count),
      head: s.head, buckets: s.buckets, now: Self.seq(s.inserted), capacity: capacity
    ).found
  }

  /// Adds `hash` unless it is there (false then); `id`, when given, becomes the newest id,
  /// stored at `time` (microseconds since the epoch).
  func insert(_ hash: UInt64, id: UnsafeRawBufferPointer?, time: Int64 = 0, capacity: Int) -> Bool {
    handle.insert(hash, id: id, time: time, capacity: capacity)
  }
}

extension RecentIDs {
  /// A room's ids reached through their pointer, as the window's inserts reach them: a value
  /// with nothing to count, valid while the room's `RecentIDs` lives. Unchecked `Sendable` for
  /// the same reason as its object: it goes where its window goes, whole.
  struct Handle: @unchecked Sendable {
    fileprivate let state: UnsafeMutablePointer<State>

    /// `RecentIDs.lastSeen`.
    var lastSeen: UInt64 {
      get { state.pointee.lastSeen }
      nonmutating set { state.pointee.lastSeen = newValue }
    }

    /// The hashes, oldest first.
    var oldestFirst: [UInt64] {
      let s = state.pointee
      return Array(UnsafeBufferPointer(start: s.ring + s.head, count: s.count - s.head))
        + Array(UnsafeBufferPointer(start: s.ring, count: s.head))
    }

    /// Adds `hash` unless it is there (false then); `id`, when given, becomes the newest id,
    /// stored at `time` (microseconds since the epoch).
    @inline(__always)
    func insert(_ hash: UInt64, id: UnsafeRawBufferPointer?, time: Int64 = 0, capacity: Int) -> Bool
    {
      let state = self.state
      let now = RecentIDs.seq(state.pointee.inserted)
      let buckets = state.pointee.buckets
      let head = state.pointee.head
      let count = state.pointee.count
      let table = UnsafeMutableRawPointer(state.pointee.table)
      let lookup = RecentIDs.lookUp(
        hash, table, UnsafeBufferPointer(start: state.pointee.ring, count: count), head: head,
        buckets: buckets, now: now, capacity: capacity)
      if lookup.found { return false }
      RecentIDs.place(
        RecentIDs.fingerprint(hash) | now, seq: now, home: RecentIDs.home(hash, buckets),
        slot: lookup.free,
        table, buckets: buckets, capacity: capacity)
      if count < capacity {
        if count == state.pointee.ringCapacity { enlargeRing(capacity: capacity) }
        state.pointee.ring[count] = hash
        state.pointee.count = count &+ 1
        state.pointee.head = count &+ 1 == capacity ? 0 : count &+ 1
      } else {
        state.pointee.ring[head] = hash
        state.pointee.head = head &+ 1 == capacity ? 0 : head &+ 1
      }
      let inserted = state.pointee.inserted &+ 1
      state.pointee.inserted = inserted
      // After the insert, not before: a duplicate must not grow the table, whose size then
      // follows from the inserts alone (`buckets(for:capacity:)`, which a snapshot is checked by).
      if inserted == state.pointee.refillAt { refill(capacity: capacity) }
      if let id {
        keepNewest(id)
        state.pointee.newestTime = time
      }
      return true
    }

    /// Room for twice as many ids in the ring, up to the window's capacity and never past it.
    @inline(never)
    fileprivate func enlargeRing(capacity: Int) {
      let s = state.pointee
      let grown = min(capacity, max(RecentIDs.firstRing(capacity), s.ringCapacity * 2))
      let ring = UnsafeMutablePointer<UInt64>.allocate(capacity: grown)
      ring.moveInitialize(from: s.ring, count: s.count)
      s.ring.deallocate()
      state.pointee.ring = ring
      state.pointee.ringCapacity = grown
    }

    /// The table filled again from the ring: twice the size (at most the full window's) while
    /// the ids come, the same size every `refreshInterval` inserts after. Refilled, the table's
    /// free slots hold a seq that has just left the window: a slot left alone would come back to
    /// life when the 22 bits of the seqs came round to it, 2^22 inserts on, and be neither free
    /// nor found (the ring holds another id at its seq) until the next refill.
    @inline(never)
    fileprivate func refill(capacity: Int) {
      let inserted = state.pointee.inserted
      let full = RecentIDs.buckets(for: UInt64(capacity), capacity: capacity)
      let old = state.pointee.buckets
      let buckets = inserted <= UInt64(capacity) ? min(full, old * 2) : old
      let (block, table) = RecentIDs.emptyTable(
        buckets: buckets, inserted: inserted, capacity: capacity)
      state.pointee.tableBlock.deallocate()
      state.pointee.tableBlock = block
      state.pointee.table = table
      state.pointee.buckets = buckets
      state.pointee.refillAt = RecentIDs.nextRefill(
        after: inserted, buckets: buckets, capacity: capacity)
      let first = inserted &- UInt64(state.pointee.count)
      let now = RecentIDs.seq(inserted)
      let base = UnsafeMutableRawPointer(table)
      for (n, hash) in oldestFirst.enumerated() {
        let seq = RecentIDs.seq(first &+ UInt64(n))
        let slot = RecentIDs.firstFree(
          from: RecentIDs.home(hash, buckets), base, buckets: buckets, now: now, capacity: capacity)
        RecentIDs.place(
          RecentIDs.fingerprint(hash) | seq, seq: seq, home: RecentIDs.home(hash, buckets),
          slot: slot,
          base, buckets: buckets, capacity: capacity)
      }
    }

    /// Keeps `id` as the newest, in place when it is as long as the last (the ids of one
    /// backend mostly are).
    fileprivate func keepNewest(_ id: UnsafeRawBufferPointer) {
      guard state.pointee.newest?.count == id.count, let from = id.baseAddress else {
        state.pointee.newest = Array(id)
        return
      }
      state.pointee.newest?.withUnsafeMutableBytes {
        $0.baseAddress?.copyMemory(from: from, byteCount: id.count)
      }
    }

  }
}
