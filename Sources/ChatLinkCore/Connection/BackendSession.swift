import EventLoop
import Transport
import WebSocket
import WebSocketClient

/// The one persistent connection to the chat backend, owned by the loop.
///
/// It connects, joins the rooms, keeps the connection alive with pings, detects a dead peer,
/// reconnects with backoff as the server's answers steer it, stores every inbound frame, and
/// delivers the outbox in order, keeping each message until the backend confirms it: by
/// echoing its client id, or by answering a ping sent after it (TCP keeps order).
public final class BackendSession: WebSocketClientDelegate {
  /// The connection settings, from [Backend].
  public struct Settings: Sendable {
    public var url: WebSocketURL
    public var headers: HTTPHeaders
    public var subprotocols: [String]
    public var compression: Bool
    public var maxMessageSize: Int
    public var pingInterval: Double
    public var pongTimeout: Double
    public var connectTimeout: Double
    public var reconnectMin: Double
    public var reconnectMax: Double
    /// How long a connection must stay up before past failures are forgotten.
    public var stableAfter: Double = 30
    /// The HTTP CONNECT proxy: Proxy= or, when unset, https_proxy/http_proxy and no_proxy.
    public var proxy: ProxyAddress?

    /// Takes the settings of a validated configuration (whose URL is `url`), plus the token
    /// (never logged).
    public init(_ c: Configuration, url: WebSocketURL, token: String?) {
      self.url = url
      var headers = HTTPHeaders(c.headers)
      if let token { headers.add(name: "Authorization", value: "Bearer \(token)") }
      self.headers = headers
      subprotocols = c.subprotocols
      compression = c.compression
      maxMessageSize = c.maxMessageSize
      pingInterval = c.pingInterval
      pongTimeout = c.pongTimeout
      connectTimeout = c.connectTimeout
      reconnectMin = c.reconnectMin
      reconnectMax = c.reconnectMax
      if let configured = c.proxy {
        proxy = ProxyAddress(url: configured)
      } else {
        proxy = ProxyAddress.fromEnvironment(for: url.host, secure: url.secure)
      }
    }
  }

  /// Counters for status.
  public struct Counters: Sendable, Hashable {
    public var received = 0
    public var sent = 0
    public var confirmed = 0
    public var connects = 0
    public var attempts = 0
  }

  /// A problem worth showing in status until the next successful connection.
  public private(set) var lastError: String?
  /// The state.
  public private(set) var state = ConnectionState.idle
  /// Counters.
  public private(set) var counters = Counters()
  /// What the server agreed to on the current connection.
  public private(set) var negotiated: ClientHandshake.Result?
  /// The rooms joined after every connect: configured plus runtime joins.
  public private(set) var rooms: [RoomID] = []
  /// The settings in force.
  public private(set) var settings: Settings
  /// How the last connection ended: the reason and, for a close frame, its code.
  public private(set) var lastDisconnect: (reason: String, code: Int?)?

  /// Called on every state change, with the reason.
  public var onStateChange: ((ConnectionState, String) -> Void)?
  /// Called for every inbound frame after it is appended to the store, with its seq and
  /// receive time.
  public var onInbound: ((InboundMessage, UInt64, Timestamp) -> Void)?
  /// Called when outbox entries are confirmed (after their "out" record is appended).
  public var onConfirmed: (([OutboxEntry]) -> Void)?
  /// Called when an entry is written to the socket.
  public var onSent: ((OutboxEntry) -> Void)?
  /// Called with the round-trip time of each pong that answers a user ping request.
  private var pingWaiters: [(UInt64, (Result<Double, PingError>) -> Void)] = []

  /// Why a ping request failed.
  public enum PingError: Error, Sendable, Hashable, CustomStringConvertible {
    case notConnected
    case timedOut
    public var description: String {
      switch self {
      case .notConnected: "not connected to the backend"
      case .timedOut: "no pong within the timeout"
      }
    }
  }

  private let loop: EventLoop
  private let resolver: Resolver
  private var tlsContext: TLSContext?
  private var adapter: any ChatProtocolAdapter
  /// The rooms from Rooms=, as distinct from rooms joined at run time.
  private var configuredRooms: [RoomID]
  private let store: MessageStore
  private let outbox: Outbox
  private var logger: Logger
  private var backoff: Backoff
  private var client: WebSocketClient?
  private var retryTimer: Timer?
  private var pingTimer: Timer?
  private var pongDeadline: Timer?
  private var phaseTimer: Timer?
  private var sendTimer: Timer?
  private var openedAt: Microseconds?
  private var stopping: (() -> Void)?
  private var started = false

  /// Highest outbox `count` written on this connection. The outbox keeps its entries in
  /// `count` order and they go out in that order, so the pending entries written on this
  /// connection are exactly those with `count <= lastSentCount`.
  private var lastSentCount: UInt64 = 0
  /// Entries written on this connection and not yet confirmed, by a hash of their id: an echo
  /// is looked up here, so echoes of other clients' messages cost one hash, not a search of
  /// the outbox. (A hash of the id, not the id: this changes for every message sent. A
  /// collision is harmless: a foreign id that hits costs that search, which compares the ids
  /// themselves, and an own id whose hash was removed with another's is confirmed by the pong.)
  private var sentIDs: Set<UInt64> = []
  /// The frames written on this connection and not yet confirmed, by count: the store's
  /// "out" record carries the same bytes, so each message is encoded once.
  private var sentFrames: [UInt64: Message] = [:]
  private var pingCounter: UInt64 = 0
  /// The outstanding ping: its counter, when it left, and the last count it covers.
  private var outstandingPing: (counter: UInt64, sentAt: Microseconds, covers: UInt64)?
  private var needsConfirmationPing = false

  /// Creates the session; `start()` connects.
  public init(
    loop: EventLoop, resolver: Resolver, tlsContext: TLSContext?, settings: Settings,
    rooms: [RoomID], adapter: any ChatProtocolAdapter, store: MessageStore, outbox: Outbox,
    logger: Logger
  ) throws(SystemError) {
    self.loop = loop
    self.resolver = resolver
    self.tlsContext = tlsContext
    self.settings = settings
    self.rooms = adapter.hasRooms ? rooms : []
    configuredRooms = self.rooms
    self.adapter = adapter
    self.store = store
    self.outbox = outbox
    self.logger = logger
    backoff = Backoff(minimum: settings.reconnectMin, maximum: settings.reconnectMax)
    retryTimer = try loop.makeTimer(accuracy: 10_000) { [unowned self] in self.connect() }
    pingTimer = try loop.makeTimer(accuracy: 10_000) { [unowned self] in self.pingTick() }
    pongDeadline = try loop.makeTimer(accuracy: 1000) { [unowned self] in self.pongTimedOut() }
    phaseTimer = try loop.makeTimer(accuracy: 1000) { [unowned self] in self.checkPhase() }
    sendTimer = try loop.makeTimer(accuracy: 1000) { [unowned self] in self.flushOutbox() }
    outbox.onEnqueued = { [weak self] in self?.flushOutbox() }
    store.onWritten = { [weak self] in self?.applyBackpressure() }
  }

  /// Connects for the first time.
  public func start() {
    guard !started else { return }
    started = true
    connect()
  }

  /// The URL without credentials, for status and logs.
  public var displayURL: String { settings.url.description }

  // MARK: Commands

  /// Whether the protocol has rooms at all (Protocol=raw has none).
  public var hasRooms: Bool { adapter.hasRooms }

  /// Joins a room now (if connected) and after every reconnect.
  public func join(_ room: RoomID) {
    guard adapter.hasRooms, !rooms.contains(room) else { return }
    rooms.append(room)
    if state == .open, let message = adapter.join(room) { try? client?.send(message) }
  }

  /// Leaves a room now and stops joining it after reconnects.
  public func leave(_ room: RoomID) {
    guard let index = rooms.firstIndex(of: room) else { return }
    rooms.remove(at: index)
    if state == .open, let message = adapter.leave(room) { try? client?.send(message) }
  }

  /// Drops the connection and connects again at once.
  public func reconnect(reason: String) {
    guard stopping == nil else { return }
    logger.notice("reconnect requested", ["reason": reason])
    retryTimer?.disarm()
    if let client {
      self.client = nil
      client.delegate = nil
      client.close(code: .goingAway, reason: "reconnecting")
      connectionEnded()
    }
    connect()
  }

  /// Measures a round trip to the backend with a ping.
  public func ping(completion: @escaping (Result<Double, PingError>) -> Void) {
    guard state == .open, let client else { return completion(.failure(.notConnected)) }
    pingCounter += 1
    do {
      try client.ping(Self.payload(pingCounter))
    } catch {
      return completion(.failure(.notConnected))
    }
    let counter = pingCounter
    let sentAt = loop.now
    pingWaiters.append(
      (
        counter,
        { [weak self] result in
          guard let self else { return }
          completion(result.map { _ in Double(self.loop.now - sentAt) / 1_000_000 })
        }
      ))
    if outstandingPing == nil {
      outstandingPing = (counter, sentAt, lastSentCount)
      pongDeadline?.schedule(after: Self.micros(settings.pongTimeout))
    }
  }

  /// Applies new settings: keepalive and rooms live; URL, headers or token by reconnecting.
  ///
  /// Rooms removed from Rooms= are left and new ones joined; rooms joined at run time stay.
  /// A new adapter (Sender=, [Envelope] names) applies to messages sent from now on.
  public func apply(
    settings new: Settings, rooms newRooms: [RoomID], tlsContext: TLSContext?,
    adapter newAdapter: any ChatProtocolAdapter
  ) {
    let needsReconnect =
      new.url != settings.url || new.headers != settings.headers || new.proxy != settings.proxy
      || new.subprotocols != settings.subprotocols || new.compression != settings.compression
      || new.maxMessageSize != settings.maxMessageSize
    adapter = newAdapter
    let wanted = adapter.hasRooms ? newRooms : []
    for room in configuredRooms where !wanted.contains(room) { leave(room) }
    for room in wanted where !rooms.contains(room) { join(room) }
    configuredRooms = wanted
    settings = new
    self.tlsContext = tlsContext
    backoff.minimum = new.reconnectMin
    backoff.maximum = new.reconnectMax
    if state == .open && !needsReconnect {
      // Restart the keepalive with the new interval.
      pingTimer?.schedule(after: Self.micros(new.pingInterval))
    }
    if needsReconnect { reconnect(reason: "configuration changed") }
  }

  /// Closes with 1001 and calls `completion` once the connection is down (bounded by the
  /// close timeout).
  public func stop(completion: @escaping () -> Void) {
    stopping = completion
    retryTimer?.disarm()
    pingTimer?.disarm()
    pongDeadline?.disarm()
    guard let client, state == .open || state == .upgrading || state == .connecting || state == .tls
    else {
      finishStop()
      return
    }
    setState(.closing, "shutting down")
    client.close(code: .goingAway, reason: "shutting down")
  }

  private func finishStop() {
    let done = stopping
    stopping = nil
    setState(.idle, "stopped")
    done?()
  }

  // MARK: Connecting

  private func connect() {
    guard stopping == nil, client == nil else { return }
    counters.attempts += 1
    let configuration = WebSocketClient.Configuration(
      url: settings.url, headers: settings.headers, subprotocols: settings.subprotocols,
      deflate: settings.compression ? PerMessageDeflateOptions() : nil,
      limits: ClientConnection.Limits(
        maxFrameSize: settings.maxMessageSize, maxMessageSize: settings.maxMessageSize),
      connectTimeout: Self.micros(settings.connectTimeout), closeTimeout: 3_000_000,
      proxy: settings.proxy)
    let client = WebSocketClient(
      loop: loop, resolver: resolver, tlsContext: settings.url.secure ? tlsContext : nil,
      configuration: configuration)
    client.delegate = self
    self.client = client
    setState(.connecting, "connecting to \(displayURL)")
    client.connect()
    // The client reports open or failure; TLS and upgrade phases are polled for status.
    phaseTimer?.schedule(after: 20_000)
  }

  private func checkPhase() {
    guard let client else { return }
    switch client.phase {
    case .connecting:
      if state == .connecting, settings.url.secure, client.connectorPhase == "TLS handshake" {
        setState(.tls, "TLS handshake with \(settings.url.host)")
      }
      phaseTimer?.schedule(after: 20_000)
    case .upgrading:
      if state != .upgrading { setState(.upgrading, "sent the upgrade request") }
      phaseTimer?.schedule(after: 20_000)
    default:
      break
    }
  }

  public func webSocketDidOpen(_ client: WebSocketClient, handshake: ClientHandshake.Result) {
    guard client === self.client else { return }
    negotiated = handshake
    openedAt = loop.now
    counters.connects += 1
    lastError = nil
    var extras: [String] = []
    if let subprotocol = handshake.subprotocol { extras.append("subprotocol \(subprotocol)") }
    if let deflate = handshake.deflate { extras.append(deflate.description) }
    logger.info(
      "connected",
      [
        "url": displayURL, "peer": client.peerDescription ?? "",
        "extensions": extras.joined(separator: ", "),
      ])
    setState(.open, "connected")
    // Rooms first, then the outbox in order: the backend must know the rooms before messages
    // for them arrive.
    for room in rooms {
      if let message = adapter.join(room) { try? client.send(message) }
    }
    lastSentCount = 0
    sentIDs = []
    sentFrames = [:]
    flushOutbox()
    pingTimer?.schedule(after: Self.micros(settings.pingInterval))
  }

  public func webSocket(_ client: WebSocketClient, didReceive message: Message) {
    guard client === self.client else { return }
    livenessProven()
    let inbound = adapter.decode(message)
    let time = Timestamp.now()
    let seq = store.append(
      direction: .inbound, room: inbound.room, payload: message, scan: inbound.scan, time: time)
    counters.received += 1
    applyBackpressure()
    if inbound.scan == .some(nil) {
      logger.debug("inbound frame is not JSON; stored as text", ["seq": String(seq)])
    }
    onInbound?(inbound, seq, time)
    if let id = inbound.echoedClientID, sentIDs.contains(Self.idHash(id)),
      let entry = outbox.confirm(id: id)
    {
      confirmed(CollectionOfOne(entry))
    }
  }

  public func webSocket(_ client: WebSocketClient, didReceivePing payload: [UInt8]) {
    guard client === self.client else { return }
    livenessProven()
  }

  public func webSocket(_ client: WebSocketClient, didReceivePong payload: [UInt8]) {
    guard client === self.client else { return }
    livenessProven()
    guard let counter = Self.counter(payload), let ping = outstandingPing, counter >= ping.counter
    else { return }
    // TCP keeps order: this pong proves the backend read everything sent before the ping.
    outstandingPing = nil
    pongDeadline?.disarm()
    let covered = ping.covers
    confirmed(outbox.confirm(through: covered))
    let ready = pingWaiters.filter { $0.0 <= counter }
    pingWaiters.removeAll { $0.0 <= counter }
    for (_, waiter) in ready { waiter(.success(0)) }
    if needsConfirmationPing || lastSentCount > covered || !pingWaiters.isEmpty {
      sendConfirmationPing()
    }
  }

  public func webSocket(_ client: WebSocketClient, didDisconnect reason: WebSocketClient.Disconnect)
  {
    guard client === self.client else { return }
    self.client = nil
    connectionEnded()
    if stopping != nil {
      finishStop()
      return
    }
    scheduleReconnect(after: reason)
  }

  private func connectionEnded() {
    pingTimer?.disarm()
    pongDeadline?.disarm()
    sendTimer?.disarm()
    phaseTimer?.disarm()
    outstandingPing = nil
    needsConfirmationPing = false
    negotiated = nil
    readingPaused = false
    for (_, waiter) in pingWaiters { waiter(.failure(.notConnected)) }
    pingWaiters = []
    // Unconfirmed messages stay in the outbox and go out again after the reconnect.
    sentIDs = []
    sentFrames = [:]
    lastSentCount = 0
    if let openedAt, Double(loop.now - openedAt) / 1_000_000 >= settings.stableAfter {
      backoff.reset()
    }
    openedAt = nil
  }

  /// Chooses the delay before the next attempt from how the connection ended.
  private func scheduleReconnect(after reason: WebSocketClient.Disconnect) {
    var delay: Double
    var text = "\(reason)"
    var problem: String?
    switch reason {
    case .handshakeFailed(.unexpectedStatus(let head)):
      switch head.status {
      case 401, 403:
        // A bad token will not fix itself quickly: retry slowly, never in a hot loop.
        problem = "the backend refused the credentials (HTTP \(head.status)); check TokenFile="
        delay = backoff.maximum
      case 429, 503:
        if let asked = head.retryAfter, let seconds = RetryAfterDelay.seconds(asked) {
          delay = min(max(seconds, backoff.minimum), 3600)
          text += "; honouring Retry-After"
        } else {
          delay = backoff.nextDelay()
        }
        problem = "the backend is unavailable (HTTP \(head.status))"
      case 300...399:
        problem =
          "the backend redirects to \(head.location ?? "?"); redirects are not followed, update URL="
        delay = backoff.maximum
      default:
        problem = "the backend refused the upgrade (HTTP \(head.status))"
        delay = backoff.nextDelay()
      }
    case .handshakeFailed(let error):
      problem = "handshake failed: \(error)"
      delay = backoff.nextDelay()
    case .transportFailed(.certificateRejected(let why)):
      problem = "TLS certificate rejected: \(why)"
      delay = backoff.nextDelay()
    case .transportFailed(let error):
      problem = "\(error)"
      delay = backoff.nextDelay()
    case .closed(let info):
      switch info.code {
      case .serviceRestart, .goingAway:
        // The server is restarting: come back soon, without counting a failure.
        delay = backoff.shortDelay()
      case .tryAgainLater:
        delay = max(backoff.nextDelay(), min(10, backoff.maximum))
      case .policyViolation:
        problem = "the backend closed with 1008 (policy violation): \(info.reason)"
        delay = backoff.maximum
      default:
        if case .peer = info.initiator, info.code == .normalClosure {
          delay = backoff.shortDelay()
        } else {
          delay = backoff.nextDelay()
        }
      }
    }
    if let problem {
      lastError = problem
      logger.error("connection failed", ["url": displayURL, "error": problem])
    }
    var code: Int?
    if case .closed(let info) = reason { code = Int(info.code.rawValue) }
    lastDisconnect = (text, code)
    logger.info(
      "disconnected",
      [
        "reason": text, "close_code": code.map(String.init) ?? "",
        "retry_in": ConnectionState.format(delay), "failures": String(backoff.failures),
      ])
    setState(.waiting(seconds: delay), text)
    retryTimer?.schedule(after: Self.micros(delay))
  }

  // MARK: Backpressure

  /// Whether reading is paused because the store is behind.
  private var readingPaused = false

  /// Pauses reading while the store is behind (`MessageStore.isBehind`) and resumes once it
  /// has caught up, so memory stays bounded when the disk is slower than the network.
  private func applyBackpressure() {
    if !readingPaused && store.isBehind {
      readingPaused = true
      client?.isReadingPaused = true
      logger.debug("store is behind; pausing reads", ["backlog_bytes": String(store.backlogBytes)])
    } else if readingPaused && store.hasCaughtUp {
      readingPaused = false
      client?.isReadingPaused = false
    }
  }

  // MARK: Keepalive

  private func pingTick() {
    guard state == .open, let client else { return }
    pingTimer?.schedule(after: Self.micros(settings.pingInterval))
    guard outstandingPing == nil else { return }
    pingCounter += 1
    try? client.ping(Self.payload(pingCounter))
    outstandingPing = (pingCounter, loop.now, lastSentCount)
    pongDeadline?.schedule(after: Self.micros(settings.pongTimeout))
  }

  /// Any frame from the peer proves it alive; only a pong confirms delivery.
  private func livenessProven() {
    if outstandingPing != nil && pingWaiters.isEmpty {
      pongDeadline?.schedule(after: Self.micros(settings.pongTimeout))
    }
  }

  private func pongTimedOut() {
    guard let client, state == .open, outstandingPing != nil else { return }
    if readingPaused {
      // We are not reading, so a pong could not be seen: that says nothing about the peer.
      pongDeadline?.schedule(after: Self.micros(settings.pongTimeout))
      return
    }
    let seconds = ConnectionState.format(settings.pongTimeout)
    logger.warning("backend stopped answering; reconnecting", ["timeout": "\(seconds) s"])
    for (_, waiter) in pingWaiters { waiter(.failure(.timedOut)) }
    pingWaiters = []
    client.abort(.timedOut(phase: "waiting for a pong", seconds: settings.pongTimeout))
  }

  private func sendConfirmationPing() {
    guard let client, state == .open else { return }
    guard outstandingPing == nil else {
      needsConfirmationPing = true
      return
    }
    needsConfirmationPing = false
    pingCounter += 1
    try? client.ping(Self.payload(pingCounter))
    outstandingPing = (pingCounter, loop.now, lastSentCount)
    pongDeadline?.schedule(after: Self.micros(settings.pongTimeout))
  }

  // MARK: Outbox

  /// Writes pending entries not yet sent on this connection, in order, while the socket
  /// keeps up; then asks for a confirming pong.
  private func flushOutbox() {
    guard state == .open, let client, stopping == nil else { return }
    let pending = outbox.pending
    var index = Self.firstIndex(in: pending, after: lastSentCount)
    var wrote = false
    while index < pending.endIndex {
      if client.bufferedAmount > 1 << 20 {
        // Let the socket drain before queuing more; come back shortly.
        sendTimer?.schedule(after: 5_000)
        break
      }
      let entry = pending[index]
      let frame = adapter.encode(entry)
      do {
        try client.send(frame)
      } catch {
        logger.error("send failed", ["id": entry.id, "error": "\(error)"])
        break
      }
      lastSentCount = entry.count
      sentIDs.insert(Self.idHash(entry.id))
      sentFrames[entry.count] = frame
      counters.sent += 1
      wrote = true
      onSent?(entry)
      index += 1
    }
    if wrote { sendConfirmationPing() }
  }

  /// The index of the first entry whose count exceeds `count` (entries are in count order).
  static func firstIndex(in entries: ArraySlice<OutboxEntry>, after count: UInt64) -> Int {
    var low = entries.startIndex
    var high = entries.endIndex
    while low < high {
      let mid = (low + high) / 2
      if entries[mid].count <= count { low = mid + 1 } else { high = mid }
    }
    return low
  }

  /// Records entries the outbox has just removed as confirmed: an "out" record each, with the
  /// frame that went out.
  private func confirmed(_ entries: some Collection<OutboxEntry>) {
    guard !entries.isEmpty else { return }
    let scan = ownFrameScan
    for entry in entries {
      sentIDs.remove(Self.idHash(entry.id))
      let frame = sentFrames.removeValue(forKey: entry.count) ?? adapter.encode(entry)
      // The frame is our own encoding: JSON on one line, so the store need not scan it.
      store.append(
        direction: .outbound, room: entry.room?.json, clientID: entry.id, payload: frame,
        scan: scan)
    }
    counters.confirmed += entries.count
    onConfirmed?(Array(entries))
  }

  /// The hash `sentIDs` holds for a client id.
  static func idHash(_ id: String) -> UInt64 { FNV1a.hash64(id.utf8) }

  /// What scanning one of our own envelopes would report: a JSON object without line breaks.
  /// (Protocol=raw frames are the user's text, which may not be JSON: those are scanned.)
  private var ownFrameScan: JSONScanner.Result?? {
    adapter is EnvelopeProtocol ? .some(Self.jsonObjectScan) : .none
  }

  private static let jsonObjectScan: JSONScanner.Result? = {
    let object: [UInt8] = Array("{}".utf8)
    return object.withUnsafeBytes { JSONScanner.scan($0) }
  }()

  // MARK: Helpers

  private func setState(_ new: ConnectionState, _ reason: String) {
    guard new != state else { return }
    state = new
    onStateChange?(new, reason)
  }

  static func micros(_ seconds: Double) -> Microseconds {
    Microseconds(max(0, seconds) * 1_000_000)
  }

  static func payload(_ counter: UInt64) -> [UInt8] {
    (0..<8).map { UInt8(truncatingIfNeeded: counter >> (56 - 8 * UInt64($0))) }
  }

  static func counter(_ payload: [UInt8]) -> UInt64? {
    guard payload.count == 8 else { return nil }
    return payload.reduce(0) { $0 << 8 | UInt64($1) }
  }
}
