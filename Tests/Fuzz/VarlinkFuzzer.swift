// libFuzzer target for the control socket's request path: VarlinkFramer (Sources/Varlink)
// splitting a hostile client's byte stream, VarlinkCall.decode / VarlinkReply.decode on each
// message, and the JSON target under them (JSONScanner, JSONValue, JSONString).
//
// scripts/fuzz.sh builds WebSocket, JSON and Varlink as modules and compiles this file
// against them (public API only); see its header comment for the exact commands.
//
// Input layout (Tests/Fuzz/make_seed_corpus.py writes the seeds in it):
//
//   byte 0   mode, taken modulo 5:
//              0 a byte stream through VarlinkFramer, split into chunks chosen by byte 2;
//                every message it returns is checked as in mode 1
//              1 one message (no framing, NULs and all): JSON scanner vs a reference parser,
//                JSONValue.parse, round trips, key extraction, VarlinkCall/Reply decoding
//              2 the content of one JSON string (the fuzzer adds the quotes): validation and
//                JSONString.unescape against a reference, escaping round trip
//              3 a JSONValue / VarlinkCall / VarlinkReply built from the bytes, serialised,
//                framed and decoded again
//              4 a JSON array whose elements are compared pairwise (Equatable / Hashable)
//   byte 1   mode 0: bits 0-2 the framer limit (framerLimits); bits 3-5 the key set of the
//            per-message checks. Modes 1 and 3: the key set (bits 0-2) and flags.
//   byte 2   mode 0: chunk seed (0 one call, 1 byte by byte, else a PRNG seed)
//   byte 3…  the payload
//
// Oracles (each failure prints what broke, then traps with `precondition`, so libFuzzer
// records the input as a crash):
//  - a message the framer returns is within its limit and holds no NUL; the messages are
//    exactly the stream's NUL-terminated pieces; the framer throws exactly when a piece
//    outgrows the limit, and `pendingCount` is the unterminated tail;
//  - JSONScanner.isValid agrees with a reference RFC 8259 parser (grammar, UTF-8, the
//    scanner's 128-level nesting bound), and with JSONValue.parse succeeding;
//  - JSONValue.parse builds the reference tree exactly (kinds, string bytes, number bits);
//  - round trip: parse(parse(x).bytes) == parse(x), the serialised form is valid per the
//    scanner, has no line breaks, and is a fixed point; minify keeps the value;
//  - hasLineBreaks and isObject tell the truth; knownUTF8: true changes nothing on UTF-8;
//  - scanner-extracted field ranges point at exactly the value the reference finds for
//    that key (the last duplicate wins, as in JSONValue), which itself scans as valid JSON;
//  - JSONString.unescape of valid string content matches a reference decoder and is valid
//    UTF-8; escaping it again gives back the same string;
//  - VarlinkCall.decode accepts exactly the calls the protocol allows, with the reference's
//    fields, and a decoded call's `encoded` form (one NUL, at the end) decodes to an equal
//    call; the same for VarlinkReply; VarlinkError(name:parameters:) keeps the name and is
//    idempotent;
//  - PackedStrings.readJSONArray reads a valid array of strings as the reference decodes it,
//    and names the first element that is not a string;
//  - a == b implies b == a and equal hashes (JSONValue's Hashable contract).
//
// Bugs this fuzzer found, all fixed (their inputs stay in Tests/Fuzz/corpus/varlink/crash-*):
// JSONValue.parse refused nesting the scanner (and so the store) accepts; 1e400 parsed to
// infinity and serialised as null; JSONValue's hash disagreed with == (ints vs doubles)
// and == was not transitive; JSONScanner reported nested
// fields of an earlier occurrence of a duplicated key.

import Glibc
import JSON
import Varlink

// MARK: - Entry point

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  guard size >= 3 else { return 0 }
  let a = data[1]
  let b = data[2]
  let payload = Array(UnsafeBufferPointer(start: data + 3, count: size - 3))
  switch data[0] % 5 {
  case 0: runFramer(limitIndex: Int(a & 7), keySet: a >> 3, chunkSeed: b, payload)
  case 1: checkMessage(payload, keySet: a)
  case 2: runString(payload)
  case 3: runBuilt(a, b, payload)
  default: runEquality(payload)
  }
  return 0
}

// MARK: - Helpers

/// VarlinkFramer.append on an array.
func append(_ framer: inout VarlinkFramer, _ bytes: [UInt8]) -> Result<[[UInt8]], VarlinkError> {
  bytes.withUnsafeBytes { raw in
    Result { () throws(VarlinkError) in try framer.append(raw) }
  }
}

func isUTF8(_ bytes: some Collection<UInt8>) -> Bool {
  String(validating: bytes, as: UTF8.self) != nil
}

func isWhitespace(_ byte: UInt8) -> Bool {
  byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
}

/// The scanner's result on a byte array.
func scan(
  _ bytes: [UInt8], _ keys: KeySet = KeySet(), knownUTF8: Bool = false
) -> JSONScanner.Result? {
  bytes.withUnsafeBytes {
    JSONScanner.scan(
      $0, topLevel: JSONScanner.Keys(keys.top), nestedIn: keys.nestedIn,
      nested: JSONScanner.Keys(keys.nested), knownUTF8: knownUTF8)
  }
}

func scannerValid(_ bytes: [UInt8]) -> Bool {
  bytes.withUnsafeBytes { JSONScanner.isValid($0) }
}

func parse(_ bytes: [UInt8]) -> JSONValue? {
  try? JSONValue.parse(bytes)
}

// MARK: - Reference JSON (RFC 8259)

/// A JSON value as the reference parser reads it: strings as their decoded bytes, keys too,
/// numbers classified as JSONValue documents (integral text that fits Int64 is an int).
indirect enum Ref: Equatable {
  case null
  case bool(Bool)
  case int(Int64)
  case double(Double)
  case string([UInt8])
  case array([Ref])
  case object([Member])

  struct Member: Equatable {
    var key: [UInt8]
    var value: Ref
  }

  static func == (lhs: Ref, rhs: Ref) -> Bool {
    switch (lhs, rhs) {
    case (.null, .null): true
    case (.bool(let a), .bool(let b)): a == b
    case (.int(let a), .int(let b)): a == b
    case (.double(let a), .double(let b)): a.bitPattern == b.bitPattern
    case (.string(let a), .string(let b)): a == b
    case (.array(let a), .array(let b)): a == b
    case (.object(let a), .object(let b)): a == b
    default: false
    }
  }

  /// The last member named `key` (byte-wise), as JSONValue's subscript picks duplicates.
  func member(_ key: [UInt8]) -> Ref? {
    guard case .object(let members) = self else { return nil }
    return members.last { $0.key == key }?.value
  }

  func count(_ key: [UInt8]) -> Int {
    guard case .object(let members) = self else { return 0 }
    return members.filter { $0.key == key }.count
  }

  var hasNonFinite: Bool {
    switch self {
    case .double(let d): !d.isFinite
    case .array(let items): items.contains { $0.hasNonFinite }
    case .object(let members): members.contains { $0.value.hasNonFinite }
    default: false
    }
  }
}

/// Whether JSONValue.parse built exactly the reference tree.
func same(_ value: JSONValue, _ ref: Ref) -> Bool {
  switch (value, ref) {
  case (.null, .null): return true
  case (.bool(let a), .bool(let b)): return a == b
  case (.int(let a), .int(let b)): return a == b
  case (.double(let a), .double(let b)): return a.bitPattern == b.bitPattern
  case (.string(let a), .string(let b)): return Array(a.utf8) == b
  case (.array(let a), .array(let b)):
    return a.count == b.count && zip(a, b).allSatisfy { same($0, $1) }
  case (.object(let a), .object(let b)):
    return a.count == b.count
      && zip(a, b).allSatisfy { Array($0.key.utf8) == $1.key && same($0.value, $1.value) }
  default: return false
  }
}

/// A deliberately plain recursive-descent parser, written from RFC 8259 and the limits the
/// JSON target documents: the scanner refuses containers nested deeper than 128.
struct RefParser {
  enum Failure: Error {
    case invalid(Int)
    case tooDeep
  }

  static let scannerMaxDepth = 128

  let s: [UInt8]
  var i = 0
  /// The depth of the deepest value (the top-level value is at depth 0).
  var maxValueDepth = 0

  init(_ bytes: [UInt8]) { s = bytes }

  static func parse(_ bytes: [UInt8]) -> (ref: Ref?, maxValueDepth: Int) {
    var parser = RefParser(bytes)
    do {
      parser.skip()
      let value = try parser.value(depth: 0)
      parser.skip()
      guard parser.i == parser.s.count else { throw Failure.invalid(parser.i) }
      return (value, parser.maxValueDepth)
    } catch {
      return (nil, parser.maxValueDepth)
    }
  }

  var peek: UInt8? { i < s.count ? s[i] : nil }

  mutating func skip() {
    while i < s.count, isWhitespace(s[i]) { i += 1 }
  }

  mutating func expect(_ byte: UInt8) throws(Failure) {
    guard peek == byte else { throw .invalid(i) }
    i += 1
  }

  mutating func value(depth: Int) throws(Failure) -> Ref {
    maxValueDepth = max(maxValueDepth, depth)
    guard let c = peek else { throw .invalid(i) }
    switch c {
    case UInt8(ascii: "{"):
      guard depth + 1 <= Self.scannerMaxDepth else { throw .tooDeep }
      i += 1
      skip()
      var members: [Ref.Member] = []
      if peek == UInt8(ascii: "}") {
        i += 1
        return .object(members)
      }
      while true {
        skip()
        guard peek == UInt8(ascii: "\"") else { throw .invalid(i) }
        let key = try string()
        skip()
        try expect(UInt8(ascii: ":"))
        skip()
        members.append(Ref.Member(key: key, value: try value(depth: depth + 1)))
        skip()
        if peek == UInt8(ascii: ",") {
          i += 1
          continue
        }
        try expect(UInt8(ascii: "}"))
        return .object(members)
      }
    case UInt8(ascii: "["):
      guard depth + 1 <= Self.scannerMaxDepth else { throw .tooDeep }
      i += 1
      skip()
      var items: [Ref] = []
      if peek == UInt8(ascii: "]") {
        i += 1
        return .array(items)
      }
      while true {
        skip()
        items.append(try value(depth: depth + 1))
        skip()
        if peek == UInt8(ascii: ",") {
          i += 1
          continue
        }
        try expect(UInt8(ascii: "]"))
        return .array(items)
      }
    case UInt8(ascii: "\""):
      return .string(try string())
    case UInt8(ascii: "t"):
      try word("true")
      return .bool(true)
    case UInt8(ascii: "f"):
      try word("false")
      return .bool(false)
    case UInt8(ascii: "n"):
      try word("null")
      return .null
    default:
      return try number()
    }
  }

  mutating func word(_ w: String) throws(Failure) {
    for byte in w.utf8 { try expect(byte) }
  }

  func isDigit(_ c: UInt8?) -> Bool { c.map { $0 >= 0x30 && $0 <= 0x39 } ?? false }

  mutating func number() throws(Failure) -> Ref {
    let start = i
    if peek == UInt8(ascii: "-") { i += 1 }
    if peek == UInt8(ascii: "0") {
      i += 1
    } else if let c = peek, c >= 0x31 && c <= 0x39 {
      while isDigit(peek) { i += 1 }
    } else {
      throw .invalid(i)
    }
    var integral = true
    if peek == UInt8(ascii: ".") {
      integral = false
      i += 1
      guard isDigit(peek) else { throw .invalid(i) }
      while isDigit(peek) { i += 1 }
    }
    if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
      integral = false
      i += 1
      if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { i += 1 }
      guard isDigit(peek) else { throw .invalid(i) }
      while isDigit(peek) { i += 1 }
    }
    let text = String(decoding: s[start..<i], as: UTF8.self)
    if integral, let value = Int64(text) { return .int(value) }
    let double = Double(text)
    require(double != nil, "Double() refuses the valid JSON number \(text)")
    return .double(double ?? 0)
  }

  /// Parses a string at `i` (on its opening quote); returns the decoded bytes.
  mutating func string() throws(Failure) -> [UInt8] {
    i += 1
    let start = i
    var run = i
    while true {
      guard let c = peek else { throw .invalid(i) }
      if c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") {
        // Raw text between escapes must be UTF-8 on its own.
        guard isUTF8(s[run..<i]) else { throw .invalid(run) }
      }
      if c == UInt8(ascii: "\"") {
        let content = s[start..<i]
        i += 1
        return referenceUnescape(content)
      }
      if c < 0x20 { throw .invalid(i) }
      if c == UInt8(ascii: "\\") {
        i += 1
        guard let e = peek else { throw .invalid(i) }
        switch e {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
          UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
          i += 1
        case UInt8(ascii: "u"):
          i += 1
          for _ in 0..<4 {
            guard let h = peek, hexValue(h) != nil else { throw .invalid(i) }
            i += 1
          }
        default:
          throw .invalid(i)
        }
        run = i
        continue
      }
      i += 1
    }
  }
}

func hexValue(_ c: UInt8) -> UInt32? {
  switch c {
  case 0x30...0x39: UInt32(c - 0x30)
  case 0x61...0x66: UInt32(c - 0x61 + 10)
  case 0x41...0x46: UInt32(c - 0x41 + 10)
  default: nil
  }
}

func encodeUTF8(_ scalar: UInt32) -> [UInt8] {
  switch scalar {
  case 0..<0x80: [UInt8(scalar)]
  case 0x80..<0x800: [UInt8(0xC0 | scalar >> 6), UInt8(0x80 | scalar & 0x3F)]
  case 0x800..<0x10000:
    [UInt8(0xE0 | scalar >> 12), UInt8(0x80 | scalar >> 6 & 0x3F), UInt8(0x80 | scalar & 0x3F)]
  default:
    [
      UInt8(0xF0 | scalar >> 18), UInt8(0x80 | scalar >> 12 & 0x3F),
      UInt8(0x80 | scalar >> 6 & 0x3F), UInt8(0x80 | scalar & 0x3F),
    ]
  }
}

/// Decodes valid string content (RFC 8259 §7): a \uD8xx\uDCxx pair is one scalar, and a
/// lone surrogate escape becomes U+FFFD, as JSONString.unescape documents.
func referenceUnescape(_ content: ArraySlice<UInt8>) -> [UInt8] {
  let c = Array(content)
  var out: [UInt8] = []
  var i = 0
  func hex4(_ at: Int) -> UInt32? {
    guard at + 4 <= c.count else { return nil }
    var value: UInt32 = 0
    for j in at..<(at + 4) {
      guard let digit = hexValue(c[j]) else { return nil }
      value = value << 4 | digit
    }
    return value
  }
  while i < c.count {
    guard c[i] == UInt8(ascii: "\\") else {
      out.append(c[i])
      i += 1
      continue
    }
    let e = c[i + 1]
    i += 2
    switch e {
    case UInt8(ascii: "b"): out.append(0x08)
    case UInt8(ascii: "f"): out.append(0x0C)
    case UInt8(ascii: "n"): out.append(0x0A)
    case UInt8(ascii: "r"): out.append(0x0D)
    case UInt8(ascii: "t"): out.append(0x09)
    case UInt8(ascii: "u"):
      var scalar = hex4(i)!
      i += 4
      if (0xD800...0xDBFF).contains(scalar), i + 1 < c.count, c[i] == UInt8(ascii: "\\"),
        c[i + 1] == UInt8(ascii: "u"), let low = hex4(i + 2), (0xDC00...0xDFFF).contains(low)
      {
        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        i += 6
      } else if (0xD800...0xDFFF).contains(scalar) {
        scalar = 0xFFFD
      }
      out += encodeUTF8(scalar)
    default: out.append(e)  // " \ /
    }
  }
  return out
}

// MARK: - Key sets for the scanner's field extraction

struct KeySet {
  var top: [[UInt8]] = []
  var nestedIn: Int?
  var nested: [[UInt8]] = []
}

func bytes(_ strings: String...) -> [[UInt8]] { strings.map { Array($0.utf8) } }

/// Picks the keys to extract: those the daemon asks for, unusual ones, or the message's own.
func keySet(_ choice: UInt8, for ref: Ref?) -> KeySet {
  switch choice & 7 {
  case 0: return KeySet()
  // EnvelopeProtocol.decode (the defaults of [Envelope]).
  case 1:
    return KeySet(top: bytes("event", "data"), nestedIn: 1, nested: bytes("room_id", "client_id"))
  // A Varlink call and Send/History parameters.
  case 2:
    return KeySet(
      top: bytes("method", "parameters", "more", "oneway", "upgrade"), nestedIn: 1,
      nested: bytes("room", "text", "id", "since_seq", "limit"))
  // Outbox.load's line keys, no nested object.
  case 3: return KeySet(top: bytes("op", "id", "room", "count", "time", "text"))
  // Keys that need decoding to compare: escapes, non-ASCII, empty.
  case 4:
    return KeySet(
      top: bytes("é", "\u{0}", "\"", "\\", "a/b", "", "\u{1F600}"), nestedIn: 0,
      nested: bytes("é", "/", ""))
  // A nestedIn index out of range, and a nested object under the last key.
  case 5: return KeySet(top: bytes("data"), nestedIn: 7, nested: bytes("room_id"))
  // The message's own keys: the first three, and inside the first object-valued one.
  default:
    guard case .object(let members) = ref else { return KeySet(top: bytes("a")) }
    var set = KeySet()
    for member in members.prefix(3) where !set.top.contains(member.key) {
      set.top.append(member.key)
    }
    if choice & 8 != 0 { set.top.append(Array("no such key".utf8)) }
    if let index = set.top.firstIndex(where: {
      if case .object = ref?.member($0) { return true }
      return false
    }), case .object(let inner) = ref?.member(set.top[index]) {
      set.nestedIn = index
      for member in inner.prefix(3) where !set.nested.contains(member.key) {
        set.nested.append(member.key)
      }
    }
    return set
  }
}

// MARK: - Mode 0: the framer

let framerLimits = [0, 1, 2, 16, 100, 1024, 4096, 65536]

func runFramer(limitIndex: Int, keySet: UInt8, chunkSeed: UInt8, _ stream: [UInt8]) {
  let limit = framerLimits[limitIndex]
  var framer = VarlinkFramer(limit: limit)
  require(framer.limit == limit && framer.pendingCount == 0, "a new framer is not empty")
  // The reference: the NUL-terminated pieces of the stream, and where each ends.
  var pieces: [(bytes: ArraySlice<UInt8>, end: Int)] = []
  var start = 0
  for (i, byte) in stream.enumerated() where byte == 0 {
    pieces.append((stream[start..<i], i + 1))
    start = i + 1
  }
  var returned: [[UInt8]] = []
  var offset = 0
  for size in chunkSizes(total: stream.count, seed: chunkSeed) {
    let chunkEnd = offset + size
    let result = append(&framer, Array(stream[offset..<chunkEnd]))
    // The pieces that ended in this chunk, and the tail still open after it.
    let ended = pieces.filter { $0.end > offset && $0.end <= chunkEnd }
    let tailStart = pieces.last { $0.end <= chunkEnd }?.end ?? 0
    let tailLength = chunkEnd - tailStart
    let oversized = ended.contains { $0.bytes.count > limit } || tailLength > limit
    offset = chunkEnd
    switch result {
    case .success(let messages):
      require(!oversized, "limit \(limit) not enforced on \(hex(stream))")
      require(
        messages.count == ended.count
          && zip(messages, ended).allSatisfy { $0.elementsEqual($1.bytes) },
        "framer returned \(messages.map { hex($0) }), expected \(ended.map { hex($0.bytes) })")
      require(
        framer.pendingCount == tailLength,
        "pendingCount \(framer.pendingCount), expected \(tailLength)")
      returned += messages
      continue
    case .failure(let error):
      require(oversized, "framer refused a stream within its limit \(limit): \(error)")
      require(error == .messageTooLarge(limit: limit), "unexpected framer error \(error)")
      require(error.name == "org.varlink.service.InvalidParameter", "error name \(error.name)")
    }
    // The framer is not used after refusing: the connection closes.
    break
  }
  for message in returned {
    require(message.count <= limit, "a message of \(message.count) bytes over limit \(limit)")
    require(!message.contains(0), "a message holds a NUL: \(hex(message))")
    checkMessage(message, keySet: keySet)
  }
}

// MARK: - Mode 1: one message

/// Non-finite numbers replaced with null, as the serialiser writes them.
func finite(_ v: JSONValue) -> JSONValue {
  switch v {
  case .double(let d) where !d.isFinite: .null
  case .array(let items): .array(items.map(finite))
  case .object(let members): .object(members.map { ($0.key, finite($0.value)) })
  default: v
  }
}

/// What a round trip through the serialiser must give back.
func expectedRoundTrip(_ v: JSONValue) -> JSONValue {
  return v
}

func checkMessage(_ m: [UInt8], keySet choice: UInt8) {
  let (ref, maxDepth) = RefParser.parse(m)
  let valid = scannerValid(m)
  require(
    valid == (ref != nil),
    "scanner says \(valid ? "valid" : "invalid"), reference disagrees: \(hex(m))")
  let parsed = parse(m)
  let parseExpected = valid
  require(
    (parsed != nil) == parseExpected,
    "JSONScanner.isValid \(valid) but JSONValue.parse \(parsed != nil ? "succeeds" : "fails")"
      + " (depth \(maxDepth)): \(hex(m))")

  let keys = keySet(choice, for: ref)
  checkScan(m, ref, keys)
  if let ref {
    checkValid(m, ref, parsed)
  }
  checkCall(m, ref, parsed)
  checkReply(m, parsed)
  checkPackedStrings(m, ref)
}

/// PackedStrings.readJSONArray (how the daemon reads a SendBatch's texts): on valid JSON, the
/// reference's strings or the place of its first element that is not one; on anything else,
/// some answer, within the bytes.
func checkPackedStrings(_ m: [UInt8], _ ref: Ref?) {
  let reading = m.withUnsafeBytes { PackedStrings.readJSONArray($0) }
  guard let ref else { return }
  guard case .array(let elements) = ref else {
    require(reading == .notAnArray, "readJSONArray read \(reading) from a non-array: \(hex(m))")
    return
  }
  var expected: [[UInt8]] = []
  for element in elements {
    guard case .string(let bytes) = element else { break }
    expected.append(bytes)
  }
  if expected.count < elements.count {
    require(
      reading == .notAString(index: expected.count),
      "readJSONArray read \(reading), element \(expected.count) is not a string: \(hex(m))")
    return
  }
  guard case .strings(let packed) = reading else {
    require(false, "readJSONArray read \(reading) from an array of strings: \(hex(m))")
    return
  }
  var got: [[UInt8]] = []
  for index in packed.indices { packed.withUTF8(at: index) { got.append(Array($0)) } }
  require(got == expected, "readJSONArray read \(got), the reference \(expected): \(hex(m))")
}

func checkValid(_ m: [UInt8], _ ref: Ref, _ parsed: JSONValue?) {
  let rawLineBreaks = m.contains(0x0A) || m.contains(0x0D)
  let result = scan(m)
  require(result?.hasLineBreaks == rawLineBreaks, "hasLineBreaks wrong for \(hex(m))")
  let refIsObject: Bool
  if case .object = ref { refIsObject = true } else { refIsObject = false }
  require(result?.isObject == refIsObject, "isObject wrong for \(hex(m))")

  var minified: [UInt8] = []
  m.withUnsafeBytes { JSONString.minify($0, to: &minified) }
  let minifiedScan = scan(minified)
  require(
    minifiedScan != nil && minifiedScan?.hasLineBreaks == false,
    "minify made \(hex(minified)) of \(hex(m))")
  require(RefParser.parse(minified).ref == ref, "minify changed the value of \(hex(m))")

  guard let parsed else { return }
  require(same(parsed, ref), "JSONValue.parse built \(parsed), reference differs: \(hex(m))")
  require(parsed == parsed, "a parsed value is not equal to itself: \(parsed)")
  let out = parsed.bytes
  let outScan = scan(out)
  require(outScan != nil, "serialised form is not valid JSON: \(hex(out)) from \(hex(m))")
  require(outScan?.hasLineBreaks == false, "serialised form has line breaks: \(hex(out))")
  var reminified: [UInt8] = []
  out.withUnsafeBytes { JSONString.minify($0, to: &reminified) }
  require(reminified == out, "compact form has whitespace outside strings: \(hex(out))")
  guard let again = parse(out) else {
    require(false, "JSONValue.parse refuses its own output \(hex(out))")
    return
  }
  require(
    again == expectedRoundTrip(parsed),
    "round trip changed the value: \(parsed) -> \(hex(out)) -> \(again)")
  require(again.bytes == out, "serialising is not a fixed point: \(hex(out)) -> \(again)")
}

/// Key extraction: every range is exactly the value the reference finds for that key.
func checkScan(_ m: [UInt8], _ ref: Ref?, _ keys: KeySet) {
  guard let result = scan(m, keys) else {
    require(ref == nil, "scan with keys refused valid JSON \(hex(m))")
    return
  }
  require(ref != nil, "scan with keys accepted invalid JSON \(hex(m))")
  require(
    result.topLevel.count == keys.top.count && result.nested.count == keys.nested.count,
    "result sizes differ from the keys requested")
  if isUTF8(m) {
    require(scan(m, keys, knownUTF8: true) == result, "knownUTF8: true changed the result")
  }
  guard let ref else { return }
  let isObject: Bool
  if case .object = ref { isObject = true } else { isObject = false }
  require(result.isObject == isObject, "isObject \(result.isObject) for \(hex(m))")
  func checkRange(_ range: Range<Int>?, _ expected: Ref?, _ what: String) {
    // A key asked for twice is reported once, at its first place in the request.
    guard let expected else {
      require(range == nil, "\(what): a range \(String(describing: range)) for a missing key")
      return
    }
    guard let range else {
      require(false, "\(what): no range for a key that is present in \(hex(m))")
      return
    }
    require(
      range.lowerBound >= 0 && range.upperBound <= m.count && !range.isEmpty,
      "\(what): range \(range) outside the message")
    let slice = Array(m[range])
    require(
      !isWhitespace(slice.first!) && !isWhitespace(slice.last!),
      "\(what): range \(range) includes whitespace: \(hex(slice))")
    require(scannerValid(slice), "\(what): range \(range) is not a JSON value: \(hex(slice))")
    require(
      RefParser.parse(slice).ref == expected,
      "\(what): range \(range) holds \(hex(slice)), not the key's value")
    // A value said to have no escapes is read as it stands (an envelope's message id).
    require(
      result.mayHaveEscapes(in: range) || !slice.contains(UInt8(ascii: "\\")),
      "\(what): range \(range) has a backslash the scan did not report: \(hex(slice))")
  }
  for (i, key) in keys.top.enumerated() {
    let firstAsked = keys.top.firstIndex(of: key) == i
    checkRange(
      result.topLevel[i], firstAsked && isObject ? ref.member(key) : nil, "top-level key \(i)")
  }
  guard let nestedIn = keys.nestedIn, keys.top.indices.contains(nestedIn), isObject else {
    for (i, range) in result.nested.enumerated() {
      require(range == nil, "nested key \(i) reported without a nested object")
    }
    return
  }
  let outerKey = keys.top[nestedIn]
  let outer = keys.top.firstIndex(of: outerKey) == nestedIn ? ref.member(outerKey) : nil
  for (i, key) in keys.nested.enumerated() {
    let firstAsked = keys.nested.firstIndex(of: key) == i
    checkRange(result.nested[i], firstAsked ? outer?.member(key) : nil, "nested key \(i)")
  }
}

/// VarlinkCall.decode accepts exactly what the protocol allows, and re-encodes faithfully.
func checkCall(_ m: [UInt8], _ ref: Ref?, _ parsed: JSONValue?) {
  let decoded: Result<VarlinkCall, VarlinkError> = Result { () throws(VarlinkError) in
    try VarlinkCall.decode(m)
  }
  // The reference verdict.
  var expected: VarlinkError?
  if parsed == nil || ref == nil {
    expected = .invalidMessage("the request is not valid JSON (UTF-8)")
  } else if case .object = ref! {
    let r = ref!
    if case .string(let method)? = r.member(Array("method".utf8)), !method.isEmpty {
      if let p = r.member(Array("parameters".utf8)), !isObjectRef(p) {
        expected = .invalidParameter(name: "parameters", reason: "must be an object")
      } else {
        for flag in ["oneway", "more", "upgrade"] {
          if let v = r.member(Array(flag.utf8)), !isBoolRef(v) {
            expected = .invalidParameter(name: flag, reason: "must be a boolean")
            break
          }
        }
        if expected == nil, r.member(Array("upgrade".utf8)) == .bool(true) {
          expected = .invalidParameter(
            name: "upgrade", reason: "connection upgrades are not supported")
        }
      }
    } else {
      expected = .invalidMessage("the request has no \"method\" string")
    }
  } else {
    expected = .invalidMessage("the request is not a JSON object")
  }
  switch decoded {
  case .failure(let error):
    require(
      error == expected,
      "VarlinkCall.decode threw \(error), expected \(String(describing: expected))")
    _ = VarlinkReply(error).encoded
  case .success(let call):
    require(expected == nil, "VarlinkCall.decode accepted \(hex(m)), expected \(expected!)")
    let r = ref!
    require(
      .string(Array(call.method.utf8)) == r.member(Array("method".utf8)),
      "method \(call.method) differs from the message")
    require(
      same(call.parameters, r.member(Array("parameters".utf8)) ?? .object([])), "parameters differ")
    require(call.oneway == (r.member(Array("oneway".utf8)) == .bool(true)), "oneway differs")
    require(call.more == (r.member(Array("more".utf8)) == .bool(true)), "more differs")
    _ = call.interface
    checkCallRoundTrip(call)
  }
}

func isObjectRef(_ r: Ref) -> Bool {
  if case .object = r { return true }
  return false
}

func isBoolRef(_ r: Ref) -> Bool {
  if case .bool = r { return true }
  return false
}

/// Splits wire bytes with a fresh framer: exactly one message, terminated by the only NUL.
func unframe(_ wire: [UInt8], _ what: String) -> [UInt8]? {
  require(wire.last == 0, "\(what).encoded does not end in NUL: \(hex(wire))")
  require(wire.firstIndex(of: 0) == wire.count - 1, "\(what).encoded has a NUL inside")
  var framer = VarlinkFramer(limit: wire.count)
  let messages = try? append(&framer, wire).get()
  require(messages?.count == 1 && framer.pendingCount == 0, "\(what).encoded is not one message")
  return messages?.first
}

func checkCallRoundTrip(_ call: VarlinkCall) {
  guard let message = unframe(call.encoded, "VarlinkCall") else { return }
  do {
    let again = try VarlinkCall.decode(message)
    var expected = call
    expected.parameters = expectedRoundTrip(call.parameters)
    require(again == expected, "call round trip: \(call) -> \(hex(message)) -> \(again)")
  } catch {
    require(false, "VarlinkCall.decode refuses \(call).encoded: \(error), \(hex(message))")
  }
}

func checkReply(_ m: [UInt8], _ parsed: JSONValue?) {
  let decoded = try? VarlinkReply.decode(m)
  var isObject = false
  if case .object? = parsed { isObject = true }
  require((decoded != nil) == isObject, "VarlinkReply.decode: \(decoded != nil) for \(hex(m))")
  guard let reply = decoded else { return }
  require(reply.parameters == (parsed?["parameters"] ?? .object([])), "reply parameters differ")
  require(reply.error == parsed?["error"]?.stringValue, "reply error differs")
  checkReplyRoundTrip(reply)
}

func checkReplyRoundTrip(_ reply: VarlinkReply) {
  if let message = unframe(reply.encoded, "VarlinkReply") {
    let again = try? VarlinkReply.decode(message)
    var expected = reply
    expected.parameters = expectedRoundTrip(reply.parameters)
    require(again == expected, "reply round trip: \(reply) -> \(hex(message))")
  }
  let name = reply.error ?? "io.chatlink.Daemon.OutboxFull"
  let error = VarlinkError(name: name, parameters: reply.parameters)
  require(error.name == name, "VarlinkError(name: \(name)) is named \(error.name)")
  let again = VarlinkError(name: error.name, parameters: error.parameters)
  require(again == error, "VarlinkError is not idempotent: \(error) -> \(again)")
  _ = error.description
  if let message = unframe(VarlinkReply(error).encoded, "VarlinkReply(error)") {
    require(
      (try? VarlinkReply.decode(message))?.error == name, "an error reply loses its name")
  }
}

// MARK: - Mode 2: one string's content

func runString(_ content: [UInt8]) {
  let quoted = [UInt8(ascii: "\"")] + content + [UInt8(ascii: "\"")]
  let (ref, _) = RefParser.parse(quoted)
  let valid = scannerValid(quoted)
  require(valid == (ref != nil), "scanner \(valid) on the string \(hex(quoted))")
  // Any bytes at all: unescape must not crash, even on content no scanner accepted.
  _ = content.withUnsafeBytes { JSONString.unescape($0) }
  guard case .string(let expected)? = ref else { return }
  let unescaped = content.withUnsafeBytes { JSONString.unescape($0) }
  require(
    unescaped == expected,
    "JSONString.unescape(\(hex(content))) = \(hex(unescaped)), reference \(hex(expected))")
  require(isUTF8(unescaped), "JSONString.unescape produced invalid UTF-8: \(hex(unescaped))")
  require(parse(quoted) == .string(String(decoding: unescaped, as: UTF8.self)), "parse differs")
  let text = String(decoding: unescaped, as: UTF8.self)
  var escaped: [UInt8] = []
  JSONString.append(text, to: &escaped)
  require(JSONString.quoted(text) == String(decoding: escaped, as: UTF8.self), "quoted differs")
  let back = RefParser.parse(escaped).ref
  require(back == .string(unescaped), "escaping \(hex(unescaped)) gave \(hex(escaped))")
  require(!escaped.contains(where: { $0 < 0x20 || $0 == 0x7F }), "a raw control byte escaped")
}

// MARK: - Mode 3: values built from the bytes

struct ByteReader {
  let bytes: [UInt8]
  var i = 0
  var atEnd: Bool { i >= bytes.count }
  mutating func byte() -> UInt8 {
    defer { i += 1 }
    return i < bytes.count ? bytes[i] : 0
  }
  mutating func u64() -> UInt64 {
    var v: UInt64 = 0
    for _ in 0..<8 { v = v << 8 | UInt64(byte()) }
    return v
  }
  mutating func string() -> String {
    let n = Int(byte() % 24)
    var out: [UInt8] = []
    for _ in 0..<n { out.append(byte()) }
    return String(decoding: out, as: UTF8.self)
  }
}

/// A value from the bytes, nested less than 64 deep (JSONValue.parse's limit).
func buildValue(_ r: inout ByteReader, depth: Int) -> JSONValue {
  let tag = r.byte()
  switch tag % 8 {
  case 0: return .null
  case 1: return .bool(tag & 8 != 0)
  case 2: return .int(Int64(bitPattern: r.u64()))
  case 3: return .int(Int64(Int8(bitPattern: r.byte())))
  case 4: return .double(Double(bitPattern: r.u64()))
  case 5: return .string(r.string())
  case 6:
    guard depth < 60 else { return .null }
    return .array((0..<Int(r.byte() % 5)).map { _ in buildValue(&r, depth: depth + 1) })
  default:
    guard depth < 60 else { return .null }
    return buildObject(&r, depth: depth)
  }
}

func buildObject(_ r: inout ByteReader, depth: Int) -> JSONValue {
  var members: [(key: String, value: JSONValue)] = []
  for _ in 0..<Int(r.byte() % 5) {
    members.append((r.string(), buildValue(&r, depth: depth + 1)))
  }
  return .object(members)
}

func runBuilt(_ a: UInt8, _ b: UInt8, _ payload: [UInt8]) {
  var r = ByteReader(bytes: payload)
  let value = buildValue(&r, depth: 0)
  let out = value.bytes
  let outScan = scan(out)
  require(outScan != nil, "serialised \(value) is not JSON: \(hex(out))")
  require(outScan?.hasLineBreaks == false, "serialised \(value) has line breaks")
  guard let back = parse(out) else {
    require(false, "JSONValue.parse refuses \(hex(out)) (from \(value))")
    return
  }
  // Non-finite numbers have no JSON form: null by design.
  require(back == finite(value), "serialising changed \(value) into \(back)")
  require(back.bytes == out, "serialising is not a fixed point: \(hex(out))")
  checkMessage(out, keySet: a)

  var method = r.string()
  if method.isEmpty { method = "io.chatlink.Daemon.Ping" }
  let parameters = buildObject(&r, depth: 1)
  let call = VarlinkCall(
    method: method, parameters: parameters, oneway: b & 1 != 0, more: b & 2 != 0)
  var finiteCall = call
  finiteCall.parameters = finite(parameters)
  checkCallRoundTrip(finiteCall)
  let reply = VarlinkReply(
    parameters: finite(buildValue(&r, depth: 1)), continues: b & 4 != 0,
    error: b & 8 != 0 ? r.string() : nil)
  checkReplyRoundTrip(reply)

  // Both through one framer, in chunks: two messages, in order.
  let wire = finiteCall.encoded + reply.encoded
  var framer = VarlinkFramer(limit: wire.count)
  var messages: [[UInt8]] = []
  var offset = 0
  for size in chunkSizes(total: wire.count, seed: b >> 4 | a & 0xF0) {
    let chunk = Array(wire[offset..<(offset + size)])
    offset += size
    messages += (try? append(&framer, chunk).get()) ?? []
  }
  require(messages.count == 2 && framer.pendingCount == 0, "framer split \(hex(wire)) wrongly")
  require((try? VarlinkCall.decode(messages[0])) == finiteCall, "framed call differs")
  require((try? VarlinkReply.decode(messages[1])) == reply, "framed reply differs")
}

// MARK: - Mode 4: equality and hashing

/// The same value with every integer written as a double: equal by JSONValue's ==.
func asDoubles(_ v: JSONValue) -> JSONValue {
  switch v {
  case .int(let i): .double(Double(i))
  case .array(let items): .array(items.map(asDoubles))
  case .object(let members): .object(members.map { ($0.key, asDoubles($0.value)) })
  default: v
  }
}

func checkEqualHash(_ a: JSONValue, _ b: JSONValue) {
  guard a == b else {
    require(!(b == a), "== is not symmetric: \(a), \(b)")
    return
  }
  require(b == a, "== is not symmetric: \(a), \(b)")
  require(a.hashValue == b.hashValue, "equal values hash differently: \(a) and \(b)")
  var call = VarlinkCall(method: "m", parameters: .object([("x", a)]))
  let h = call.hashValue
  call.parameters = .object([("x", b)])
  require(call.hashValue == h, "equal calls hash differently")
}

func runEquality(_ payload: [UInt8]) {
  guard let value = parse(payload) else { return }
  checkEqualHash(value, asDoubles(value))
  guard case .array(let items) = value else { return }
  let some = Array(items.prefix(12))
  for i in some.indices {
    for j in some.indices where j > i {
      checkEqualHash(some[i], some[j])
    }
  }
}
