import EventLoop
@preconcurrency import Glibc

/// The token the devserver requires (`--token-file`): the file's text without line breaks or
/// surrounding blanks, as chatlinkd reads its TokenFile=.
enum TokenFile {
  /// Reads the token at `path`; the error names the file, never its content.
  static func read(_ path: String) throws(SystemError) -> String {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw .last("open \(path)") }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while bytes.count <= 64 * 1024 {
      let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
      if n < 0 && errno == EINTR { continue }
      if n < 0 { throw .last("read \(path)") }
      if n == 0 { break }
      bytes.append(contentsOf: chunk[..<n])
    }
    let text = String(decoding: bytes.filter { $0 != 0x0A && $0 != 0x0D }, as: UTF8.self)
    return String(
      text.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
  }
}
