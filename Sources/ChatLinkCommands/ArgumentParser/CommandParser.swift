/// What went wrong on the command line, or a request for help or the version.
struct CommandLineError: Error, CustomStringConvertible {
  enum Kind: Equatable {
    case helpRequested
    case versionRequested(String)
    case missingSubcommand
    case unknownSubcommand(String)
    case unknownOption(String)
    case missingValue(String)
    case unexpectedValue(String)
    case invalidValue(String, for: String, hint: String?)
    case missingArgument(String)
    case unexpectedArgument(String)
    case validation(String)
  }

  var kind: Kind
  /// The commands from the root to the one being parsed.
  var path: [any ParsableCommand.Type]

  /// The sentence after "Error: ", worded the way Swift command-line tools commonly word it.
  var message: String {
    switch kind {
    case .helpRequested: "Help requested"
    case .versionRequested: "Version requested"
    case .missingSubcommand: "Missing expected subcommand"
    case .unknownSubcommand(let name): "Unknown subcommand '\(name)'"
    case .unknownOption(let name): "Unknown option '\(name)'"
    case .missingValue(let name): "Missing value for '\(name)'"
    case .unexpectedValue(let name): "The option '\(name)' takes no value"
    case .invalidValue(let value, let name, let hint):
      "The value '\(value)' is invalid for '\(name)'" + (hint.map { "; \($0)" } ?? "")
    case .missingArgument(let name): "Missing expected argument '\(name)'"
    case .unexpectedArgument(let word): "Unexpected argument '\(word)'"
    case .validation(let message): message
    }
  }

  var description: String { message }
}

/// Parses argv into a command of a tree of `ParsableCommand`s.
///
/// Options given before a subcommand's name are passed down to the subcommand when it declares
/// an option of the same name (so `tool --json verb` and `tool verb --json` mean the same).
enum CommandParser {
  struct Result {
    var command: any ParsableCommand
    var path: [any ParsableCommand.Type]
  }

  static func parse(root: any ParsableCommand.Type, arguments: [String]) throws(CommandLineError)
    -> Result
  {
    var path: [any ParsableCommand.Type] = [root]
    var words = arguments[...]
    // Option words seen at the levels above, replayed into the subcommand.
    var inherited: [(slotName: String, value: String)] = []
    while true {
      var level = LevelParser(path: path, inherited: inherited)
      guard let subcommand = try level.consume(&words) else { return try level.finish() }
      inherited += level.seen
      path.append(subcommand)
    }
  }
}

/// The words of one level of the command tree: its options and positionals, up to a
/// subcommand's name or the end.
private struct LevelParser {
  let path: [any ParsableCommand.Type]
  let type: any ParsableCommand.Type
  let command: any ParsableCommand
  let slots: [ArgumentSlot]
  /// Options given at this level, to pass down to a subcommand.
  private(set) var seen: [(slotName: String, value: String)] = []
  private var positionals: [String] = []
  private var onlyPositionals = false

  init(path: [any ParsableCommand.Type], inherited: [(slotName: String, value: String)]) {
    self.path = path
    type = path[path.count - 1]
    command = type.init()
    slots = ArgumentSlot.collect(from: command)
    for (name, value) in inherited {
      if let slot = slots.first(where: { $0.longName == name }) {
        _ = slot.assign(value)
        slot.isSet = true
      }
    }
  }

  private func fail(_ kind: CommandLineError.Kind) -> CommandLineError {
    CommandLineError(kind: kind, path: path)
  }

  /// Reads words until a subcommand's name (returned) or the end (nil).
  mutating func consume(_ words: inout ArraySlice<String>) throws(CommandLineError)
    -> (any ParsableCommand.Type)?
  {
    let takesSubcommands =
      !type.configuration.subcommands.isEmpty && !slots.contains { $0.kind == .positional }
    while let word = words.popFirst() {
      if onlyPositionals || word == "-" || !word.hasPrefix("-") {
        if !onlyPositionals, takesSubcommands { return try subcommand(word, rest: words) }
        positionals.append(word)
      } else if word == "--" {
        onlyPositionals = true
      } else {
        try option(word, &words)
      }
    }
    return nil
  }

  /// The subcommand `word` names; `help [VERB…]` at the top asks for help instead.
  private func subcommand(_ word: String, rest words: ArraySlice<String>)
    throws(CommandLineError) -> any ParsableCommand.Type
  {
    if word == "help", path.count == 1 {
      var helpPath = path
      for name in words {
        guard let next = helpPath[helpPath.count - 1].subcommand(named: name) else {
          throw CommandLineError(kind: .unknownSubcommand(name), path: helpPath)
        }
        helpPath.append(next)
      }
      throw CommandLineError(kind: .helpRequested, path: helpPath)
    }
    guard let next = type.subcommand(named: word) else { throw fail(.unknownSubcommand(word)) }
    return next
  }

  /// One option word (`--name`, `--name=value`, `-n`), with its value if it takes one.
  private mutating func option(_ word: String, _ words: inout ArraySlice<String>)
    throws(CommandLineError)
  {
    if word == "-h" || word == "--help" { throw fail(.helpRequested) }
    if word == "--version", path.count == 1, !type.configuration.version.isEmpty {
      throw fail(.versionRequested(type.configuration.version))
    }
    let (slot, inline) = try self.slot(for: word)
    let value: String
    if slot.kind == .flag {
      guard inline == nil else { throw fail(.unexpectedValue(slot.spelled)) }
      value = ""
    } else if let inline {
      value = inline
    } else if let next = words.first, !next.hasPrefix("--"), next != "-h" {
      words.removeFirst()
      value = next
    } else {
      throw fail(.missingValue(slot.spelled))
    }
    guard slot.assign(value) else {
      throw fail(.invalidValue(value, for: slot.spelled, hint: slot.hint))
    }
    slot.isSet = true
    if let name = slot.longName { seen.append((name, value)) }
  }

  /// The option slot an option word names, and the value written into it after `=`.
  private func slot(for word: String) throws(CommandLineError) -> (ArgumentSlot, String?) {
    guard word.hasPrefix("--") else {
      let letters = word.dropFirst()
      guard letters.count == 1,
        let found = slots.first(where: { $0.kind != .positional && $0.shortName == letters.first })
      else { throw fail(.unknownOption(word)) }
      return (found, nil)
    }
    let body = word.dropFirst(2)
    var name = String(body)
    var inline: String?
    if let equals = body.firstIndex(of: "=") {
      name = String(body[..<equals])
      inline = String(body[body.index(after: equals)...])
    }
    guard let found = slots.first(where: { $0.kind != .positional && $0.longName == name }) else {
      throw fail(.unknownOption("--\(name)"))
    }
    return (found, inline)
  }

  /// The command of this level, once its words are all read: positionals assigned, required
  /// arguments present, and its own validation passed.
  func finish() throws(CommandLineError) -> CommandParser.Result {
    var remaining = positionals[...]
    for slot in slots where slot.kind == .positional {
      guard let word = remaining.popFirst() else { break }
      guard slot.assign(word) else {
        throw fail(.invalidValue(word, for: slot.spelled, hint: slot.hint))
      }
      slot.isSet = true
    }
    if let extra = remaining.first { throw fail(.unexpectedArgument(extra)) }
    if let missing = slots.first(where: { $0.isRequired && !$0.isSet }) {
      throw fail(.missingArgument(missing.spelled))
    }
    if !type.configuration.subcommands.isEmpty { throw fail(.missingSubcommand) }
    var parsed = command
    do {
      try parsed.validate()
    } catch let error as ValidationError {
      throw fail(.validation(error.message))
    } catch {
      throw fail(.validation("\(error)"))
    }
    return CommandParser.Result(command: parsed, path: path)
  }
}
