import CSystem
import EventLoop
@preconcurrency import Glibc

/// The credentials of a Unix-socket peer (SO_PEERCRED, SO_PEERGROUPS; unix(7)).
public struct PeerCredentials: Sendable, Hashable {
  public var pid: Int32
  public var uid: UInt32
  public var gid: UInt32
  /// Supplementary groups, when the kernel reports them.
  public var groups: [UInt32]

  /// Reads the credentials of the peer of a connected Unix socket.
  public static func of(fd: Int32) -> PeerCredentials? {
    var cred = chatlink_ucred()
    guard chatlink_peer_credentials(fd, &cred) == 0 else { return nil }
    var groups = [gid_t](repeating: 0, count: 256)
    var groupsLength = socklen_t(groups.count * MemoryLayout<gid_t>.size)
    let rc = groups.withUnsafeMutableBytes {
      getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, $0.baseAddress, &groupsLength)
    }
    let count = rc == 0 ? Int(groupsLength) / MemoryLayout<gid_t>.size : 0
    return PeerCredentials(
      pid: cred.pid, uid: cred.uid, gid: cred.gid, groups: Array(groups[..<count]))
  }

  /// Whether the peer is root, our own user, or in `group`.
  public func isTrusted(group: UInt32?) -> Bool {
    if uid == 0 || uid == geteuid() { return true }
    guard let group else { return false }
    return gid == group || groups.contains(group)
  }
}

/// A listening Unix stream socket on the loop: one we bind ourselves (mode and group set
/// before anyone can connect), or one systemd passed us (socket activation, sd_listen_fds).
public final class UnixListener {
  /// The socket path, when we bound it (nil for an inherited socket).
  public let path: String?
  private let fd: Int32
  private let loop: EventLoop
  private var watcher: IOWatcher?
  /// A descriptor held in reserve for when the process runs out of them (EMFILE/ENFILE):
  /// the listener stays readable while a client waits, so without a free descriptor to take
  /// the client and close it, the loop would spin on accept() at full CPU.
  private var reserveFD: Int32 = -1
  /// Re-enables accepting after a pause, when not even the reserve could be had.
  private var resumeTimer: Timer?
  /// Called with the errno when a client had to be turned away for lack of descriptors.
  public var onShed: ((Int32) -> Void)?

  /// Binds `path` with `mode` and group `group` (nil keeps ours), replacing a stale socket.
  ///
  /// A socket file that still accepts connections belongs to a running daemon: that is an
  /// error rather than a takeover.
  public init(
    loop: EventLoop, path: String, mode: UInt32, group: UInt32?,
    accepted: @escaping (SocketStream, PeerCredentials?) -> Void
  ) throws(SystemError) {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
      throw SystemError("bind \(path)", errno: ENAMETOOLONG)
    }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (i, b) in bytes.enumerated() { raw[i] = b }
      raw[bytes.count] = 0
    }
    if Self.isLive(address) {
      throw SystemError("bind \(path) (another daemon is serving it)", errno: EADDRINUSE)
    }
    unlink(path)
    let fd = socket(
      AF_UNIX,
      Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw .last("socket") }
    // Bind under a restrictive umask, then set the final mode and group before listening, so
    // there is no moment when the socket is more open than configured.
    let old = umask(0o177)
    let rc = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    umask(old)
    guard rc == 0 else {
      let error = SystemError.last("bind \(path)")
      Glibc.close(fd)
      throw error
    }
    // Only chown when the group differs: a hardened unit forbids chown (@chown), and there the
    // socket already has the service's group.
    var info = stat()
    let currentGroup = stat(path, &info) == 0 ? info.st_gid : UInt32.max
    if let group, group != currentGroup, chown(path, UInt32.max, group) != 0 {
      let error = SystemError.last("chown \(path)")
      Glibc.close(fd)
      throw error
    }
    guard chmod(path, mode_t(mode)) == 0, listen(fd, 512) == 0 else {
      let error = SystemError.last("listen \(path)")
      Glibc.close(fd)
      throw error
    }
    self.path = path
    self.fd = fd
    self.loop = loop
    try startAccepting(accepted)
  }

  /// Adopts a listening socket passed by systemd.
  public init(
    loop: EventLoop, inheritedFD fd: Int32,
    accepted: @escaping (SocketStream, PeerCredentials?) -> Void
  ) throws(SystemError) {
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    path = nil
    self.fd = fd
    self.loop = loop
    try startAccepting(accepted)
  }

  private func startAccepting(_ accepted: @escaping (SocketStream, PeerCredentials?) -> Void)
    throws(SystemError)
  {
    reserveFD = Self.openReserve()
    resumeTimer = try loop.makeTimer(accuracy: 10_000) { [unowned self] in
      if self.reserveFD < 0 { self.reserveFD = Self.openReserve() }
      self.watcher?.isEnabled = true
    }
    watcher = try loop.watch(fd: fd, events: .readable) { [unowned self] _ in
      while true {
        let client = accept(self.fd, nil, nil)
        guard client >= 0 else {
          let error = errno
          if error == EMFILE || error == ENFILE {
            guard self.shed(error) else { return }
            continue
          }
          return
        }
        _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
        _ = fcntl(client, F_SETFD, FD_CLOEXEC)
        let credentials = PeerCredentials.of(fd: client)
        let name = credentials.map { "pid \($0.pid) uid \($0.uid)" } ?? "unix peer"
        do {
          accepted(try SocketStream(loop: self.loop, fd: client, tls: nil, peer: name), credentials)
        } catch {
          Glibc.close(client)
        }
      }
    }
  }

  /// Turns one waiting client away when no descriptor is free: the reserve is given up to
  /// accept it, it is closed at once (the client sees the connection end, not a hang), and
  /// the reserve is taken back. Returns whether accepting may go on; when the reserve cannot
  /// be had (a worker thread took the freed descriptor), accepting pauses for 100 ms instead.
  private func shed(_ error: Int32) -> Bool {
    guard reserveFD >= 0 else {
      pause()
      return false
    }
    Glibc.close(reserveFD)
    reserveFD = -1
    let client = accept(fd, nil, nil)
    if client >= 0 { Glibc.close(client) }
    reserveFD = Self.openReserve()
    onShed?(error)
    guard client >= 0, reserveFD >= 0 else {
      pause()
      return false
    }
    return true
  }

  private func pause() {
    watcher?.isEnabled = false
    resumeTimer?.schedule(after: 100_000)
  }

  private static func openReserve() -> Int32 {
    open("/dev/null", O_RDONLY | O_CLOEXEC)
  }

  deinit {
    resumeTimer?.cancel()
    watcher?.cancel()
    if reserveFD >= 0 { Glibc.close(reserveFD) }
    Glibc.close(fd)
    if let path { unlink(path) }
  }

  private static func isLive(_ address: sockaddr_un) -> Bool {
    var copy = address
    let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard probe >= 0 else { return false }
    defer { Glibc.close(probe) }
    let rc = withUnsafePointer(to: &copy) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(probe, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    return rc == 0
  }

  /// The group id of a group name, if it exists (`GroupDatabase`).
  public static func groupID(named name: String) -> UInt32? {
    GroupDatabase.id(of: name)
  }
}
