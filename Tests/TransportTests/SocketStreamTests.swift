import EventLoop
@preconcurrency import Glibc
import TestSupport
import Transport
import XCTest

/// Collects a stream's events.
final class StreamRecorder: ByteStreamDelegate {
  var received: [UInt8] = []
  var closed = false
  var closeError: TransportError?
  var drained = 0
  func stream(_ stream: any ByteStream, didReceive bytes: UnsafeRawBufferPointer) {
    received.append(contentsOf: bytes)
  }
  func streamDidDrain(_ stream: any ByteStream) { drained += 1 }
  func stream(_ stream: any ByteStream, didCloseWith error: TransportError?) {
    closed = true
    closeError = error
  }
}

final class SocketStreamTests: XCTestCase {
  private func connectedPair(_ loop: EventLoop) throws -> (SocketStream, Int32, LoopbackListener) {
    let listener = try LoopbackListener()
    var server: Int32 = -1
    try listener.acceptOnLoop(loop) { server = $0 }
    let resolver = try Resolver(loop: loop)
    let connector = Connector(
      loop: loop, resolver: resolver,
      endpoint: Endpoint(host: "127.0.0.1", port: listener.port, useTLS: false), tlsContext: nil,
      timeout: 2_000_000)
    var stream: SocketStream?
    connector.start { stream = try? $0.get() }
    try spin(loop) { stream != nil && server >= 0 }
    return (try XCTUnwrap(stream), server, listener)
  }

  func testLargeWritesAreQueuedAndDrainInOrder() throws {
    let loop = try EventLoop()
    let (stream, server, listener) = try connectedPair(loop)
    _ = listener
    let recorder = StreamRecorder()
    stream.delegate = recorder
    let payload = (0..<(8 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    stream.write(payload)
    XCTAssertGreaterThan(stream.pendingWriteCount, 0)
    var got: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    try spin(loop, timeout: 20_000_000) {
      while true {
        let n = recv(server, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        if n <= 0 { break }
        got.append(contentsOf: buffer[..<n])
      }
      return got.count == payload.count
    }
    XCTAssertEqual(got, payload)
    XCTAssertEqual(stream.pendingWriteCount, 0)
    XCTAssertGreaterThanOrEqual(recorder.drained, 1)
  }

  func testReadsArriveAndEndOfFileClosesWithoutError() throws {
    let loop = try EventLoop()
    let (stream, server, listener) = try connectedPair(loop)
    _ = listener
    let recorder = StreamRecorder()
    stream.delegate = recorder
    let message = Array("hello from the server".utf8)
    _ = message.withUnsafeBytes { send(server, $0.baseAddress, $0.count, 0) }
    shutdown(server, Int32(SHUT_WR))
    try spin(loop) { recorder.closed }
    XCTAssertEqual(recorder.received, message)
    XCTAssertNil(recorder.closeError)
  }

  func testPausedReadingHoldsDataUntilResumed() throws {
    let loop = try EventLoop()
    let (stream, server, listener) = try connectedPair(loop)
    _ = listener
    let recorder = StreamRecorder()
    stream.delegate = recorder
    stream.isReadingPaused = true
    _ = [UInt8](repeating: 1, count: 10).withUnsafeBytes {
      send(server, $0.baseAddress, $0.count, 0)
    }
    for _ in 0..<5 { try loop.runOnce(timeout: 10_000) }
    XCTAssertEqual(recorder.received.count, 0)
    stream.isReadingPaused = false
    try spin(loop) { recorder.received.count == 10 }
  }

  func testAResetByThePeerIsReportedAsAnError() throws {
    let loop = try EventLoop()
    let (stream, server, listener) = try connectedPair(loop)
    _ = listener
    let recorder = StreamRecorder()
    stream.delegate = recorder
    // SO_LINGER 0 makes close() send a RST.
    var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
    setsockopt(server, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
    close(server)
    stream.write(Array(repeating: 0, count: 100))
    try spin(loop) { recorder.closed }
    XCTAssertNotNil(recorder.closeError)
  }
}
