@preconcurrency import Glibc

/// Group names to ids, for the control socket's group: /etc/group first, then NSS.
///
/// `getgrnam` alone would load the NSS modules nsswitch.conf names (nss-systemd and the
/// libraries it needs) into the daemon at start-up, for a group that sysusers.d wrote to
/// /etc/group. Reading the file first keeps them out; a group that only NSS knows (LDAP,
/// a dynamic user's group) is still found through `getgrnam`.
public enum GroupDatabase {
  /// The id of the group `name`, or nil when no source knows it.
  public static func id(of name: String, groupFile: String = "/etc/group") -> UInt32? {
    if let text = readSmallFile(groupFile), let gid = id(of: name, inGroupFile: text) {
      return gid
    }
    guard let entry = getgrnam(name) else { return nil }
    return entry.pointee.gr_gid
  }

  /// The id of `name` in the text of a group(5) file: `name:password:gid:members` lines.
  /// Malformed lines and NIS compatibility entries (`+`, `-`) are skipped.
  public static func id(of name: String, inGroupFile text: String) -> UInt32? {
    for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
      let fields = line.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false)
      guard fields.count >= 3, fields[0] == name, !name.isEmpty,
        !name.hasPrefix("+"), !name.hasPrefix("-"),
        let gid = UInt32(fields[2])
      else { continue }
      return gid
    }
    return nil
  }

  /// The file's text, or nil when it cannot be read or is over 4 MiB.
  private static func readSmallFile(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 16 << 10)
    while bytes.count <= 4 << 20 {
      let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      guard count >= 0 else { return nil }
      if count == 0 { return String(decoding: bytes, as: UTF8.self) }
      bytes += chunk[..<count]
    }
    return nil
  }
}
