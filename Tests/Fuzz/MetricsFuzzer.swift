// libFuzzer target for what anyone who reaches the metrics port ([Metrics] Listen=) can send:
// MetricsRequestParser reading an HTTP/1.x request head as it arrives, and MetricsHTTPResponse
// answering it (Sources/ChatLinkDaemon/Metrics).
//
// scripts/fuzz.sh builds ChatLinkDaemon and the targets it imports as modules and compiles this
// file against them (public API only).
//
// Input layout (Tests/Fuzz/make_seed_corpus.py writes the seeds in it):
//
//   byte 0   bits 0-1: the head limit, [8192 (the server's), 64, 16, 3][bits];
//            bit 2: structured mode (else raw)
//   byte 1   how the bytes are split into reads (FuzzSupport's chunkSizes seed)
//   byte 2…  raw: the bytes a client sends, as they are;
//            structured: a request built from them: method, target, version and line end
//            chosen by the first four bytes, then headers (the rest split at NUL bytes: the
//            first byte of each picks the name, the rest is the value, CR and LF removed),
//            the blank line, then a body the parser must never read
//
// Oracles (a failure prints what broke, then traps with `precondition`):
//  - the answer does not depend on how the bytes are split into reads: whole, in the input's
//    reads or a byte at a time, the same; once a read gives an answer, every later read gives
//    the same one, whatever it brings;
//  - it agrees with a reference reader written from RFC 9112 as the endpoint documents it
//    (the head ends at the first blank line, LF or CRLF line ends; 431 when it starts beyond
//    the limit, or none did by three bytes past it; a request line of exactly three
//    parts with a target starting with "/", HTTP/1.0 or 1.1 else 505 for another HTTP/ and
//    400 otherwise; every header line has a colon; Accept values joined with ","), which reads
//    the whole input at once;
//  - in structured mode, a well-formed request within the limit is read with its method, path
//    and Accept as built;
//  - the answer is a well-formed HTTP/1.1 response: a status line, CRLF header lines, one
//    Content-Length equal to the body's length (HEAD: the length the body would have, and no
//    body), Connection: close; 200 only for GET or HEAD of /metrics, in OpenMetrics exactly
//    when the Accept asks for it without q=0, 405 (with Allow) for other methods, 404 for
//    other paths; a request that could not be read gets 400, 431 or 505, nothing else.

import ChatLinkDaemon
import Glibc

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  guard size >= 2 else { return 0 }
  let limit = [8192, 64, 16, 3][Int(data[0] & 3)]
  let payload = Array(UnsafeBufferPointer(start: data + 2, count: size - 2))
  var built: Built?
  var bytes = payload
  if data[0] & 4 != 0 {
    built = Built(payload)
    bytes = built!.bytes
  }
  let whole = readWhole(bytes, limit: limit)
  let expected = reference(bytes, limit: limit)
  require(
    whole == expected, "whole \(whole) != reference \(expected) (limit \(limit)): \(hex(bytes))")
  for sizes in [
    chunkSizes(total: bytes.count, seed: data[1]), chunkSizes(total: bytes.count, seed: 1),
  ] {
    let split = readSplit(bytes, sizes: sizes, limit: limit)
    require(
      split == whole,
      "split \(sizes.prefix(8)) gave \(split), whole \(whole) (limit \(limit)): \(hex(bytes))")
  }
  if let built, built.headEnd <= limit {
    let wanted = MetricsRequestParser.Result.request(
      MetricsRequest(method: built.method, path: built.path, accept: built.accept))
    require(whole == wanted, "built \(wanted), read \(whole): \(hex(bytes))")
  }
  checkAnswer(whole)
  return 0
}

/// What the parser makes of all the bytes in one read.
func readWhole(_ bytes: [UInt8], limit: Int) -> MetricsRequestParser.Result {
  var parser = MetricsRequestParser(limit: limit)
  return parser.feed(bytes)
}

/// What the parser makes of the bytes in reads of `sizes`; an answer, once given, must stay.
func readSplit(_ bytes: [UInt8], sizes: [Int], limit: Int) -> MetricsRequestParser.Result {
  var parser = MetricsRequestParser(limit: limit)
  var result = MetricsRequestParser.Result.needMore
  var offset = 0
  for size in sizes {
    let next = parser.feed(bytes[offset..<(offset + size)])
    offset += size
    if result != .needMore {
      require(next == result, "answered \(result), then \(next) after \(offset) bytes")
    }
    result = next
  }
  if result != .needMore {
    require(parser.feed(Array("GET /x HTTP/1.1\r\n\r\n".utf8)) == result, "more bytes changed it")
  }
  return result
}

// MARK: - The reference reader

/// The index of the LF that starts the first blank line (LF LF or LF CR LF), if any.
func blankLine(_ bytes: [UInt8]) -> Int? {
  for i in bytes.indices where bytes[i] == 0x0A {
    if i + 1 < bytes.count && bytes[i + 1] == 0x0A { return i }
    if i + 2 < bytes.count && bytes[i + 1] == 0x0D && bytes[i + 2] == 0x0A { return i }
  }
  return nil
}

func reference(_ bytes: [UInt8], limit: Int) -> MetricsRequestParser.Result {
  // Without a blank line, a head is refused once it surely has none within the limit: when
  // the three bytes after the limit (where LF CR LF could end) are here.
  guard let end = blankLine(bytes) else {
    return bytes.count >= limit + 3 ? .invalid(status: 431) : .needMore
  }
  if end > limit { return .invalid(status: 431) }
  var lines: [[UInt8]] = [[]]
  for byte in bytes[..<end] {
    if byte == 0x0A { lines.append([]) } else { lines[lines.count - 1].append(byte) }
  }
  lines = lines.map { $0.last == 0x0D ? Array($0.dropLast()) : $0 }
  let parts = lines[0].split(separator: 0x20, omittingEmptySubsequences: false).map(Array.init)
  guard parts.count == 3, !parts[0].isEmpty, parts[1].first == UInt8(ascii: "/") else {
    return .invalid(status: 400)
  }
  let version = parts[2]
  guard version == Array("HTTP/1.1".utf8) || version == Array("HTTP/1.0".utf8) else {
    return .invalid(status: version.starts(with: Array("HTTP/".utf8)) ? 505 : 400)
  }
  var accept: String?
  for line in lines.dropFirst() where !line.isEmpty {
    guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return .invalid(status: 400) }
    guard isAccept(Array(line[..<colon])) else { continue }
    let value = line[(colon + 1)...].drop { $0 == 0x20 || $0 == 0x09 }
    accept = (accept.map { $0 + "," } ?? "") + String(decoding: value, as: UTF8.self)
  }
  let path = parts[1].prefix { $0 != UInt8(ascii: "?") }
  return .request(
    MetricsRequest(
      method: String(decoding: parts[0], as: UTF8.self),
      path: String(decoding: path, as: UTF8.self),
      accept: accept))
}

/// Whether a header name is Accept, in any case.
func isAccept(_ name: [UInt8]) -> Bool {
  let accept = Array("accept".utf8)
  guard name.count == accept.count else {
    // Another length: only Unicode lowercasing could make it "accept" (as the endpoint
    // lowercases names).
    return String(decoding: name, as: UTF8.self).lowercased() == "accept"
  }
  return zip(name, accept).allSatisfy { ($0 | 0x20) == $1 }
}

/// Whether an Accept value asks for OpenMetrics (a range of it without q=0).
func wantsOpenMetrics(_ accept: String?) -> Bool {
  guard let accept else { return false }
  for range in accept.split(separator: ",", omittingEmptySubsequences: false) {
    // Empty parameters (";;") are skipped, as the endpoint reads them.
    let parts = range.split(separator: ";").map(blankTrimmed)
    guard parts.first?.lowercased() == "application/openmetrics-text" else { continue }
    if parts.dropFirst().contains(where: { $0.hasPrefix("q=") && Double($0.dropFirst(2)) == 0 }) {
      continue
    }
    return true
  }
  return false
}

func blankTrimmed(_ s: Substring) -> String {
  var slice = s
  while let c = slice.first, c == " " || c == "\t" { slice.removeFirst() }
  while let c = slice.last, c == " " || c == "\t" { slice.removeLast() }
  return String(slice)
}

// MARK: - The answer

func checkAnswer(_ result: MetricsRequestParser.Result) {
  let openMetricsBody = "# TYPE x counter\nx_total 1\n# EOF\n"
  let classicBody = "# TYPE x_total counter\nx_total 1\n"
  switch result {
  case .needMore:
    return
  case .invalid(let status):
    require([400, 431, 505].contains(status), "refused with \(status)")
    let (code, headers, body) = response(MetricsHTTPResponse.bytes(forInvalid: status))
    require(code == status, "answered \(code) for \(status)")
    require(headers["content-length"] == String(body.count), "length \(headers) for \(body.count)")
  case .request(let request):
    var asked: [OpenMetricsRenderer.Format] = []
    let bytes = MetricsHTTPResponse.bytes(for: request) { format in
      asked.append(format)
      return format == .openMetrics ? openMetricsBody : classicBody
    }
    let (code, headers, body) = response(bytes)
    let served = request.method == "GET" || request.method == "HEAD"
    if !served {
      require(
        code == 405 && headers["allow"] == "GET, HEAD", "\(request.method): \(code) \(headers)")
    } else if request.path != "/metrics" {
      require(code == 404, "\(request.path): \(code)")
    } else {
      let open = wantsOpenMetrics(request.accept)
      require(asked == [open ? .openMetrics : .prometheus], "rendered \(asked) for \(request)")
      require(code == 200, "\(request): \(code)")
      let text = open ? openMetricsBody : classicBody
      let type = headers["content-type"] ?? ""
      require(type.hasPrefix(open ? "application/openmetrics-text" : "text/plain"), "type \(type)")
      require(headers["content-length"] == String(text.utf8.count), "length \(headers)")
      require(body == (request.method == "HEAD" ? [] : Array(text.utf8)), "body for \(request)")
      return
    }
    require(asked.isEmpty, "rendered metrics for a \(code)")
    require(headers["content-length"] == String(body.count), "length \(headers) for \(body.count)")
  }
}

/// A response's status, headers (lowercased names; each at most once) and body; traps when it
/// is not a well-formed HTTP/1.1 response that closes the connection.
func response(_ bytes: [UInt8]) -> (Int, [String: String], [UInt8]) {
  let separator = Array("\r\n\r\n".utf8)
  var headEnd: Int?
  for i in 0..<max(0, bytes.count - 3) where Array(bytes[i..<(i + 4)]) == separator {
    headEnd = i
    break
  }
  guard let headEnd else {
    require(false, "no end of head: \(hex(bytes))")
    return (0, [:], [])
  }
  let head = String(decoding: bytes[..<headEnd], as: UTF8.self)
  let lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
  require(!head.utf8.contains(0x0A) || lines.allSatisfy { !$0.utf8.contains(0x0A) }, "bare LF")
  let status = lines[0].split(separator: " ", maxSplits: 2)
  require(status.count == 3 && status[0] == "HTTP/1.1", "status line \(lines[0])")
  var headers: [String: String] = [:]
  for line in lines.dropFirst() {
    guard let colon = line.firstIndex(of: ":") else {
      require(false, "header line without colon: \(line)")
      break
    }
    let name = line[..<colon].lowercased()
    require(headers[name] == nil, "\(name) twice")
    headers[name] = blankTrimmed(line[line.index(after: colon)...])
  }
  require(headers["connection"] == "close", "Connection: \(headers["connection"] ?? "none")")
  return (Int(status[1]) ?? 0, headers, Array(bytes[(headEnd + 4)...]))
}

// MARK: - Structured requests

/// A well-formed request built from the input.
struct Built {
  static let methods = ["GET", "HEAD", "POST", "get", "DELETE", "OPTIONS"]
  static let targets = [
    "/metrics", "/metrics?x=1&y", "/", "/metrics/", "/metrics?", "/Metrics", "/a?b",
  ]
  static let versions = ["HTTP/1.1", "HTTP/1.0"]
  static let names = [
    "Accept", "accept", "ACCEPT", "Host", "X-Other", "Accept-Encoding", "User-Agent",
  ]
  static let accepts = [
    "application/openmetrics-text; version=1.0.0",
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
      + "text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
    "application/openmetrics-text;q=0, */*", "text/plain", "*/*", "Application/OpenMetrics-Text",
  ]

  var bytes: [UInt8] = []
  var method = ""
  var path = ""
  var accept: String?
  /// Where the head's blank line starts: the LF that ends its last line.
  var headEnd = 0

  init(_ payload: [UInt8]) {
    let pick = { (i: Int) -> Int in i < payload.count ? Int(payload[i]) : 0 }
    method = Self.methods[pick(0) % Self.methods.count]
    let target = Self.targets[pick(1) % Self.targets.count]
    path = String(target.prefix { $0 != "?" })
    let version = Self.versions[pick(2) % Self.versions.count]
    let eol: [UInt8] = pick(3) & 1 == 0 ? [0x0D, 0x0A] : [0x0A]
    bytes = Array("\(method) \(target) \(version)".utf8) + eol
    if pick(3) & 2 != 0 {
      let value = Self.accepts[(pick(3) >> 2) % Self.accepts.count]
      bytes += Array("Accept: \(value)".utf8) + eol
      accept = value
    }
    let rest = payload.count > 4 ? Array(payload[4...]) : []
    for field in rest.split(separator: 0, omittingEmptySubsequences: false) where !field.isEmpty {
      let name = Self.names[Int(field[field.startIndex]) % Self.names.count]
      let raw = field.dropFirst().filter { $0 != 0x0A && $0 != 0x0D }
      bytes += Array("\(name):".utf8) + raw + eol
      guard name.lowercased() == "accept" else { continue }
      let value = String(decoding: raw.drop { $0 == 0x20 || $0 == 0x09 }, as: UTF8.self)
      accept = (accept.map { $0 + "," } ?? "") + value
    }
    headEnd = bytes.count - 1
    bytes += eol
    // A body (or a pipelined request): never read.
    bytes += Array("GET /other HTTP/1.1\r\n\r\n".utf8) + rest.prefix(8)
  }
}
