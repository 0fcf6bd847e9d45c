/// Writes `--help` text in the layout Swift command-line tools commonly print, so it reads as
/// users expect: OVERVIEW, the discussion, USAGE, ARGUMENTS, OPTIONS, titled option groups and
/// SUBCOMMANDS, at 80 columns.
struct HelpGenerator {
  static let width = 80
  /// Where help text starts after a label.
  static let labelColumn = 26

  let path: [any ParsableCommand.Type]

  private var command: any ParsableCommand.Type { path[path.count - 1] }
  private var configuration: CommandConfiguration { command.configuration }
  private var slots: [ArgumentSlot] { ArgumentSlot.collect(from: command.init()) }

  /// `chatlinkctl send`.
  var commandPath: String { path.map { $0.commandName }.joined(separator: " ") }

  /// The usage line without "USAGE: ".
  var usage: String { usageWords.joined(separator: " ") }

  /// The words of the usage line; a word like `[--room <room>]` is never broken.
  private var usageWords: [String] {
    var words = [commandPath]
    words += slots.map(\.usage)
    if !configuration.subcommands.isEmpty { words.append("<subcommand>") }
    return words
  }

  /// The usage line wrapped after `prefix`, continuation lines aligned under the command.
  private func wrappedUsage(prefix: String) -> String {
    let glued = usageWords.map { $0.replacing(" ", with: "\u{A0}") }.joined(separator: " ")
    return Self.wrap(glued, width: Self.width, firstPrefix: prefix).replacing("\u{A0}", with: " ")
  }

  /// What follows a usage error.
  var usageMessage: String {
    wrappedUsage(prefix: "Usage: ") + "\n  See '\(commandPath) --help' for more information."
  }

  /// The whole `--help` text, ending in a newline.
  var help: String {
    var blocks: [String] = []
    if !configuration.abstract.isEmpty {
      blocks.append(Self.wrap(configuration.abstract, width: Self.width, firstPrefix: "OVERVIEW: "))
    }
    if !configuration.discussion.isEmpty { blocks.append(configuration.discussion) }
    blocks.append(wrappedUsage(prefix: "USAGE: "))

    let slots = self.slots
    let arguments = slots.filter { $0.kind == .positional }
    if !arguments.isEmpty {
      blocks.append(section("ARGUMENTS", arguments.map { ($0.label, describe($0)) }))
    }
    var options = slots.filter { $0.kind != .positional && $0.section == nil }.map {
      ($0.label, describe($0))
    }
    if path.count == 1, !configuration.version.isEmpty {
      options.append(("--version", "Show the version."))
    }
    options.append(("-h, --help", "Show help information."))
    blocks.append(section("OPTIONS", options))
    var titles: [String] = []
    for slot in slots where slot.kind != .positional {
      if let title = slot.section, !titles.contains(title) { titles.append(title) }
    }
    for title in titles {
      let grouped = slots.filter { $0.kind != .positional && $0.section == title }
      blocks.append(section(title.uppercased(), grouped.map { ($0.label, describe($0)) }))
    }
    if !configuration.subcommands.isEmpty {
      var text = section(
        "SUBCOMMANDS", configuration.subcommands.map { ($0.commandName, $0.configuration.abstract) }
      )
      text += "\n\n  See '\(commandPath) help <subcommand>' for detailed help."
      blocks.append(text)
    }
    return blocks.joined(separator: "\n\n") + "\n"
  }

  private func describe(_ slot: ArgumentSlot) -> String {
    guard let value = slot.defaultDescription, !value.isEmpty else { return slot.help }
    return slot.help.isEmpty ? "(default: \(value))" : "\(slot.help) (default: \(value))"
  }

  private func section(_ title: String, _ rows: [(label: String, help: String)]) -> String {
    var lines = ["\(title):"]
    let indent = String(repeating: " ", count: Self.labelColumn)
    for row in rows {
      let label = "  " + row.label
      if row.help.isEmpty {
        lines.append(label)
      } else if label.count + 2 <= Self.labelColumn {
        let padded = label + String(repeating: " ", count: Self.labelColumn - label.count)
        lines.append(
          Self.wrap(row.help, width: Self.width, firstPrefix: padded, prefix: indent))
      } else {
        lines.append(label)
        lines.append(Self.wrap(row.help, width: Self.width, firstPrefix: indent, prefix: indent))
      }
    }
    return lines.joined(separator: "\n")
  }

  /// Wraps `text` at word boundaries; explicit newlines are kept. Continuation lines get
  /// `prefix`, or as many spaces as `firstPrefix` is long.
  static func wrap(_ text: String, width: Int, firstPrefix: String, prefix: String? = nil)
    -> String
  {
    let continuation = prefix ?? String(repeating: " ", count: firstPrefix.count)
    var lines: [String] = []
    var line = firstPrefix
    var lineHasWords = false
    for (index, paragraph) in text.split(separator: "\n", omittingEmptySubsequences: false)
      .enumerated()
    {
      if index > 0 {
        lines.append(line)
        line = continuation
        lineHasWords = false
      }
      for word in paragraph.split(separator: " ") {
        if lineHasWords, line.count + 1 + word.count > width {
          lines.append(line)
          line = continuation
          lineHasWords = false
        }
        line += (lineHasWords ? " " : "") + word
        lineHasWords = true
      }
    }
    lines.append(line)
    return lines.map { $0.trailingSpacesTrimmed }.joined(separator: "\n")
  }
}

extension String {
  var trailingSpacesTrimmed: String {
    var s = Substring(self)
    while s.last == " " { s = s.dropLast() }
    return String(s)
  }
}
