import ChatLinkAPI
import EventLoop
@preconcurrency import Glibc
import LinkCore
import Transport
import WebSocket

/// chatlinkd's manager: owns the loop and one named field per event source, so a reader sees
/// in one place everything that can wake the daemon. `main` only parses argv, builds this, and
/// calls `run()`.
public final class Daemon {
  /// What the command line decided.
  public struct Options: Sendable {
    /// The configuration file (its drop-ins are read from `<path>.d/`).
    public var configPath: String
    /// The instance whose defaults apply (`--instance NAME`), or nil.
    public var instance: Instance?
    /// Options for `instance`: its file unless `configPath` names another.
    public init(configPath: String? = nil, instance: Instance? = nil) {
      self.configPath = configPath ?? instance?.configPath ?? ConfigLoader.defaultPath
      self.instance = instance
    }
  }

  /// Why the daemon could not start.
  public enum StartError: Error, CustomStringConvertible {
    case config(ConfigError)
    case token(TokenSource.Failure)
    case tls(TransportError)
    case system(SystemError)

    public var description: String {
      switch self {
      case .config(let e): "\(e)"
      case .token(let e): "\(e)"
      case .tls(let e): "\(e)"
      case .system(let e): "\(e)"
      }
    }
  }

  public let loop: EventLoop
  public private(set) var configuration: Configuration
  public let store: MessageStore
  public let outbox: Outbox
  /// The journal of QoS 2 deliveries not yet released, with [MQTT] QoS=2.
  public let receipts: ReceiptJournal?
  public private(set) var link: BackendLink!
  public private(set) var logger: Logger

  private let options: Options
  private let notifier = ServiceNotifier()
  private let resolver: Resolver
  private let disk: BackgroundWorker
  /// The store's fsyncs, beside the disk worker's writes.
  private let syncer: BackgroundWorker
  /// Reads History off the loop (Daemon+Control.swift).
  var reader: BackgroundWorker?
  /// Under Sync=always, Subscribe message events wait here for their fsync
  /// (Daemon+Control.swift).
  var heldMessages = DurableEventGate<HeldMessage>()
  public private(set) var control: ControlServer?
  public private(set) var service: ControlService?
  /// The HTTP metrics endpoint, when [Metrics] Listen= names one.
  public internal(set) var metricsServer: MetricsServer?
  private var tlsContext: TLSContext?
  private var sigterm: SignalWatcher?
  private var sigint: SignalWatcher?
  private var sighup: SignalWatcher?
  private var shutdownTimer: Timer?
  private var statusTimer: Timer?
  private var checkpointTimer: Timer?
  private var lastStatus = ""
  private var shuttingDown = false
  /// Extra status listeners (the control server's Subscribe streams).
  public var onStatusChange: ((String) -> Void)?

  /// Loads the configuration and opens the store and outbox; nothing connects yet.
  public init(options: Options, loop: EventLoop? = nil) throws(StartError) {
    self.options = options
    do {
      configuration = try ConfigLoader.load(path: options.configPath, instance: options.instance)
    } catch {
      throw .config(error)
    }
    logger = Logger(label: "chatlinkd", level: Logger.Level(name: configuration.logLevel) ?? .info)
    // CHATLINK_INSTANCE= on every journal entry: instances share one journal.
    if let instance = options.instance { logger.metadata = [("instance", instance.name)] }
    do throws(SystemError) {
      if let loop {
        self.loop = loop
      } else {
        self.loop = try EventLoop()
      }
      resolver = try Resolver(loop: self.loop)
      disk = try BackgroundWorker(loop: self.loop, name: "chatlink-disk")
      syncer = try BackgroundWorker(loop: self.loop, name: "chatlink-sync")
      store = try MessageStore(
        loop: self.loop, disk: disk, syncer: syncer, options: MessageStore.Options(configuration))
      outbox = try Outbox(
        loop: self.loop, disk: disk, directory: configuration.storeDirectory,
        maxMessages: configuration.outboxMaxMessages)
      receipts = try Self.openReceipts(
        configuration, loop: self.loop, disk: disk, store: store, logger: logger)
    } catch {
      throw .system(error)
    }
    let settings = try Self.settings(configuration)
    tlsContext = try Self.tls(configuration)
    do throws(SystemError) {
      link = try BackendLink(
        loop: self.loop, resolver: resolver, tlsContext: tlsContext, settings: settings,
        rooms: configuration.rooms.compactMap(RoomID.init), store: store, outbox: outbox,
        receipts: receipts, logger: logger)
    } catch {
      throw .system(error)
    }
    if store.recovery.tornBytes > 0 {
      logger.warning(
        "store recovery cut a torn last line",
        ["bytes": String(store.recovery.tornBytes), "path": store.path])
    }
    if outbox.corruptLines > 0 {
      logger.warning(
        "outbox recovery skipped corrupt lines", ["lines": String(outbox.corruptLines)])
    }
    logReceiptsRecovery()
  }

  /// What `--check-config` validates: the files, the token and the TLS trust store, without
  /// connecting or touching the store.
  public static func check(options: Options) throws(StartError) -> Configuration {
    let configuration: Configuration
    do {
      configuration = try ConfigLoader.load(path: options.configPath, instance: options.instance)
    } catch {
      throw .config(error)
    }
    _ = try settings(configuration)
    if configuration.url?.secure == true || configuration.caFile != nil {
      do {
        _ = try TLSContext.make(TLSConfiguration(caFile: configuration.caFile))
      } catch {
        throw .tls(error)
      }
    }
    return configuration
  }

  private static func settings(_ c: Configuration) throws(StartError) -> BackendSettings {
    guard let url = c.url else {
      throw .config(ConfigError(file: "", line: 0, key: "[Backend] URL", message: "is required"))
    }
    let token: String?
    do {
      token = try TokenSource.read(
        tokenFile: c.tokenFile,
        credentialsDirectory: FileSystem.environment("CREDENTIALS_DIRECTORY"))
    } catch {
      throw .token(error)
    }
    return BackendSettings(c, url: url, token: token)
  }

  private static func tls(_ c: Configuration) throws(StartError) -> TLSContext? {
    guard c.url?.secure == true else { return nil }
    do {
      return try TLSContext.make(TLSConfiguration(caFile: c.caFile))
    } catch {
      throw .tls(error)
    }
  }

  /// Installs signal handlers, connects, tells systemd READY=1, and runs until SIGTERM.
  public func run() throws(SystemError) -> Int32 {
    try start()
    return try loop.run()
  }

  /// Everything `run()` does before entering the loop (tests call it, then spin the loop).
  public func start() throws(SystemError) {
    signal(SIGPIPE, SIG_IGN)
    try startControl()
    try startMetrics()
    sigterm = try loop.onSignal(SIGTERM) { [unowned self] in self.shutdown(reason: "SIGTERM") }
    sigint = try loop.onSignal(SIGINT) { [unowned self] in self.shutdown(reason: "SIGINT") }
    sighup = try loop.onSignal(SIGHUP) { [unowned self] in self.reload() }
    statusTimer = try loop.makeTimer(accuracy: .milliseconds(100)) { [unowned self] in
      self.publishStatus()
      self.statusTimer?.schedule(after: .seconds(1))
    }
    statusTimer?.schedule(after: .seconds(1))
    try startDedupeCheckpoints()
    shutdownTimer = try loop.makeTimer { [unowned self] in
      self.logger.warning("shutdown took too long; exiting")
      self.loop.exit(code: 0)
    }
    try loop.enableWatchdog()
    link.onStateChange = { [unowned self] state, reason in
      self.logger.info(
        "connection state changed",
        ["state": state.name, "reason": reason, "url": self.link.displayURL])
      switch state {
      case .open:
        self.service?.publishConnected(self.link.negotiated)
        if !self.trimmedAfterConnect {
          // The handshake, the TLS set-up and the room joins are start-up work too.
          self.trimmedAfterConnect = true
          self.trimTimer?.schedule(after: .seconds(1))
        }
      case .waiting:
        self.service?.publishDisconnected(reason: reason, code: self.link.lastDisconnect?.code)
      default: break
      }
      self.publishStatus()
    }
    store.onHealthChange = { [unowned self] error in
      if let error {
        self.logger.error(
          "store writes are failing; messages wait in memory", ["error": error.message])
        self.service?.publishError("store writes are failing: \(error.message)")
      } else {
        self.logger.notice("store writes recovered")
      }
      self.publishStatus()
    }
    forwardLinkEvents()
    // The backend may deliver again what the store has: connect once the store knows its ids.
    store.whenDedupeReady { [unowned self] in self.dedupeReady() }
    logger.info(
      "started",
      [
        "url": link.displayURL, "store": store.path, "last_seq": String(store.recovery.lastSeq),
        "outbox": String(outbox.pending.count),
      ])
    notifier.ready(status: status.text)
    trimTimer = try loop.makeTimer(accuracy: .milliseconds(100)) { Self.releaseStartupMemory() }
    Self.releaseStartupMemory()
  }

  private var trimTimer: Timer?

  /// A start after a crash reads the window's last snapshot and the records stored since.
  private func startDedupeCheckpoints() throws(SystemError) {
    let interval = store.options.dedupeSnapshotInterval
    guard interval > .zero else { return }
    checkpointTimer = try loop.makeTimer(accuracy: .milliseconds(100)) { [unowned self] in
      // One waiting for a failing disk is not asked for again.
      if !self.store.dedupeCheckpointRunning { self.store.checkpointDedupe() }
      self.checkpointTimer?.schedule(after: interval)
    }
    checkpointTimer?.schedule(after: interval)
  }

  /// The window holds what the store held at start: the link may connect.
  private func dedupeReady() {
    defer { link.start() }
    switch store.dedupeSource {
    case .snapshot(let seq, let after):
      logger.info(
        "dedupe window read from its snapshot",
        ["snapshot_seq": String(seq), "records_after": String(after)])
    case .tail:
      logger.info("dedupe window read from the store's tail")
    case nil: break
    }
  }

  private var trimmedAfterConnect = false

  /// What start-up allocated and touched but the running daemon does not need (see `Memory`).
  private static func releaseStartupMemory() {
    Memory.trimHeap()
    Memory.releaseStartupPages()
  }

  /// Opens the control socket: the one systemd passed (socket activation) or our own.
  private func startControl() throws(SystemError) {
    let reader = try BackgroundWorker(loop: loop, name: "chatlink-read")
    self.reader = reader
    let inherited = SocketActivation.inheritedSocket()
    let control = try ControlServer(
      loop: loop, path: configuration.controlSocket, mode: configuration.socketMode,
      groupName: configuration.socketGroup, inheritedFD: inherited, logger: logger)
    self.control = control
    service = ControlService(server: control, target: self)
    logger.info(
      "control socket ready",
      ["socket": inherited == nil ? configuration.controlSocket : "fd 3 (socket activation)"])
  }

  private func publishStatus() {
    let text = status.text
    guard text != lastStatus else { return }
    lastStatus = text
    notifier.status(text)
    service?.publishStatus(text)
    onStatusChange?(text)
  }

  /// SIGHUP: re-read the configuration. Rooms, keepalive and logging apply live; a new URL,
  /// header or token reconnects. An invalid file keeps the old configuration.
  public func reload() {
    notifier.reloading()
    logger.info("reloading configuration", ["path": options.configPath])
    defer { notifier.ready(status: status.text) }
    let new: Configuration
    let settings: BackendSettings
    let tls: TLSContext?
    do {
      new = try ConfigLoader.load(path: options.configPath, instance: options.instance)
      // A protocol change needs a restart, so the link keeps its protocol: only names change.
      // So does a QoS to or from 2, which has a journal of its own (or none).
      var effective = new
      effective.chatProtocol = configuration.chatProtocol
      if (new.mqttQoS == 2) != (receipts != nil) {
        effective.mqttQoS = link.settings.link.dialect.mqtt?.qos ?? configuration.mqttQoS
      }
      settings = try Self.settings(effective)
      tls = try Self.tls(new)
    } catch let error as ConfigError {
      logger.error("reload failed; keeping the running configuration", ["error": "\(error)"])
      return
    } catch {
      logger.error("reload failed; keeping the running configuration", ["error": "\(error)"])
      return
    }
    let old = configuration
    let restartOnly: [(String, Bool)] = [
      ("[Backend] Protocol", new.chatProtocol != old.chatProtocol),
      ("[MQTT] QoS", (new.mqttQoS == 2) != (old.mqttQoS == 2)),
      ("[Store] Directory", new.storeDirectory != old.storeDirectory),
      ("[Store] Sync", new.sync != old.sync),
      ("[Store] SyncIntervalMSec", new.syncInterval != old.syncInterval),
      ("[Store] MaxFileSize", new.maxFileSize != old.maxFileSize),
      ("[Store] MaxFiles", new.maxFiles != old.maxFiles),
      ("[Outbox] MaxMessages", new.outboxMaxMessages != old.outboxMaxMessages),
      ("[Control] Socket", new.controlSocket != old.controlSocket),
      ("[Control] SocketMode", new.socketMode != old.socketMode),
      ("[Control] SocketGroup", new.socketGroup != old.socketGroup),
      ("[Metrics] Listen", new.metricsListen != old.metricsListen),
    ]
    let unchangeable = restartOnly.filter(\.1).map(\.0)
    if !unchangeable.isEmpty {
      logger.warning(
        "some settings apply only after a restart", ["keys": unchangeable.joined(separator: ", ")])
    }
    logger.logLevel = Logger.Level(name: new.logLevel) ?? .info
    tlsContext = tls
    link.apply(settings: settings, rooms: new.rooms.compactMap(RoomID.init), tlsContext: tls)
    configuration = new
    logger.info("configuration reloaded", ["rooms": String(link.rooms.count)])
  }

  /// SIGTERM: STOPPING=1, close 1001, make everything durable, exit 0 within a bound.
  public func shutdown(reason: String) {
    guard !shuttingDown else { return }
    shuttingDown = true
    logger.info("stopping", ["reason": reason])
    notifier.stopping(status: "Stopping (\(reason))")
    shutdownTimer?.schedule(after: .seconds(5))
    link.stop { [unowned self] in
      self.store.whenDurable {
        self.outbox.whenIdle {
          self.whenReceiptsIdle {
            // The next start reads the dedupe window back instead of the store's tail.
            self.store.whenDurable {
              self.store.saveDedupeSnapshot {
                self.logger.info("stopped", ["last_seq": String(self.store.lastSeq)])
                self.control?.close()
                self.loop.exit(code: 0)
              }
            }
          }
        }
      }
    }
  }
}
