import CSystem
import EventLoop
@preconcurrency import Glibc
import XCTest

@testable import Transport

/// Where a stream's read buffer lives (`SocketStream.mapReadBuffer` says why it matters).
final class SocketStreamMemoryTests: XCTestCase {
  /// Streams that stay open take no heap memory for their read buffers: a daemon with many
  /// clients connected at once must not leave its heap grown to hold their buffers.
  func testOpenStreamsKeepTheirReadBuffersOutOfTheHeap() throws {
    let loop = try EventLoop()
    let count = 32
    let before = mallinfo2().uordblks
    var streams: [SocketStream] = []
    var peers: [Int32] = []
    for i in 0..<count {
      var fds: [Int32] = [-1, -1]
      XCTAssertEqual(
        socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue), 0, &fds), 0)
      streams.append(try SocketStream(loop: loop, fd: fds[0], tls: nil, peer: "pair \(i)"))
      peers.append(fds[1])
    }
    let grown = mallinfo2().uordblks - before
    // The streams' own objects and watchers are a few hundred bytes each; a read buffer on
    // the heap would be 64 KiB each.
    XCTAssertLessThan(grown, count * SocketStream.readChunk / 8, "\(grown) bytes of heap")
    // The buffers work: a read lands in them and reaches the delegate.
    let recorder = StreamRecorder()
    streams[count - 1].delegate = recorder
    let message = Array("read into a mapped buffer".utf8)
    _ = message.withUnsafeBytes { send(peers[count - 1], $0.baseAddress, $0.count, 0) }
    let deadline = loop.now + 2_000_000
    while recorder.received.count < message.count && loop.now < deadline {
      try loop.runOnce(timeout: 20_000)
    }
    XCTAssertEqual(recorder.received, message)
    for stream in streams { stream.close() }
    streams.removeAll()
    for fd in peers { Glibc.close(fd) }
  }
}
