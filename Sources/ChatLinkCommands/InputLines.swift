@preconcurrency import Glibc
import JSON

/// The non-empty lines of standard input, each given as its UTF-8 bytes: what `send -` sends.
///
/// Input is read in pieces of 64 KiB and each line is handed over where it lies, so a stream
/// of a million lines costs a few hundred reads and no string per line. A line's newline, and
/// a carriage return before it, are not part of it; the last line needs no newline; bytes
/// that are not UTF-8 are replaced with U+FFFD, as a `String` made from them would have them.
struct InputLines {
  private let read: (UnsafeMutableRawBufferPointer) -> Int
  private var buffer: [UInt8]
  /// The unread bytes are `buffer[start..<end]`.
  private var start = 0
  private var end = 0
  private var atEnd = false

  /// Lines read with `read`, which fills the buffer it is given from the start and returns how
  /// many bytes it put there: 0 at the end of input (or on an error, which ends it too).
  init(read: @escaping (UnsafeMutableRawBufferPointer) -> Int, pieceSize: Int = 64 * 1024) {
    self.read = read
    buffer = Array(repeating: 0, count: max(pieceSize, 1))
  }

  /// Calls `body` with the next non-empty line and returns true; false when there is none.
  mutating func next(_ body: (UnsafeRawBufferPointer) -> Void) -> Bool {
    while true {
      guard let line = nextLine() else { return false }
      var last = line.upperBound
      if last > line.lowerBound && buffer[last - 1] == UInt8(ascii: "\r") { last -= 1 }
      guard last > line.lowerBound else { continue }
      buffer.withUnsafeBytes { all in
        let bytes = UnsafeRawBufferPointer(rebasing: all[line.lowerBound..<last])
        var validator = UTF8Validator()
        if validator.validate(bytes) && validator.isComplete {
          body(bytes)
        } else {
          var repaired = String(decoding: bytes, as: UTF8.self)
          repaired.withUTF8 { body(UnsafeRawBufferPointer($0)) }
        }
      }
      return true
    }
  }

  /// The range in `buffer` of the next line (newline excluded), reading more as needed; nil
  /// at the end of input.
  private mutating func nextLine() -> Range<Int>? {
    var searched = start
    while true {
      let newline = buffer.withUnsafeBytes { all -> Int? in
        guard searched < end, let base = all.baseAddress,
          let found = memchr(base + searched, 0x0A, end - searched)
        else { return nil }
        return base.distance(to: UnsafeRawPointer(found))
      }
      if let newline {
        defer { start = newline + 1 }
        return start..<newline
      }
      if atEnd {
        guard start < end else { return nil }
        defer { start = end }
        return start..<end
      }
      // What was searched stays searched: only the bytes read next are looked at.
      let scanned = end - start
      fill()
      searched = start + scanned
    }
  }

  /// Reads more input after the unread bytes, moving them to the front first (or growing the
  /// buffer when one line fills it).
  private mutating func fill() {
    if start > 0 {
      buffer.withUnsafeMutableBytes { all in
        guard let base = all.baseAddress else { return }
        memmove(base, base + start, end - start)
      }
      end -= start
      start = 0
    }
    if end == buffer.count { buffer += Array(repeating: 0, count: buffer.count) }
    let count = buffer.withUnsafeMutableBytes { all in
      read(UnsafeMutableRawBufferPointer(rebasing: all[end...]))
    }
    if count > 0 { end += count } else { atEnd = true }
  }
}
