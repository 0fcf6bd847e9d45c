import LinkCore

/// The ids of the most recent inbound records of each room, so that a message the backend
/// delivers again (after a reconnect, a crash, a replay from an id) is recognised and not
/// stored twice.
///
/// A room keeps at most `capacity` ids; the oldest leaves when a new one comes. Ids are kept
/// as 64-bit hashes drawn from a per-process secret basis (`FNV1a`), so memory is a few bytes
/// an id whatever their length, and ids chosen to collide cannot be worked out in advance; two
/// different ids of one room with equal hashes (about one chance in 2⁶⁴ ÷ `capacity` for each
/// message) would drop the second. Rooms are told apart by their JSON as stored (`7` and
/// `"7"` are two rooms), and at most `maxRooms` keep a window: past that, the room least
/// recently seen gives its up. Nothing here touches the disk: `MessageStore` fills it from the
/// store's tail at start and with every record it keeps.
///
/// Every room's data lives in arrays of this value, one element a room, so each access is
/// checked when compiled: a room kept as an object would cost a run-time exclusivity check on
/// every field it touches, for every message.
struct DedupeWindow {
  /// The most ids a room keeps; 0 keeps none.
  let capacity: Int
  /// The most rooms that keep ids.
  let maxRooms: Int
  /// Hashes ids as the window keeps them.
  let hasher: IDHasher
  /// Each room's JSON, its FNV-1a hash, when it was last seen, its ids and its newest id.
  private var rooms: [[UInt8]] = []
  private var roomHashes: [UInt32] = []
  private var lastSeen: [UInt64] = []
  private var recent: [RecentIDs] = []
  private var newest: [[UInt8]] = []
  /// Room indices by room hash (open addressing, linear probing; -1 is free), twice as many
  /// slots as rooms may keep windows.
  private var roomSlots: [Int32]
  /// Increases with every insert, for choosing the room least recently seen.
  private var clock: UInt64 = 0

  /// An empty window; `basis` is the hash's secret (random unless a test fixes it).
  init(capacity: Int, maxRooms: Int = 1024, basis: UInt64 = .random(in: .min ... .max)) {
    self.capacity = max(0, capacity)
    self.maxRooms = max(1, maxRooms)
    hasher = IDHasher(basis: basis)
    var slots = 16
    while slots < self.maxRooms * 2 { slots *= 2 }
    roomSlots = Array(repeating: -1, count: slots)
  }

  /// Whether ids are kept at all.
  var isEnabled: Bool { capacity > 0 }

  /// How many rooms keep ids.
  var roomCount: Int { rooms.count }

  /// How many ids are kept, over every room.
  var count: Int { recent.reduce(0) { $0 + $1.count } }

  /// Whether `id` is among `room`'s recent ids; if not, it becomes the newest of them. Returns
  /// true for a new id (the record is to be kept), false for a duplicate.
  @discardableResult
  mutating func insert(room: [UInt8]?, id: UnsafeRawBufferPointer) -> Bool {
    guard isEnabled else { return true }
    let index = self.index(of: room ?? [])
    guard recent[index].insert(hasher.hash(id), capacity: capacity) else { return false }
    Self.overwrite(&newest[index], with: id)
    return true
  }

  /// Puts `bytes` in `array`, in place when it is as long (the ids of one backend mostly are).
  @inline(__always)
  private static func overwrite(_ array: inout [UInt8], with bytes: UnsafeRawBufferPointer) {
    guard array.count == bytes.count, let from = bytes.baseAddress else {
      array = Array(bytes)
      return
    }
    array.withUnsafeMutableBytes { $0.baseAddress?.copyMemory(from: from, byteCount: bytes.count) }
  }

  /// `insert(room:id:)` for an id in any collection of bytes.
  @discardableResult
  mutating func insert(room: [UInt8]?, id: some Collection<UInt8>) -> Bool {
    Array(id).withUnsafeBytes { insert(room: room, id: $0) }
  }

  /// The hash under which `id` is kept (the same for the same id, in this process only).
  func hash(_ id: some Collection<UInt8>) -> UInt64 { hasher.hash(id) }

  /// Puts back what the store's tail holds of `room`: its ids' hashes, oldest first, and its
  /// newest id. Ids already kept (records stored since) stay the newest, and so does a newest
  /// id already known.
  mutating func restore(room: [UInt8], hashes: [UInt64], newestID: [UInt8]?) {
    guard isEnabled, !hashes.isEmpty else { return }
    let index = self.index(of: room)
    let kept = recent[index]
    var restored = RecentIDs()
    for hash in hashes.suffix(capacity) { _ = restored.insert(hash, capacity: capacity) }
    for hash in kept.oldestFirst { _ = restored.insert(hash, capacity: capacity) }
    recent[index] = restored
    if newest[index].isEmpty, let newestID { newest[index] = newestID }
  }

  /// Whether `id` is among `room`'s recent ids (nothing changes).
  func contains(room: [UInt8]?, id: some Collection<UInt8>) -> Bool {
    guard isEnabled, let index = find(room ?? []).index else { return false }
    return recent[index].contains(hasher.hash(id))
  }

  /// The newest id of `room`, as it was inserted last (the position a backend replays from).
  func newestID(room: [UInt8]?) -> [UInt8]? {
    find(room ?? []).index.flatMap { newest[$0].isEmpty ? nil : newest[$0] }
  }

  private var mask: Int { roomSlots.count - 1 }

  /// `room`'s index if it has one, and the slot it is in or would take.
  private func find(_ room: [UInt8]) -> (index: Int?, slot: Int) {
    let hash = FNV1a.hash32(room)
    var slot = Int(hash) & mask
    while true {
      let index = Int(roomSlots[slot])
      if index < 0 { return (nil, slot) }
      if roomHashes[index] == hash && rooms[index] == room { return (index, slot) }
      slot = (slot + 1) & mask
    }
  }

  /// `room`'s index, made (and the room least recently seen given up) when it has none.
  private mutating func index(of room: [UInt8]) -> Int {
    clock &+= 1
    let found = find(room)
    if let index = found.index {
      lastSeen[index] = clock
      return index
    }
    if rooms.count < maxRooms {
      rooms.append(room)
      roomHashes.append(FNV1a.hash32(room))
      lastSeen.append(clock)
      recent.append(RecentIDs())
      newest.append([])
      roomSlots[found.slot] = Int32(rooms.count - 1)
      return rooms.count - 1
    }
    // Rare: the slots are simply laid out again.
    let index = lastSeen.indices.min { lastSeen[$0] < lastSeen[$1] } ?? 0
    rooms[index] = room
    roomHashes[index] = FNV1a.hash32(room)
    lastSeen[index] = clock
    recent[index] = RecentIDs()
    newest[index] = []
    roomSlots = Array(repeating: -1, count: roomSlots.count)
    for (i, hash) in roomHashes.enumerated() {
      var slot = Int(hash) & mask
      while roomSlots[slot] >= 0 { slot = (slot + 1) & mask }
      roomSlots[slot] = Int32(i)
    }
    return index
  }
}

/// The window's id hash: FNV-1a from a secret basis, a value that may cross threads.
struct IDHasher: Sendable {
  let basis: UInt64

  /// The hash under which `id` is kept.
  func hash(_ id: some Collection<UInt8>) -> UInt64 { FNV1a.hash64(id, basis: basis) }

  /// The hash of bytes read where they lie.
  func hash(_ id: UnsafeRawBufferPointer) -> UInt64 { FNV1a.hash64(id, basis: basis) }
}

/// One room's recent ids: their hashes in arrival order (a ring) and an open-addressing table
/// of positions in the ring for lookups, both grown as ids come, up to the window's capacity.
///
/// An insert into a full ring is the common case of a long flood: it reads and writes both
/// arrays through one pointer each, so that the lookup, the oldest id's removal and the new
/// one's placement cost no bounds or uniqueness checks beyond the first.
private struct RecentIDs {
  /// Hashes, oldest at `head` once the ring is full.
  private var ring: [UInt64] = []
  private var head = 0
  /// Ring positions by hash (linear probing); `empty` marks a free slot. Its size is a power
  /// of two at least 4/3 of the ids it holds.
  private var table: [UInt32] = Array(repeating: RecentIDs.empty, count: 16)
  private static let empty = UInt32.max

  var count: Int { ring.count }

  /// The hashes, oldest first.
  var oldestFirst: [UInt64] { Array(ring[head...] + ring[..<head]) }

  func contains(_ hash: UInt64) -> Bool {
    ring.withUnsafeBufferPointer { ring in
      table.withUnsafeBufferPointer { table in Self.slot(of: hash, ring, table).found }
    }
  }

  mutating func insert(_ hash: UInt64, capacity: Int) -> Bool {
    if ring.count < capacity { return grow(hash, capacity: capacity) }
    let head = self.head
    let inserted = ring.withUnsafeMutableBufferPointer { ring in
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
    return inserted
  }

  /// An insert while the ring is not full yet.
  private mutating func grow(_ hash: UInt64, capacity: Int) -> Bool {
    guard !contains(hash) else { return false }
    if ring.count == ring.capacity {
      // Grown by doubling, but never past the capacity: a full room holds no spare slots.
      ring.reserveCapacity(min(capacity, max(16, ring.count * 2)))
    }
    ring.append(hash)
    if ring.count * 4 > table.count * 3 {
      table = Array(repeating: Self.empty, count: table.count * 2)
      ring.withUnsafeMutableBufferPointer { ring in
        table.withUnsafeMutableBufferPointer { table in
          for position in ring.indices { Self.place(UInt32(position), ring, table) }
        }
      }
    } else {
      let position = UInt32(ring.count - 1)
      ring.withUnsafeMutableBufferPointer { ring in
        table.withUnsafeMutableBufferPointer { table in Self.place(position, ring, table) }
      }
    }
    return true
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
