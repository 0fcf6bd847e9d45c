import EventLoop
@preconcurrency import Glibc

#if DEBUG
  import Synchronization
#endif

/// Directory fsyncs: what makes a create, a rename or an unlink survive a power cut.
///
/// fsync of a file makes its data durable, not its name: the directory entry that a create or
/// a rename made is in the directory's own blocks, which only an fsync of the directory writes
/// (POSIX leaves it to the file system; ext4 without auto_da_alloc, XFS and btrfs do lose such
/// entries). So every new or renamed store and outbox file is followed by one of these before
/// anything in it is reported durable.
extension FileSystem {
  /// Why a directory is synced; a debug build can be told to skip one kind (see below).
  public enum DirectorySyncReason: String, Sendable, CaseIterable {
    /// A directory was created in it.
    case mkdir
    /// A file was created in it.
    case create
    /// The store's rotation renamed files in it.
    case rotate
    /// The outbox's compaction renamed its new log into place.
    case compact
    /// The dedupe window's snapshot was renamed into place.
    case snapshot
  }

  /// Makes the entries of the directory at `path` durable.
  public static func syncDirectory(_ path: String, for reason: DirectorySyncReason)
    throws(SystemError)
  {
    #if DEBUG
      // The power-cut simulator's proof that it can fail: a debug build run with
      // CHATLINK_DEBUG_SKIP_DIRECTORY_FSYNC=all (or a list such as "rotate,compact") skips
      // those syncs, and the simulator must notice.
      if skippedDirectorySyncs.contains(reason) { return }
      // Tests of the retry after a failed directory sync (a real one hardly ever fails).
      if failingDirectorySyncs.decrementIfPositive() {
        throw SystemError("fsync \(path) (failed for a test)", errno: EIO)
      }
    #endif
    let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard fd >= 0 else { throw .last("open \(path)") }
    defer { close(fd) }
    guard fsync(fd) == 0 else { throw .last("fsync \(path)") }
  }

  /// Makes the entry of `path` in its directory durable.
  public static func syncParent(of path: String, for reason: DirectorySyncReason)
    throws(SystemError)
  {
    try syncDirectory(parent(of: path), for: reason)
  }

  /// The directory that holds `path` ("." for a bare name).
  static func parent(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    return slash == path.startIndex ? "/" : String(path[..<slash])
  }

  #if DEBUG
    /// How many of the next directory syncs fail with EIO (debug builds only, for tests).
    public static let failingDirectorySyncs = TestFailureCount()

    /// How many of the next fdatasyncs of store and outbox files fail with EIO (debug builds
    /// only, for tests).
    public static let failingDataSyncs = TestFailureCount()

    /// Read once: the switch is for a whole run of the daemon.
    static let skippedDirectorySyncs = skippedDirectorySyncs(
      environment("CHATLINK_DEBUG_SKIP_DIRECTORY_FSYNC"))

    /// The reasons a value of CHATLINK_DEBUG_SKIP_DIRECTORY_FSYNC names ("all": every one).
    static func skippedDirectorySyncs(_ value: String?) -> Set<DirectorySyncReason> {
      guard let value else { return [] }
      var reasons = Set<DirectorySyncReason>()
      for word in value.split(separator: ",") {
        if word == "all" { return Set(DirectorySyncReason.allCases) }
        if let reason = DirectorySyncReason(rawValue: String(word)) { reasons.insert(reason) }
      }
      return reasons
    }
  #endif
}

#if DEBUG
  /// A count of failures to inject, shared by the test's thread and the disk thread.
  public final class TestFailureCount: Sendable {
    private let remaining = Atomic<Int>(0)

    /// Makes the next `count` checks fail.
    public func fail(next count: Int) {
      remaining.store(count, ordering: .sequentiallyConsistent)
    }

    /// How many failures are still to come.
    public var pending: Int { remaining.load(ordering: .sequentiallyConsistent) }

    /// Whether this check fails (taking one of the remaining failures).
    func decrementIfPositive() -> Bool {
      var value = remaining.load(ordering: .sequentiallyConsistent)
      while value > 0 {
        let (exchanged, original) = remaining.compareExchange(
          expected: value, desired: value - 1, ordering: .sequentiallyConsistent)
        if exchanged { return true }
        value = original
      }
      return false
    }
  }
#endif
