import ChatLinkAPI
@preconcurrency import Glibc
import JSON

/// What `chatlinkctl instances` found at one control socket.
public struct InstanceReport: Sendable, Hashable {
  /// Why a socket gave no status.
  public enum Problem: String, Sendable, Hashable {
    /// Nothing listens: the daemon stopped and left its socket, or is starting.
    case notRunning = "not_running"
    /// The socket or the daemon refused this user.
    case permissionDenied = "permission_denied"
    /// Something listens but did not answer within the timeout.
    case notAnswering = "not_answering"
    /// Anything else (an answer that is not a status, a broken connection).
    case failed
  }

  /// The instance name, or nil for the plain chatlinkd.service (`control.sock`).
  public var instance: String?
  /// The socket's path.
  public var socket: String
  /// The status, when the daemon answered.
  public var status: Received<DaemonStatus>?
  /// Why it did not.
  public var problem: Problem?
  /// The problem as a person reads it.
  public var error: String?

  /// A reachable instance.
  public init(instance: String?, socket: String, status: Received<DaemonStatus>) {
    self.instance = instance
    self.socket = socket
    self.status = status
  }

  /// An unreachable one.
  public init(instance: String?, socket: String, problem: Problem, error: String) {
    self.instance = instance
    self.socket = socket
    self.problem = problem
    self.error = error
  }

  /// The JSON line of `instances --json`: `instance` (null for chatlinkd.service), `socket`,
  /// `reachable`, then `status` or `problem` and `error`.
  public var json: JSONValue {
    var members: [(key: String, value: JSONValue)] = [
      ("instance", instance.map(JSONValue.string) ?? .null), ("socket", .string(socket)),
      ("reachable", .bool(status != nil)),
    ]
    if let status { members.append(("status", status.json)) }
    if let problem { members.append(("problem", .string(problem.rawValue))) }
    if let error { members.append(("error", .string(error))) }
    return .object(members)
  }
}

/// Finds every chatlinkd control socket in a runtime directory and asks each for its status,
/// never waiting long on one: the listing of a host's links for `chatlinkctl instances`.
public enum InstanceProbe {
  /// The sockets in `directory`: `control.sock` (the plain service) first, then `NAME.sock`
  /// by name. Other files, and names that are not sockets, are left out.
  public static func sockets(in directory: String) -> [(instance: String?, path: String)] {
    guard let dir = opendir(directory) else { return [] }
    defer { closedir(dir) }
    var found: [(instance: String?, path: String)] = []
    while let entry = readdir(dir) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
      }
      guard name.hasSuffix(".sock"), name.count > 5 else { continue }
      let path = directory + "/" + name
      var info = stat()
      guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else { continue }
      let base = String(name.dropLast(5))
      found.append((base == "control" ? nil : base, path))
    }
    return found.sorted { a, b in
      switch (a.instance, b.instance) {
      case (nil, _): true
      case (_, nil): false
      case (let x?, let y?): x < y
      }
    }
  }

  /// Asks every socket in `directory` for its status, each within `timeout`.
  public static func probe(directory: String, timeout: Duration) -> [InstanceReport] {
    sockets(in: directory).map { probe(instance: $0.instance, socket: $0.path, timeout: timeout) }
  }

  /// Asks one socket for its status within `timeout`.
  public static func probe(instance: String?, socket: String, timeout: Duration)
    -> InstanceReport
  {
    do throws(ClientError) {
      let client = try ChatLinkClient(socketPath: socket, timeout: timeout)
      return InstanceReport(instance: instance, socket: socket, status: try client.status())
    } catch {
      let kind: InstanceReport.Problem
      switch error {
      case .unreachable(_, let code) where code == EACCES || code == EPERM: kind = .permissionDenied
      case .varlink(.permissionDenied): kind = .permissionDenied
      case .unreachable(_, let code) where code == ECONNREFUSED || code == ENOENT:
        kind = .notRunning
      case .unreachable(_, let code) where code == EAGAIN: kind = .notAnswering
      case .connectionLost(let why) where why.contains("in time"): kind = .notAnswering
      default: kind = .failed
      }
      return InstanceReport(
        instance: instance, socket: socket, problem: kind, error: Self.text(kind, error))
    }
  }

  private static func text(_ kind: InstanceReport.Problem, _ error: ClientError) -> String {
    switch kind {
    case .notRunning: "not running (nothing listens on the socket)"
    case .permissionDenied: "permission denied (join the socket's group, e.g. chatlink)"
    case .notAnswering: "not answering"
    case .failed: error.description
    }
  }
}
