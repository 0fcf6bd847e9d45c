@preconcurrency import Glibc

/// A fresh directory under /tmp, removed with everything in it when the value goes away.
public final class TemporaryDirectory: Sendable {
  /// The directory's absolute path.
  public let path: String

  /// Makes the directory; `prefix` starts its name, so a leftover says which tests made it.
  public init(prefix: String = "chatlink-test") {
    var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
      preconditionFailure("mkdtemp /tmp/\(prefix)-XXXXXX: errno \(errno)")
    }
    path = String(cString: made)
  }

  deinit { Self.remove(path) }

  /// The path of `name` in the directory.
  public func file(_ name: String) -> String { path + "/" + name }

  /// The text of the file `name`; empty when there is none.
  public func read(_ name: String) -> String {
    let fd = open(file(name), O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return "" }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
      let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
      if n < 0 && errno == EINTR { continue }
      guard n > 0 else { break }
      bytes += chunk[..<n]
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  /// Writes `text` as the whole of the file `name`.
  public func write(_ name: String, _ text: String) {
    let fd = open(file(name), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    precondition(fd >= 0, "open \(file(name)): errno \(errno)")
    defer { close(fd) }
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
      let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
      if n < 0 && errno == EINTR { continue }
      precondition(n > 0, "write \(file(name)): errno \(errno)")
      offset += n
    }
  }

  /// The lines of the file `name`, without empty ones.
  public func lines(_ name: String) -> [String] {
    read(name).split(separator: "\n").map(String.init)
  }

  /// Removes `path` and, for a directory, everything in it; symbolic links are removed, never
  /// followed.
  private static func remove(_ path: String) {
    var info = stat()
    guard lstat(path, &info) == 0 else { return }
    guard info.st_mode & S_IFMT == S_IFDIR else {
      unlink(path)
      return
    }
    if let directory = opendir(path) {
      var names: [String] = []
      while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
          String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        if name != "." && name != ".." { names.append(name) }
      }
      closedir(directory)
      for name in names { remove(path + "/" + name) }
    }
    rmdir(path)
  }
}
