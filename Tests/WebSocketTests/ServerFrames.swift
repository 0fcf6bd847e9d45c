import WebSocket
import XCTest

/// A generator that always returns the same word, to reproduce RFC examples.
struct FixedGenerator: RandomNumberGenerator {
  var word: UInt64
  mutating func next() -> UInt64 { word }
}

/// Builds unmasked server frames byte by byte, including malformed ones.
enum ServerFrames {
  static func frame(
    _ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, rsv: UInt8 = 0
  ) -> [UInt8] {
    var out: [UInt8] = [(fin ? 0x80 : 0) | rsv << 4 | opcode]
    if payload.count < 126 {
      out.append(UInt8(payload.count))
    } else if payload.count <= 0xFFFF {
      out += [126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
    } else {
      out.append(127)
      for shift in stride(from: 56, through: 0, by: -8) {
        out.append(UInt8(truncatingIfNeeded: payload.count >> shift))
      }
    }
    return out + payload
  }

  static func text(_ s: String, fin: Bool = true) -> [UInt8] { frame(0x1, Array(s.utf8), fin: fin) }
  static func close(_ code: UInt16?, _ reason: [UInt8] = []) -> [UInt8] {
    guard let code else { return frame(0x8, []) }
    return frame(0x8, [UInt8(code >> 8), UInt8(code & 0xFF)] + reason)
  }
}

/// Decodes every frame a client wrote, as a server would (unmasking).
func clientFrames(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> [Frame] {
  var decoder = FrameDecoder(role: .server, maxFrameSize: 1 << 30, allowsCompressedBit: true)
  decoder.append(bytes)
  var frames: [Frame] = []
  while true {
    do {
      guard case .frame(let frame) = try decoder.next() else { break }
      frames.append(frame)
    } catch {
      XCTFail("client wrote an invalid frame: \(error)", file: file, line: line)
      break
    }
  }
  return frames
}

extension Array where Element == UInt8 {
  init(hex: String) {
    self = stride(from: 0, to: hex.count, by: 2).compactMap {
      let start = hex.index(hex.startIndex, offsetBy: $0)
      return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)
    }
  }
}
