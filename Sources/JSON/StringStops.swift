/// Where the plain run of a JSON string's content ends: the first quote, backslash or control
/// character (RFC 8259 §7), the only bytes a scanner must look at inside a string.
///
/// Most of a chat frame is string content, so the search skips sixteen bytes a step while a
/// vector compare finds no stop in them, and reads the first stop's place off the compare's
/// mask. Fewer than sixteen bytes from the end, it goes eight bytes a step: a byte
/// that equals a quote or a backslash, or is below 0x20, sets its high bit in a mask (the
/// "has a zero byte" arithmetic); a borrow can only mark bytes above one already marked, so the
/// lowest mark is exact. Bytes of 0x80 and up (UTF-8 sequences) never mark.
///
/// Writers search for one more stop: DEL (0x7F), which `JSONString.append` escapes although
/// RFC 8259 allows it raw, so that a line never carries a control character of either range.
enum StringStops {
  /// The index of the first stop at or after `index` in `base[..<count]`, or `count`; with
  /// `delete`, DEL is a stop too.
  @inline(__always)
  static func first(
    in base: UnsafePointer<UInt8>, from index: Int, count: Int, delete: Bool = false
  ) -> Int {
    var index = index
    let quote = SIMD16<UInt8>(repeating: 0x22)
    let backslash = SIMD16<UInt8>(repeating: 0x5C)
    let space = SIMD16<UInt8>(repeating: 0x20)
    let del = SIMD16<UInt8>(repeating: 0x7F)
    while count &- index >= 16 {
      let block = UnsafeRawPointer(base + index).loadUnaligned(as: SIMD16<UInt8>.self)
      var stops = (block .== quote) .| (block .== backslash) .| (block .< space)
      if delete { stops .|= block .== del }
      if any(stops) {
        // The first marked lane: the mask's lanes as two words, each lane a byte of ones.
        let lanes = unsafeBitCast(
          SIMD16<UInt8>(repeating: 0).replacing(with: 0xFF, where: stops), to: SIMD2<UInt64>.self)
        let low = UInt64(littleEndian: lanes[0])
        return low != 0
          ? index &+ low.trailingZeroBitCount &>> 3
          : index &+ 8 &+ UInt64(littleEndian: lanes[1]).trailingZeroBitCount &>> 3
      }
      index &+= 16
    }
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highBits: UInt64 = 0x8080_8080_8080_8080
    while count &- index >= 8 {
      let word = UInt64(
        littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
      let quotes = word ^ (ones &* 0x22)
      let backslashes = word ^ (ones &* 0x5C)
      var stops =
        ((quotes &- ones) & ~quotes | (backslashes &- ones) & ~backslashes
          | (word &- ones &* 0x20) & ~word) & highBits
      if delete {
        let dels = word ^ (ones &* 0x7F)
        stops |= (dels &- ones) & ~dels & highBits
      }
      if stops != 0 { return index &+ stops.trailingZeroBitCount &>> 3 }
      index &+= 8
    }
    while index < count {
      let byte = base[index]
      if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20
        || (delete && byte == 0x7F)
      {
        return index
      }
      index &+= 1
    }
    return index
  }
}
