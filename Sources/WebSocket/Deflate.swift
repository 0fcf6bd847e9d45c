import CZlib

/// Why zlib refused to work.
public enum DeflateError: Error, Sendable, Hashable, CustomStringConvertible {
  /// zlib could not set up a stream (out of memory or bad parameters).
  case initializationFailed(code: Int32)
  /// The compressed data is not a valid deflate stream.
  case invalidData
  /// The inflated message would exceed the limit (a decompression bomb, or just too big).
  case limitExceeded(limit: Int)
  /// Compression failed unexpectedly.
  case compressionFailed(code: Int32)

  public var description: String {
    switch self {
    case .initializationFailed(let code): "zlib initialisation failed (\(code))"
    case .invalidData: "invalid deflate data"
    case .limitExceeded(let limit): "inflated message exceeds \(limit) bytes"
    case .compressionFailed(let code): "deflate failed (\(code))"
    }
  }
}

/// The trailer that Z_SYNC_FLUSH leaves, removed on send and restored on receive
/// (RFC 7692 §7.2.1, §7.2.2).
private let syncFlushTail: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]

/// Compresses whole messages with raw deflate for permessage-deflate (RFC 7692 §7.2.1).
///
/// A class because a `z_stream` must not move in memory once initialised: zlib's state
/// points back at it.
public final class MessageDeflater {
  private let stream: UnsafeMutablePointer<z_stream>
  private let resetsContext: Bool
  private var scratch = [UInt8](repeating: 0, count: 16 * 1024)

  /// Creates a deflater.
  /// - Parameters:
  ///   - windowBits: 9...15; zlib cannot produce a raw stream with an 8-bit window.
  ///   - noContextTakeover: reset the dictionary after each message.
  public static func make(windowBits: Int = 15, noContextTakeover: Bool = false, level: Int32 = 6)
    throws(DeflateError) -> MessageDeflater
  {
    let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    stream.initialize(to: z_stream())
    // memLevel 8 is zlib's default; raw deflate is asked for with negative window bits.
    let code = chatlink_deflateInit2(stream, level, -Int32(windowBits), 8)
    guard code == Z_OK else {
      stream.deinitialize(count: 1)
      stream.deallocate()
      throw .initializationFailed(code: code)
    }
    return MessageDeflater(stream: stream, resetsContext: noContextTakeover)
  }

  private init(stream: UnsafeMutablePointer<z_stream>, resetsContext: Bool) {
    self.stream = stream
    self.resetsContext = resetsContext
  }

  deinit {
    deflateEnd(stream)
    stream.deinitialize(count: 1)
    stream.deallocate()
  }

  /// Appends the compressed form of one whole message to `output`, without the sync tail.
  public func compress(_ input: UnsafeRawBufferPointer, into output: inout [UInt8])
    throws(DeflateError)
  {
    let start = output.count
    stream.pointee.next_in = UnsafeMutablePointer(
      mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
    stream.pointee.avail_in = uInt(input.count)
    var code: Int32 = Z_OK
    repeat {
      code = scratch.withUnsafeMutableBufferPointer { out in
        stream.pointee.next_out = out.baseAddress
        stream.pointee.avail_out = uInt(out.count)
        return deflate(stream, Z_SYNC_FLUSH)
      }
      guard code == Z_OK || code == Z_BUF_ERROR else { throw .compressionFailed(code: code) }
      let produced = scratch.count - Int(stream.pointee.avail_out)
      output.append(contentsOf: scratch[0..<produced])
      // A full output buffer means zlib may hold more; an empty one means it is done.
    } while stream.pointee.avail_out == 0
    stream.pointee.next_in = nil
    if output.count - start >= 4, Array(output[(output.count - 4)...]) == syncFlushTail {
      output.removeLast(4)
    }
    if output.count == start {
      // An empty message compresses to a single empty stored block (RFC 7692 §7.2.3.6).
      output.append(0x00)
    }
    if resetsContext { deflateReset(stream) }
  }

  /// Compresses one whole message.
  public func compress(_ input: [UInt8]) throws(DeflateError) -> [UInt8] {
    var output = [UInt8]()
    try input.withUnsafeBytes { raw in
      Result { () throws(DeflateError) in try compress(raw, into: &output) }
    }.get()
    return output
  }
}

/// Inflates permessage-deflate messages, fragment by fragment, with an output limit
/// (RFC 7692 §7.2.2).
public final class MessageInflater {
  private let stream: UnsafeMutablePointer<z_stream>
  private let resetsContext: Bool
  private var scratch = [UInt8](repeating: 0, count: 64 * 1024)

  /// Creates an inflater.
  ///
  /// It always uses a 15-bit window: a larger window inflates whatever a peer limited to a
  /// smaller one produces, and zlib cannot inflate raw streams with an 8-bit window.
  /// - Parameter noContextTakeover: the peer resets its dictionary after each message, so we
  ///   may too (and free the history).
  public static func make(noContextTakeover: Bool = false) throws(DeflateError) -> MessageInflater {
    let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    stream.initialize(to: z_stream())
    let code = chatlink_inflateInit2(stream, -15)
    guard code == Z_OK else {
      stream.deinitialize(count: 1)
      stream.deallocate()
      throw .initializationFailed(code: code)
    }
    return MessageInflater(stream: stream, resetsContext: noContextTakeover)
  }

  private init(stream: UnsafeMutablePointer<z_stream>, resetsContext: Bool) {
    self.stream = stream
    self.resetsContext = resetsContext
  }

  deinit {
    inflateEnd(stream)
    stream.deinitialize(count: 1)
    stream.deallocate()
  }

  /// Inflates the next fragment of a message and appends the output to `output`.
  ///
  /// - Parameters:
  ///   - isFinal: this fragment ends the message; the sync tail is restored before it.
  ///   - limit: the most bytes `output` may hold; inflation stops as soon as it is passed.
  public func inflate(
    _ input: UnsafeRawBufferPointer, isFinal: Bool, limit: Int, into output: inout [UInt8]
  ) throws(DeflateError) {
    try feed(input, limit: limit, into: &output)
    if isFinal {
      try syncFlushTail.withUnsafeBytes { tail in
        Result { () throws(DeflateError) in try feed(tail, limit: limit, into: &output) }
      }.get()
      if resetsContext { inflateReset(stream) }
    }
  }

  /// Drops any partial message, e.g. after the connection failed mid-message.
  public func reset() {
    inflateReset(stream)
  }

  private func feed(_ input: UnsafeRawBufferPointer, limit: Int, into output: inout [UInt8])
    throws(DeflateError)
  {
    guard input.count > 0 else { return }
    stream.pointee.next_in = UnsafeMutablePointer(
      mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
    stream.pointee.avail_in = uInt(input.count)
    defer { stream.pointee.next_in = nil }
    while true {
      let code = scratch.withUnsafeMutableBufferPointer { out in
        stream.pointee.next_out = out.baseAddress
        stream.pointee.avail_out = uInt(out.count)
        return CZlib.inflate(stream, Z_SYNC_FLUSH)
      }
      let produced = scratch.count - Int(stream.pointee.avail_out)
      if produced > 0 {
        if output.count + produced > limit { throw .limitExceeded(limit: limit) }
        output.append(contentsOf: scratch[0..<produced])
      }
      switch code {
      case Z_OK:
        if stream.pointee.avail_in == 0 && stream.pointee.avail_out > 0 { return }
      case Z_BUF_ERROR:
        // No progress possible: all input consumed and nothing more to emit.
        return
      case Z_STREAM_END:
        // A final deflate block (BFINAL) ends the stream; RFC 7692 §7.2.3.1 allows it.
        // Start a fresh stream for whatever follows.
        inflateReset(stream)
        if stream.pointee.avail_in == 0 { return }
      default:
        throw .invalidData
      }
    }
  }
}
