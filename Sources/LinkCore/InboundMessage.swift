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
  @inlinable
  public var id: MessageIDText? {
    get { marks.id }
    set { marks.id = newValue }
  }

  /// Creates a record's content.
  public init(
    payload: Message, scan: PayloadScan, room: [UInt8]? = nil, id: MessageIDText? = nil
  ) {
    self.payload = payload
    self.room = room
    marks = RecordMarks()
    self.scan = scan
    self.id = id
  }
}

/// A record's small fields packed in one word: bits 0–1 the scan, 2 whether it is a delivery
/// in two steps, 3 its redelivery flag, 4–19 its id, and 20–63 the message id
/// (`MessageIDText.packed`).
@usableFromInline
struct RecordMarks: Sendable {
  @usableFromInline var bits: UInt64 = 0

  @inlinable init() {}

  @inlinable
  var scan: PayloadScan {
    get {
      switch bits & 3 {
      case 0: .unscanned
      case 1: .notJSON
      default: .json(hasLineBreaks: bits & 3 == 3)
      }
    }
    set {
      let code: UInt64
      switch newValue {
      case .unscanned: code = 0
      case .notJSON: code = 1
      case .json(let hasLineBreaks): code = hasLineBreaks ? 3 : 2
      }
      bits = bits & ~3 | code
    }
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

  @inlinable
  var id: MessageIDText? {
    get { MessageIDText(packed: bits >> 20) }
    set { bits = bits & 0xF_FFFF | (newValue?.packed ?? 0) << 20 }
  }
}
