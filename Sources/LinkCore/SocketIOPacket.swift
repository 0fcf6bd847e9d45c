/// One Engine.IO 4 packet carried in a WebSocket text frame: a type digit, then its data.
///
/// Over WebSocket every text frame is one packet; binary frames are Socket.IO attachments and
/// carry no type.
public enum EngineIOPacket: Sendable, Hashable {
  /// `0{…}`: the session's parameters (sid, pingInterval, pingTimeout, maxPayload).
  case open(Range<Int>)
  /// `1`: the server closes the session.
  case close
  /// `2`: the server's heartbeat, to be answered with `3`.
  case ping
  /// `3`: an answer to a ping.
  case pong
  /// `4…`: a Socket.IO packet, the range of its text.
  case message(Range<Int>)
  /// `5`: a transport upgrade (not used over WebSocket).
  case upgrade
  /// `6`: nothing.
  case noop

  /// Reads the packet in `bytes`; nil when the first byte is not a packet type.
  public static func parse(_ bytes: UnsafeRawBufferPointer) -> EngineIOPacket? {
    guard let first = bytes.first else { return nil }
    let rest = 1..<bytes.count
    switch first {
    case UInt8(ascii: "0"): return .open(rest)
    case UInt8(ascii: "1"): return .close
    case UInt8(ascii: "2"): return .ping
    case UInt8(ascii: "3"): return .pong
    case UInt8(ascii: "4"): return .message(rest)
    case UInt8(ascii: "5"): return .upgrade
    case UInt8(ascii: "6"): return .noop
    default: return nil
    }
  }
}

/// The header of one Socket.IO 5 packet: `<type>[<attachments>-][<namespace>,][<ack id>][<json>]`.
///
/// Parsing allocates nothing: the namespace and the data are ranges of the frame's bytes.
public struct SocketIOPacket: Sendable, Hashable {
  /// The packet types of the Socket.IO protocol, version 5.
  public enum Kind: UInt8, Sendable, Hashable {
    /// Connect to a namespace (client), or its acceptance with the sid (server).
    case connect = 0
    /// Leave a namespace, or the server's disconnection of it.
    case disconnect = 1
    /// An event: `["name", args…]`.
    case event = 2
    /// The answer to an event that asked for one.
    case ack = 3
    /// The server refused the namespace connect.
    case connectError = 4
    /// An event with binary attachments following in binary frames.
    case binaryEvent = 5
    /// An ack with binary attachments following in binary frames.
    case binaryAck = 6
  }

  /// Why a packet did not parse.
  public enum ParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Empty text.
    case empty
    /// The first character is not a Socket.IO packet type.
    case unknownType(UInt8)
    /// The attachment count is missing its `-` or is too large.
    case badAttachmentCount
    /// The namespace is not followed by `,`.
    case unterminatedNamespace
    /// The ack id does not fit 64 bits.
    case ackIDTooLarge

    public var description: String {
      switch self {
      case .empty: "an empty Socket.IO packet"
      case .unknownType(let byte):
        (0x21...0x7E).contains(byte)
          ? "an unknown Socket.IO packet type '\(Character(UnicodeScalar(byte)))'"
          : "an unknown Socket.IO packet type (byte \(byte))"
      case .badAttachmentCount: "a bad binary attachment count"
      case .unterminatedNamespace: "a namespace without its ','"
      case .ackIDTooLarge: "an ack id over 64 bits"
      }
    }
  }

  /// The most binary attachments one packet may announce.
  public static let maxAttachments = 256

  /// The packet's type.
  public var kind: Kind
  /// How many binary frames follow (binary events and acks).
  public var attachments: Int
  /// The namespace's bytes (starting with `/`), or nil for the main namespace `/`.
  public var namespace: Range<Int>?
  /// The ack id: asked for on an event, answered on an ack.
  public var ackID: UInt64?
  /// The JSON data (possibly empty).
  public var data: Range<Int>

  /// Reads the packet in `bytes[range]`.
  public static func parse(_ bytes: UnsafeRawBufferPointer, in range: Range<Int>) throws(ParseError)
    -> SocketIOPacket
  {
    var index = range.lowerBound
    let end = range.upperBound
    guard index < end else { throw .empty }
    let typeByte = bytes[index]
    guard typeByte.isDigit, let kind = Kind(rawValue: typeByte &- UInt8(ascii: "0")) else {
      throw .unknownType(typeByte)
    }
    index += 1
    var attachments = 0
    if kind == .binaryEvent || kind == .binaryAck {
      let start = index
      while index < end, bytes[index].isDigit, index - start < 4 {
        attachments = attachments * 10 + Int(bytes[index] - UInt8(ascii: "0"))
        index += 1
      }
      guard index > start, index < end, bytes[index] == UInt8(ascii: "-"),
        attachments <= maxAttachments
      else { throw .badAttachmentCount }
      index += 1
    }
    var namespace: Range<Int>?
    if index < end, bytes[index] == UInt8(ascii: "/") {
      let start = index
      while index < end, bytes[index] != UInt8(ascii: ",") { index += 1 }
      // A namespace may end the packet (`1/admin`) or be followed by `,` and the rest.
      namespace = start..<index
      if index < end {
        index += 1
      } else if kind != .connect && kind != .disconnect {
        throw .unterminatedNamespace
      }
    }
    var ackID: UInt64?
    while index < end, bytes[index].isDigit {
      let (times, o1) = (ackID ?? 0).multipliedReportingOverflow(by: 10)
      let (sum, o2) = times.addingReportingOverflow(UInt64(bytes[index] - UInt8(ascii: "0")))
      guard !o1, !o2 else { throw .ackIDTooLarge }
      ackID = sum
      index += 1
    }
    return SocketIOPacket(
      kind: kind, attachments: attachments, namespace: namespace, ackID: ackID, data: index..<end)
  }
}
