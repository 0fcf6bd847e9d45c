extension MessageStore {
  /// Store settings, from [Store].
  public struct Options: Sendable {
    public var directory: String
    public var sync: Configuration.SyncMode
    public var syncInterval: Duration
    public var maxFileSize: Int
    public var maxFiles: Int

    /// Creates options.
    public init(
      directory: String, sync: Configuration.SyncMode = .batch,
      syncInterval: Duration = .milliseconds(50),
      maxFileSize: Int = 64 << 20, maxFiles: Int = 8
    ) {
      self.directory = directory
      self.sync = sync
      self.syncInterval = syncInterval
      self.maxFileSize = maxFileSize
      self.maxFiles = maxFiles
    }

    /// Takes the [Store] settings of a configuration.
    public init(_ configuration: Configuration) {
      self.init(
        directory: configuration.storeDirectory, sync: configuration.sync,
        syncInterval: configuration.syncInterval,
        maxFileSize: configuration.maxFileSize, maxFiles: configuration.maxFiles)
    }
  }
}
