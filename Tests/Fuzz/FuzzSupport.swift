// What every fuzzer needs besides its own checks; scripts/fuzz.sh compiles this file into each
// of them, with Tests/TestSupport/SplitMix64.swift (the deterministic generator).

import Glibc

/// Prints why an invariant broke (naming the fuzzer's file and line), then traps.
func require(
  _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
  file: StaticString = #fileID, line: UInt = #line
) {
  if !condition() {
    let text = "\(file):\(line): invariant violated: \(message())\n"
    // fd 2 directly: the `stderr` global is not concurrency-safe in Swift 6 mode.
    var bytes = Array(text.utf8)
    _ = write(2, &bytes, bytes.count)
    precondition(false, text)
  }
}

/// The first `limit` bytes in hex, for messages.
func hex(_ bytes: some Collection<UInt8>, limit: Int = 96) -> String {
  let digits = Array("0123456789abcdef".utf8)
  var out: [UInt8] = []
  for byte in bytes.prefix(limit) {
    out.append(digits[Int(byte >> 4)])
    out.append(digits[Int(byte & 15)])
  }
  return String(decoding: out, as: UTF8.self) + (bytes.count > limit ? "…" : "")
}

/// Splits `total` bytes into chunk sizes chosen by `seed`; the sizes add up to `total`.
func chunkSizes(total: Int, seed: UInt8) -> [Int] {
  if seed == 0 || total == 0 { return [total] }
  if seed == 1 { return [Int](repeating: 1, count: total) }
  var random = SplitMix64(seed: UInt64(seed) &* 0x1000_0001)
  var sizes: [Int] = []
  var left = total
  while left > 0 {
    let size: Int
    switch seed & 3 {
    case 0: size = 1 + random.below(4)
    case 1: size = 1 + random.below(64)
    case 2: size = 1 + random.below(random.below(3) == 0 ? 40000 : 16)
    default: size = 1 + random.below(8192)
    }
    let take = min(size, left)
    sizes.append(take)
    left -= take
  }
  return sizes
}
