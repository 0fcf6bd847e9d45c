import WebSocket

/// One line of messages.jsonl: the store's schema, written and read here only.
///
/// ```
/// {"seq":42,"time":"2026-12-02T12:00:00.123456Z","dir":"in","room":7,"type":"json","data":{…}}
/// {"seq":43,"time":"…","dir":"in","room":null,"type":"text","data":"not json"}
/// {"seq":44,"time":"…","dir":"in","room":null,"type":"binary","data":"AAEC"}
/// {"seq":45,"time":"…","dir":"out","room":7,"type":"json","id":"c1a2…","data":{…}}
/// ```
/// `type` says how `data` holds the payload losslessly: `json` embeds the backend's JSON
/// (minified if it spanned lines), `text` is a JSON string, `binary` is base64. `id` is the
/// client message id of outgoing messages.
public struct StoreRecord: Sendable, Hashable {
  /// Inbound or outbound.
  public enum Direction: String, Sendable, Hashable {
    case inbound = "in"
    case outbound = "out"
  }

  /// How the payload is kept.
  public enum Kind: String, Sendable, Hashable {
    case json, text, binary
  }

  /// The daemon-assigned sequence number, strictly increasing across restarts.
  public var seq: UInt64
  /// When the message was received (or confirmed, for outbound).
  public var time: Timestamp
  /// Inbound or outbound.
  public var direction: Direction
  /// The room as raw JSON (a number or a string), or nil.
  public var room: [UInt8]?
  /// The client message id of an outbound message.
  public var clientID: String?
  /// The payload.
  public var payload: Message

  /// Creates a record.
  public init(
    seq: UInt64, time: Timestamp, direction: Direction, room: [UInt8]?, clientID: String? = nil,
    payload: Message
  ) {
    self.seq = seq
    self.time = time
    self.direction = direction
    self.room = room
    self.clientID = clientID
    self.payload = payload
  }

  private static let seqPrefix = Array(#"{"seq":"#.utf8)
  private static let timeKey = Array(#","time":""#.utf8)
  private static let dirIn = Array(#"","dir":"in","room":"#.utf8)
  private static let dirOut = Array(#"","dir":"out","room":"#.utf8)
  private static let null = Array("null".utf8)
  private static let typeJSON = Array(#","type":"json""#.utf8)
  private static let typeText = Array(#","type":"text""#.utf8)
  private static let typeBinary = Array(#","type":"binary""#.utf8)
  private static let idKey = Array(#","id":"#.utf8)
  private static let dataKey = Array(#","data":"#.utf8)

  /// Appends the record as one JSON line, newline included.
  ///
  /// - Parameter scan: the result of scanning a text payload, if the caller already has it
  ///   (the envelope protocol scans every frame); saves a second pass.
  public func appendLine(to out: inout [UInt8], scan: JSONScanner.Result?? = .none) {
    out.append(contentsOf: Self.seqPrefix)
    Self.appendDecimal(seq, to: &out)
    out.append(contentsOf: Self.timeKey)
    time.append(to: &out)
    out.append(contentsOf: direction == .inbound ? Self.dirIn : Self.dirOut)
    out.append(contentsOf: room ?? Self.null)
    switch payload {
    case .binary(let bytes):
      out.append(contentsOf: Self.typeBinary)
      appendID(to: &out)
      out.append(contentsOf: Self.dataKey)
      out.append(UInt8(ascii: "\""))
      Base64.encode(bytes, into: &out)
      out.append(UInt8(ascii: "\""))
    case .text(let bytes):
      bytes.withUnsafeBytes { raw in
        let result: JSONScanner.Result? =
          switch scan {
          case .some(let known): known
          case .none: JSONScanner.scan(raw)
          }
        if let result {
          out.append(contentsOf: Self.typeJSON)
          appendID(to: &out)
          out.append(contentsOf: Self.dataKey)
          if result.hasLineBreaks {
            JSONString.minify(raw, to: &out)
          } else {
            out.append(contentsOf: raw)
          }
        } else {
          out.append(contentsOf: Self.typeText)
          appendID(to: &out)
          out.append(contentsOf: Self.dataKey)
          JSONString.append(raw, to: &out)
        }
      }
    }
    out.append(UInt8(ascii: "}"))
    out.append(0x0A)
  }

  private func appendID(to out: inout [UInt8]) {
    guard let clientID else { return }
    out.append(contentsOf: Self.idKey)
    JSONString.append(clientID, to: &out)
  }

  static func appendDecimal(_ value: UInt64, to out: inout [UInt8]) {
    if value == 0 {
      out.append(UInt8(ascii: "0"))
      return
    }
    var digits:
      (
        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
      ) =
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    var count = 0
    var v = value
    withUnsafeMutableBytes(of: &digits) { raw in
      while v > 0 {
        raw[count] = UInt8(ascii: "0") + UInt8(v % 10)
        v /= 10
        count += 1
      }
      for i in stride(from: count - 1, through: 0, by: -1) { out.append(raw[i]) }
    }
  }

  /// The seq of a stored line, read from its fixed prefix; nil if the line is not ours.
  public static func seq(ofLine line: UnsafeRawBufferPointer) -> UInt64? {
    guard line.count > seqPrefix.count else { return nil }
    for (i, byte) in seqPrefix.enumerated() where line[i] != byte { return nil }
    var value: UInt64 = 0
    var index = seqPrefix.count
    var digits = 0
    while index < line.count, line[index].isDigit {
      let (times, o1) = value.multipliedReportingOverflow(by: 10)
      let (sum, o2) = times.addingReportingOverflow(UInt64(line[index] - UInt8(ascii: "0")))
      if o1 || o2 { return nil }
      value = sum
      index += 1
      digits += 1
    }
    guard digits > 0, index < line.count, line[index] == UInt8(ascii: ",") else { return nil }
    return value
  }
}
