/// A connected, ordered byte stream on the event loop: TCP, or TLS over TCP.
///
/// The WebSocket layer sees only this, never a socket or a TLS session, so framing does not
/// depend on how bytes travel and tests can put any stream behind it.
public protocol ByteStream: AnyObject {
  /// Receives data and the close; set it before the loop next runs.
  var delegate: (any ByteStreamDelegate)? { get set }
  /// Bytes accepted by `write` but not yet taken by the kernel.
  var pendingWriteCount: Int { get }
  /// Queues bytes; they are written in order as the socket allows.
  func write(_ bytes: UnsafeRawBufferPointer)
  /// Stops (or resumes) reading, to push back on a peer faster than we can handle.
  var isReadingPaused: Bool { get set }
  /// Closes now, dropping unwritten bytes; the delegate is not called.
  func close()
  /// A human description of the peer and protocol, e.g. "127.0.0.1:9001 TLSv1.3".
  var peerDescription: String { get }
}

/// Events of a `ByteStream`, delivered on the loop.
public protocol ByteStreamDelegate: AnyObject {
  /// Bytes arrived; they are only valid during the call.
  func stream(_ stream: any ByteStream, didReceive bytes: UnsafeRawBufferPointer)
  /// Everything queued has been written.
  func streamDidDrain(_ stream: any ByteStream)
  /// The stream ended: nil for an orderly end of file, else the error. The stream is closed.
  func stream(_ stream: any ByteStream, didCloseWith error: TransportError?)
}

extension ByteStream {
  /// Queues bytes.
  public func write(_ bytes: [UInt8]) {
    bytes.withUnsafeBytes { write($0) }
  }
}
