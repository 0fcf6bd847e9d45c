/// The rooms of recent inbound frames, so that a frame names its room with an array already
/// made: messages that go round several rooms would otherwise cost an allocation, a copy and
/// a free each for the room's few bytes.
///
/// Direct-mapped: a room's FNV-1a hash picks one of `slotCount` slots, and a room that finds
/// another in its slot takes its place. Only rooms of at most `maxRoomBytes` are kept, so a
/// backend that names rooms with megabytes cannot make it hold more than a few KiB; a backend
/// that spreads its traffic over more rooms than slots costs at most what no cache did.
struct RoomCache {
  /// How many rooms it keeps.
  static let slotCount = 32
  /// The longest room it keeps, in bytes (a room's JSON: an id or a name).
  static let maxRoomBytes = 128
  private var slots = [[UInt8]](repeating: [], count: slotCount)

  /// An array of `bytes`: the one made for the same bytes last time, when its slot still
  /// holds it.
  mutating func room(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
    guard bytes.count <= Self.maxRoomBytes else { return Array(bytes) }
    let slot = Int(FNV1a.hash32(bytes) & UInt32(Self.slotCount - 1))
    let same = slots[slot].withUnsafeBufferPointer { kept in
      guard kept.count == bytes.count, !kept.isEmpty else { return false }
      var i = 0
      while i < kept.count && kept[i] == bytes[i] { i += 1 }
      return i == kept.count
    }
    if !same { slots[slot] = Array(bytes) }
    return slots[slot]
  }
}
