/// JSON string escaping and unescaping (RFC 8259 §7).
public enum JSONString {
  private static let hex = Array("0123456789abcdef".utf8)

  /// Appends `bytes` (UTF-8) as a quoted JSON string.
  ///
  /// Runs without escapes are found many bytes a step (`StringStops`) and copied at once:
  /// every message a writer quotes is mostly such a run.
  public static func append(_ bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    if let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) {
      let count = bytes.count
      var runStart = 0
      while true {
        let stop = StringStops.first(in: base, from: runStart, count: count, delete: true)
        if runStart < stop {
          out.append(
            contentsOf: UnsafeBufferPointer(start: base + runStart, count: stop - runStart))
        }
        guard stop < count else { break }
        appendEscape(base[stop], to: &out)
        runStart = stop + 1
      }
    }
    out.append(UInt8(ascii: "\""))
  }

  /// Whether `bytes` can be quoted as they are: no quote, backslash or control character (nor
  /// DEL, which `append` escapes too).
  public static func isPlain(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    guard let base = bytes.baseAddress else { return true }
    return StringStops.first(in: base, from: 0, count: bytes.count, delete: true) == bytes.count
  }

  /// Appends the escape sequence of a byte that `StringStops` stops at (with DEL).
  private static func appendEscape(_ byte: UInt8, to out: inout [UInt8]) {
    let escape: UInt8
    switch byte {
    case UInt8(ascii: "\""): escape = UInt8(ascii: "\"")
    case UInt8(ascii: "\\"): escape = UInt8(ascii: "\\")
    case 0x0A: escape = UInt8(ascii: "n")
    case 0x0D: escape = UInt8(ascii: "r")
    case 0x09: escape = UInt8(ascii: "t")
    case 0x08: escape = UInt8(ascii: "b")
    case 0x0C: escape = UInt8(ascii: "f")
    default: escape = UInt8(ascii: "u")
    }
    out.append(UInt8(ascii: "\\"))
    out.append(escape)
    if escape == UInt8(ascii: "u") {
      out.append(contentsOf: [0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
    }
  }

  /// Appends `text` as a quoted JSON string.
  public static func append(_ text: String, to out: inout [UInt8]) {
    var copy = text
    copy.withUTF8 { append(UnsafeRawBufferPointer($0), to: &out) }
  }

  /// The quoted JSON form of `text`.
  public static func quoted(_ text: String) -> String {
    var out: [UInt8] = []
    append(text, to: &out)
    return String(decoding: out, as: UTF8.self)
  }

  /// Decodes a string's content (between the quotes, as validated by `JSONScanner`).
  /// Lone surrogate escapes become U+FFFD.
  public static func unescape(_ raw: UnsafeRawBufferPointer) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(raw.count)
    var i = 0
    func hex4(_ at: Int) -> UInt32? {
      guard at + 4 <= raw.count else { return nil }
      var value: UInt32 = 0
      for j in at..<(at + 4) {
        let c = raw[j]
        let digit: UInt32
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(c - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(c - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(c - UInt8(ascii: "A") + 10)
        default: return nil
        }
        value = value << 4 | digit
      }
      return value
    }
    while i < raw.count {
      let byte = raw[i]
      guard byte == UInt8(ascii: "\\"), i + 1 < raw.count else {
        out.append(byte)
        i += 1
        continue
      }
      let code = raw[i + 1]
      i += 2
      switch code {
      case UInt8(ascii: "n"): out.append(0x0A)
      case UInt8(ascii: "r"): out.append(0x0D)
      case UInt8(ascii: "t"): out.append(0x09)
      case UInt8(ascii: "b"): out.append(0x08)
      case UInt8(ascii: "f"): out.append(0x0C)
      case UInt8(ascii: "u"):
        guard var scalar = hex4(i) else { return out }
        i += 4
        if (0xD800...0xDBFF).contains(scalar), i + 6 <= raw.count, raw[i] == UInt8(ascii: "\\"),
          raw[i + 1] == UInt8(ascii: "u"), let low = hex4(i + 2), (0xDC00...0xDFFF).contains(low)
        {
          scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
          i += 6
        }
        let unicode = Unicode.Scalar(scalar) ?? "\u{FFFD}"
        out.append(contentsOf: Array(String(unicode).utf8))
      default: out.append(code)
      }
    }
    return out
  }

  /// Copies a valid JSON text without insignificant whitespace, so it fits on one line.
  public static func minify(_ json: UnsafeRawBufferPointer, to out: inout [UInt8]) {
    var inString = false
    var escaped = false
    for byte in json {
      if inString {
        out.append(byte)
        if escaped {
          escaped = false
        } else if byte == UInt8(ascii: "\\") {
          escaped = true
        } else if byte == UInt8(ascii: "\"") {
          inString = false
        }
        continue
      }
      switch byte {
      case 0x20, 0x09, 0x0A, 0x0D: continue
      case UInt8(ascii: "\""):
        inString = true
        out.append(byte)
      default: out.append(byte)
      }
    }
  }
}

extension UInt8 {
  /// Whether the byte is an ASCII digit.
  public var isDigit: Bool { self >= UInt8(ascii: "0") && self <= UInt8(ascii: "9") }
  /// Whether the byte is an ASCII hex digit.
  public var isHexDigit: Bool {
    isDigit || (self >= UInt8(ascii: "a") && self <= UInt8(ascii: "f"))
      || (self >= UInt8(ascii: "A") && self <= UInt8(ascii: "F"))
  }
}
