import EventLoop
import Glibc
import LinkCore
import Transport
import Varlink

/// The Varlink control socket: accepts connections, frames requests, checks the peer's
/// credentials, and hands calls to the `ControlService`.
///
/// Bad input (oversized, malformed, not UTF-8, unknown methods, wrong types) gets an error
/// reply or a closed connection, never a crash. A client that stops reading its Subscribe
/// stream gets a bounded buffer and is then dropped; it never stalls anything else.
public final class ControlServer {
  /// The largest request accepted, NUL excluded.
  public static let requestLimit = 64 * 1024
  /// Replies a client may leave unread before it is dropped.
  public static let outputLimit = 4 << 20
  /// Connections served at once; more are refused.
  public static let connectionLimit = 1024

  let loop: EventLoop
  private var listener: UnixListener?
  private var connections: [ObjectIdentifier: ControlConnection] = [:]
  private let logger: Logger
  /// Dispatches calls; set before the loop runs.
  public var service: ControlService?
  /// What a peer may do, from its credentials (nil when the kernel gave none). Tests replace
  /// it to be served as an outsider without switching users.
  var access: (PeerCredentials?) -> ControlConnection.Access

  /// Serves `path` (mode and group from [Control]) or, under socket activation, the socket
  /// systemd passed.
  public init(
    loop: EventLoop, path: String, mode: UInt32, groupName: String, inheritedFD: Int32?,
    logger: Logger
  ) throws(SystemError) {
    self.loop = loop
    self.logger = logger
    let trustedGroup = UnixListener.groupID(named: groupName)
    access = { credentials in
      credentials?.isTrusted(group: trustedGroup) == true ? .full : .readOnly
    }
    if trustedGroup == nil {
      logger.notice(
        "socket group does not exist; only root and our own user may connect", ["group": groupName])
    }
    let accept: (SocketStream, PeerCredentials?) -> Void = { [weak self] stream, credentials in
      self?.accepted(stream, credentials)
    }
    if let inheritedFD {
      listener = try UnixListener(loop: loop, inheritedFD: inheritedFD, accepted: accept)
    } else {
      try FileSystem.makeDirectories(
        String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)]), mode: 0o755)
      listener = try UnixListener(
        loop: loop, path: path, mode: mode, group: trustedGroup, accepted: accept)
    }
    listener?.onShed = { [weak self] error in self?.shed(error) }
  }

  /// When descriptors ran out; logged at most once a second, with how many were shed.
  private var shedCount = 0
  private var lastShedLog = MonotonicInstant.origin

  private func shed(_ error: Int32) {
    shedCount += 1
    let now = loop.instant
    guard now - lastShedLog >= .seconds(1) else { return }
    logger.warning(
      "out of file descriptors; turning control clients away",
      ["error": String(cString: strerror(error)), "clients": String(shedCount)])
    shedCount = 0
    lastShedLog = now
  }

  /// Stops listening and removes the socket file we created (not an inherited one), so a
  /// stopped daemon leaves no stale socket behind.
  public func close() {
    listener = nil
  }

  /// Connections now open.
  public var connectionCount: Int { connections.count }

  private func accepted(_ stream: SocketStream, _ credentials: PeerCredentials?) {
    guard connections.count < Self.connectionLimit else {
      logger.warning(
        "too many control connections; refusing one", ["limit": String(Self.connectionLimit)])
      stream.close()
      return
    }
    let connection = ControlConnection(server: self, stream: stream, access: access(credentials))
    connections[ObjectIdentifier(connection)] = connection
  }

  func dispatch(_ call: VarlinkCall, from connection: ControlConnection) {
    guard let service else {
      connection.reply(VarlinkReply(.methodNotImplemented(call.method)), to: call)
      return
    }
    service.handle(call, from: connection)
  }

  func closed(_ connection: ControlConnection) {
    connections[ObjectIdentifier(connection)] = nil
  }

  /// Send receipts watched by all connections together (Send with "more").
  var watchedSendCount = 0
  /// Connections with an active Subscribe stream.
  var subscriberCount = 0 {
    didSet {
      if (oldValue == 0) != (subscriberCount == 0) { onFollowing?(subscriberCount > 0) }
    }
  }
  /// Told when the first Subscribe stream starts (true) and when the last one ends (false).
  var onFollowing: ((Bool) -> Void)?

  /// Every open connection, for publishing events.
  var all: Dictionary<ObjectIdentifier, ControlConnection>.Values { connections.values }

  func dropped(_ connection: ControlConnection, reason: String) {
    logger.warning("dropping a control client", ["peer": connection.peer, "reason": reason])
  }
}

/// One client of the control socket.
public final class ControlConnection: ByteStreamDelegate {
  /// What the peer may do, from its credentials.
  public enum Access: Sendable {
    /// Root, our user, or a member of the socket group: every method.
    case full
    /// Anyone else who could open the socket: read-only methods.
    case readOnly
  }

  public let access: Access
  let stream: SocketStream
  private unowned let server: ControlServer
  private var framer = VarlinkFramer(limit: ControlServer.requestLimit)
  private var closing = false
  /// What an active Subscribe stream asked for.
  enum Subscription: Equatable {
    /// Events of every room.
    case everyRoom
    /// Events of this room, and events about no room (the connection's).
    case room(RoomID)

    /// Whether an event about `room` (nil: about no room) passes.
    func passes(_ room: RoomID?) -> Bool {
      guard case .room(let wanted) = self, let room else { return true }
      return room == wanted
    }
  }

  /// The active Subscribe stream's filter, if there is one.
  private(set) var subscription: Subscription?
  /// The Subscribe call's tag, for the order of its events among other replies.
  private var subscriptionTag: UInt64 = 0
  /// Client ids whose Send call asked for further replies, with that call's tag.
  private(set) var watchedSends: [String: UInt64] = [:]

  /// Starts the Subscribe stream of `call`.
  func subscribe(_ call: VarlinkCall, room: RoomID?) {
    if subscription == nil { server.subscriberCount += 1 }
    subscription = room.map(Subscription.room) ?? .everyRoom
    subscriptionTag = call.tag
  }

  func watchSend(_ id: String, call: VarlinkCall) {
    if watchedSends.updateValue(call.tag, forKey: id) == nil { server.watchedSendCount += 1 }
  }

  /// A further reply about a watched send; the final one ends the watch.
  func pushReceipt(_ reply: VarlinkReply, id: String) {
    guard let tag = watchedSends[id] else { return }
    if !reply.continues, watchedSends.removeValue(forKey: id) != nil {
      server.watchedSendCount -= 1
    }
    deliver(reply.encoded, tag: tag, final: !reply.continues)
  }

  // Varlink has no request ids: a client matches replies to calls by order, so they must
  // leave in call order even when an earlier call is answered later (Send waits for the
  // outbox's fsync, History for the reader thread, Ping for the backend). Each call that
  // expects a reply gets a tag as it is read; replies to the oldest unfinished call (the
  // head) go out at once, later calls' replies wait in `held` until the head finishes.
  private var nextTag: UInt64 = 1
  private var headTag: UInt64 = 1
  private var held: [UInt64: (bytes: [UInt8], final: Bool)] = [:]
  private var heldBytes = 0

  init(server: ControlServer, stream: SocketStream, access: Access) {
    self.server = server
    self.stream = stream
    self.access = access
    stream.delegate = self
  }

  var peer: String { stream.peerDescription }

  /// Whether the connection can still take replies.
  public var isOpen: Bool { !closing }

  public func stream(_ stream: any ByteStream, didReceive bytes: UnsafeRawBufferPointer) {
    guard !closing else { return }
    let messages: [[UInt8]]
    do {
      messages = try framer.append(bytes)
    } catch {
      fail(error)
      return
    }
    for message in messages {
      guard !closing else { return }
      do {
        var call = try VarlinkCall.decode(message)
        if !call.oneway {
          call.tag = nextTag
          nextTag += 1
        }
        server.dispatch(call, from: self)
      } catch {
        fail(error)
        return
      }
    }
  }

  /// Answers a request that cannot be parsed, then closes: the stream cannot be trusted.
  private func fail(_ error: VarlinkError) {
    queue(VarlinkReply(error).encoded)
    flushOutput()
    close()
  }

  /// Sends a reply unless the call was oneway.
  func reply(_ reply: VarlinkReply, to call: VarlinkCall) {
    guard !call.oneway else { return }
    deliver(reply.encoded, tag: call.tag, final: !reply.continues)
  }

  /// Sends an encoded reply (NUL included) to `call`, unless it was oneway; with `flush`, what
  /// is queued is written at once instead of at the end of the loop iteration.
  func send(_ bytes: [UInt8], to call: VarlinkCall, final: Bool, flush: Bool = false) {
    guard !call.oneway else { return }
    deliver(bytes, tag: call.tag, final: final)
    if flush { flushOutput() }
  }

  /// Sends an event of the Subscribe stream; drops the client if it has stopped reading.
  func push(_ reply: VarlinkReply) {
    deliver(reply.encoded, tag: subscriptionTag, final: !reply.continues)
  }

  /// Sends now if `tag` is the head (or untagged), else holds the bytes until it is.
  private func deliver(_ bytes: [UInt8], tag: UInt64, final: Bool) {
    guard !closing else { return }
    guard tag > headTag else {
      queue(bytes)
      if final && tag == headTag { advanceHead() }
      return
    }
    var entry = held[tag] ?? ([], false)
    entry.bytes += bytes
    entry.final = entry.final || final
    held[tag] = entry
    heldBytes += bytes.count
    if heldBytes + stream.pendingWriteCount + output.count > ControlServer.outputLimit {
      server.dropped(self, reason: "\(heldBytes) bytes of replies held behind an earlier call")
      close()
    }
  }

  /// The head call finished: the next calls' held replies go out, in order.
  private func advanceHead() {
    headTag += 1
    while let entry = held.removeValue(forKey: headTag) {
      heldBytes -= entry.bytes.count
      queue(entry.bytes)
      guard entry.final else { return }
      headTag += 1
    }
  }

  /// Replies made in one loop iteration leave in one write: a client pipelining thousands of
  /// sends would otherwise cost one send(2) per reply.
  private var output: [UInt8] = []
  private var flushPosted = false

  /// Queues encoded reply bytes (a whole reply, NUL included) for the next write.
  private func queue(_ bytes: [UInt8]) {
    guard !closing else { return }
    output += bytes
    if stream.pendingWriteCount + output.count > ControlServer.outputLimit {
      server.dropped(
        self, reason: "\(stream.pendingWriteCount + output.count) bytes of replies unread")
      close()
      return
    }
    guard !flushPosted else { return }
    flushPosted = true
    server.loop.post { [weak self] in
      self?.flushPosted = false
      self?.flushOutput()
    }
  }

  private func flushOutput() {
    guard !closing, !output.isEmpty else { return }
    stream.write(output)
    output.removeAll(keepingCapacity: output.capacity <= 64 * 1024)
  }

  public func streamDidDrain(_ stream: any ByteStream) {}

  public func stream(_ stream: any ByteStream, didCloseWith error: TransportError?) {
    closing = true
    forgetWatches()
    server.closed(self)
  }

  func close() {
    guard !closing else { return }
    closing = true
    forgetWatches()
    stream.close()
    server.closed(self)
  }

  private func forgetWatches() {
    if subscription != nil {
      server.subscriberCount -= 1
      subscription = nil
    }
    server.watchedSendCount -= watchedSends.count
    watchedSends = [:]
    held = [:]
    heldBytes = 0
  }
}
