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

  /// The sentence after "Error: ", worded as swift-argument-parser words it.
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
      let type = path[path.count - 1]
      let command = type.init()
      let slots = ArgumentSlot.collect(from: command)
      func fail(_ kind: CommandLineError.Kind) -> CommandLineError {
        CommandLineError(kind: kind, path: path)
      }
      for (name, value) in inherited {
        if let slot = slots.first(where: { $0.longName == name }) {
          _ = slot.assign(value)
          slot.isSet = true
        }
      }
      var seen: [(slotName: String, value: String)] = []
      var positionals: [String] = []
      var onlyPositionals = false
      var subcommand: (any ParsableCommand.Type)?
      let hasPositionalSlots = slots.contains { $0.kind == .positional }

      while let word = words.popFirst() {
        if onlyPositionals || word == "-" || !word.hasPrefix("-") {
          if !onlyPositionals, !type.configuration.subcommands.isEmpty, !hasPositionalSlots {
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
            guard let next = type.subcommand(named: word) else {
              throw fail(.unknownSubcommand(word))
            }
            subcommand = next
            break
          }
          positionals.append(word)
          continue
        }
        if word == "--" {
          onlyPositionals = true
          continue
        }
        if word == "-h" || word == "--help" { throw fail(.helpRequested) }
        if word == "--version", path.count == 1, !type.configuration.version.isEmpty {
          throw fail(.versionRequested(type.configuration.version))
        }
        let slot: ArgumentSlot
        var inline: String?
        if word.hasPrefix("--") {
          let body = word.dropFirst(2)
          let name: String
          if let equals = body.firstIndex(of: "=") {
            name = String(body[..<equals])
            inline = String(body[body.index(after: equals)...])
          } else {
            name = String(body)
          }
          guard let found = slots.first(where: { $0.kind != .positional && $0.longName == name })
          else { throw fail(.unknownOption("--\(name)")) }
          slot = found
        } else {
          let letters = word.dropFirst()
          guard letters.count == 1,
            let found = slots.first(where: {
              $0.kind != .positional && $0.shortName == letters.first
            })
          else { throw fail(.unknownOption(word)) }
          slot = found
        }
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

      if let subcommand {
        inherited += seen
        path.append(subcommand)
        continue
      }

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
      return Result(command: parsed, path: path)
    }
  }
}
