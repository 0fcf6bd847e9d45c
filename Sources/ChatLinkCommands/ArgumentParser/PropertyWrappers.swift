/// How an option is spelled: `--long`, `-s`, or both.
public struct NameSpecification: Sendable, Hashable {
  enum Element: Sendable, Hashable {
    case long
    case customLong(String)
    case short
    case customShort(Character)
  }

  let elements: [Element]

  /// `--name`, from the property's name (`sinceTime` becomes `--since-time`).
  public static let long = NameSpecification(elements: [.long])
  /// `-n`, the first letter of the property's name.
  public static let short = NameSpecification(elements: [.short])
  /// Both `-n` and `--name`.
  public static let shortAndLong = NameSpecification(elements: [.short, .long])

  /// `--name` spelled as given.
  public static func customLong(_ name: String) -> NameSpecification {
    NameSpecification(elements: [.customLong(name)])
  }

  /// `-c` with the given letter.
  public static func customShort(_ letter: Character) -> NameSpecification {
    NameSpecification(elements: [.customShort(letter)])
  }

  func resolve(label: String) -> (long: String?, short: Character?) {
    var long: String?
    var short: Character?
    for element in elements {
      switch element {
      case .long: long = ArgumentSlot.kebab(label)
      case .customLong(let name): long = name
      case .short: short = label.first
      case .customShort(let letter): short = letter
      }
    }
    return (long, short)
  }
}

/// Holds a parsed value; shared by every copy of the command, so the parser can fill in the
/// value that `init()` created.
final class ValueBox<Value> {
  var value: Value?
  init(_ value: Value?) {
    self.value = value
  }
}

/// Something reflection finds in a command: one argument slot, or a group of them.
protocol ArgumentSlotProvider {
  func slots(label: String) -> [ArgumentSlot]
}

/// An option that takes a value: `--room 7` or `--room=7`.
@propertyWrapper
public struct Option<Value>: ArgumentSlotProvider {
  private let box: ValueBox<Value>
  private let make: (ValueBox<Value>, String) -> ArgumentSlot

  /// The parsed value, or the default.
  public var wrappedValue: Value {
    // The parser rejects a command line that leaves a required option unset.
    box.value!
  }

  func slots(label: String) -> [ArgumentSlot] { [make(box, label)] }

  /// An option with a default value.
  public init(
    wrappedValue: Value, name: NameSpecification = .long, help: String = "",
    valueName: String? = nil
  ) where Value: ExpressibleByArgument {
    box = ValueBox(wrappedValue)
    make = { box, label in
      ArgumentSlot(
        kind: .option, label: label, name: name, valueName: valueName, help: help,
        isRequired: false, defaultDescription: wrappedValue.defaultValueDescription,
        hint: Value.argumentHint
      ) { text in
        guard let value = Value(argument: text) else { return false }
        box.value = value
        return true
      }
    }
  }

  /// A required option.
  public init(name: NameSpecification = .long, help: String = "", valueName: String? = nil)
  where Value: ExpressibleByArgument {
    box = ValueBox(nil)
    make = { box, label in
      ArgumentSlot(
        kind: .option, label: label, name: name, valueName: valueName, help: help,
        isRequired: true, defaultDescription: nil, hint: Value.argumentHint
      ) { text in
        guard let value = Value(argument: text) else { return false }
        box.value = value
        return true
      }
    }
  }

  /// An optional option: nil when not given.
  public init<Wrapped: ExpressibleByArgument>(
    name: NameSpecification = .long, help: String = "", valueName: String? = nil
  ) where Value == Wrapped? {
    box = ValueBox(.some(nil))
    make = { box, label in
      ArgumentSlot(
        kind: .option, label: label, name: name, valueName: valueName, help: help,
        isRequired: false, defaultDescription: nil, hint: Wrapped.argumentHint
      ) { text in
        guard let value = Wrapped(argument: text) else { return false }
        box.value = .some(value)
        return true
      }
    }
  }
}

/// A flag: `--watch` sets it to true.
@propertyWrapper
public struct Flag: ArgumentSlotProvider {
  private let box: ValueBox<Bool>
  private let name: NameSpecification
  private let help: String

  /// Whether the flag was given.
  public var wrappedValue: Bool { box.value ?? false }

  /// A flag that is off unless given.
  public init(wrappedValue: Bool = false, name: NameSpecification = .long, help: String = "") {
    box = ValueBox(wrappedValue)
    self.name = name
    self.help = help
  }

  func slots(label: String) -> [ArgumentSlot] {
    [
      ArgumentSlot(
        kind: .flag, label: label, name: name, valueName: nil, help: help, isRequired: false,
        defaultDescription: nil, hint: nil
      ) { [box] _ in
        box.value = true
        return true
      }
    ]
  }
}

/// A positional argument.
@propertyWrapper
public struct Argument<Value>: ArgumentSlotProvider {
  private let box: ValueBox<Value>
  private let make: (ValueBox<Value>, String) -> ArgumentSlot

  /// The parsed value, or the default.
  public var wrappedValue: Value {
    // The parser rejects a command line that leaves a required argument unset.
    box.value!
  }

  func slots(label: String) -> [ArgumentSlot] { [make(box, label)] }

  /// A required argument.
  public init(help: String = "", valueName: String? = nil) where Value: ExpressibleByArgument {
    box = ValueBox(nil)
    make = { box, label in
      ArgumentSlot(
        kind: .positional, label: label, name: .long, valueName: valueName, help: help,
        isRequired: true, defaultDescription: nil, hint: Value.argumentHint
      ) { text in
        guard let value = Value(argument: text) else { return false }
        box.value = value
        return true
      }
    }
  }

  /// An optional argument: nil when not given.
  public init<Wrapped: ExpressibleByArgument>(help: String = "", valueName: String? = nil)
  where Value == Wrapped? {
    box = ValueBox(.some(nil))
    make = { box, label in
      ArgumentSlot(
        kind: .positional, label: label, name: .long, valueName: valueName, help: help,
        isRequired: false, defaultDescription: nil, hint: Wrapped.argumentHint
      ) { text in
        guard let value = Wrapped(argument: text) else { return false }
        box.value = .some(value)
        return true
      }
    }
  }
}

/// The options of another `ParsableArguments` type, e.g. global options every verb takes.
@propertyWrapper
public struct OptionGroup<Value: ParsableArguments>: ArgumentSlotProvider {
  /// The group, filled in by the parser.
  public var wrappedValue: Value
  private let title: String?

  /// Includes the group; a title gives it its own section in help (e.g. "Global Options").
  public init(title: String? = nil) {
    wrappedValue = Value()
    self.title = title
  }

  func slots(label: String) -> [ArgumentSlot] {
    let slots = ArgumentSlot.collect(from: wrappedValue)
    if let title {
      for slot in slots where slot.section == nil { slot.section = title }
    }
    return slots
  }
}

/// A value that can be read from one command-line word.
public protocol ExpressibleByArgument {
  /// Reads the value; nil means the word is not a valid value.
  init?(argument: String)

  /// How a default value is shown in help.
  var defaultValueDescription: String { get }

  /// Added to the error message when a word is not a valid value.
  static var argumentHint: String? { get }
}

extension ExpressibleByArgument {
  public var defaultValueDescription: String { "\(self)" }
  public static var argumentHint: String? { nil }
}

extension String: ExpressibleByArgument {
  public init?(argument: String) {
    self = argument
  }
}

extension Int: ExpressibleByArgument {
  public init?(argument: String) {
    self.init(argument, radix: 10)
  }
}

extension Double: ExpressibleByArgument {
  public init?(argument: String) {
    self.init(argument)
  }
}
