import LinkCore

extension MessageStore {
  /// Store settings, from [Store].
  public struct Options: Sendable {
    public var directory: String
    public var sync: Configuration.SyncMode
    public var syncInterval: Duration
    public var maxFileSize: Int
    public var maxFiles: Int
    /// The most recent inbound ids each room keeps for dropping duplicates; 0 keeps none.
    public var dedupeWindow: Int
    /// Rooms whose windows are filled from their own records at start, however far back
    /// those lie (the configured rooms); others from the store's newest records.
    public var rooms: [RoomID]
    /// How many of the newest records that start-up reads for every room's ids, before it
    /// looks up the configured rooms that want more by their room indexes.
    public var dedupeTailRecords = 200_000
    /// Whether the protocol is told where message ids are, so the window is filled from the
    /// store at start; without ids there is nothing to read.
    public var idsConfigured = true
    /// Whether joins name a room's newest stored id (`SinceField=`, XMPP's archive queries),
    /// so the dedupe window keeps each room's as text.
    public var keepsNewestIDs = true
    /// How often a running daemon writes the window to its snapshot (when records were stored
    /// since); zero: only at a clean stop.
    public var dedupeSnapshotInterval = Duration.seconds(60)

    /// Creates options.
    public init(
      directory: String, sync: Configuration.SyncMode = .batch,
      syncInterval: Duration = .milliseconds(50),
      maxFileSize: Int = 64 << 20, maxFiles: Int = 8, dedupeWindow: Int = 10_000,
      rooms: [RoomID] = []
    ) {
      self.directory = directory
      self.sync = sync
      self.syncInterval = syncInterval
      self.maxFileSize = maxFileSize
      self.maxFiles = maxFiles
      self.dedupeWindow = dedupeWindow
      self.rooms = rooms
    }

    /// Takes the [Store] settings of a configuration.
    public init(_ configuration: Configuration) {
      self.init(
        directory: configuration.storeDirectory, sync: configuration.sync,
        syncInterval: configuration.syncInterval,
        maxFileSize: configuration.maxFileSize, maxFiles: configuration.maxFiles,
        dedupeWindow: configuration.dedupeWindow,
        rooms: configuration.rooms.compactMap(RoomID.init))
      dedupeSnapshotInterval = configuration.dedupeSnapshotInterval
      idsConfigured =
        !configuration.envelope.idField.isEmpty || !configuration.stompIDHeader.isEmpty
        || !configuration.mqttIDProperty.isEmpty || configuration.chatProtocol == .xmpp
      // XMPP's catch-up asks each room's archive for what came after its newest stanza-id.
      keepsNewestIDs =
        !configuration.envelope.sinceField.isEmpty || configuration.chatProtocol == .xmpp
    }
  }
}
