@preconcurrency import Glibc

/// A type whose stored properties are command-line options, flags and arguments, declared with
/// `@Option`, `@Flag`, `@Argument` and `@OptionGroup`: the declarative shape Swift command-line
/// tools commonly use, so a reader of a verb sees its whole interface in its properties.
///
/// The parser creates a value with `init()`, finds the property wrappers by reflection, fills
/// them from argv and then calls `validate()`. (SendableMetatype: the types are listed in
/// `CommandConfiguration.subcommands` and carried in errors.)
public protocol ParsableArguments: SendableMetatype {
  /// Creates a value with every property at its default; the parser fills it in.
  init()

  /// Checks the parsed values together; throw `ValidationError` for a usage error.
  mutating func validate() throws
}

extension ParsableArguments {
  public mutating func validate() throws {}
}

/// A command (or subcommand) of a command-line tool: one type per verb, with its help texts.
public protocol ParsableCommand: ParsableArguments {
  /// The command's name, help texts and subcommands.
  static var configuration: CommandConfiguration { get }

  /// Runs the command. Output goes through `context`, so tests can capture it.
  mutating func run(_ context: CommandContext) throws

  /// Turns an error thrown by `run` (of this command or any subcommand) into an exit status,
  /// writing its message to `context.errors`. Only the root command's answer is used.
  static func exitStatus(for error: any Error, context: CommandContext) -> Int32
}

extension ParsableCommand {
  public static var configuration: CommandConfiguration { CommandConfiguration() }

  public mutating func run(_ context: CommandContext) throws {
    throw CommandLineError(kind: .missingSubcommand, path: [Self.self])
  }

  public static func exitStatus(for error: any Error, context: CommandContext) -> Int32 {
    context.writeError("\(commandName): \(error)")
    return ExitCode.failure.rawValue
  }

  /// The name used on the command line: the configured one, or the type's name in lower case.
  static var commandName: String {
    configuration.commandName ?? String(describing: Self.self).lowercased()
  }

  /// Parses `arguments` (without the program name) into a command of this tree, as the root.
  public static func parseAsRoot(_ arguments: [String]) throws -> any ParsableCommand {
    try CommandParser.parse(root: Self.self, arguments: arguments).command
  }

  /// The help text of this command, or of the subcommand at `path` below it.
  public static func helpMessage(for path: [String] = []) -> String {
    var types: [any ParsableCommand.Type] = [Self.self]
    for name in path {
      guard let next = types[types.count - 1].subcommand(named: name) else { break }
      types.append(next)
    }
    return HelpGenerator(path: types).help
  }

  /// Runs the command with the process's arguments and streams, then exits with its status.
  public static func main() -> Never {
    exit(run(arguments: Array(CommandLine.arguments.dropFirst()), context: .standard()))
  }

  /// Parses `arguments`, runs the command and returns the exit status; every message goes
  /// through `context`. `main()` calls this with the process's arguments and streams.
  public static func run(arguments: [String], context: CommandContext) -> Int32 {
    let status = dispatch(arguments: arguments, context: context)
    context.output.flush()
    context.errors.flush()
    return status
  }

  private static func dispatch(arguments: [String], context: CommandContext) -> Int32 {
    var command: any ParsableCommand
    do throws(CommandLineError) {
      command = try CommandParser.parse(root: Self.self, arguments: arguments).command
    } catch {
      return report(error, context: context)
    }
    do {
      try command.run(context)
      return ExitCode.success.rawValue
    } catch let error as CommandLineError {
      return report(error, context: context)
    } catch let error as ValidationError {
      return report(
        CommandLineError(kind: .validation(error.message), path: [type(of: command)]),
        context: context)
    } catch let code as ExitCode {
      return code.rawValue
    } catch {
      return exitStatus(for: error, context: context)
    }
  }

  private static func report(_ error: CommandLineError, context: CommandContext) -> Int32 {
    var path = error.path
    if path.first.map({ ObjectIdentifier($0) != ObjectIdentifier(Self.self) }) ?? true {
      // An error from run(): find the subcommand's place in this tree for the usage line.
      path = Self.path(to: path.last ?? Self.self) ?? [Self.self]
    }
    let generator = HelpGenerator(path: path)
    switch error.kind {
    case .helpRequested:
      context.write(generator.help)
      return ExitCode.success.rawValue
    case .versionRequested(let version):
      context.write(version)
      return ExitCode.success.rawValue
    case .missingSubcommand:
      context.writeError(generator.help)
      return ExitCode.validationFailure.rawValue
    default:
      context.writeError("Error: \(error.message)")
      context.writeError(generator.usageMessage)
      return ExitCode.validationFailure.rawValue
    }
  }

  static func subcommand(named name: String) -> (any ParsableCommand.Type)? {
    configuration.subcommands.first { $0.commandName == name }
  }

  private static func path(to target: any ParsableCommand.Type) -> [any ParsableCommand.Type]? {
    if ObjectIdentifier(target) == ObjectIdentifier(Self.self) { return [Self.self] }
    for sub in configuration.subcommands {
      if let rest = sub.path(to: target) { return [Self.self] + rest }
    }
    return nil
  }
}

/// The name, help texts and subcommands of a command.
public struct CommandConfiguration {
  /// The name on the command line; nil means the type's name in lower case.
  public var commandName: String?
  /// One line: what the command does. Shown after OVERVIEW: and in the parent's SUBCOMMANDS.
  public var abstract: String
  /// Longer help, printed as written (keep lines under 80 columns).
  public var discussion: String
  /// What `--version` prints; empty means no `--version` option.
  public var version: String
  /// The subcommands, in the order help lists them.
  public var subcommands: [any ParsableCommand.Type]

  /// Creates a configuration.
  public init(
    commandName: String? = nil, abstract: String = "", discussion: String = "",
    version: String = "", subcommands: [any ParsableCommand.Type] = []
  ) {
    self.commandName = commandName
    self.abstract = abstract
    self.discussion = discussion
    self.version = version
    self.subcommands = subcommands
  }
}

/// A usage error found after parsing, e.g. two options that do not go together. It exits
/// with status 2 and the command's usage line.
public struct ValidationError: Error, CustomStringConvertible {
  /// What is wrong, as one sentence.
  public var message: String

  /// Creates the error.
  public init(_ message: String) {
    self.message = message
  }

  public var description: String { message }
}

/// Ends the program with a status, without a further message.
public struct ExitCode: Error, Hashable, RawRepresentable {
  public var rawValue: Int32

  /// Creates an exit status.
  public init(rawValue: Int32) {
    self.rawValue = rawValue
  }

  /// Creates an exit status.
  public init(_ code: Int32) {
    self.rawValue = code
  }

  /// 0.
  public static let success = ExitCode(0)
  /// 1.
  public static let failure = ExitCode(1)
  /// 2: the command line was wrong.
  public static let validationFailure = ExitCode(2)
}
