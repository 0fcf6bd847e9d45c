import JSON

/// A MUC room (XEP-0045) as the session sees it, with its catch-up from the room's archive.
struct RoomState: Sendable {
  enum Status: Sendable, Hashable {
    /// The join presence went out; the room's presence of ourselves has not come.
    case joining
    /// The room confirmed us (status 110): its groupchat messages are stored.
    case joined
    /// The room refused us, with the reason.
    case refused(String)
  }

  /// The nick asked for (with a suffix after a conflict).
  var nick: String
  /// Joins tried: the first, then one per nick conflict.
  var attempt = 1
  var status = Status.joining
  /// The newest stanza-id stored for the room when it was joined: the archive is asked for
  /// what came after it once the join is confirmed. Nil: a room never stored, which starts
  /// from now.
  var after: String?
  /// When the record of `after` was stored: if the archive no longer has `after`, the
  /// catch-up asks for what it holds from a little before this time instead.
  var afterTime: Timestamp?
  /// The archive query under way (its id), while the room catches up.
  var query: String?
  /// The id the current query pages after (`after`, then each page's last).
  var cursor: String?
  /// The time the catch-up counts from, once it fell back to one.
  var start: Timestamp?
  /// Live messages that came while the room catches up: stored after the archive's, so the
  /// room's records keep the archive's order.
  var held: [InboundMessage] = []
  /// Bytes of the payloads in `held`.
  var heldBytes = 0
  /// Whether a live message the archive also has was let go (not held) while the current
  /// query was out: then its answer, even one that says it is complete, is followed by one
  /// more page, which holds that message.
  var letGo = false
  /// Messages taken from the archive on this session.
  var archived = 0

  init(nick: String) {
    self.nick = nick
  }

  /// Holds a live message for after the archive's. Past `heldLimit`, one the archive has too
  /// (`archived`: it carries the archive's stanza-id) is let go, and the catch-up pages on
  /// until it has brought it.
  mutating func hold(_ record: InboundMessage, archived: Bool) {
    let size = record.payload.bytes.count
    if archived && heldBytes + size > Self.heldLimit {
      letGo = true
    } else {
      held.append(record)
      heldBytes += size
    }
  }

  /// Most bytes of live messages held while a room catches up; past that, those the archive
  /// also has (they carry its stanza-id) are let go, and the catch-up brings them.
  static let heldLimit = 4 << 20
}
