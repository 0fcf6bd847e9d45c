import EventLoop
@preconcurrency import Glibc

/// The few file operations the daemon needs, on raw file descriptors (no Foundation).
public enum FileSystem {
  /// Reads a whole file, into one buffer of the size the file has (a file that grows while it
  /// is read is read to its end).
  public static func read(_ path: String, limit: Int = 16 << 20) throws(SystemError) -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw .last("open \(path)") }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0 else { throw .last("fstat \(path)") }
    guard Int(info.st_size) <= limit else { throw SystemError("read \(path)", errno: EFBIG) }
    var out = [UInt8](repeating: 0, count: max(Int(info.st_size), 4096) + 1)
    var count = 0
    while true {
      if count == out.count {
        guard count <= limit else { throw SystemError("read \(path)", errno: EFBIG) }
        out.append(contentsOf: repeatElement(0, count: out.count))
      }
      let n = out.withUnsafeMutableBytes {
        Glibc.read(fd, $0.baseAddress! + count, $0.count - count)
      }
      if n < 0 {
        if errno == EINTR { continue }
        throw .last("read \(path)")
      }
      if n == 0 { break }
      count += n
    }
    guard count <= limit else { throw SystemError("read \(path)", errno: EFBIG) }
    out.removeLast(out.count - count)
    return out
  }

  /// Reads a whole file as UTF-8 text (invalid bytes become U+FFFD).
  public static func readText(_ path: String, limit: Int = 16 << 20) throws(SystemError) -> String {
    String(decoding: try read(path, limit: limit), as: UTF8.self)
  }

  /// Whether `path` exists.
  public static func exists(_ path: String) -> Bool {
    access(path, F_OK) == 0
  }

  /// Whether `path` is a directory.
  public static func isDirectory(_ path: String) -> Bool {
    var info = stat()
    return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
  }

  /// The names in a directory (without "." and ".."), unsorted; empty if it does not exist.
  public static func list(_ path: String) -> [String] {
    guard let dir = opendir(path) else { return [] }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
      }
      if name != "." && name != ".." { names.append(name) }
    }
    return names
  }

  /// Creates a directory and its parents; each one it creates is made durable in its parent
  /// (`syncParent`), so a power cut cannot take away a directory whose files were synced.
  public static func makeDirectories(_ path: String, mode: mode_t = 0o750) throws(SystemError) {
    var current = path.hasPrefix("/") ? "" : "."
    for component in path.split(separator: "/") {
      current += "/" + component
      if mkdir(current, mode) == 0 {
        try syncParent(of: current, for: .mkdir)
      } else if errno != EEXIST {
        throw .last("mkdir \(current)")
      }
    }
  }

  /// The size of a file, or nil when it does not exist.
  public static func size(_ path: String) -> Int? {
    var info = stat()
    return stat(path, &info) == 0 ? Int(info.st_size) : nil
  }

  /// The value of an environment variable.
  public static func environment(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    return String(cString: value)
  }
}
