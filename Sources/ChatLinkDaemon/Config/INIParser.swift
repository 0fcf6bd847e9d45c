/// One `Key=Value` line of a systemd-style INI file (systemd.syntax(7)).
public struct INIAssignment: Sendable, Hashable {
  /// The section the assignment appeared in, without brackets.
  public var section: String
  /// The key, as written.
  public var key: String
  /// The value with surrounding whitespace removed and continuation lines joined.
  public var value: String
  /// The file it came from.
  public var file: String
  /// The 1-based line the assignment started on.
  public var line: Int
}

/// Parses systemd-style INI text: `[Section]` headers, `Key=Value` lines, `#` and `;`
/// comments, and lines continued with a trailing backslash.
public enum INIParser {
  /// Parses `text`, attributing errors and assignments to `file`.
  public static func parse(_ text: String, file: String) throws(ConfigError) -> [INIAssignment] {
    var assignments: [INIAssignment] = []
    var section: String?
    var pending: (text: String, line: Int)?
    var lineNumber = 0
    // Lines end at LF, and one CR before it (or at the end of the text) belongs to the line
    // ending. Split on bytes: Swift reads "\r\n" as one Character, so splitting on "\n"
    // would leave a CRLF file as one long line.
    for rawLine in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
    {
      lineNumber += 1
      let bytes = rawLine.last == UInt8(ascii: "\r") ? rawLine.dropLast() : rawLine
      let line = Substring(String(decoding: bytes, as: UTF8.self))
      if var continued = pending {
        // systemd: comment lines inside a continuation are ignored.
        let trimmed = trim(line)
        if trimmed.hasPrefix("#") || trimmed.hasPrefix(";") { continue }
        // Trimmed before the check, as the first line is: "a \\ " continues too.
        if trimmed.hasSuffix("\\") {
          continued.text += " " + trim(trimmed.dropLast())
          pending = continued
          continue
        }
        continued.text += " " + trimmed
        pending = nil
        try assignments.append(
          assignment(continued.text, section: section, file: file, line: continued.line))
        continue
      }
      let trimmed = trim(line)
      if trimmed.isEmpty || trimmed.hasPrefix("#") || trimmed.hasPrefix(";") { continue }
      if trimmed.hasPrefix("[") {
        guard trimmed.hasSuffix("]"), trimmed.count > 2 else {
          throw ConfigError(
            file: file, line: lineNumber, message: "invalid section header '\(trimmed)'")
        }
        let name = String(trimmed.dropFirst().dropLast())
        guard name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
          throw ConfigError(file: file, line: lineNumber, message: "invalid section name '\(name)'")
        }
        section = name
        continue
      }
      if trimmed.hasSuffix("\\") {
        pending = (trim(trimmed.dropLast()), lineNumber)
        continue
      }
      try assignments.append(assignment(trimmed, section: section, file: file, line: lineNumber))
    }
    if let pending {
      try assignments.append(
        assignment(pending.text, section: section, file: file, line: pending.line))
    }
    return assignments
  }

  private static func assignment(_ text: String, section: String?, file: String, line: Int)
    throws(ConfigError) -> INIAssignment
  {
    guard let equals = text.firstIndex(of: "=") else {
      throw ConfigError(
        file: file, line: line, message: "expected Key=Value, found '\(text.prefix(60))'")
    }
    let key = trim(text[..<equals])
    let value = trim(text[text.index(after: equals)...])
    guard !key.isEmpty, key.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
      throw ConfigError(file: file, line: line, message: "invalid key '\(key)'")
    }
    guard let section else {
      throw ConfigError(
        file: file, line: line, key: key, message: "assignment outside of a [Section]")
    }
    return INIAssignment(section: section, key: key, value: value, file: file, line: line)
  }

  /// Without spaces and tabs around it, scalar by scalar: a space followed by a combining
  /// mark is one Character, which a Character-wise trim would keep.
  static func trim(_ s: some StringProtocol) -> String {
    var scalars = Substring(s).unicodeScalars[...]
    while let c = scalars.first, c == " " || c == "\t" { scalars.removeFirst() }
    while let c = scalars.last, c == " " || c == "\t" { scalars.removeLast() }
    return String(String.UnicodeScalarView(scalars))
  }
}
