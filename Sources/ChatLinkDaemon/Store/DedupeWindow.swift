import JSON
import LinkCore

/// The ids of the most recent inbound records of each room, so that a message the backend
/// delivers again (after a reconnect, a crash, a replay from an id) is recognised and not
/// stored twice.
///
/// A room keeps at most `capacity` ids; the oldest leaves when a new one comes. Ids are kept
/// as 64-bit hashes drawn from a per-process secret basis (`IDHasher`), so memory is a few bytes
/// an id whatever their length, and ids chosen to collide cannot be worked out in advance; two
/// different ids of one room with equal hashes (about one chance in 2⁶⁴ ÷ `capacity` for each
/// message) would drop the second. Rooms are told apart by their JSON as stored (`7` and
/// `"7"` are two rooms), and at most `maxRooms` keep a window: past that, the room least
/// recently seen gives its up. Nothing here touches the disk: `MessageStore` fills it from the
/// store's tail at start and with every record it keeps.
///
/// Every room's name and hash live in arrays of this value, one element a room; its ids are a
/// `RecentIDs` object, written in place through a pointer, so an insert pays no uniqueness or
/// exclusivity check for them. Copies of a window share those objects: keep one window (a
/// snapshot is taken as bytes, `DedupeSnapshot`).
struct DedupeWindow {
  /// The most ids a room keeps; 0 keeps none.
  let capacity: Int
  /// The most rooms that keep ids.
  let maxRooms: Int
  /// Hashes ids as the window keeps them.
  let hasher: IDHasher
  /// Whether each room's newest id is kept as text (`newestID(room:)`): only joins that name
  /// it ask for it (`SinceField=`), and copying it costs every message.
  let keepsNewest: Bool
  /// Each room's JSON, its FNV-1a hash, and its ids (with its newest, and when the room was
  /// last seen).
  private var rooms: [[UInt8]] = []
  private var roomHashes: [UInt32] = []
  private var recent: [RecentIDs] = [] {
    didSet { handles = recent.map(\.handle) }
  }
  /// Each room's `RecentIDs.handle`, which inserts go through (reading `recent` retained and
  /// released the room's object for every message).
  private var handles: [RecentIDs.Handle] = []
  /// Room indices by room hash (open addressing, linear probing; -1 is free), twice as many
  /// slots as rooms may keep windows.
  private var roomSlots: [Int32]
  /// Increases with every insert, for choosing the room least recently seen.
  private var clock: UInt64 = 0

  /// An empty window; `basis` is the hash's secret (random unless a test fixes it).
  init(
    capacity: Int, maxRooms: Int = 1024, keepsNewest: Bool = true,
    basis: UInt64 = .random(in: .min ... .max)
  ) {
    self.capacity = max(0, capacity)
    self.keepsNewest = keepsNewest
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

  /// Whether `id` is among `room`'s recent ids; if not, it becomes the newest of them, its
  /// record stored at `time`. Returns true for a new id (the record is to be kept), false for a
  /// duplicate.
  @discardableResult
  mutating func insert(room: [UInt8]?, id: UnsafeRawBufferPointer, time: Timestamp? = nil) -> Bool {
    insert(room: room, roomHash: Self.roomHash(room ?? []), id: id, time: time)
  }

  /// `insert(room:id:time:)` given `roomHash(room)`: the store hashes the room for its room
  /// index already, and a second pass over its bytes cost every message.
  @discardableResult
  mutating func insert(
    room: [UInt8]?, roomHash: UInt32, id: UnsafeRawBufferPointer, time: Timestamp? = nil
  ) -> Bool {
    guard isEnabled else { return true }
    // Not `room ?? []`: the operator returns a copy of the room, a retain and a release.
    let index: Int
    if let room {
      index = self.index(of: room, hash: roomHash)
    } else {
      index = self.index(of: [], hash: roomHash)
    }
    let ids = handles[index]
    ids.lastSeen = clock
    return ids.insert(
      hasher.hash(id), id: keepsNewest ? id : nil, time: time?.microseconds ?? 0,
      capacity: capacity)
  }

  /// `insert(room:id:)` for an id in any collection of bytes.
  @discardableResult
  mutating func insert(room: [UInt8]?, id: some Collection<UInt8>) -> Bool {
    Array(id).withUnsafeBytes { insert(room: room, id: $0) }
  }

  /// The hash under which `id` is kept (the same for the same id, in this process only).
  func hash(_ id: some Collection<UInt8>) -> UInt64 { hasher.hash(id) }

  /// Puts back what the store's tail holds of `room`: its ids' hashes, oldest first, and its
  /// newest id with its record's time. Ids already kept (records stored since) stay the
  /// newest, and so does a newest id already known.
  mutating func restore(
    room: [UInt8], hashes: [UInt64], newestID: [UInt8]?, newestTime: Timestamp? = nil
  ) {
    guard isEnabled, !hashes.isEmpty else { return }
    let index = self.index(of: room)
    let kept = recent[index]
    let restored = RecentIDs(capacity: capacity)
    for hash in hashes.suffix(capacity) { _ = restored.insert(hash, id: nil, capacity: capacity) }
    for hash in kept.oldestFirst { _ = restored.insert(hash, id: nil, capacity: capacity) }
    if keepsNewest {
      if kept.newest != nil {
        restored.newest = kept.newest
        restored.newestTime = kept.newestTime
      } else {
        restored.newest = newestID
        restored.newestTime = newestTime?.microseconds ?? 0
      }
    }
    restored.lastSeen = clock
    recent[index] = restored
  }

  /// Each room's JSON and ids, for a snapshot (`DedupeSnapshot`).
  var roomIDs: [(room: [UInt8], ids: RecentIDs)] { Array(zip(rooms, recent)) }

  /// Each room's JSON, for a snapshot written a room at a time.
  var roomNames: [[UInt8]] { rooms }

  /// `room`'s ids, when it keeps a window.
  func ids(of room: [UInt8]) -> RecentIDs? {
    find(room).index.map { recent[$0] }
  }

  /// Adds what the store holds of `room` after a snapshot: its ids' hashes, oldest first,
  /// each newer than those kept, and its newest id with its record's time.
  mutating func extend(
    room: [UInt8], hashes: [UInt64], newestID: [UInt8]?, newestTime: Timestamp? = nil
  ) {
    guard isEnabled, !hashes.isEmpty else { return }
    let index = self.index(of: room)
    for hash in hashes.suffix(capacity) {
      _ = recent[index].insert(hash, id: nil, capacity: capacity)
    }
    if keepsNewest {
      recent[index].newest = newestID
      recent[index].newestTime = newestTime?.microseconds ?? 0
    }
  }

  /// Takes `room`'s ids as a snapshot held them; false when the room has a window already, or
  /// they do not fit this one.
  mutating func adopt(room: [UInt8], ids: RecentIDs) -> Bool {
    guard isEnabled, rooms.count < maxRooms, ids.count <= capacity, find(room).index == nil
    else { return false }
    if !keepsNewest {
      ids.newest = nil
      ids.newestTime = 0
    }
    let index = index(of: room)
    ids.lastSeen = clock
    recent[index] = ids
    return true
  }

  /// Whether `id` is among `room`'s recent ids (nothing changes).
  func contains(room: [UInt8]?, id: some Collection<UInt8>) -> Bool {
    guard isEnabled, let index = find(room ?? []).index else { return false }
    return recent[index].contains(hasher.hash(id), capacity: capacity)
  }

  /// The newest id of `room`, as it was inserted last (the position a backend replays from),
  /// when the window keeps it, or as the store's tail held it at start.
  func newestID(room: [UInt8]?) -> [UInt8]? {
    newestPosition(room: room)?.id
  }

  /// `newestID(room:)` with the time its record was stored, when known.
  func newestPosition(room: [UInt8]?) -> RoomPosition? {
    guard let index = find(room ?? []).index, let id = recent[index].newest else { return nil }
    let time = recent[index].newestTime
    return RoomPosition(id: id, time: time == 0 ? nil : Timestamp(microseconds: time))
  }

  /// The time of the newest id kept as text, of any room (the store's newest inbound record
  /// with an id), when known.
  var newestTime: Timestamp? {
    let newest = recent.reduce(0) { max($0, $1.newestTime) }
    return newest == 0 ? nil : Timestamp(microseconds: newest)
  }

  private var mask: Int { roomSlots.count - 1 }

  /// `room`'s index if it has one, and the slot it is in or would take.
  private func find(_ room: [UInt8]) -> (index: Int?, slot: Int) {
    find(room, hash: Self.roomHash(room))
  }

  /// `find(_:)` given the room's hash.
  @inline(__always)
  private func find(_ room: [UInt8], hash: UInt32) -> (index: Int?, slot: Int) {
    let mask = self.mask
    return roomSlots.withUnsafeBufferPointer { slots in
      roomHashes.withUnsafeBufferPointer { hashes in
        var slot = Int(hash) & mask
        while true {
          let index = Int(slots[slot])
          if index < 0 { return (nil, slot) }
          if hashes[index] == hash && rooms[index] == room { return (index, slot) }
          slot = (slot + 1) & mask
        }
      }
    }
  }

  /// A room's FNV-1a hash (`RoomIndex.roomHash`; no room is no bytes), read through a pointer
  /// (a room is a few bytes).
  @inline(__always)
  static func roomHash(_ room: [UInt8]) -> UInt32 {
    room.withUnsafeBufferPointer { bytes in
      var hash = FNV1a.basis32
      for byte in bytes { hash = (hash ^ UInt32(byte)) &* 0x0100_0193 }
      return hash
    }
  }

  /// `room`'s index, made (and the room least recently seen given up) when it has none.
  private mutating func index(of room: [UInt8]) -> Int {
    index(of: room, hash: Self.roomHash(room))
  }

  /// `index(of:)` given the room's hash; a room that has its index is found inline (a call
  /// for each message cost its frame), a new one is added out of line. The clock moves on:
  /// the caller marks the room seen (`RecentIDs.lastSeen`) as it writes its ids.
  @inline(__always)
  private mutating func index(of room: [UInt8], hash: UInt32) -> Int {
    clock &+= 1
    let found = find(room, hash: hash)
    if let index = found.index { return index }
    return add(room, hash: hash, slot: found.slot)
  }

  /// A room without an index gets one in `slot` (where `find` ended), or the room least
  /// recently seen gives its up.
  @inline(never)
  private mutating func add(_ room: [UInt8], hash: UInt32, slot: Int) -> Int {
    if rooms.count < maxRooms {
      rooms.append(room)
      roomHashes.append(hash)
      let ids = RecentIDs(capacity: capacity)
      ids.lastSeen = clock
      recent.append(ids)
      roomSlots[slot] = Int32(rooms.count - 1)
      return rooms.count - 1
    }
    // Rare: the slots are simply laid out again.
    let index = recent.indices.min { recent[$0].lastSeen < recent[$1].lastSeen } ?? 0
    rooms[index] = room
    roomHashes[index] = hash
    let ids = RecentIDs(capacity: capacity)
    ids.lastSeen = clock
    recent[index] = ids
    roomSlots = Array(repeating: -1, count: roomSlots.count)
    for (i, hash) in roomHashes.enumerated() {
      var slot = Int(hash) & mask
      while roomSlots[slot] >= 0 { slot = (slot + 1) & mask }
      roomSlots[slot] = Int32(i)
    }
    return index
  }
}

/// The window's id hash from a per-process secret basis, a value that may cross threads.
///
/// An id of at most 16 bytes (most are) is read as two words, without a loop, and the two are
/// multiplied together at full width, then once more with the length: about a dozen
/// instructions, for every inbound message. A longer id folds 16 bytes a step into the seed the
/// same way. Each word meets a secret drawn from the basis before it is multiplied, so the words
/// that would zero a product (and make every id that carries them collide) cannot be chosen
/// without knowing the basis.
struct IDHasher: Sendable {
  let basis: UInt64
  private let seed: UInt64
  private let secret: UInt64

  /// A hasher of this basis (the snapshot keeps the basis; the secrets follow from it).
  init(basis: UInt64) {
    self.basis = basis
    seed = basis ^ Self.scrambled(basis)
    secret = Self.scrambled(seed) | 1
  }

  /// The hash under which `id` is kept.
  func hash(_ id: some Collection<UInt8>) -> UInt64 {
    Array(id).withUnsafeBytes { hash($0) }
  }

  /// The hash of bytes read where they lie.
  @inline(__always)
  func hash(_ id: UnsafeRawBufferPointer) -> UInt64 {
    let count = id.count
    var seed = self.seed
    var first: UInt64 = 0
    var second: UInt64 = 0
    if let base = id.baseAddress, count > 0 {
      if count <= 16 {
        (first, second) = Self.words(base, count)
      } else {
        var offset = 0
        while count &- offset > 16 {
          seed = Self.folded(
            base.loadUnaligned(fromByteOffset: offset, as: UInt64.self) ^ secret,
            base.loadUnaligned(fromByteOffset: offset &+ 8, as: UInt64.self) ^ seed)
          offset &+= 16
        }
        first = base.loadUnaligned(fromByteOffset: count &- 16, as: UInt64.self)
        second = base.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
      }
    }
    let product = (first ^ secret).multipliedFullWidth(by: second ^ seed)
    return Self.folded(product.low ^ self.seed ^ UInt64(count), product.high ^ secret)
  }

  /// An id of 1...16 bytes as two words that, with its length, tell it apart from every other:
  /// loads that may overlap (8...16 bytes: the first and the last eight; 4...7: the first and
  /// the last four, in one word), or for 1...3 bytes the first, middle and last byte.
  @inline(__always)
  private static func words(_ bytes: UnsafeRawPointer, _ count: Int) -> (UInt64, UInt64) {
    if count >= 8 {
      return (
        bytes.loadUnaligned(as: UInt64.self),
        bytes.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
      )
    }
    if count >= 4 {
      let low = UInt64(bytes.loadUnaligned(as: UInt32.self))
      let high = UInt64(bytes.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self))
      return (low | high << 32, 0)
    }
    let first = UInt64(bytes.load(as: UInt8.self))
    let middle = UInt64(bytes.load(fromByteOffset: count >> 1, as: UInt8.self))
    let last = UInt64(bytes.load(fromByteOffset: count &- 1, as: UInt8.self))
    return (first | middle << 8 | last << 16, 0)
  }

  /// The two halves of the full product, folded into one word.
  @inline(__always)
  private static func folded(_ a: UInt64, _ b: UInt64) -> UInt64 {
    let product = a.multipliedFullWidth(by: b)
    return product.high ^ product.low
  }

  /// splitmix64's finalizer: a basis's bits spread over a whole secret.
  private static func scrambled(_ value: UInt64) -> UInt64 {
    var z = value &+ 0x9E37_79B9_7F4A_7C15
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}
