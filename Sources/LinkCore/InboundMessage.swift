import WebSocket

/// What the daemon keeps of one inbound frame.
public struct InboundMessage: Sendable {
  /// The frame's payload, untouched.
  public var payload: Message
  /// The room as raw JSON, when the dialect names one.
  public var room: [UInt8]?
  /// What the dialect keeps besides the payload, as a JSON object (MQTT's QoS and
  /// properties), stored as the record's `meta`.
  public var meta: [UInt8]?
  /// `scan`, `twoStep` and `id` in one word. A record of four words is moved from the
  /// dialect to the store; with a fifth, the compiler copies it and destroys the original
  /// at each step instead, which costs every frame reference counting.
  @usableFromInline var marks: RecordMarks

  /// How its text was scanned.
  @inlinable
  public var scan: PayloadScan {
    get { marks.scan }
    set { marks.scan = newValue }
  }

  /// Set when the record is a delivery in two steps (MQTT QoS 2), remembered until the
  /// backend releases it (`InboundReceipts`); `meta` must then carry its id, so that the
  /// record alone says, after a crash, that the delivery was stored.
  @inlinable
  public var twoStep: TwoStepDelivery? {
    get { marks.twoStep }
    set { marks.twoStep = newValue }
  }

  /// The backend's stable id of this message, unique within its room (its text: a string's
  /// content, a number's digits), when the dialect is told where to find one: the store keeps
  /// it in the record and drops a message whose id its room has had recently.
  @inlinable @inline(__always)
  public var id: MessageIDText? {
    get { marks.id }
    set { marks.id = newValue }
  }

  /// Whether it has an id (`id` is not nil), read without making the id.
  @inlinable @inline(__always)
  public var hasID: Bool { marks.hasID }

  /// Creates a record's content.
  public init(
    payload: Message, scan: PayloadScan, room: [UInt8]? = nil, id: MessageIDText? = nil
  ) {
    self.payload = payload
    self.room = room
    // The word made at once, not field by field through the setters: every inbound frame's
    // record is made here.
    marks = RecordMarks(scan: scan, id: id)
  }
}

/// A record's small fields packed in one word: bits 0–1 the scan, 2 whether it is a delivery
/// in two steps, 3 its redelivery flag, 4–19 its id, and 20–63 the message id
/// (`MessageIDText.packed`).
@usableFromInline
struct RecordMarks: Sendable {
  @usableFromInline var bits: UInt64 = 0

  @inlinable init() {}

  @inlinable @inline(__always)
  init(scan: PayloadScan, id: MessageIDText?) {
    bits = Self.code(of: scan) | (id?.packed ?? 0) << 20
  }

  /// The scan's two bits.
  @inlinable @inline(__always)
  static func code(of scan: PayloadScan) -> UInt64 {
    switch scan {
    case .unscanned: 0
    case .notJSON: 1
    case .json(let hasLineBreaks): hasLineBreaks ? 3 : 2
    }
  }

  @inlinable
  var scan: PayloadScan {
    get {
      switch bits & 3 {
      case 0: .unscanned
      case 1: .notJSON
      default: .json(hasLineBreaks: bits & 3 == 3)
      }
    }
    set { bits = bits & ~3 | Self.code(of: newValue) }
  }

  @inlinable
  var twoStep: TwoStepDelivery? {
    get {
      guard bits & 4 != 0 else { return nil }
      return TwoStepDelivery(
        id: UInt16(truncatingIfNeeded: bits >> 4), redelivered: bits & 8 != 0)
    }
    set {
      bits &= ~0xF_FFFC
      if let newValue {
        bits |= 4 | (newValue.redelivered ? 8 : 0) | UInt64(newValue.id) << 4
      }
    }
  }

  /// Whether `id` is not nil: its length is not 0 (`MessageIDText(packed:)`).
  @inlinable @inline(__always)
  var hasID: Bool { bits >> 45 & (1 << 17 - 1) != 0 }

  @inlinable @inline(__always)
  var id: MessageIDText? {
    get { MessageIDText(packed: bits >> 20) }
    set { bits = bits & 0xF_FFFF | (newValue?.packed ?? 0) << 20 }
  }
}
