import EventLoop
import JSON
import LinkCore
import Transport
import WebSocket
import WebSocketClient

/// The one persistent connection to the chat backend: the thin driver that runs `LinkCore`
/// on the event loop.
///
/// It feeds the core what the WebSocket client, the timers, the store and the outbox report,
/// and performs the actions the core returns, in order: connecting, sending, arming timers,
/// storing records, confirming outbox entries, logging. Every decision is the core's.
public final class BackendLink: WebSocketClientDelegate {
  /// Where the connection is.
  public var state: ConnectionState { core.state }
  /// Counters for status.
  public var counters: LinkCounters { core.counters }
  /// Rooms catching up from the backend's history now.
  public var roomsCatchingUp: Int { core.roomsCatchingUp }
  /// Those rooms, with the messages their history has brought so far.
  public var catchUpProgress: [(room: String, caughtUp: Int)] { core.catchUpProgress }
  /// A problem worth showing in status until the next successful connection.
  public var lastError: String? { core.lastError }
  /// How the last connection ended.
  public var lastDisconnect: Disconnection? { core.lastDisconnect }
  /// What the server agreed to on the current connection.
  public var negotiated: ClientHandshake.Result? { core.negotiated }
  /// The rooms joined after every connect: configured plus runtime joins.
  public var rooms: [RoomID] { core.rooms }
  /// Whether the dialect has rooms at all (Protocol=raw has none).
  public var hasRooms: Bool { core.hasRooms }
  /// The dialect's own session on the current connection (Socket.IO's sid and namespace).
  public var session: ProtocolSession? { core.session }
  /// The last message the backend refused, as "<id>: <reason>".
  public private(set) var lastFailure: String?
  /// The URL without credentials, for status and logs.
  public var displayURL: String { core.connectURL.description }
  /// The settings in force.
  public private(set) var settings: BackendSettings
  /// Bytes and messages over the wire, summed over every connection.
  public let traffic = TrafficMeter()
  /// When a session last became usable (wall clock), for metrics.
  public private(set) var lastConnected: Timestamp?

  /// Called on every state change, with the reason.
  public var onStateChange: ((ConnectionState, String) -> Void)?
  // Unchecked exclusivity: read for every inbound record, only on the loop's thread.
  /// Called for every inbound record after it is appended to the store, with its seq and
  /// receive time.
  @exclusivity(unchecked) public var onInbound: ((InboundMessage, UInt64, Timestamp) -> Void)?
  /// Called when the store's durable seq advances (after the acknowledgements it releases).
  public var onDurable: ((UInt64) -> Void)?
  /// Called when outbox entries are confirmed (after their "out" records are appended).
  public var onConfirmed: ((ArraySlice<DeliveryLedger.Sent>) -> Void)?
  /// Called when an entry is written to the socket.
  public var onSent: ((ArraySlice<OutboxEntry>) -> Void)?
  /// Called when the backend refused an entry (it has left the outbox), with the reason.
  public var onFailed: ((OutboxEntry, String) -> Void)?

  let loop: EventLoop
  let logger: Logger
  private let resolver: Resolver
  private var tlsContext: TLSContext?
  let store: MessageStore
  let outbox: Outbox
  /// The journal of QoS 2 deliveries stored and not yet released ([MQTT] QoS=2), if kept.
  let receipts: ReceiptJournal?
  /// Journal entries the core asked for without a journal to write them to (a dialect
  /// keeping receipts the daemon did not expect): reported durable at once.
  private var unjournaled: UInt64 = 0
  // Unchecked exclusivity: both are touched several times for every inbound frame, only on the
  // loop's thread and only through `feed`, which never overlaps two accesses to either.
  @exclusivity(unchecked) private var core: LinkCore
  /// What the core asked for and is not yet done, oldest first. Performing an action may
  /// feed the core again (a socket closing at once), which appends here.
  @exclusivity(unchecked) private var actions: [LinkAction] = []
  /// How many of `actions` are done (and left as placeholders).
  @exclusivity(unchecked) private var performed = 0
  /// Whether `feed` is performing actions (a nested feed only adds to them).
  @exclusivity(unchecked) private var performing = false
  private var timers: [Timer] = []
  var client: WebSocketClient? {
    didSet { clientIdentity = client.map(ObjectIdentifier.init) }
  }
  /// Which client is the link's: every frame's callback checks, and comparing identities
  /// spares loading (and reference counting) `client` itself.
  private(set) var clientIdentity: ObjectIdentifier?
  /// When the frame being handled was read (`WebSocketClient.receivedAt`): its records' time.
  var readTime = Timestamp(microseconds: 0)
  /// The payload of the inbound record just stored, for the client to reuse its memory.
  var spentPayload: Message?
  private var pingCompletions: [UInt64: (Result<Duration, PingError>) -> Void] = [:]
  private var nextPingID: UInt64 = 0
  private var stopCompletion: (() -> Void)?
  /// Whether the dialect's own frames are JSON objects on one line (the store need not scan
  /// them).
  var ownFramesAreJSON: Bool
  /// Whether reading is paused because the store is behind.
  var readingPaused: Bool { core.readingPaused }

  /// Creates the link; `start()` connects. The dialect is the one the settings name, unless
  /// `dialect` gives another (a test's). `receipts` is the journal of QoS 2 deliveries, with
  /// `[MQTT] QoS=2`.
  public init(
    loop: EventLoop, resolver: Resolver, tlsContext: TLSContext?, settings: BackendSettings,
    rooms: [RoomID], store: MessageStore, outbox: Outbox, receipts: ReceiptJournal? = nil,
    logger: Logger, dialect: (any BackendProtocol)? = nil
  ) throws(SystemError) {
    self.loop = loop
    self.resolver = resolver
    self.tlsContext = tlsContext
    self.settings = settings
    self.store = store
    self.outbox = outbox
    self.receipts = receipts
    self.logger = logger
    core = LinkCore(
      settings: settings.link, rooms: rooms, backend: dialect,
      receipts: receipts?.restored ?? InboundReceipts(durableThrough: store.durableSeq),
      services: .system)
    ownFramesAreJSON = core.framesAreSingleLineJSON
    for timer in LinkTimer.allCases {
      let accuracy: Duration =
        timer == .retry || timer == .keepalive ? .milliseconds(10) : .milliseconds(1)
      timers.append(
        try loop.makeTimer(accuracy: accuracy) { [unowned self] in
          self.feed(.timerFired(timer))
        })
    }
    outbox.onEnqueued = { [weak self] in self?.offerOutbox() }
    outbox.onReleased = { [weak self] entries in self?.feed(.released(entries)) }
    receipts?.onDurable = { [weak self] entry in self?.feed(.journalDurable(through: entry)) }
    store.onWritten = { [weak self] in self?.checkBackpressure() }
    store.onDurable = { [weak self] seq in
      self?.feed(.durable(through: seq))
      self?.onDurable?(seq)
    }
  }

  // MARK: Commands

  /// Connects for the first time.
  public func start() {
    // What the store holds from before is durable, and a duplicate of it is acknowledged on
    // that alone: no fsync, and so no durable report, follows a record the store drops.
    feed(.durable(through: store.durableSeq))
    feed(.start)
  }

  /// Why the dialect could never send a message to `room` (an MQTT topic filter with
  /// wildcards, say), so a send is refused before it is queued; nil when it could.
  public func refusal(room: RoomID?) -> String? {
    core.refusal(of: OutboxEntry(id: "-", room: room, text: "", count: 0, created: .now()))
  }

  /// Joins a room now (if connected) and after every reconnect.
  public func join(_ room: RoomID) { feed(.join(room)) }

  /// Leaves a room now and stops joining it after reconnects.
  public func leave(_ room: RoomID) { feed(.leave(room)) }

  /// Drops the connection and connects again at once.
  public func reconnect(reason: String) { feed(.reconnect(reason: reason)) }

  /// Measures a round trip to the backend with a ping.
  public func ping(completion: @escaping (Result<Duration, PingError>) -> Void) {
    nextPingID += 1
    pingCompletions[nextPingID] = completion
    feed(.pingRequested(id: nextPingID))
  }

  /// Applies new settings; the core decides what applies live and what reconnects.
  public func apply(settings new: BackendSettings, rooms: [RoomID], tlsContext: TLSContext?) {
    settings = new
    self.tlsContext = tlsContext
    feed(.reload(new.link, rooms: rooms))
    ownFramesAreJSON = core.framesAreSingleLineJSON
  }

  /// Closes with 1001 and calls `completion` once the connection is down (bounded by the
  /// close timeout).
  public func stop(completion: @escaping () -> Void) {
    stopCompletion = completion
    feed(.stop)
  }

  // MARK: Driving the core

  /// Hands `event` to the core and performs what it asks, in order.
  func feed(_ event: consuming LinkEvent) {
    core.handle(event, now: loop.instant, into: &actions)
    guard !performing else { return }
    performing = true
    while performed < actions.count {
      // Moved out, not copied: a copy would retain every payload of the action once more
      // (an inbound record's for every frame), and the array would release them again.
      var action = LinkAction.requestOutbox
      swap(&action, &actions[performed])
      perform(consume action)
      performed += 1
    }
    // What is left are placeholders: emptied now and then rather than after every event
    // (most events are one inbound frame and one action); the room a burst of sends needed
    // is given back.
    if performed >= 64 {
      actions.removeAll(keepingCapacity: actions.capacity <= 1024)
      performed = 0
    }
    performing = false
  }

  // Kept out of `feed`: inlined there, the accesses of every action's case to this object's
  // properties were checked for exclusivity at run time on every frame.
  @inline(never)
  private func perform(_ action: consuming LinkAction) {
    // Consumed: an inbound record moves to the store and its payload on to `spentPayload`.
    switch consume action {
    case .connect: connect()
    case .send(let message): send(message)
    case .sendOutbox(let frames, let entries):
      send(frames)
      onSent?(entries)
    case .sendPing(let payload): try? client?.ping(payload)
    case .close(let code, let reason): client?.close(code: code, reason: reason)
    case .drop(let code, let reason): drop(code, reason)
    case .arm(let timer, let delay): timers[timer.rawValue].schedule(after: delay)
    case .disarm(let timer): timers[timer.rawValue].disarm()
    case .store(let record, let acknowledged):
      let seq = storeInbound(record)
      // Reported before anything else is stored, so the core pairs it with its record.
      if acknowledged { feed(.stored(seq: seq)) }
      spentPayload = (consume record).payload
    case .awaitDurability(let awaited): store.syncPromptly = awaited
    case .confirmed(let sent):
      outbox.confirm(sent.entry)
      storeOutbound([sent][...])
    case .confirmedThrough(let count, let entries):
      outbox.confirm(through: count)
      storeOutbound(entries)
    case .failed(let entry, let reason): failed(entry, reason)
    case .release(let entry): outbox.release(entry)
    case .journal(let entry): journal(entry)
    case .requestOutbox: offerOutbox()
    case .requestPositions(let rooms):
      feed(.positions(store.newestIDs(of: rooms), newest: store.newestStoredTime))
    case .pauseReading: client?.isReadingPaused = true
    case .resumeReading: client?.isReadingPaused = false
    case .stateChanged(let state, let reason):
      if state == .open { lastConnected = .now() }
      onStateChange?(state, reason)
    case .pingAnswered(let id, let rtt): pingCompletions.removeValue(forKey: id)?(.success(rtt))
    case .pingFailed(let id, let error): pingCompletions.removeValue(forKey: id)?(.failure(error))
    case .report(let report): log(report)
    case .stopped:
      let done = stopCompletion
      stopCompletion = nil
      done?()
    }
  }

  private func connect() {
    // Where the backend sent us, if it did (as protected as the configured URL).
    let url = core.connectURL
    let client = WebSocketClient(
      loop: loop, resolver: resolver, tlsContext: url.secure ? tlsContext : nil,
      configuration: settings.clientConfiguration(to: url, offering: core.offeredSubprotocols))
    client.delegate = self
    client.traffic = traffic
    self.client = client
    client.connect()
  }

  private func send(_ message: Message) {
    do {
      try client?.send(message)
    } catch {
      logger.error("send failed", ["error": "\(error)"])
    }
  }

  private func send(_ frames: OutboxFrames) {
    do {
      switch frames {
      case .texts(let texts): try client?.send(texts: texts)
      case .messages(let messages): try client?.send(contentsOf: messages)
      }
    } catch {
      logger.error("send failed", ["error": "\(error)"])
    }
  }

  /// Lets go of the current connection, closing it; the core already counted it as ended.
  private func drop(_ code: CloseCode, _ reason: String) {
    guard let client else { return }
    self.client = nil
    client.delegate = nil
    client.close(code: code, reason: reason)
  }

  /// The backend refused `entry`: it leaves the outbox (at least once does not mean forever),
  /// and whoever waits for it learns why.
  private func failed(_ entry: OutboxEntry, _ reason: String) {
    outbox.confirm(entry)
    lastFailure = "\(entry.id): \(reason)"
    logger.warning(
      "message refused by the backend",
      ["id": entry.id, "room": entry.room?.name ?? "", "reason": reason])
    onFailed?(entry, reason)
  }

  /// Writes a journal entry of the receipts; without a journal it counts as durable at once.
  private func journal(_ entry: ReceiptJournalEntry) {
    if let receipts {
      receipts.append(entry)
    } else {
      unjournaled += 1
      feed(.journalDurable(through: unjournaled))
    }
  }

  /// Gives the core the pending entries, when connected.
  private func offerOutbox() {
    guard let client, client.phase == .open else { return }
    feed(.outbox(outbox.pending, buffered: client.bufferedAmount))
  }
}
