// libFuzzer target for the pure WebSocket module (RFC 6455 / RFC 7692), driven the way a
// hostile peer would drive it (a server for ClientConnection, a client for a server-role
// FrameSession): through the public API only.
//
// This file is compiled together with Sources/WebSocket/*.swift into one module (so there is
// no `import WebSocket`); scripts/fuzz.sh has the exact swiftc command.
//
// Input layout (Tests/Fuzz/make_seed_corpus.py writes the seeds in it):
//
//   byte 0   mode, taken modulo 6:
//              0 raw FrameDecoder + MessageAssembler (+ MessageInflater), chunked vs whole
//                and against a reference frame parser and a reference zlib inflate
//              1 a whole ClientConnection after a valid 101 (optionally permessage-deflate)
//              2 HTTPResponseParser + ClientHandshake.validate on an arbitrary response head
//              3 UTF8Validator against Swift's own UTF-8 decoding
//              4 MessageDeflater -> MessageInflater round trips
//              5 a FrameSession in the server role (as chatlink-devserver runs it), driven
//                by a hostile client's masked frames, chunked vs whole
//   byte 1   flags A   (meaning depends on the mode, see each `run...` function)
//   byte 2   flags B
//   byte 3   flags C
//   byte 4   chunk seed: 0 feeds everything in one call, 1 byte by byte, else a PRNG seed
//   byte 5…  the bytes the "server" sends (or the head, the text, the messages)
//
// Every oracle failure goes through `require`, which prints what broke and then traps with
// `precondition`, so libFuzzer records the input as a crash artifact.
//
// Modes 0 and 5 validate the UTF-8 of text frames still arriving in either role, as
// ClientConnection and FrameSession do: in the server role that is the prefix of a masked
// frame, which must be checked unmasked (the crash-*-masked-partial* corpus inputs).

import CZlib
import Glibc
import JSON

// MARK: - Entry point

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  guard size >= 5 else { return 0 }
  let config = FuzzConfig(
    flagsA: data[1], flagsB: data[2], flagsC: data[3], chunkSeed: data[4])
  let payload = Array(UnsafeBufferPointer(start: data + 5, count: size - 5))
  switch data[0] % 6 {
  case 0: runRaw(config, payload)
  case 1: runConnection(config, payload)
  case 2: runHTTP(config, payload)
  case 3: runUTF8(config, payload)
  case 4: runDeflateRoundTrip(config, payload)
  default: runServerSession(config, payload)
  }
  return 0
}

struct FuzzConfig {
  var flagsA: UInt8
  var flagsB: UInt8
  var flagsC: UInt8
  var chunkSeed: UInt8

  func bit(_ flags: UInt8, _ n: Int) -> Bool { flags & (1 << n) != 0 }
}

// MARK: - Helpers

/// Whether `bytes` is UTF-8, by the standard library's own decoder (one oracle) and by a
/// round trip through repairing decoding (a second one); they must agree.
func swiftSaysValid(_ bytes: some Collection<UInt8>) -> Bool {
  let strict = String(validating: bytes, as: UTF8.self) != nil
  let repaired = Array(String(decoding: bytes, as: UTF8.self).utf8).elementsEqual(bytes)
  require(strict == repaired, "Swift's two UTF-8 oracles disagree on \(hex(bytes))")
  return strict
}

/// Whether `bytes` can be extended to valid UTF-8 (only the last code point may be cut).
func isValidPrefix(_ bytes: [UInt8]) -> Bool {
  if String(validating: bytes, as: UTF8.self) != nil { return true }
  // A cut code point is completed by continuation bytes; these cover every narrowed range
  // of the first continuation byte (after E0, ED, F0, F4), the rest take 0x80.
  for missing in 1...3 {
    for first: UInt8 in [0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF] {
      var candidate = bytes
      candidate.append(first)
      candidate.append(contentsOf: [UInt8](repeating: 0x80, count: missing - 1))
      if String(validating: candidate, as: UTF8.self) != nil { return true }
    }
  }
  return false
}

/// The limits the raw and connection modes pick from: small, so a hostile length costs
/// little memory, and on both sides of the 7/16/64-bit length classes.
let sizeLimits = [0, 1, 125, 126, 4096, 65_535, 65_536, 70_000]

// MARK: - Reference implementations

/// A deliberately simple, non-incremental frame parser (RFC 6455 §5.2), applying the same
/// header rules as FrameDecoder. Returns the frames, whether parsing failed, how many bytes
/// the frames used, and the header size of a last frame whose payload is incomplete.
func referenceFrames(
  _ s: [UInt8], role: FrameDecoder.Role, maxFrameSize: Int, rsv1Allowed: Bool
) -> (frames: [Frame], failed: Bool, consumed: Int, partialHeader: Int) {
  var frames: [Frame] = []
  var i = 0
  while true {
    if s.count - i < 2 { return (frames, false, i, 0) }
    let b0 = s[i]
    let b1 = s[i + 1]
    guard let opcode = Opcode(rawValue: b0 & 0x0F) else { return (frames, true, i, 0) }
    let fin = b0 & 0x80 != 0
    let rsv1 = b0 & 0x40 != 0
    if b0 & 0x30 != 0 || (rsv1 && !rsv1Allowed) { return (frames, true, i, 0) }
    if rsv1 && opcode.isControl { return (frames, true, i, 0) }
    let masked = b1 & 0x80 != 0
    let short = Int(b1 & 0x7F)
    if opcode.isControl && (!fin || short > 125) { return (frames, true, i, 0) }
    if masked != (role == .server) { return (frames, true, i, 0) }
    let lengthBytes = short == 126 ? 2 : (short == 127 ? 8 : 0)
    let headerSize = 2 + lengthBytes + (masked ? 4 : 0)
    if s.count - i < headerSize { return (frames, false, i, 0) }
    var length = UInt64(short)
    if lengthBytes > 0 {
      length = 0
      for k in 0..<lengthBytes { length = length << 8 | UInt64(s[i + 2 + k]) }
      if length >> 63 != 0 { return (frames, true, i, 0) }
    }
    if length > UInt64(maxFrameSize) { return (frames, true, i, 0) }
    var key: MaskingKey?
    let keyAt = i + 2 + lengthBytes
    if masked { key = MaskingKey(s[keyAt], s[keyAt + 1], s[keyAt + 2], s[keyAt + 3]) }
    let start = i + headerSize
    if UInt64(s.count - start) < length { return (frames, false, i, headerSize) }
    var payload = Array(s[start..<(start + Int(length))])
    if masked {
      let k = [s[keyAt], s[keyAt + 1], s[keyAt + 2], s[keyAt + 3]]
      for n in payload.indices { payload[n] ^= k[n & 3] }
    }
    frames.append(
      Frame(
        header: FrameHeader(
          fin: fin, rsv1: rsv1, opcode: opcode, maskingKey: key, payloadLength: Int(length)),
        payload: payload))
    i = start + Int(length)
  }
}

/// A reference permessage-deflate inflater: whole messages at once, straight on zlib, with a
/// small output buffer (the library's is 64 KiB), mirroring the library's documented rules:
/// sync tail appended, a BFINAL block starts a fresh stream, the limit counts inflated bytes.
final class ReferenceInflater {
  enum Outcome: Equatable {
    case ok([UInt8])
    case invalid
    case tooLarge
  }

  private let stream: UnsafeMutablePointer<z_stream>
  private let resetsContext: Bool

  init(noContextTakeover: Bool) {
    stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    stream.initialize(to: z_stream())
    let code = chatlink_inflateInit2(stream, -15)
    require(code == Z_OK, "reference inflateInit2 failed: \(code)")
    resetsContext = noContextTakeover
  }

  deinit {
    inflateEnd(stream)
    stream.deinitialize(count: 1)
    stream.deallocate()
  }

  func reset() { inflateReset(stream) }

  func inflateMessage(_ compressed: [UInt8], limit: Int) -> Outcome {
    var input = compressed
    input.append(contentsOf: [0x00, 0x00, 0xFF, 0xFF])
    var output: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1000)
    let outcome = input.withUnsafeMutableBufferPointer { inBuffer -> Outcome in
      stream.pointee.next_in = inBuffer.baseAddress
      stream.pointee.avail_in = uInt(inBuffer.count)
      defer { stream.pointee.next_in = nil }
      while true {
        let code = chunk.withUnsafeMutableBufferPointer { out -> Int32 in
          stream.pointee.next_out = out.baseAddress
          stream.pointee.avail_out = uInt(out.count)
          return CZlib.inflate(stream, Z_SYNC_FLUSH)
        }
        let produced = chunk.count - Int(stream.pointee.avail_out)
        output.append(contentsOf: chunk[0..<produced])
        if output.count > limit { return .tooLarge }
        switch code {
        case Z_OK:
          if stream.pointee.avail_in == 0 && stream.pointee.avail_out > 0 { return .ok(output) }
        case Z_BUF_ERROR:
          return .ok(output)
        case Z_STREAM_END:
          inflateReset(stream)
          if stream.pointee.avail_in == 0 { return .ok(output) }
        default:
          return .invalid
        }
      }
    }
    if resetsContext { inflateReset(stream) }
    return outcome
  }
}

// MARK: - Mode 0: raw decoder + assembler

/// What the raw pipeline produced, in order.
enum RawEvent: Hashable {
  case control(Opcode, [UInt8])
  case message(Message)
  case messageError(ProtocolViolation)
  case framingError(ProtocolViolation)
}

struct RawSettings {
  var role: FrameDecoder.Role
  var maxFrameSize: Int
  var maxMessageSize: Int
  var inflate: Bool
  var noContextTakeover: Bool
}

/// flags A: bit0 inflater, bit1 server_no_context_takeover, bit2 server role (masked
/// frames), bits 3-5 frame limit, flags B bits 0-2 message limit.
func runRaw(_ config: FuzzConfig, _ stream: [UInt8]) {
  let settings = RawSettings(
    role: config.bit(config.flagsA, 2) ? .server : .client,
    maxFrameSize: sizeLimits[Int(config.flagsA >> 3) & 7],
    maxMessageSize: sizeLimits[Int(config.flagsB) & 7],
    inflate: config.bit(config.flagsA, 0),
    noContextTakeover: config.bit(config.flagsA, 1))
  // The chunked run also hands every message and spent payload back for reuse, as the
  // daemon does (FrameSession.recycle): reused memory must never change what comes out.
  let chunked = rawPipeline(
    stream, chunks: chunkSizes(total: stream.count, seed: config.chunkSeed),
    settings, recycling: true)
  let whole = rawPipeline(stream, chunks: [stream.count], settings, recycling: false)
  require(
    chunked.events == whole.events,
    "raw events depend on chunking:\n  chunked \(chunked.events)\n  whole   \(whole.events)")
  require(chunked.frames == whole.frames, "raw frames depend on chunking")

  let reference = referenceFrames(
    stream, role: settings.role, maxFrameSize: settings.maxFrameSize,
    rsv1Allowed: settings.inflate)
  require(
    reference.frames == whole.frames,
    "FrameDecoder disagrees with the reference parser:\n  decoder   \(whole.frames)\n"
      + "  reference \(reference.frames)")
  let framingFailed =
    whole.events.last.map {
      if case .framingError = $0 { return true }
      return false
    } ?? false
  require(
    reference.failed == framingFailed,
    "framing error: reference \(reference.failed), decoder \(framingFailed)")
  if !framingFailed {
    // Bytes not yet returned in a frame, less the parsed header of a frame still arriving
    // (the decoder counts only that frame's payload bytes).
    let expected = stream.count - reference.consumed - reference.partialHeader
    require(
      whole.buffered == expected && chunked.buffered == expected,
      "bufferedByteCount \(whole.buffered)/\(chunked.buffered), expected \(expected)")
    if reference.partialHeader > 0, settings.role == .client {
      let start = reference.consumed + reference.partialHeader
      require(
        whole.partial == Array(stream[start...]) && chunked.partial == whole.partial,
        "partialFrame prefix differs from the bytes received")
    }
  }
}

func rawPipeline(_ stream: [UInt8], chunks: [Int], _ settings: RawSettings, recycling: Bool) -> (
  events: [RawEvent], frames: [Frame], buffered: Int, partial: [UInt8]?
) {
  var decoder = FrameDecoder(
    role: settings.role, maxFrameSize: settings.maxFrameSize,
    allowsCompressedBit: settings.inflate)
  let inflater =
    settings.inflate
    ? try! MessageInflater.make(noContextTakeover: settings.noContextTakeover)
    : nil
  var assembler = MessageAssembler(maxMessageSize: settings.maxMessageSize, inflater: inflater)
  let reference =
    settings.inflate ? ReferenceInflater(noContextTakeover: settings.noContextTakeover) : nil
  var events: [RawEvent] = []
  var frames: [Frame] = []
  // The frame whose partial payload already failed the message: dropped when it completes.
  var dropping: FrameHeader?
  // The message in progress as the reference sees it.
  var parts: [[UInt8]] = []
  var partsCompressed = false
  var partsText = false

  /// A refusal must be justified by the bytes: no false alarms on UTF-8 or on size.
  /// `bytes` is the message so far (all of it when `complete`), `size` its length counting
  /// the whole frame being checked.
  func justify(
    _ error: ProtocolViolation, bytes: [UInt8], size: Int, complete: Bool, text: Bool,
    compressed: Bool
  ) {
    switch error {
    case .invalidUTF8 where !compressed:
      require(text, "invalid UTF-8 reported for a binary message")
      require(
        !isValidPrefix(bytes) || (complete && !swiftSaysValid(bytes)),
        "invalid UTF-8 reported for \(hex(bytes))")
    case .invalidUTF8 where complete:
      guard let reference else { return }
      if case .ok(let inflated) = reference.inflateMessage(
        bytes, limit: settings.maxMessageSize)
      {
        require(text && !swiftSaysValid(inflated), "invalid UTF-8 reported for \(hex(inflated))")
      }
    case .messageTooLarge(let limit) where !compressed:
      require(limit == settings.maxMessageSize, "messageTooLarge with limit \(limit)")
      require(size > limit, "a message of \(size) bytes refused as larger than \(limit)")
    case .messageTooLarge where complete:
      guard let reference else { return }
      let outcome = reference.inflateMessage(bytes, limit: settings.maxMessageSize)
      require(outcome != .invalid, "the reference finds \(hex(bytes)) invalid, not too large")
      if case .ok(let inflated) = outcome {
        require(false, "\(inflated.count) inflated bytes refused as too large")
      }
    default:
      break
    }
  }

  func messageFailed(_ error: ProtocolViolation) {
    events.append(.messageError(error))
    assembler.reset()
    reference?.reset()
    parts = []
  }

  var offset = 0
  feeding: for size in chunks {
    stream[offset..<(offset + size)].withUnsafeBytes { decoder.append($0) }
    offset += size
    while true {
      let step: FrameDecoder.Step
      do throws(ProtocolViolation) {
        step = try decoder.next()
      } catch {
        events.append(.framingError(error))
        break feeding
      }
      switch step {
      case .needMoreData:
        if let partial = decoder.partialFrame {
          let header = partial.header
          require(
            partial.payloadPrefix.count < header.payloadLength,
            "partial frame holds \(partial.payloadPrefix.count) of \(header.payloadLength)")
          if !header.opcode.isControl && dropping == nil {
            do throws(ProtocolViolation) {
              try assembler.inspect(partial: header, prefix: partial.payloadPrefix)
            } catch {
              if header.opcode == .continuation {
                let before = Array(parts.joined())
                justify(
                  error, bytes: before + partial.payloadPrefix,
                  size: before.count + header.payloadLength, complete: false, text: partsText,
                  compressed: partsCompressed)
              } else {
                justify(
                  error, bytes: partial.payloadPrefix, size: header.payloadLength,
                  complete: false, text: header.opcode == .text, compressed: header.rsv1)
              }
              messageFailed(error)
              dropping = header
            }
          }
        }
        continue feeding
      case .frame(let frame):
        checkFrame(frame, settings)
        // When recycling, what is kept is a copy, so the memory handed back is the only
        // reference and really is reused.
        frames.append(recycling ? Frame(header: frame.header, payload: copy(frame.payload)) : frame)
        if let header = dropping {
          require(header == frame.header, "the dropped frame is not the one that completed")
          dropping = nil
          continue
        }
        if frame.opcode.isControl {
          events.append(.control(frame.opcode, frame.payload))
          continue
        }
        if frame.opcode != .continuation {
          parts = []
          partsCompressed = frame.header.rsv1
          partsText = frame.opcode == .text
        }
        parts.append(recycling ? copy(frame.payload) : frame.payload)
        do throws(ProtocolViolation) {
          let consumed = try assembler.consume(frame)
          if recycling, let spent = assembler.takeSpentPayload() { decoder.recycle(spent) }
          guard let message = consumed else { continue }
          checkMessage(message, limit: settings.maxMessageSize)
          require(
            (message.text != nil) == partsText, "message type differs from its first frame")
          let joined = Array(parts.joined())
          if partsCompressed, let reference {
            let expected = reference.inflateMessage(joined, limit: settings.maxMessageSize)
            require(
              expected == .ok(message.bytes),
              "inflated \(hex(message.bytes)), reference \(expected) from \(hex(joined))")
          } else {
            require(message.bytes == joined, "message is not its frames' payloads joined")
          }
          parts = []
          if recycling {
            let kept = copy(message.bytes)
            events.append(.message(message.text != nil ? .text(kept) : .binary(kept)))
            if settings.inflate && !assembler.hasSpare {
              assembler.recycle(message.bytes)
            } else {
              decoder.recycle(message.bytes)
            }
          } else {
            events.append(.message(message))
          }
        } catch {
          let joined = Array(parts.joined())
          justify(
            error, bytes: joined, size: joined.count, complete: frame.fin, text: partsText,
            compressed: partsCompressed)
          if error == .invalidCompressedData && frame.fin, let reference {
            // The whole message is known: the reference must not inflate it either.
            let expected = reference.inflateMessage(
              Array(parts.joined()), limit: settings.maxMessageSize)
            if case .ok(let bytes) = expected {
              require(false, "library refused a message the reference inflates: \(hex(bytes))")
            }
          }
          messageFailed(error)
        }
      }
    }
  }
  return (events, frames, decoder.bufferedByteCount, decoder.partialFrame?.payloadPrefix)
}

/// A copy in memory of its own (not sharing the array's storage).
func copy(_ bytes: [UInt8]) -> [UInt8] {
  bytes.map { $0 }
}

func checkFrame(_ frame: Frame, _ settings: RawSettings) {
  let header = frame.header
  require(header.payloadLength == frame.payload.count, "payloadLength != payload.count")
  require(frame.payload.count <= settings.maxFrameSize, "frame exceeds maxFrameSize")
  require(!header.rsv2 && !header.rsv3, "RSV2/RSV3 frame accepted")
  require(!header.rsv1 || settings.inflate, "RSV1 frame accepted without deflate")
  require((header.maskingKey != nil) == (settings.role == .server), "wrong masking")
  if header.opcode.isControl {
    require(header.fin && !header.rsv1 && frame.payload.count <= 125, "bad control frame")
  }
}

func checkMessage(_ message: Message, limit: Int) {
  require(message.bytes.count <= limit, "message of \(message.bytes.count) exceeds \(limit)")
  if case .text(let bytes) = message {
    require(swiftSaysValid(bytes), "text message is not UTF-8: \(hex(bytes))")
    require(UTF8Validator.isValid(bytes), "UTF8Validator refuses a delivered text message")
  }
}

// MARK: - Mode 1: ClientConnection

/// What the server-side view of our output must contain next.
enum ExpectedOutbound: CustomStringConvertible {
  case data(Opcode, [UInt8])
  case ping([UInt8])
  case pong([UInt8])
  /// Our close: `codes` are the acceptable codes, `reason` the exact reason if known.
  case close(codes: [UInt16], reason: String?)
  /// The reply to the peer's close: its code echoed, or an empty payload for none.
  case echo(UInt16?)

  var description: String {
    switch self {
    case .data(let op, let p): "data(\(op), \(hex(p)))"
    case .ping(let p): "ping(\(hex(p)))"
    case .pong(let p): "pong(\(hex(p)))"
    case .close(let codes, let reason): "close(\(codes), \(reason ?? "?"))"
    case .echo(let code): "echo(\(code.map(String.init) ?? "empty"))"
    }
  }
}

/// Reads everything an endpoint wrote after the handshake, as its peer would (the decoder's
/// role is the peer's: `.server` reads a client's masked frames, `.client` a server's), and
/// checks it against what the endpoint was asked or obliged to send.
final class PeerView {
  private var decoder: FrameDecoder
  private let inflater: MessageInflater?
  private var expected: [ExpectedOutbound] = []
  private var sawClose = false

  init(readingAs role: FrameDecoder.Role = .server, deflate: Bool) {
    decoder = FrameDecoder(role: role, maxFrameSize: 1 << 24, allowsCompressedBit: deflate)
    inflater = deflate ? try! MessageInflater.make(noContextTakeover: false) : nil
  }

  func expect(_ item: ExpectedOutbound) { expected.append(item) }

  func read(_ bytes: [UInt8]) {
    decoder.append(bytes)
    while true {
      let step: FrameDecoder.Step
      do throws(ProtocolViolation) {
        step = try decoder.next()
      } catch {
        require(false, "the endpoint wrote a frame its peer must refuse: \(error)")
        return
      }
      guard case .frame(let frame) = step else { return }
      check(frame)
    }
  }

  func finish() {
    require(decoder.bufferedByteCount == 0, "the endpoint wrote a partial frame")
    require(expected.isEmpty, "the endpoint did not write \(expected)")
  }

  private func check(_ frame: Frame) {
    require(!sawClose, "the endpoint wrote a \(frame.opcode) frame after its close frame")
    require(frame.fin, "the endpoint fragmented a message")
    require(!expected.isEmpty, "the endpoint wrote an unexpected \(frame.opcode) frame")
    let want = expected.removeFirst()
    var payload = frame.payload
    if frame.header.rsv1 {
      guard let inflater else {
        require(false, "compressed frame without deflate")
        return
      }
      var out: [UInt8] = []
      do throws(DeflateError) {
        try payload.withUnsafeBytes { raw in
          Result { () throws(DeflateError) in
            try inflater.inflate(raw, isFinal: true, limit: 1 << 24, into: &out)
          }
        }.get()
      } catch {
        require(false, "the endpoint's compressed frame does not inflate: \(error)")
      }
      payload = out
    }
    switch want {
    case .data(let opcode, let bytes):
      require(
        frame.opcode == opcode && payload == bytes,
        "sent \(frame.opcode) \(hex(payload)), "
          + "wanted \(want)")
    case .ping(let bytes):
      require(frame.opcode == .ping && payload == bytes && !frame.header.rsv1, "wanted \(want)")
    case .pong(let bytes):
      require(frame.opcode == .pong && payload == bytes && !frame.header.rsv1, "wanted \(want)")
    case .close(let codes, let reason):
      require(frame.opcode == .close && payload.count >= 2, "wanted \(want), got \(frame)")
      let code = UInt16(payload[0]) << 8 | UInt16(payload[1])
      checkCloseFrame(payload)
      require(codes.contains(code), "close code \(code), wanted \(want)")
      if let reason {
        require(Array(reason.utf8) == Array(payload[2...]), "close reason differs from \(want)")
      }
      sawClose = true
    case .echo(let code):
      require(frame.opcode == .close, "wanted \(want), got \(frame.opcode)")
      checkCloseFrame(payload)
      if let code {
        require(payload == [UInt8(code >> 8), UInt8(code & 0xFF)], "echo \(hex(payload)) \(want)")
      } else {
        require(payload.isEmpty, "an empty close was answered with \(hex(payload))")
      }
      sawClose = true
    }
  }

  private func checkCloseFrame(_ payload: [UInt8]) {
    require(payload.count != 1 && payload.count <= 125, "close payload of \(payload.count)")
    guard payload.count >= 2 else { return }
    let code = UInt16(payload[0]) << 8 | UInt16(payload[1])
    require(![1005, 1006, 1015].contains(code), "the endpoint wrote close code \(code)")
    require(
      CloseCode(rawValue: code).isSendable, "the endpoint wrote unsendable close code \(code)")
    require(UTF8Validator.isValid(payload[2...]), "the endpoint wrote a non-UTF-8 close reason")
  }
}

struct ConnectionSetup {
  var handshake: ClientHandshake
  var response: [UInt8]
  var limits: ClientConnection.Limits
  var deflateNegotiated: Bool
}

/// flags A: bit0 offer permessage-deflate, bit1 request server_no_context_takeover, bit2
/// offer client_no_context_takeover, bit3 compress everything (threshold 0), bits 4-6 frame
/// limit, bit7 run scripted actions (else compare chunked against whole delivery).
/// flags B: bit0 the server accepts permessage-deflate, bit1 server_no_context_takeover,
/// bit2 client_no_context_takeover, bit3 client_max_window_bits, bit4
/// server_max_window_bits, bits 5-7 the window bits (8 + n).
/// flags C: bits 0-2 message limit, bit3 glue the first chunk to the 101 response, bits 4-5
/// how often actions run, bit6 answer the handshake with mixed-case header names.
func connectionSetup(_ config: FuzzConfig) -> ConnectionSetup {
  let a = config.flagsA
  let b = config.flagsB
  var deflate: PerMessageDeflateOptions?
  if config.bit(a, 0) {
    deflate = PerMessageDeflateOptions(
      requestServerNoContextTakeover: config.bit(a, 1),
      offerClientNoContextTakeover: config.bit(a, 2),
      compressionThreshold: config.bit(a, 3) ? 0 : 32, compressionLevel: Int32(b % 10))
  }
  var random = SplitMix64(seed: 7)
  let url = try! WebSocketURL(parsing: "ws://127.0.0.1:9001/fuzz?x=1")
  let handshake = try! ClientHandshake(url: url, deflate: deflate, random: &random)
  let mixedCase = config.bit(config.flagsC, 6)
  var head = "HTTP/1.1 101 Switching Protocols\r\n"
  head += mixedCase ? "upgrade: WebSocket\r\n" : "Upgrade: websocket\r\n"
  head += mixedCase ? "CONNECTION: keep-alive, upgrade\r\n" : "Connection: Upgrade\r\n"
  head += "Sec-WebSocket-Accept: \(handshake.expectedAccept)\r\n"
  var negotiated = false
  if deflate != nil && config.bit(b, 0) {
    negotiated = true
    let bits = 8 + Int(b >> 5)
    var ext = "permessage-deflate"
    if config.bit(b, 1) { ext += "; server_no_context_takeover" }
    if config.bit(b, 2) { ext += "; client_no_context_takeover" }
    if config.bit(b, 3) { ext += "; client_max_window_bits=\(bits)" }
    if config.bit(b, 4) {
      ext += mixedCase ? ";Server_Max_Window_Bits=\"\(bits)\"" : "; server_max_window_bits=\(bits)"
    }
    head += "Sec-WebSocket-Extensions: \(ext)\r\n"
  }
  head += "\r\n"
  let limits = ClientConnection.Limits(
    maxFrameSize: sizeLimits[Int(a >> 4) & 7],
    maxMessageSize: sizeLimits[Int(config.flagsC) & 7])
  return ConnectionSetup(
    handshake: handshake, response: Array(head.utf8), limits: limits,
    deflateNegotiated: negotiated)
}

func runConnection(_ config: FuzzConfig, _ stream: [UInt8]) {
  let setup = connectionSetup(config)
  let chunks = chunkSizes(total: stream.count, seed: config.chunkSeed)
  let glue = config.bit(config.flagsC, 3)
  if config.bit(config.flagsA, 7) {
    _ = connectionPipeline(setup, stream, chunks: chunks, glue: glue, config: config)
  } else {
    let chunked = connectionPipeline(setup, stream, chunks: chunks, glue: glue, config: nil)
    let whole = connectionPipeline(setup, stream, chunks: [stream.count], glue: glue, config: nil)
    require(
      chunked.events == whole.events,
      "connection events depend on chunking:\n  chunked \(chunked.events)\n  whole   "
        + "\(whole.events)")
    require(chunked.outbound == whole.outbound, "connection output depends on chunking")
  }
}

/// Feeds the connection; with `config`, also runs scripted sends, pings, closes and
/// transport closes between chunks. Returns every event and every byte written.
func connectionPipeline(
  _ setup: ConnectionSetup, _ stream: [UInt8], chunks: [Int], glue: Bool, config: FuzzConfig?
) -> (events: [ClientConnection.Event], outbound: [UInt8]) {
  let connection = ClientConnection(
    handshake: setup.handshake, limits: setup.limits, random: SplitMix64(seed: 9))
  require(connection.state == .handshaking, "a new connection is not handshaking")
  require(connection.takeOutbound() == setup.handshake.requestBytes, "request bytes differ")
  let server = PeerView(deflate: setup.deflateNegotiated)
  var events: [ClientConnection.Event] = []
  var outbound: [UInt8] = []
  var actions = SplitMix64(seed: UInt64(config?.chunkSeed ?? 0) | 0x5500)
  let frequency = config.map { 1 + Int($0.flagsC >> 4) & 3 } ?? 1
  var finished = false  // a .closed or .handshakeFailed event was seen
  var transportGone = false
  var sentCloseExpected = false  // our close (or our echo of the peer's) is expected

  func drain() {
    while true {
      let before = connection.state
      let event = connection.nextEvent()
      let after = connection.state
      if before == .open && after != .open && !sentCloseExpected {
        // nextEvent failed the connection (our close) or answered the peer's close (echo).
        if case .closed(let info) = event, info.initiator == .peer {
          server.expect(.echo(info.code == .noStatusReceived ? nil : info.code.rawValue))
        } else {
          server.expect(.close(codes: [1002, 1007, 1009], reason: nil))
        }
        sentCloseExpected = true
      }
      guard let event else { break }
      require(!finished, "event \(event) after the connection finished")
      events.append(event)
      observe(event, before: before, after: after)
    }
    // A fail while open sends our close; nextEvent may return nil right after it.
    flush()
  }

  func flush() {
    let count = connection.outboundCount
    let has = connection.hasOutbound
    let bytes = connection.takeOutbound()
    require(count == bytes.count && has == !bytes.isEmpty, "outboundCount/hasOutbound lie")
    require(!connection.hasOutbound && connection.outboundCount == 0, "takeOutbound kept bytes")
    outbound += bytes
    server.read(bytes)
  }

  func observe(
    _ event: ClientConnection.Event, before: ClientConnection.State,
    after: ClientConnection.State
  ) {
    switch event {
    case .opened(let result):
      require(events.count == 1 && after == .open, "opened out of order")
      require((result.deflate != nil) == setup.deflateNegotiated, "deflate negotiation differs")
      require(connection.negotiated == result, "negotiated differs from the opened result")
    case .handshakeFailed(let error):
      require(false, "a valid 101 was refused: \(error)")
    case .message(let message):
      require(before == .open, "message delivered in state \(before)")
      checkMessage(message, limit: setup.limits.maxMessageSize)
    case .ping(let payload):
      require(payload.count <= 125, "ping payload of \(payload.count)")
      if after == .open { server.expect(.pong(payload)) }
    case .pong(let payload):
      require(payload.count <= 125, "pong payload of \(payload.count)")
    case .closed(let info):
      _ = info.description
      finished = true
      require(after == .closed, "closed event in state \(after)")
      switch info.initiator {
      case .peer:
        require(info.clean, "a peer close is clean")
        require(info.code.isSendable || info.code == .noStatusReceived, "peer code \(info.code)")
      case .failure(let violation):
        require(info.code == violation.closeCode, "failure reported with \(info.code)")
      case .local:
        require(info.code.isSendable, "local close reported with \(info.code)")
      case .transport:
        require(!info.clean && info.code == .abnormalClosure, "transport close \(info)")
      }
    }
  }

  func act() {
    guard config != nil else { return }
    guard actions.below(frequency + 1) != 0 else { return }
    let state = connection.state
    let open = state == .open
    switch actions.below(8) {
    case 0:
      let text = String(repeating: "héllo wörld ☃ 𝄞 ", count: actions.below(40))
      do throws(ClientConnection.SendError) {
        try connection.send(text: text)
        require(open, "send(text:) succeeded in state \(state)")
        server.expect(.data(.text, Array(text.utf8)))
      } catch {
        require(!open && error == .notOpen(state), "send(text:) failed: \(error)")
      }
    case 1:
      let bytes = (0..<actions.below(300)).map { _ in UInt8(truncatingIfNeeded: actions.next()) }
      do throws(ClientConnection.SendError) {
        try bytes.withUnsafeBytes { raw in
          Result { () throws(ClientConnection.SendError) in try connection.send(binary: raw) }
        }.get()
        require(open, "send(binary:) succeeded in state \(state)")
        server.expect(.data(.binary, bytes))
      } catch {
        require(!open && error == .notOpen(state), "send(binary:) failed: \(error)")
      }
    case 2:
      let bytes = [UInt8](repeating: 0x70, count: actions.below(2) == 0 ? 126 : actions.below(126))
      do throws(ClientConnection.SendError) {
        try connection.ping(bytes)
        require(open && bytes.count <= 125, "ping(\(bytes.count)) succeeded in state \(state)")
        server.expect(.ping(bytes))
      } catch {
        require(
          error == (open ? .controlPayloadTooLong(bytes.count) : .notOpen(state)),
          "ping failed: \(error)")
      }
    case 3:
      let codes: [UInt16] = [1000, 1001, 1003, 1005, 1006, 1015, 1004, 999, 2000, 3000, 4999, 5000]
      let code = CloseCode(rawValue: codes[actions.below(codes.count)])
      let reason = String(
        repeating: ["é", "x", "☃", "𝄞"][actions.below(4)], count: actions.below(130))
      do throws(ClientConnection.SendError) {
        try connection.close(code: code, reason: reason)
        require(open && code.isSendable, "close(\(code)) succeeded in state \(state)")
        require(connection.state == .closing, "close() left state \(connection.state)")
        // The reason is cut to 123 bytes on a character boundary.
        var cut = ""
        for character in reason {
          if cut.utf8.count + character.utf8.count > 123 { break }
          cut.append(character)
        }
        server.expect(.close(codes: [code.rawValue], reason: cut))
        sentCloseExpected = true
      } catch {
        require(
          error == (open ? .invalidCloseCode(code.rawValue) : .notOpen(state)),
          "close failed: \(error)")
      }
    case 4:
      let event = connection.transportClosed()
      require(connection.state == .closed, "transportClosed left state \(connection.state)")
      require((event == nil) == finished, "transportClosed returned \(String(describing: event))")
      if let event {
        events.append(event)
        observe(event, before: state, after: .closed)
      }
      finished = true
      transportGone = true
    case 5:
      do throws(ClientConnection.SendError) {
        try connection.send(.text([0x61, 0xC3]))
        require(false, "an invalid text message was sent")
      } catch {
        require(error == .invalidUTF8 || (!open && error == .notOpen(state)), "\(error)")
      }
    default:
      break
    }
    flush()
  }

  var offset = 0
  var first = true
  for size in chunks {
    let chunk = stream[offset..<(offset + size)]
    offset += size
    if first {
      first = false
      if glue {
        connection.receive(setup.response + chunk)
        drain()
        act()
        continue
      }
      connection.receive(setup.response)
      drain()
      require(
        events.first.map {
          if case .opened = $0 { return true }
          return false
        } ?? false, "the 101 did not open the connection")
    }
    if transportGone { break }
    chunk.withUnsafeBytes { connection.receive($0) }
    drain()
    act()
    if transportGone { break }
  }
  if !finished {
    // The stream ended: the transport closes.
    let state = connection.state
    if let event = connection.transportClosed() {
      events.append(event)
      observe(event, before: state, after: .closed)
    }
  }
  require(connection.nextEvent() == nil, "events after the end")
  require(connection.transportClosed() == nil, "a second final event")
  require(connection.state == .closed, "the connection did not end closed")
  server.finish()
  return (events, outbound)
}

// MARK: - Mode 2: HTTP response heads

/// flags A: bit0 offer subprotocols, bit1 offer permessage-deflate, bits 2-3 how
/// client_max_window_bits is offered, bit4 request server_max_window_bits, bits 5-6 the head
/// size limit. flags B: bits 0-2 offered client window (8 + n), bits 3-5 requested server
/// window (8 + n). "@@" in the input is replaced by the expected Sec-WebSocket-Accept.
func runHTTP(_ config: FuzzConfig, _ input: [UInt8]) {
  let a = config.flagsA
  let b = config.flagsB
  var deflate: PerMessageDeflateOptions?
  if config.bit(a, 1) {
    let clientBits: PerMessageDeflateOptions.ClientWindowBitsOffer
    switch (a >> 2) & 3 {
    case 0: clientBits = .omitted
    case 1: clientBits = .serverMayChoose
    default: clientBits = .value(8 + Int(b & 7))
    }
    deflate = PerMessageDeflateOptions(
      requestServerMaxWindowBits: config.bit(a, 4) ? 8 + Int((b >> 3) & 7) : nil,
      clientMaxWindowBits: clientBits)
  }
  let subprotocols = config.bit(a, 0) ? ["chat", "superchat"] : []
  var random = SplitMix64(seed: UInt64(config.flagsC))
  let url = try! WebSocketURL(parsing: "wss://[::1]:8443/")
  let handshake = try! ClientHandshake(
    url: url, subprotocols: subprotocols, deflate: deflate, random: &random)
  let limit = [64, 512, 4096, 64 << 10][Int(a >> 5) & 3]

  // Splice in the accept value wherever the input says "@@".
  let accept = Array(handshake.expectedAccept.utf8)
  var bytes: [UInt8] = []
  var i = 0
  while i < input.count {
    if input[i] == 0x40 && i + 1 < input.count && input[i + 1] == 0x40 {
      bytes += accept
      i += 2
    } else {
      bytes.append(input[i])
      i += 1
    }
  }

  let whole = parseHead(bytes, chunks: [bytes.count], limit: limit)
  let chunked = parseHead(
    bytes, chunks: chunkSizes(total: bytes.count, seed: config.chunkSeed),
    limit: limit)
  require(whole == chunked, "HTTPResponseParser depends on chunking: \(whole) vs \(chunked)")

  guard case .head(let head, let remainder) = whole else {
    if case .failed(let error) = whole { _ = error.description }
    return
  }
  _ = head.retryAfter
  _ = head.location
  _ = head.isRedirect
  let validated: Result<ClientHandshake.Result, HandshakeError>
  do throws(HandshakeError) {
    validated = .success(try handshake.validate(head))
  } catch {
    validated = .failure(error)
    _ = error.description
    _ = error.status
  }
  if case .success(let result) = validated {
    require(head.status == 101, "status \(head.status) accepted")
    require(
      head.headers[all: "sec-websocket-accept"] == [handshake.expectedAccept],
      "accepted Sec-WebSocket-Accept \(head.headers[all: "sec-websocket-accept"])")
    require(
      head.headers[first: "UPGRADE"]?.lowercased() == "websocket", "accepted without Upgrade")
    require(
      head.headers.listElements("connection").contains { $0.lowercased() == "upgrade" },
      "accepted without Connection: Upgrade")
    if let chosen = result.subprotocol {
      require(subprotocols.contains(chosen), "subprotocol \(chosen) was not offered")
    }
    if let negotiated = result.deflate {
      _ = negotiated.description
      guard let deflate else {
        require(false, "permessage-deflate accepted without an offer")
        return
      }
      require((8...15).contains(negotiated.serverMaxWindowBits), "server window")
      require((8...15).contains(negotiated.clientMaxWindowBits), "client window")
      if let asked = deflate.requestServerMaxWindowBits {
        require(negotiated.serverMaxWindowBits <= asked, "server window above the request")
      }
      if case .value(let offered) = deflate.clientMaxWindowBits {
        require(negotiated.clientMaxWindowBits <= offered, "client window above the offer")
      }
      if deflate.offerClientNoContextTakeover {
        require(negotiated.clientNoContextTakeover, "client_no_context_takeover lost")
      }
    }
  }

  // The same bytes through a connection: it opens exactly when validate accepts.
  let connection = ClientConnection(
    handshake: handshake,
    limits: ClientConnection.Limits(
      maxFrameSize: 4096, maxMessageSize: 4096, maxResponseHeadSize: limit),
    random: SplitMix64(seed: 3))
  _ = connection.takeOutbound()
  connection.receive(bytes)
  let firstEvent = connection.nextEvent()
  switch (validated, firstEvent) {
  case (.success(let result), .opened(let opened)):
    require(result == opened, "connection negotiated differently from validate")
  case (.failure(let error), .handshakeFailed(let failed)):
    require(error == failed, "connection failed differently: \(failed) vs \(error)")
  default:
    require(
      false, "validate gave \(validated), the connection \(String(describing: firstEvent))")
  }
  var count = 0
  while let event = connection.nextEvent() {
    if case .message(let message) = event { checkMessage(message, limit: 4096) }
    count += 1
    require(count < 100_000, "endless events")
  }
  _ = remainder
}

enum HeadOutcome: Equatable, CustomStringConvertible {
  case head(HTTPResponseHead, [UInt8])
  case failed(HandshakeError)
  case incomplete

  var description: String {
    switch self {
    case .head(let head, let rest):
      "head(\(head.status), \(head.headers.fields.count) fields, "
        + "\(rest.count) more bytes)"
    case .failed(let error): "failed(\(error))"
    case .incomplete: "incomplete"
    }
  }
}

func parseHead(_ bytes: [UInt8], chunks: [Int], limit: Int) -> HeadOutcome {
  var parser = HTTPResponseParser(limit: limit)
  var offset = 0
  for size in chunks {
    let end = offset + size
    do throws(HandshakeError) {
      let result = try bytes[offset..<end].withUnsafeBytes { raw in
        Result { () throws(HandshakeError) in try parser.append(raw) }
      }.get()
      if let (head, remainder) = result {
        // Whatever the last chunk did not deliver yet is part of the remainder too.
        return .head(head, remainder + bytes[end...])
      }
    } catch {
      return .failed(error)
    }
    offset = end
  }
  return .incomplete
}

// MARK: - Mode 3: UTF-8

/// Validates the input incrementally in chunks and checks every answer against Swift's
/// decoder: the verdict, the fail-fast point, and the static helpers.
func runUTF8(_ config: FuzzConfig, _ bytes: [UInt8]) {
  let expected = swiftSaysValid(bytes)
  require(UTF8Validator.isValid(bytes) == expected, "isValid([UInt8]) != Swift: \(hex(bytes))")
  let slice = ([0x41] + bytes)[1...]
  require(UTF8Validator.isValid(slice) == expected, "isValid(ArraySlice) != Swift")
  require(UTF8Validator.isValid(bytes.lazy.map { $0 }) == expected, "isValid(lazy) != Swift")

  var validator = UTF8Validator()
  var end = 0
  var failedAt: Int?
  for (n, size) in chunkSizes(total: bytes.count, seed: config.chunkSeed).enumerated() {
    let ok: Bool
    if n & 1 == 0 {
      ok = bytes[end..<(end + size)].withUnsafeBytes { validator.validate($0) }
    } else {
      ok = validator.validate(Array(bytes[end..<(end + size)]))
    }
    if !ok {
      failedAt = end + size
      break
    }
    end += size
  }
  if let failedAt {
    require(!expected, "UTF8Validator refused valid UTF-8: \(hex(bytes))")
    require(!isValidPrefix(Array(bytes[..<failedAt])), "refused a valid prefix: \(hex(bytes))")
    require(isValidPrefix(Array(bytes[..<end])), "accepted past an invalid byte: \(hex(bytes))")
  } else {
    require(isValidPrefix(bytes), "accepted an invalid stream: \(hex(bytes))")
    require(validator.isComplete == expected, "isComplete is \(validator.isComplete)")
  }
  validator.reset()
  require(validator.isComplete, "reset() left a partial code point")
}

// MARK: - Mode 4: deflate round trips

/// flags A: bits 0-2 client window (9 + n, capped at 15), bit3 deflater resets its context,
/// bit4 inflater resets its context (only when the deflater does). flags B: level (mod 10).
/// The input is cut into messages by the chunk seed; each is compressed, then inflated in
/// pieces with a limit of exactly its length.
func runDeflateRoundTrip(_ config: FuzzConfig, _ bytes: [UInt8]) {
  let windowBits = min(15, 9 + Int(config.flagsA & 7))
  let deflaterResets = config.bit(config.flagsA, 3)
  let inflaterResets = deflaterResets && config.bit(config.flagsA, 4)
  let deflater = try! MessageDeflater.make(
    windowBits: windowBits, noContextTakeover: deflaterResets, level: Int32(config.flagsB % 10))
  let inflater = try! MessageInflater.make(noContextTakeover: inflaterResets)
  var pieces = SplitMix64(seed: UInt64(config.flagsC))
  var offset = 0
  for size in chunkSizes(total: bytes.count, seed: config.chunkSeed).prefix(64) {
    let message = Array(bytes[offset..<(offset + size)])
    offset += size
    let compressed: [UInt8]
    do throws(DeflateError) {
      compressed = try deflater.compress(message)
    } catch {
      require(false, "compress failed: \(error)")
      return
    }
    require(!compressed.isEmpty, "a message compressed to nothing")
    var output: [UInt8] = []
    var at = 0
    repeat {
      let take = min(compressed.count - at, 1 + pieces.below(compressed.count))
      let last = at + take == compressed.count
      do throws(DeflateError) {
        try compressed[at..<(at + take)].withUnsafeBytes { raw in
          Result { () throws(DeflateError) in
            try inflater.inflate(raw, isFinal: last, limit: message.count, into: &output)
          }
        }.get()
      } catch {
        require(false, "inflating our own \(hex(compressed)) failed: \(error)")
      }
      at += take
    } while at < compressed.count
    require(output == message, "round trip changed \(hex(message)) into \(hex(output))")
  }
}

// MARK: - Mode 5: FrameSession as a server

/// flags A: bit0 permessage-deflate, bit1 the client resets its context, bit2 we reset ours,
/// bits 3-5 frame limit. flags B: bits 0-2 message limit, bits 3-5 our window (8 + n).
/// flags C: bit0 echo every message back, bit1 compress everything (threshold 0).
func runServerSession(_ config: FuzzConfig, _ stream: [UInt8]) {
  let chunked = serverSessionPipeline(
    config, stream, chunks: chunkSizes(total: stream.count, seed: config.chunkSeed))
  let whole = serverSessionPipeline(config, stream, chunks: [stream.count])
  require(
    chunked.events == whole.events,
    "server session events depend on chunking:\n  chunked \(chunked.events)\n  whole   "
      + "\(whole.events)")
  require(chunked.outbound == whole.outbound, "server session output depends on chunking")
}

func serverSessionPipeline(_ config: FuzzConfig, _ stream: [UInt8], chunks: [Int]) -> (
  events: [FrameSession.Event], outbound: [UInt8]
) {
  let a = config.flagsA
  var compression: FrameSession.Compression?
  if config.bit(a, 0) {
    compression = FrameSession.Compression(
      outgoingWindowBits: 8 + Int(config.flagsB >> 3) & 7,
      outgoingNoContextTakeover: config.bit(a, 2), incomingNoContextTakeover: config.bit(a, 1),
      threshold: config.bit(config.flagsC, 1) ? 0 : 32, level: 1)
  }
  let limits = ClientConnection.Limits(
    maxFrameSize: sizeLimits[Int(a >> 3) & 7], maxMessageSize: sizeLimits[Int(config.flagsB) & 7])
  let session = try! FrameSession(
    role: .server, limits: limits, encoder: FrameEncoder(), compression: compression)
  let client = PeerView(readingAs: .client, deflate: compression != nil)
  let echo = config.bit(config.flagsC, 0)
  var events: [FrameSession.Event] = []
  var outbound: [UInt8] = []
  var finished = false
  var closeExpected = false

  func flush() {
    let bytes = session.takeOutbound()
    require(!session.hasOutbound && session.outboundCount == 0, "takeOutbound kept bytes")
    outbound += bytes
    client.read(bytes)
  }

  func note(_ event: FrameSession.Event?, before: FrameSession.State, transport: Bool = false) {
    let after = session.state
    if before == .open && after != .open && !closeExpected && !transport {
      if case .closed(let info) = event, info.initiator == .peer {
        client.expect(.echo(info.code == .noStatusReceived ? nil : info.code.rawValue))
      } else {
        client.expect(.close(codes: [1002, 1007, 1009], reason: nil))
      }
      closeExpected = true
    }
    guard let event else { return }
    require(!finished, "event \(event) after the session finished")
    events.append(event)
    switch event {
    case .message(let message):
      require(before == .open, "message delivered in state \(before)")
      checkMessage(message, limit: limits.maxMessageSize)
      if echo {
        do throws(ClientConnection.SendError) {
          try session.send(message)
          client.expect(.data(message.text == nil ? .binary : .text, message.bytes))
        } catch {
          require(false, "echoing a delivered message failed: \(error)")
        }
      }
    case .ping(let payload):
      require(payload.count <= 125, "ping payload of \(payload.count)")
      if after == .open { client.expect(.pong(payload)) }
    case .pong(let payload):
      require(payload.count <= 125, "pong payload of \(payload.count)")
    case .closed(let info):
      finished = true
      require(after == .closed, "closed event in state \(after)")
      if case .failure(let violation) = info.initiator {
        require(info.code == violation.closeCode, "failure reported with \(info.code)")
      }
    }
  }

  var offset = 0
  for size in chunks {
    stream[offset..<(offset + size)].withUnsafeBytes { session.receive($0) }
    offset += size
    while true {
      let before = session.state
      let event = session.nextEvent()
      note(event, before: before)
      if event == nil { break }
    }
    flush()
  }
  if !finished {
    let before = session.state
    let event = session.transportClosed()
    require(event != nil, "transportClosed gave no final event")
    note(event, before: before, transport: true)
  }
  require(session.nextEvent() == nil && session.transportClosed() == nil, "events after the end")
  flush()
  client.finish()
  return (events, outbound)
}
