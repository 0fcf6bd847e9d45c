/// The last messages of one room, kept so that a client rejoining after an id gets what it
/// missed (the envelope's catch-up extension): each message's number in the room (1, 2, …)
/// and its data object as it went out, oldest first, at most `capacity` of them.
struct RoomHistory {
  /// What a join after an id gets.
  struct Replay {
    /// Whether the history no longer reaches back to the id (or never knew it): then
    /// `messages` is everything kept, from `first`, the oldest number kept (nil: none is).
    var truncated = false
    var first: UInt64?
    /// The data objects to send again, oldest first.
    var messages: [[UInt8]]
  }

  let capacity: Int
  /// The number the next message gets.
  private(set) var next: UInt64 = 1
  /// Numbers and data, a ring once full: the oldest at `head`.
  private var ring: [(number: UInt64, data: [UInt8])] = []
  private var head = 0

  init(capacity: Int) {
    self.capacity = max(1, capacity)
  }

  /// The oldest number kept (the next one when nothing is).
  var first: UInt64 { ring.isEmpty ? next : ring[head].number }

  /// Numbers the next message, keeps the data `make` builds for it, and returns that data.
  mutating func record(_ make: (UInt64) -> [UInt8]) -> [UInt8] {
    let number = next
    next += 1
    let data = make(number)
    if ring.count < capacity {
      ring.append((number, data))
    } else {
      ring[head] = (number, data)
      head = (head + 1) % ring.count
    }
    return data
  }

  /// The messages after number `since`; nil `since` is an id this history never gave out
  /// (another server run's, or not one of ours), which counts as truncated.
  func replay(after since: UInt64?) -> Replay {
    let ordered = ring[head...] + ring[..<head]
    // The message after `since` is kept, or is yet to come: nothing is missing.
    if let since, since >= first - 1, since < next {
      return Replay(messages: ordered.filter { $0.number > since }.map(\.data))
    }
    return Replay(
      truncated: true, first: ring.isEmpty ? nil : first, messages: ordered.map(\.data))
  }
}

/// The message ids the server hands out: `<run>-<n>`, `n` a message's number in its room and
/// `run` drawn at start. A bare number would repeat after a restart of the server, and a
/// client that keeps ids to drop what it already has (chatlinkd's dedupe window) would drop
/// the new messages that reuse them; an id of another run is unknown, so a join after it gets
/// the whole history, announced as truncated.
struct MessageIDs {
  let run: String

  /// Eight random hex digits.
  init(random: inout some RandomNumberGenerator) {
    let digits = Array("0123456789abcdef".utf8)
    run = String(
      decoding: (0..<8).map { _ in digits[Int.random(in: 0..<16, using: &random)] }, as: UTF8.self)
  }

  func id(_ number: UInt64) -> String { "\(run)-\(number)" }

  /// The number in `id` when this run gave it out.
  func number(of id: String) -> UInt64? {
    guard id.hasPrefix(run + "-") else { return nil }
    let digits = id.dropFirst(run.count + 1)
    guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
    return UInt64(digits)
  }
}
